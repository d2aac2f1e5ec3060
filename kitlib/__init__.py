"""kitlib: the library behind the Kafka incident kit.

Load a bundle of broker/worker files into tables, run the detectors, chart the results.

Example:
    >>> import kitlib
    >>> b = kitlib.load_bundle("sample_data/healthy")     # doctest: +SKIP
    >>> kitlib.triage(b).findings                          # doctest: +SKIP
    []
"""

import os

# numpy's OpenBLAS starts a thread per core that spins after each call; the kit does no linear
# algebra, and on a small machine those threads take CPU from the parse (set it to override)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kitlib.bundle import Bundle, ingest, load, load_bundle, window  # noqa: F401
    from kitlib.findings import Finding, Triage, triage
    from kitlib.registry import investigation, investigations

# the library's names, imported when first used: a command that needs no table (``kitlib --help``,
# a triage answered from its memo) starts without pandas, Arrow or the detectors
_LAZY = {
    **dict.fromkeys(("Bundle", "ingest", "load", "load_bundle", "window"), "kitlib.bundle"),
    **dict.fromkeys(("Finding", "Triage", "triage"), "kitlib.findings"),
    **dict.fromkeys(("investigation", "investigations"), "kitlib.registry"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'kitlib' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Kit(types.ModuleType):
    """``kitlib.window`` names the function, as it always did, although the package has a module of
    that name: the import of that module does not put the module in its place. (``kitlib.investigations``
    is the function until the package of that name is imported, as before.)"""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "window" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Kit


def open(path: str | os.PathLike, tz=None, start=None, end=None, hosts=None) -> "Bundle":
    """A bundle folder (or one file) read into memory, or an ingest output opened, seen through the
    window ``start <= time < end`` on ``hosts`` (a list, or one comma-separated string): the first
    line of every notebook, ``bundle = kitlib.open(BUNDLE, TZ, START, END)``. None means no limit.

    Example:
        >>> b = kitlib.open("sample_data/healthy", None, "2026-11-23T03:00")   # doctest: +SKIP
    """
    from kitlib.bundle import load_bundle, window
    from kitlib.params import as_list

    return window(load_bundle(path, tz=tz), start, end, as_list(hosts))


__all__ = [
    "Bundle",
    "Finding",
    "Triage",
    "ingest",
    "investigation",
    "investigations",
    "load",
    "load_bundle",
    "open",
    "triage",
]
__version__ = "0.1.0"
