"""The one registry of the kit: formats, tables, extractors, detectors and investigations.

Each kind registers itself into a dict held here (``FORMATS``, ``TABLES``, ``EXTRACTORS``,
``DETECTORS``, ``INVESTIGATIONS``) when its module is imported, through the decorator or function
of its home module (:func:`kitlib.formats.register`, :func:`kitlib.tables.declare`,
:func:`kitlib.extract.extractor`, :func:`kitlib.findings.detector`, an ``INVESTIGATION`` in an
investigation package). :func:`load` imports every such module once, explicitly and completely:
the core formats and shared tables, every package under ``kitlib.investigations``, and every
module announced under the ``kitlib.investigations`` entry-point group by other installed
packages. Then it checks the whole: each detector belongs to one investigation and may emit only
the finding ids that investigation declares, each finding id belongs to exactly one
investigation, each table an investigation reads or is relevant on is declared.

Nothing here imports a module of the kit by name at import time: the registry sits at the bottom
of the import graph and loads the rest with :mod:`importlib`.

Anything that reads a registry dict calls :func:`load` first; a second call costs nothing.

Example:
    >>> from kitlib import registry
    >>> _ = registry.load()
    >>> "events" in registry.TABLES and "log4j" in registry.FORMATS
    True
    >>> registry.owner("cleaner-no-reclaim").name
    'compaction'
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from typing import Any

# The kinds registered here are defined above the registry (kitlib.formats.Format,
# kitlib.tables.Table, kitlib.extract.Extractor, kitlib.findings.Detector,
# kitlib.investigations.Investigation). The registry imports none of them, not even for type
# checking, so that nothing below a layer points up to it: these names only say which kind a dict
# holds.
_Format = Any
_Table = Any
_Extractor = Any
_Detector = Any
_Investigation = Any

FORMATS: dict[str, _Format] = {}
TABLES: dict[str, _Table] = {}
EXTRACTORS: dict[str, _Extractor] = {}
DETECTORS: dict[str, _Detector] = {}
INVESTIGATIONS: dict[str, _Investigation] = {}

ENTRY_POINT_GROUP = "kitlib.investigations"
# modules outside the investigations that declare tables or register formats and extractors
# (every module of the packages, at any depth)
CORE_PACKAGES = ("kitlib.formats", "kitlib.extract")
CORE_MODULES = ("kitlib.events", "kitlib.metrics", "kitlib.ingestion.pipeline")

_lock = threading.RLock()
_loaded = False


class RegistryError(Exception):
    """The registered pieces do not fit together (a detector outside any investigation, a finding
    id claimed twice, an undeclared table...). Raised by :func:`load`, naming the culprit."""


def load() -> dict[str, _Investigation]:
    """Fill every registry (once) and check it; returns the investigations by name."""
    global _loaded
    if _loaded:
        return INVESTIGATIONS
    with _lock:
        if _loaded:
            return INVESTIGATIONS
        for name in CORE_MODULES:
            importlib.import_module(name)
        for pkg in CORE_PACKAGES:
            _import_package(pkg)
        inv = importlib.import_module("kitlib.investigations")
        for m in sorted(pkgutil.iter_modules(inv.__path__), key=lambda m: m.name):
            if m.ispkg:
                _add(importlib.import_module(f"kitlib.investigations.{m.name}"))
        for ep in _entry_points():
            _add(ep.load(), origin=f"entry point {ep.name} = {ep.value}")
        check()
        _loaded = True
    return INVESTIGATIONS


def _import_package(name: str) -> None:
    """Import every module of package ``name``, at any depth."""
    pkg = importlib.import_module(name)
    for m in pkgutil.walk_packages(pkg.__path__, prefix=f"{name}."):
        importlib.import_module(m.name)


def _entry_points() -> list:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _add(obj: Any, origin: str = "") -> None:
    """Register the investigation a module declares (its ``INVESTIGATION``), or one given directly."""
    # loaded by name: the registry sits below every module that registers into it
    kind = importlib.import_module("kitlib.investigations").Investigation

    inv = obj if isinstance(obj, kind) else getattr(obj, "INVESTIGATION", None)
    if not isinstance(inv, kind):
        where = origin or getattr(obj, "__name__", repr(obj))
        raise RegistryError(f"{where} declares no INVESTIGATION")
    if not inv.package:
        from dataclasses import replace

        inv = replace(inv, package=getattr(obj, "__name__", "") if not isinstance(obj, kind) else "")
    if inv.name in INVESTIGATIONS and INVESTIGATIONS[inv.name].package != inv.package:
        raise RegistryError(
            f"investigation {inv.name!r} is declared twice: {INVESTIGATIONS[inv.name].package} and {inv.package}"
        )
    INVESTIGATIONS[inv.name] = inv


def check() -> None:
    """Raise :class:`RegistryError` unless the registered pieces fit together."""
    claimed: dict[str, str] = {}
    for inv in INVESTIGATIONS.values():
        for fid in inv.finding_ids:
            if fid in claimed:
                raise RegistryError(
                    f"finding id {fid!r} is claimed by investigations {claimed[fid]!r} and {inv.name!r}"
                )
            claimed[fid] = inv.name
        unknown = [t for t in inv.tables if t not in TABLES]
        if unknown:
            raise RegistryError(f"investigation {inv.name!r} reads undeclared tables {unknown}")
        unknown = [r.table for r in inv.relevance if r.table not in TABLES]
        if unknown:
            raise RegistryError(f"investigation {inv.name!r} is relevant on undeclared tables {unknown}")
    for d in DETECTORS.values():
        home = _investigation_of_module(d.module)
        if home is None:
            raise RegistryError(f"detector {d.name} ({d.module}) is not inside any investigation's package")
        stray = [i for i in d.ids if i not in home.finding_ids]
        if stray:
            raise RegistryError(
                f"detector {d.name} may emit {stray}, which investigation {home.name!r} does not declare"
            )
        missing = [t for t in d.needs if t not in TABLES]
        if missing:
            raise RegistryError(f"detector {d.name} needs undeclared tables {missing}")


def _investigation_of_module(module: str) -> _Investigation | None:
    best = None
    for inv in INVESTIGATIONS.values():
        if inv.package and (module == inv.package or module.startswith(inv.package + ".")):
            if best is None or len(inv.package) > len(best.package):
                best = inv
    return best


def investigations() -> list[_Investigation]:
    """Every investigation, by name."""
    return [INVESTIGATIONS[k] for k in sorted(load())]


def investigation(name: str) -> _Investigation:
    """One investigation by name (KeyError naming the known ones otherwise)."""
    invs = load()
    if name not in invs:
        raise KeyError(f"no investigation {name!r}; known: {', '.join(sorted(invs))}")
    return invs[name]


def detectors_of(name: str) -> list[_Detector]:
    """The detectors that belong to investigation ``name``."""
    inv = investigation(name)
    return [d for d in sorted(DETECTORS.values(), key=lambda d: d.name) if _investigation_of_module(d.module) is inv]


def owner(finding_id: str) -> _Investigation | None:
    """The investigation that owns a finding id (None for an id nobody declares)."""
    for inv in load().values():
        if finding_id in inv.finding_ids:
            return inv
    return None


def detector_investigation(d: _Detector) -> _Investigation | None:
    """The investigation a detector belongs to."""
    load()
    return _investigation_of_module(d.module)
