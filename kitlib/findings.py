"""Findings and the detector registry.

A finding is what a detector concludes about a bundle: a stable kebab-case ``id``, a
severity, a one-line summary, the key numbers, the recommended change, and the evidence rows
(file and line) it rests on. Detectors are plain functions ``fn(bundle) -> list[Finding]``
registered with :func:`detector`; they return ``[]`` on a healthy bundle.

Example:
    >>> f = Finding("demo-finding", "low", "one line", recommendation="do X")
    >>> f.to_dict()["id"]
    'demo-finding'
"""

from __future__ import annotations

import ast
import datetime as dt
import enum
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kitlib.registry import DETECTORS


class Severity(enum.StrEnum):
    """How much a finding matters, most severe first. A member is its plain text (``"high"``) in
    JSON, pages and the terminal; comparisons rank by severity (a more severe one is greater),
    and a plain string compares as the severity it names.

    Example:
        >>> Severity("critical") > Severity.HIGH > "low", Severity.of("info").rank
        (True, 4)
        >>> sorted(["low", "critical", "medium"], key=Severity.rank_of)
        ['critical', 'medium', 'low']
    """

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"

    @classmethod
    def of(cls, value: str) -> Severity:
        """The severity ``value`` names (ValueError naming the known ones otherwise)."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"severity must be one of {tuple(m.value for m in cls)}: {value!r}") from None

    @property
    def rank(self) -> int:
        """0 for the most severe, counting up."""
        return list(Severity).index(self)

    @staticmethod
    def rank_of(value: str) -> int:
        """The rank of the severity ``value`` names; anything else (``"none"``) ranks after every one."""
        try:
            return Severity(value).rank
        except ValueError:
            return len(Severity)

    def _ranks(self, other: object) -> tuple[int, int] | None:
        if not isinstance(other, str):
            return None
        return Severity.rank_of(other), self.rank

    def __lt__(self, other: object) -> bool:
        r = self._ranks(other)
        return NotImplemented if r is None else r[0] < r[1]

    def __le__(self, other: object) -> bool:
        r = self._ranks(other)
        return NotImplemented if r is None else r[0] <= r[1]

    def __gt__(self, other: object) -> bool:
        r = self._ranks(other)
        return NotImplemented if r is None else r[0] > r[1]

    def __ge__(self, other: object) -> bool:
        r = self._ranks(other)
        return NotImplemented if r is None else r[0] >= r[1]


_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
EVIDENCE_TEXT_MAX = 500


@dataclass
class Finding:
    id: str
    severity: str  # a Severity's value; held as the Severity from here on
    summary: str
    numbers: dict = field(default_factory=dict)
    recommendation: str = ""
    evidence: list[dict] = field(default_factory=list)
    notebook: str = ""  # the owning investigation's notebook (set when the detector runs)
    detector: str = ""
    investigation: str = ""  # the investigation that owns this finding id (set when the detector runs)
    # number key -> (table, pandas query) whose rows that number counts: every count a finding
    # states comes from rows anyone can select again (tests/test_finding_numbers.py recounts them)
    counted_from: dict[str, tuple[str, str]] = field(default_factory=dict)
    # a configuration risk rather than an incident (its investigation declares ``risks``; set when
    # the detector runs): listed after the incident findings
    risk: bool = False
    # how much evidence the finding rests on (set by :func:`triage` from the evidence rows and the
    # rows ``counted_from`` selects; read from the evidence alone when the finding never went
    # through triage): never set by a detector
    extent: Extent | None = None

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"finding id must be kebab-case: {self.id!r}")
        self.severity = Severity.of(self.severity)
        # evidence rows are plain values from here on (None for a missing time, host or line), so
        # every page and terminal that shows them reads what --json prints
        self.evidence = [{str(k): plain(v) for k, v in e.items()} for e in self.evidence]

    def to_dict(self) -> dict:
        """Plain JSON-able dict (the shape ``kitlib triage --json`` prints)."""
        return {
            "id": self.id,
            "severity": str(self.severity),
            "summary": self.summary,
            "numbers": {str(k): plain(v) for k, v in self.numbers.items()},
            "recommendation": self.recommendation,
            "evidence": [{str(k): plain(v) for k, v in e.items()} for e in self.evidence],
            "notebook": self.notebook,
            "detector": self.detector,
            "investigation": self.investigation,
            "counted_from": {k: {"table": t, "query": q} for k, (t, q) in self.counted_from.items()},
            "risk": self.risk,
            "extent": self.rests_on().to_dict(),
        }

    def rests_on(self) -> Extent:
        """How much evidence this finding rests on: what :func:`triage` measured, or (for a finding
        built outside it) what its evidence rows alone show."""
        return self.extent if self.extent is not None else evidence_extent(self)


_EXTENT_COLUMNS = ["file", "line", "host", "ts"]


@dataclass(frozen=True)
class Extent:
    """How much evidence a finding rests on: the distinct rows it cites or counts (``lines`` with a
    file and line, ``other`` without one, such as JMX samples or rows of a describe snapshot), the
    hosts and files they come from, and the time from the first to the last of them.

    Example:
        >>> e = Extent(lines=14, other=0, hosts=("broker-1", "broker-2"), files=3,
        ...            first=pd.Timestamp("2026-11-23 12:40:41Z"), last=pd.Timestamp("2026-11-23 12:43:41Z"))
        >>> e.text()
        'rests on 14 lines from 2 hosts (3 files) over 3 min, 2026-11-23 12:40:41 → 12:43:41 UTC'
        >>> e.to_dict()["span_s"], Extent(1, 0, ("b1",), 1, None, None).text()
        (180.0, 'rests on 1 line from host b1, no time stamp')
    """

    lines: int
    other: int
    hosts: tuple[str, ...]
    files: int
    first: pd.Timestamp | None
    last: pd.Timestamp | None

    @property
    def records(self) -> int:
        return self.lines + self.other

    @property
    def span_s(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        return float((self.last - self.first).total_seconds())

    def to_dict(self) -> dict:
        """The shape ``kitlib triage --json`` prints under ``extent``."""
        return {
            "records": self.records,
            "lines": self.lines,
            "other": self.other,
            "hosts": list(self.hosts),
            "files": self.files,
            "first": plain(self.first),
            "last": plain(self.last),
            "span_s": self.span_s,
        }

    def text(self) -> str:
        """One short line for a reader: ``rests on 14 lines from 2 hosts (3 files) over 3 min, ...``."""

        def n(k: int, word: str) -> str:
            return f"{k:,} {word}{'' if k == 1 else 's'}"

        what = []
        if self.lines or not self.other:
            what.append(n(self.lines, "line"))
        if self.other:
            what.append(n(self.other, "record") + " without a line number")
        out = "rests on " + " and ".join(what)
        if len(self.hosts) == 1:
            out += f" from host {self.hosts[0]}"
        elif self.hosts:
            out += f" from {len(self.hosts)} hosts"
        if self.files > 1:
            out += f" ({self.files} files)"
        span = self.span_s
        if span is None or self.first is None or self.last is None:
            return out + ", no time stamp"
        lo, hi = self.first.tz_convert("UTC"), self.last.tz_convert("UTC")
        if span < 1:
            return out + f", at {_day(lo)} {_clock(lo)} UTC"
        end = _clock(hi) if _day(lo) == _day(hi) else f"{_day(hi)} {_clock(hi)}"
        return out + f" over {_duration(span)}, {_day(lo)} {_clock(lo)} → {end} UTC"


def _day(t: pd.Timestamp) -> str:
    # from the fields, since strftime refuses years before 1
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}"


def _clock(t: pd.Timestamp) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def _duration(secs: float) -> str:
    """A span as a reader says it: ``45 s``, ``3 min``, ``2.5 h``, ``3.0 days``."""
    if secs < 120:
        return f"{secs:.1f} s" if secs < 10 else f"{secs:.0f} s"
    if secs < 7200:
        return f"{secs / 60:.0f} min"
    if secs < 3 * 86400:
        return f"{secs / 3600:.1f} h"
    return f"{secs / 86400:.1f} days"


def extent_rows(f: Finding, bundle=None, masks: dict | None = None) -> pd.DataFrame:
    """The distinct rows ``f`` rests on (file, line, host, ts; ts in UTC): its evidence rows and,
    with ``bundle``, every row its ``counted_from`` queries select. A row with a line number is
    one row per (file, line); one without is one row per (file, host, ts, text). ``masks`` keeps
    each query clause's rows for the next finding that shares it (see :func:`_selected`)."""
    ev = pd.DataFrame(f.evidence, columns=[*_EXTENT_COLUMNS, "text"]) if f.evidence else None
    parts = []
    if ev is not None:
        # a time in evidence is ISO text (what ``plain`` makes of one); a number there is not a time
        is_text = ev["ts"].map(type).eq(str)
        ev["ts"] = pd.to_datetime(ev["ts"].where(is_text), utc=True, errors="coerce", format="ISO8601")
        parts.append(ev)
    if bundle is not None:
        masks = {} if masks is None else masks
        queries: dict[str, list[str]] = {}
        for table, query in f.counted_from.values():
            queries.setdefault(table, []).append(query)
        for table, qs in queries.items():
            frame = _query_frame(bundle, table, qs)
            # a row two of the queries select is one row: their masks joined, its four columns taken once
            mask = np.logical_or.reduce([_selected(frame, table, q, masks) for q in qs])
            if mask.any():
                got = frame.loc[mask, [c for c in _EXTENT_COLUMNS if c in frame.columns]]
                got = got.reindex(columns=_EXTENT_COLUMNS).assign(text=None)
                got["ts"] = pd.to_datetime(got["ts"], utc=True, errors="coerce")
                parts.append(got)
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in [*_EXTENT_COLUMNS, "text"]})
    d = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    d = d.assign(
        file=d["file"].astype("string").fillna(""),
        host=d["host"].astype("string").fillna(""),
        line=_line_numbers(d["line"]),
    )
    has_line = d["line"].notna()
    keyed = d[has_line].drop_duplicates(["file", "line"])
    bare = d[~has_line].astype({"text": "string"}).drop_duplicates(["file", "host", "ts", "text"])
    return pd.concat([keyed, bare], ignore_index=True)


