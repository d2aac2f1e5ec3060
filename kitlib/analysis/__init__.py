"""Models and detectors, one module per investigation. Importing this package registers
every detector (see :mod:`kitlib.findings`)."""
import importlib as _importlib
import pkgutil as _pkgutil

for _m in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_m.name}")
