"""Findings and the detector registry.

A finding is what a detector concludes about a bundle: a stable kebab-case ``id``, a
severity, a one-line summary, the key numbers, the recommended change, and the evidence rows
(file and line) it rests on. Detectors are plain functions ``fn(bundle) -> list[Finding]``
registered with :func:`detector`; they return ``[]`` on a healthy bundle. :func:`triage` runs
them over a bundle and measures what each finding rests on (:mod:`kitlib.findings.extent`); its
values are held and shown as :mod:`kitlib.findings.values` says.

Example:
    >>> f = Finding("demo-finding", "low", "one line", recommendation="do X")
    >>> f.to_dict()["id"]
    'demo-finding'
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pandas as pd

from kitlib.findings import lanes
from kitlib.findings.extent import Extent, evidence_extent
from kitlib.findings.values import plain, value_text
from kitlib.ingestion.memory import release_memory
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
    # the tables it reads besides ``needs`` (itself or through the models it asks for): a table
    # read in a triage is let go after the last detector naming it (see :func:`triage`)
    reads: tuple[str, ...] = ()


def detector(ids: Iterable[str], checks: str, needs: Iterable[str] = (), reads: Iterable[str] = ()):
    """Register a detector function. ``ids`` are the finding ids it can raise (each must be
    declared by the investigation whose package holds the function), ``checks`` a one-line
    description shown when nothing is found, ``needs`` the tables it cannot work without: when
    any of them has no rows the detector is skipped, and reported as skipped. ``reads`` names the
    other tables it reads (directly or through a model): :func:`triage` lets a table go once no
    detector still to run names it, so a triage holds the tables of one detector at a time rather
    than every table any detector read (a detector reading one it does not name reads it again).

    Example:
        >>> @detector(ids=["demo-x"], checks="demo", needs=["events"])
        ... def demo(bundle):
        ...     return []
        >>> DETECTORS.pop("demo").needs
        ('events',)
    """

    def wrap(fn):
        DETECTORS[fn.__name__] = Detector(
            fn.__name__, fn, tuple(ids), checks, tuple(needs), fn.__module__, tuple(reads)
        )
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


def triage(bundle, investigations: Iterable[str] | None = None, jobs: int = 1) -> Triage:
    """Run the detectors (of every investigation, or of the ones named) over ``bundle``, a
    :class:`~kitlib.bundle.Bundle` or a path. With ``jobs`` 2 or more (and a second core), they
    run in two processes, an investigation's detectors in one (:mod:`kitlib.findings.lanes`):
    the same findings in the same order, sooner.

    A detector whose needed tables have no rows is skipped; one that raises is reported as failed
    and the others still run; a finding whose id the detector did not declare is dropped and
    reported as a failure of that detector.

    A table the triage read from an ingest output is let go (:meth:`~kitlib.bundle.Bundle.let_go`)
    after the last detector that needs or reads it, so what the triage holds at its peak is what
    one detector reads, not the sum of them; tables read before the triage are kept.
    """
    from kitlib import registry
    from kitlib.bundle import Bundle, load_bundle

    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    registry.load()
    wanted = set(investigations) if investigations is not None else None
    found: list[Finding] = []
    runs: list[DetectorRun] = []
    order = []
    for name, d in sorted(DETECTORS.items()):
        inv = registry.detector_investigation(d)
        if wanted is None or (inv.name if inv else "") in wanted:
            order.append((name, d, inv))
    held = set(bundle.tables) | {key[0] for key in bundle.parts}
    if lanes.usable(jobs):
        # the tables an ingest output's first reader derives from its events are built here, once,
        # before the second process is forked: the two had each built them all when their first
        # units asked (on the dense incident's plain ingest output, about 1.0 GB at the peak for
        # the two builds at once)
        bundle.derive_ahead({t for _, d, _ in order for t in (*d.needs, *d.reads)})
        _triage_in_lanes(bundle, order, held, found, runs)
        found.sort(key=lambda f: (f.risk, Severity.rank_of(f.severity), f.id))
        return Triage(found, runs)
    last = {t: i for i, (_, d, _) in enumerate(order) for t in (*d.needs, *d.reads) if t not in held}
    for i, (name, d, inv) in enumerate(order):
        try:
            _run(bundle, name, d, inv, found, runs)
        finally:
            _let_go(bundle, [t for t, at in last.items() if at == i])
    # incidents first, then configuration risks, each most severe first
    found.sort(key=lambda f: (f.risk, Severity.rank_of(f.severity), f.id))
    return Triage(found, runs)


def _triage_in_lanes(bundle, order: list, held: set, found: list[Finding], runs: list[DetectorRun]) -> None:
    """:func:`triage`'s detectors (``order``) in two processes, detectors that name a table in
    common in one (what they share, a table or a model of it, is read once): their findings and
    runs onto ``found`` and ``runs`` in ``order``'s order. A table is named by one unit only, and
    its process lets it go after the last detector naming it, as one process does. The units are
    handed out those with the most stored rows first, so a process meets the biggest tables
    before memory let go by other units is still held, and the longest unit starts first."""
    # a table with no rows shares nothing: it does not put the detectors naming it in one unit (on
    # the dense incident the transactions' detector had joined the cluster's through an empty
    # metrics table, and that process ran a second longer than the other)
    named = {t for _, d, _ in order for t in (*d.needs, *d.reads)}
    empty = {t for t in named if not _has_rows(bundle, t)}
    members = _units([tuple(t for t in (*d.needs, *d.reads) if t not in empty) for _, d, _ in order])
    last = {t: i for i, (_, d, _) in enumerate(order) for t in (*d.needs, *d.reads) if t not in held}

    def run_unit(u: int) -> dict[int, tuple[list[Finding], list[DetectorRun]]]:
        got: dict[int, tuple[list[Finding], list[DetectorRun]]] = {}
        for i in members[u]:
            name, d, inv = order[i]
            got[i] = ([], [])
            try:
                _run(bundle, name, d, inv, *got[i], apart=True)
            finally:
                _let_go(bundle, [t for t, at in last.items() if at == i])
        return got

    handed = _heaviest_first(
        bundle, [{t for i in at for t in (*order[i][1].needs, *order[i][1].reads)} for at in members]
    )
    every: dict[int, tuple[list[Finding], list[DetectorRun]]] = {}
    for got in lanes.run_units([members[u] for u in handed], lambda k: run_unit(handed[k])):
        every.update(got)
    for i in range(len(order)):
        found.extend(every[i][0])
        runs.extend(every[i][1])


def _let_go(bundle, names: list[str]) -> None:
    """Let go of tables ``names`` after their last detector; when any was held, what their rows
    took is given back to the system, so that the next detectors' peak does not land on top of
    it (the dense incident's partition changes and node events: about 100 MB the transactions'
    detector met still held)."""
    gone = [bundle.let_go(t) for t in sorted(names)]
    if any(gone):
        release_memory()


def _heaviest_first(bundle, names: list[set[str]]) -> list[int]:
    """The positions of ``names`` (each unit's tables), the unit whose tables have the most rows
    stored first (a table neither stored nor held counts none: nothing is read or built for it);
    units of equal weight in their order."""
    stored = getattr(bundle, "stored_rows", None)
    weight = {t: stored(t) if callable(stored) else 0 for ts in names for t in ts}
    return sorted(range(len(names)), key=lambda u: -sum(weight[t] for t in names[u]))


def _units(names: list[tuple[str, ...]]) -> list[list[int]]:
    """The detectors (positions of ``names``, each detector's tables) in units: two that name a
    table in common are in one unit. Each unit in order, the units in the order of their first.

    Example:
        >>> _units([("a",), (), ("b", "c"), ("a", "c"), ("d",)])
        [[0, 2, 3], [1], [4]]
    """
    root = list(range(len(names)))

    def top(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    first: dict[str, int] = {}
    for i, ts in enumerate(names):
        for t in ts:
            j = first.setdefault(t, i)
            a, b = top(i), top(j)
            root[max(a, b)] = min(a, b)
    units: dict[int, list[int]] = {}
    for i in range(len(names)):
        units.setdefault(top(i), []).append(i)
    return list(units.values())


def _run(
    bundle, name: str, d: Detector, inv, found: list[Finding], runs: list[DetectorRun], apart: bool = False
) -> None:
    """Run detector ``d`` over ``bundle`` for :func:`triage`: its findings (with what each rests on)
    onto ``found``, what it did onto ``runs``. ``apart`` (a triage in two processes): the extents
    of many findings are measured in two (:func:`_extents`)."""
    inv_name = inv.name if inv else ""
    # counted, not read: a table the detector reads whole is read by the detector itself
    empty = [t for t in d.needs if not _rows(bundle, t)]
    if empty:
        runs.append(DetectorRun(name, inv_name, d.checks, "skipped", reason="no rows in " + ", ".join(empty)))
        return
    try:
        got = list(d.fn(bundle) or [])
    except Exception as e:  # noqa: BLE001 - a broken detector must not hide the others' results
        runs.append(DetectorRun(name, inv_name, d.checks, "failed", reason=f"{type(e).__name__}: {e}"))
        return
    stray = sorted({f.id for f in got if f.id not in d.ids})
    got = [f for f in got if f.id in d.ids]
    counts = any(f.counted_from for f in got)
    if counts:
        # what the detector let go back to the system first: the extents read the tables the
        # counts name, and their arrays landed on top of the detector's freed memory (the dense
        # incident's rebalance storm: 40 MB above its own peak)
        release_memory()
    try:
        # what each finding rests on, measured here for every detector alike
        extents = _extents(got, bundle, apart)
    except Exception as e:  # noqa: BLE001 - a count that names no rows is the detector's failure
        runs.append(DetectorRun(name, inv_name, d.checks, "failed", reason=f"{type(e).__name__}: {e}"))
        return
    if counts:  # and theirs, before the next detector (which met them held in the heap's holes)
        release_memory()
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


# a detector's findings at least this many, in a triage in two processes: their extents are
# measured in two, in this many pieces (handed out as the units are). The consumer groups'
# rebalance storms of the 1 GB mix (40 findings, 0.9 CPU-s of extents) ran last, in one process,
# while the other one had run out of units.
EXTENTS_APART = 8
EXTENT_PIECES = 4
# how long a process measuring extents waits for the other: a second one that is silent this long
# is stopped, and its pieces measured in the first
EXTENT_PATIENCE_S = 30.0


def _extents(got: list[Finding], bundle, apart: bool) -> list[Extent]:
    """:func:`evidence_extent` of each finding of ``got`` (one detector's), in order; ``apart``,
    and at least :data:`EXTENTS_APART` of them: measured in this process and a fork of it
    (:func:`kitlib.findings.lanes.run_units`), each process keeping its own masks. The extents
    are the same either way: each finding's is measured on its own."""
    masks: dict = {}
    if not apart or len(got) < EXTENTS_APART or not lanes.usable(2):
        return [evidence_extent(f, bundle, masks) for f in got]
    step = -(-len(got) // EXTENT_PIECES)
    pieces = [got[i : i + step] for i in range(0, len(got), step)]
    measured = lanes.run_units(
        pieces, lambda k: [evidence_extent(f, bundle, masks) for f in pieces[k]], patience=EXTENT_PATIENCE_S
    )
    return [e for piece in measured for e in piece]


def _has_rows(bundle, name: str) -> bool:
    """Whether table ``name`` has a row (True when that cannot be told)."""
    try:
        return _rows(bundle, name) > 0
    except Exception:  # noqa: BLE001 - a table that cannot be counted is taken to have rows
        return True


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