def _query_frame(bundle, table: str, queries: list[str]) -> pd.DataFrame:
    """Table ``table`` of ``bundle`` with at least the columns ``queries`` name and the four an
    extent reads (:meth:`~kitlib.bundle.Bundle.columns`): a big stored table's text is never read
    for a count. The whole table when a query is not plain Python (backticks) or names the index."""
    names = set(_EXTENT_COLUMNS)
    for q in queries:
        try:
            names |= {n.id for n in ast.walk(ast.parse(q.strip(), mode="eval")) if isinstance(n, ast.Name)}
        except SyntaxError:
            return bundle.table(table)
    columns = getattr(bundle, "columns", None)
    if columns is None or "index" in names:
        return bundle.table(table)
    frame = columns(table, sorted(names))
    return bundle.table(table) if frame.index.name is not None and frame.index.name in names else frame


_I64 = np.iinfo(np.int64)


def _line_number(v) -> int | None:
    """One value as a line number: an integral number (or its text) within int64, else None
    (NaN, infinities, ``10**400``, a time, a flag)."""
    if isinstance(v, str):
        try:
            v = float(v) if any(c in v for c in ".eEnN") else int(v)
        except ValueError:
            return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    if isinstance(v, (float, np.floating)) and not (math.isfinite(v) and float(v).is_integer()):
        return None
    return int(v) if _I64.min <= v <= _I64.max else None


