"""What a report's main process hands to the triage notebook it runs: the findings of the triage
it has just made and the "what else changed" block it shows on the summary page, so the notebook's
kernel does not run every detector and the comparison over the whole store again. An
investigation notebook that declares ``HANDED`` takes its own investigation's findings from the
same file (:func:`findings_of`).

The report writes them with :func:`write` to a file in a folder of its own (passed to the notebook
as the papermill parameter ``HANDED``), keyed by the parameters the notebook is run with
(``BUNDLE``, ``TZ``, ``START``, ``END``) and by the store's summary. The notebook calls
:func:`read` with its own parameters: without ``HANDED`` (JupyterLab, nbval), or with a file that
is missing, unreadable, of another view or of another store, it gets nothing handed and computes
both itself, as it always did. Only the kit's own classes (findings, their extents and severities,
an HTML block) and plain values are read back from the file: anything else is refused."""

from __future__ import annotations

import io
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE = "triage-handed.pickle"
VERSION = 1

# what a handed file may hold besides plain values: the kit's classes, and the few that rebuild the
# times, time zones and numpy numbers findings' numbers hold
_ALLOWED = {
    ("kitlib.findings", "Triage"),
    ("kitlib.findings", "Finding"),
    ("kitlib.findings", "DetectorRun"),
    ("kitlib.findings", "Severity"),
    ("kitlib.findings.extent", "Extent"),
    ("kitlib.display.markup", "HTML"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("collections", "OrderedDict"),
    ("datetime", "datetime"),
    ("datetime", "date"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
    ("zoneinfo", "ZoneInfo"),
    ("zoneinfo._zoneinfo", "ZoneInfo"),
    ("pytz", "_UTC"),
    ("pytz", "_p"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"),
    ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
    ("pandas._libs.tslibs.nattype", "_nat_unpickle"),
}


def _member(cls, name: str):
    """``getattr`` as a pickled enum member or time zone calls it: only a severity's member and
    the constructor ``zoneinfo`` pickles a zone with."""
    import zoneinfo

    from kitlib.findings import Severity

    if cls is Severity and name in Severity.__members__:
        return Severity[name]
    if cls is zoneinfo.ZoneInfo and name == "_unpickle":
        return zoneinfo.ZoneInfo._unpickle  # type: ignore[attr-defined]
    raise pickle.UnpicklingError(f"not a value a report hands on: {cls!r}.{name}")


class _KitUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("builtins", "getattr"):
            return _member
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"not a value a report hands on: {module}.{name}")


@dataclass
class Handed:
    """What the notebook was handed: the triage (None: run the detectors) and the block of what
    else changed (None: compare the window itself)."""

    triage: Any = None
    changes: Any = None


def key(bundle: str | Path, tz: str | None, start=None, end=None) -> dict:
    """What a handed file is valid for: the notebook's parameters and the store's summary (its
    size and time of change), so a file of another view or of a store written since is not read."""
    path = Path(bundle).resolve()
    stamp = None
    summary = path / "summary.json"
    try:
        st = summary.stat()
        stamp = [st.st_size, st.st_mtime_ns]
    except OSError:
        pass
    return {
        "BUNDLE": str(path),
        "TZ": None if tz is None else str(tz),
        "START": None if start is None else str(start),
        "END": None if end is None else str(end),
        "store": stamp,
    }


def write(folder: Path, view: dict, triage, changes=None) -> Path:
    """Write what the triage notebook of the view ``view`` (:func:`key`) is handed into ``folder``
    (the report's own); returns the file's path, the notebook's ``HANDED``."""
    path = Path(folder) / FILE
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "wb") as fh:
        pickle.dump({"version": VERSION, "key": view, "triage": triage, "changes": changes}, fh, protocol=5)
    os.replace(tmp, path)
    return path


def read(handed: str | os.PathLike | None, bundle: str | Path, tz: str | None = None, start=None, end=None) -> Handed:
    """What the report handed to a notebook run with these parameters; an empty :class:`Handed`
    when nothing was, or the file cannot be read or is not for this view of this store (the
    notebook then computes everything itself)."""
    if not handed:
        return Handed()
    try:
        data = Path(handed).read_bytes()
        got = _KitUnpickler(io.BytesIO(data)).load()
        if not isinstance(got, dict) or got.get("version") != VERSION or got.get("key") != key(bundle, tz, start, end):
            return Handed()
        from kitlib.display.markup import HTML
        from kitlib.findings import Triage

        triage, changes = got.get("triage"), got.get("changes")
        return Handed(
            triage if isinstance(triage, Triage) else None,
            changes if isinstance(changes, HTML) else None,
        )
    except Exception:  # noqa: BLE001 - anything amiss with the file: the notebook computes it all
        return Handed()


def findings_of(handed: Handed, bundle, investigation: str) -> list:
    """The findings of one investigation: those of the handed triage (which ran every detector on
    the same view), else what its own detectors find in ``bundle`` now."""
    if handed.triage is not None:
        return [f for f in handed.triage.findings if f.investigation == investigation]
    import kitlib

    return kitlib.triage(bundle, investigations=[investigation]).findings
