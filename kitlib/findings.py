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

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pandas as pd

from kitlib.registry import DETECTORS

SEVERITIES = ("critical", "high", "medium", "low", "info")
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
EVIDENCE_TEXT_MAX = 500


@dataclass
class Finding:
    id: str
    severity: str
    summary: str
    numbers: dict = field(default_factory=dict)
    recommendation: str = ""
    evidence: list[dict] = field(default_factory=list)
    notebook: str = ""  # the owning investigation's notebook (set when the detector runs)
    detector: str = ""
    investigation: str = ""  # the investigation that owns this finding id (set when the detector runs)

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"finding id must be kebab-case: {self.id!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}: {self.severity!r}")

    def to_dict(self) -> dict:
        """Plain JSON-able dict (the shape ``kitlib triage --json`` prints)."""
        return {
            "id": self.id,
            "severity": self.severity,
            "summary": self.summary,
            "numbers": {k: _plain(v) for k, v in self.numbers.items()},
            "recommendation": self.recommendation,
            "evidence": [{k: _plain(v) for k, v in e.items()} for e in self.evidence],
            "notebook": self.notebook,
            "detector": self.detector,
            "investigation": self.investigation,
        }


def _plain(v):
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        try:
            return v.item()
        except (ValueError, AttributeError):
            pass
    if v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return v


def evidence(df: pd.DataFrame, text: str | Callable[[pd.Series], str] = "message", limit: int = 20) -> list[dict]:
    """Turn table rows into evidence dicts (file, line, host, ts, text), at most ``limit``.

    ``text`` names the column to quote, or is a function of the row.

    Example:
        >>> rows = pd.DataFrame({"file": ["b1/server.log"], "line": [7], "message": ["boom"]})
        >>> evidence(rows)[0]["line"]
        7
    """
    out = []
    for _, r in df.head(limit).iterrows():
        t = text(r) if callable(text) else r.get(text, "")
        t = "" if t is None or t is pd.NA else str(t)
        if len(t) > EVIDENCE_TEXT_MAX:
            t = t[:EVIDENCE_TEXT_MAX] + "…"
        out.append(
            {
                "file": str(r.get("file", "")),
                "line": None if pd.isna(r.get("line", pd.NA)) else int(r.get("line")),
                "host": "" if pd.isna(r.get("host", pd.NA)) else str(r.get("host")),
                "ts": None if pd.isna(r.get("ts", pd.NaT)) else pd.Timestamp(r.get("ts")).isoformat(),
                "text": t,
            }
        )
    return out


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
        empty = [t for t in d.needs if not len(bundle.table(t))]
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
        for f in got:
            f.detector = f.detector or name
            f.investigation = inv_name
            f.notebook = inv.notebook if inv else ""
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
    found.sort(key=lambda f: (SEVERITIES.index(f.severity), f.id))
    return Triage(found, runs)


def triage_text(result: Triage, summary_text: str = "") -> str:
    """The findings as ``kitlib triage`` prints them: ranked, each with id, summary, key numbers,
    recommended change, the notebook to open and evidence (file:line). A bundle with no findings
    says what was checked. ``summary_text`` (what the bundle holds) goes first."""
    out = [summary_text, ""] if summary_text else []
    if not result.findings:
        out.append("No findings. Checked:")
        for r in result.runs:
            line = f"  - {r.detector}: {r.checks}"
            if r.status != "ok":
                line += f"  [{r.status}: {r.reason}]"
            out.append(line)
        return "\n".join(out)
    out.append(f"{len(result.findings)} finding(s), most severe first:")
    for i, f in enumerate(result.findings, 1):
        out.append(f"\n{i}. [{f.severity.upper()}] {f.id}: {f.summary}")
        for k, v in f.numbers.items():
            out.append(f"     {k} = {v}")
        if f.recommendation:
            out.append(f"   fix: {f.recommendation}")
        if f.notebook:
            out.append(f"   open: notebook {f.notebook} ({f.investigation})")
        for e in f.evidence[:5]:
            text = (e.get("text") or "").splitlines()[0][:160] if e.get("text") else ""
            out.append(f"   evidence {e['file']}:{e['line']}  {text}")
        if len(f.evidence) > 5:
            out.append(f"   ... {len(f.evidence) - 5} more evidence rows (--json shows all)")
    for r in result.failed:
        out.append(f"\ndetector {r.detector} failed: {r.reason}")
    if result.skipped:
        out.append(
            "\nskipped (their tables have no rows): " + ", ".join(f"{r.detector} ({r.reason})" for r in result.skipped)
        )
    return "\n".join(out)