def _line_numbers(s: pd.Series) -> pd.Series:
    """``s`` as nullable Int64 line numbers, NA where a value is not one (see :func:`_line_number`).
    A table's integer or float column is converted as a whole; anything else (the values of a
    finding's evidence dicts, a handful of rows) one value at a time."""
    if pd.api.types.is_signed_integer_dtype(s.dtype):
        return s.astype("Int64")
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        ok = np.isfinite(v) & (np.floor(v) == v) & (np.abs(v) < 2.0**63)
        out = pd.Series(pd.array(np.where(ok, v, 0).astype(np.int64), dtype="Int64"), index=s.index)
        return out.mask(~ok)
    return pd.Series([_line_number(v) for v in s], index=s.index, dtype="Int64")


def _conjuncts(query: str) -> list[str]:
    """The clauses a query's top-level ``and`` joins, as text (the whole query when it has none or
    is not Python syntax, such as one with backticks). pandas reads ``and`` as Python does."""
    q = query.strip()
    try:
        body = ast.parse(q, mode="eval").body
    except SyntaxError:
        return [q]
    if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And):
        parts = [ast.get_source_segment(q, v) for v in body.values]
        if all(parts):
            return [p for p in parts if p]
    return [q]


def _row_mask(frame: pd.DataFrame, expr: str) -> pd.Series | None:
    """``frame.eval(expr)`` when that is one flag per row, else None. Given the columns ``expr``
    names only, and the index only when it names that (``DataFrame.eval`` makes a Series of the
    index for every call, a copy of it each time)."""
    try:
        names = {n.id for n in ast.walk(ast.parse(expr.strip(), mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return _checked(frame.eval(expr, engine="python"), frame)
    if names & {"index", frame.index.name}:
        return _checked(frame[[c for c in frame.columns if c in names]].eval(expr, engine="python"), frame)
    columns = {c: frame[c] for c in frame.columns if c in names}
    return _checked(pd.eval(expr, engine="python", parser="pandas", resolvers=(columns,)), frame)


def _checked(m, frame: pd.DataFrame) -> pd.Series | None:
    ok = isinstance(m, pd.Series) and len(m) == len(frame) and pd.api.types.is_bool_dtype(m.dtype)
    return m if ok else None


def _selected(frame: pd.DataFrame, table: str, query: str, masks: dict) -> np.ndarray:
    """Which rows of ``frame`` (table ``table``) ``query`` selects, as ``frame.query(query,
    engine="python")`` does, as a boolean array. Each clause of the query's top-level ``and`` is
    evaluated once per table and kept in ``masks`` for the next query that shares it: one
    detector's findings mostly differ in one clause (the group, the host) and share the others."""
    got: pd.Series | None = None
    for part in _conjuncts(query):
        key = (table, part)
        hit = masks.get(key)
        if hit is None or hit[0] is not frame:
            m = _row_mask(frame, part)
            if m is None:  # a clause that means nothing on its own: the query as a whole
                got = None
                break
            hit = masks[key] = (frame, m)
        got = hit[1] if got is None else got & hit[1]
    if got is None:
        got = _row_mask(frame, query)
    if got is None:  # not a mask at all: the rows the query returns, by position
        picked = frame.reset_index(drop=True).query(query, engine="python").index
        return np.isin(np.arange(len(frame)), picked)
    return got.fillna(False).to_numpy(dtype=bool)


def evidence_extent(f: Finding, bundle=None, masks: dict | None = None) -> Extent:
    """How much evidence ``f`` rests on (:class:`Extent`), from :func:`extent_rows`. The one place
    an extent is measured: :func:`triage` calls it with the bundle for every finding, and one
    ``masks`` for all the findings of a detector."""
    d = extent_rows(f, bundle, masks)
    lines = int(d["line"].notna().sum()) if len(d) else 0
    # the distinct names first, so Python sees each once rather than every row
    hosts = tuple(sorted(str(h) for h in d["host"].unique() if h != "")) if len(d) else ()
    files = sum(1 for x in d["file"].unique() if x != "") if len(d) else 0
    ts = d["ts"].dropna() if len(d) else pd.Series([], dtype=object)
    first = pd.Timestamp(ts.min()) if len(ts) else None
    last = pd.Timestamp(ts.max()) if len(ts) else None
    return Extent(lines, len(d) - lines, hosts, files, first, last)


def plain(v):
    """A finding's value as JSON holds it: None for anything missing (None, NaN, NaT, pd.NA) or
    infinite, ISO-8601 text for times, Python numbers for numpy ones (ints of any size), lists and
    dicts element by element, ``str`` for anything else. ``json.dumps`` takes every result, and
    with ``allow_nan=False``.

    Example:
        >>> [plain(x) for x in (pd.NaT, float("nan"), float("inf"), np.int64(7), pd.Timestamp(0, tz="UTC"))]
        [None, None, None, 7, '1970-01-01T00:00:00+00:00']
    """
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (pd.Timestamp, pd.Timedelta, np.datetime64, np.timedelta64, dt.date, dt.timedelta)):
        if pd.isna(v):
            return None
        try:
            if isinstance(v, np.datetime64):
                v = pd.Timestamp(v)
            elif isinstance(v, (np.timedelta64, dt.timedelta)):
                v = pd.Timedelta(v)
        except (ValueError, OverflowError):  # beyond what pandas holds (year 9999): as numpy prints it
            return str(v)
        return v.isoformat()
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):  # after the times: numpy's timedelta64 is an integer type
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index)):
        return [plain(x) for x in (sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v))]
    return str(v)


def value_text(v) -> str:
    """A finding's value as a reader sees it (terminal, notebook, report): 'unknown' when missing,
    '∞' for infinity, numbers with thousands separators, times to the second in UTC.

    Example:
        >>> [value_text(x) for x in (pd.NaT, None, 1234567, float("-inf"), pd.Timestamp("2026-11-23 10:42:41.5Z"))]
        ['unknown', 'unknown', '1,234,567', '−∞', '2026-11-23 10:42:41 UTC']
    """
    from kitlib.values import number

    if isinstance(v, (float, np.floating)) and math.isinf(v):
        return number(float(v))
    p = plain(v)
    if p is None:
        return "unknown"
    if isinstance(p, (bool, int, float)):
        return number(p)
    if isinstance(v, (pd.Timestamp, np.datetime64, dt.datetime)) and isinstance(p, str):
        try:
            t = pd.Timestamp(p)
        except (ValueError, OverflowError):
            return p
        return f"{t.tz_convert('UTC'):%Y-%m-%d %H:%M:%S} UTC" if t.tzinfo else f"{t:%Y-%m-%d %H:%M:%S}"
    if isinstance(p, list):
        return ", ".join(value_text(x) for x in p)
    return str(p)


def _line(v) -> int | None:
    """An evidence row's line number, None when missing or not a finite number."""
    p = plain(v)
    return int(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None


def _ts_text(v) -> str | None:
    """An evidence row's time as ISO text, None when missing or not a time."""
    p = plain(v)
    return p if isinstance(p, str) else None


def evidence(df: pd.DataFrame, text: str | Callable[[pd.Series], str] = "message", limit: int = 20) -> list[dict]:
    """Turn table rows into evidence dicts (file, line, host, ts, text), at most ``limit``.

    ``text`` names the column to quote, or is a function of the row.

    Example:
        >>> rows = pd.DataFrame({"file": ["b1/server.log"], "line": [7], "message": ["boom"]})
        >>> evidence(rows)[0]["line"]
        7
    """
    head = df.head(limit)
    rows: Iterable
    if callable(text) or head.columns.has_duplicates or not _rows_hold_objects(head):
        rows = (r for _, r in head.iterrows())
    else:
        # the few columns read, each as the objects a row of the frame holds (iterrows makes every
        # column of every row into objects; a big table's rows have many)
        wanted = [c for c in dict.fromkeys(["file", "line", "host", "ts", text]) if c in head.columns]
        values = {c: head[c].to_numpy(dtype=object) for c in wanted}
        rows = ({c: values[c][i] for c in wanted} for i in range(len(head)))
    out = []
    for r in rows:
        t = text(r) if callable(text) else r.get(text, "")
        t = "" if t is None or t is pd.NA else str(t)
        if len(t) > EVIDENCE_TEXT_MAX:
            t = t[:EVIDENCE_TEXT_MAX] + "…"
        out.append(
            {
                "file": str(r.get("file", "")),
                "line": _line(r.get("line")),
                "host": "" if plain(r.get("host")) is None else str(r.get("host")),
                "ts": _ts_text(r.get("ts")),
                "text": t,
            }
        )
    return out


def _rows_hold_objects(df: pd.DataFrame) -> bool:
    """Whether a row of ``df`` (as ``iterrows`` gives it) holds each column's value as the object
    that column gives (``to_numpy(dtype=object)``): columns of several dtypes whose common one is
    ``object``. (A frame of numbers alone makes rows of one number type.)"""
    return len({str(t) for t in df.dtypes}) > 1 and df.iloc[:0].to_numpy().dtype == object


@dataclass(frozen=True)
class Detector:
    name: str
    fn: Callable
    ids: tuple[str, ...]
    checks: str
    needs: tuple[str, ...]
    module: str = ""


def detector(ids: Iterable[str], checks: str, needs: Iterable[str] = ()):
    """Register a detector function. ``ids`` are the finding ids it can raise (each must be
    declared by the investigation whose package holds the function), ``checks`` a one-line
    description shown when nothing is found, ``needs`` the tables it cannot work without: when
    any of them has no rows the detector is skipped, and reported as skipped.

    Example:
        >>> @detector(ids=["demo-x"], checks="demo", needs=["events"])
        ... def demo(bundle):
        ...     return []
        >>> DETECTORS.pop("demo").needs
        ('events',)
    """

    def wrap(fn):
        DETECTORS[fn.__name__] = Detector(fn.__name__, fn, tuple(ids), checks, tuple(needs), fn.__module__)
        return fn

    return wrap


@dataclass(frozen=True)
class DetectorRun:
    """What happened when one detector ran over a bundle."""

    detector: str
    investigation: str
    checks: str
    status: str  # "ok", "skipped" (a needed table has no rows) or "failed"
    findings: int = 0
    reason: str = ""  # why it was skipped, or the error it failed with


@dataclass
class Triage:
    """The outcome of running detectors over a bundle: findings ranked by severity (most severe
    first), and what each detector did."""

    findings: list[Finding]
    runs: list[DetectorRun]

    @property
    def failed(self) -> list[DetectorRun]:
        return [r for r in self.runs if r.status == "failed"]

    @property
    def skipped(self) -> list[DetectorRun]:
        return [r for r in self.runs if r.status == "skipped"]


def triage(bundle, investigations: Iterable[str] | None = None) -> Triage:
    """Run the detectors (of every investigation, or of the ones named) over ``bundle``, a
    :class:`~kitlib.bundle.Bundle` or a path.

    A detector whose needed tables have no rows is skipped; one that raises is reported as failed
    and the others still run; a finding whose id the detector did not declare is dropped and
    reported as a failure of that detector.
    """
    from kitlib import registry
    from kitlib.bundle import Bundle, load_bundle

    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    registry.load()
    wanted = set(investigations) if investigations is not None else None
    found: list[Finding] = []
    runs: list[DetectorRun] = []
    for name, d in sorted(DETECTORS.items()):
        inv = registry.detector_investigation(d)
        inv_name = inv.name if inv else ""
        if wanted is not None and inv_name not in wanted:
            continue
        # counted, not read: a table the detector reads whole is read by the detector itself
        empty = [t for t in d.needs if not _rows(bundle, t)]
        if empty:
            runs.append(DetectorRun(name, inv_name, d.checks, "skipped", reason="no rows in " + ", ".join(empty)))
            continue
        try:
            got = list(d.fn(bundle) or [])
        except Exception as e:  # noqa: BLE001 - a broken detector must not hide the others' results
            runs.append(DetectorRun(name, inv_name, d.checks, "failed", reason=f"{type(e).__name__}: {e}"))
            continue
        stray = sorted({f.id for f in got if f.id not in d.ids})
        got = [f for f in got if f.id in d.ids]
        try:
            # what each finding rests on, measured here for every detector alike
            masks: dict = {}
            extents = [evidence_extent(f, bundle, masks) for f in got]
        except Exception as e:  # noqa: BLE001 - a count that names no rows is the detector's failure
            runs.append(DetectorRun(name, inv_name, d.checks, "failed", reason=f"{type(e).__name__}: {e}"))
            continue
        for f, ext in zip(got, extents):
            f.detector = f.detector or name
            f.investigation = inv_name
            f.notebook = inv.notebook if inv else ""
            f.risk = bool(inv and inv.risks)
            f.extent = ext
        found.extend(got)
        runs.append(
            DetectorRun(
                name,
                inv_name,
                d.checks,
                "failed" if stray else "ok",
                len(got),
                f"emitted undeclared finding ids {stray}" if stray else "",
            )
        )
    # incidents first, then configuration risks, each most severe first
    found.sort(key=lambda f: (f.risk, Severity.rank_of(f.severity), f.id))
    return Triage(found, runs)


def _rows(bundle, name: str) -> int:
    rows = getattr(bundle, "rows", None)
    return int(rows(name)) if callable(rows) else len(bundle.table(name))


def triage_text(result: Triage, summary_text: str = "") -> str:
    """The findings as ``kitlib triage`` prints them: ranked, each with id, summary, key numbers,
    recommended change, the notebook to open and evidence (file:line). A bundle with no findings
    says what was checked. ``summary_text`` (what the bundle holds) goes first."""
    from kitlib.terminal import one_line

    out = [summary_text, ""] if summary_text else []
    if not result.findings:
        out.append("No findings. Checked:")
        for r in result.runs:
            line = f"  - {r.detector}: {r.checks}"
            if r.status != "ok":
                line += f"  [{r.status}: {r.reason}]"
            out.append(line)
        return "\n".join(out)
    risks = sum(f.risk for f in result.findings)
    incidents = len(result.findings) - risks
    if incidents:
        out.append(f"{incidents} finding(s), most severe first:")
    for i, f in enumerate(result.findings, 1):
        if f.risk and i == incidents + 1:
            out.append(
                ("\n" if incidents else "") + f"Risks: {risks} configuration risk(s), not incidents, most severe first:"
            )
        out.append(f"\n{i}. [{f.severity.upper()}] {f.id}: {f.summary}")
        out.append(f"   {f.rests_on().text()}")
        for k, v in f.numbers.items():
            out.append(f"     {k} = {value_text(v)}")
        if f.recommendation:
            out.append(f"   fix: {f.recommendation}")
        if f.notebook:
            out.append(f"   open: notebook {f.notebook} ({f.investigation})")
        for e in f.evidence[:5]:
            text = (e.get("text") or "").splitlines()[0][:160] if e.get("text") else ""
            out.append(f"   evidence {one_line(e['file'])}:{e['line']}  {text}")
        if len(f.evidence) > 5:
            out.append(f"   ... {len(f.evidence) - 5} more evidence rows (--json shows all)")
    for r in result.failed:
        out.append(f"\ndetector {r.detector} failed: {r.reason}")
    if result.skipped:
        out.append(
            "\nskipped (their tables have no rows): " + ", ".join(f"{r.detector} ({r.reason})" for r in result.skipped)
        )
    return "\n".join(out)
