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
from dataclasses import dataclass, field
from typing import Callable, Iterable

import pandas as pd

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
    notebook: str = ""  # which investigation notebook to open next
    detector: str = ""

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
        }

    def evidence_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.evidence, columns=["file", "line", "host", "ts", "text"])


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
        out.append({
            "file": str(r.get("file", "")),
            "line": None if pd.isna(r.get("line", pd.NA)) else int(r.get("line")),
            "host": "" if pd.isna(r.get("host", pd.NA)) else str(r.get("host")),
            "ts": None if pd.isna(r.get("ts", pd.NaT)) else pd.Timestamp(r.get("ts")).isoformat(),
            "text": t,
        })
    return out


@dataclass
class Detector:
    name: str
    fn: Callable
    ids: tuple[str, ...]
    checks: str
    needs: tuple[str, ...]


DETECTORS: dict[str, Detector] = {}


def detector(ids: Iterable[str], checks: str, needs: Iterable[str] = ()):
    """Register a detector function. ``ids`` are the finding ids it can raise, ``checks`` a
    one-line description shown when nothing is found, ``needs`` the tables it reads.

    Example:
        >>> @detector(ids=["demo-x"], checks="demo", needs=["events"])
        ... def demo(bundle):
        ...     return []
        >>> "demo" in DETECTORS
        True
    """
    def wrap(fn):
        DETECTORS[fn.__name__] = Detector(fn.__name__, fn, tuple(ids), checks, tuple(needs))
        return fn
    return wrap


def run_detectors(bundle, only: Iterable[str] | None = None) -> tuple[list[Finding], list[dict]]:
    """Run every registered detector over ``bundle``.

    Returns (findings ranked by severity, a list of what was checked with per-detector status).
    A detector that raises is reported in the checks list; the others still run.
    """
    import kitlib.analysis  # noqa: F401  (registers every detector)

    findings: list[Finding] = []
    checked = []
    for name, d in sorted(DETECTORS.items()):
        if only and name not in only:
            continue
        try:
            got = d.fn(bundle) or []
            for f in got:
                f.detector = f.detector or name
            findings.extend(got)
            checked.append({"detector": name, "checks": d.checks, "findings": len(got), "error": ""})
        except Exception as e:  # a broken detector must not hide the others' results
            checked.append({"detector": name, "checks": d.checks, "findings": 0,
                            "error": f"{type(e).__name__}: {e}"})
    findings.sort(key=lambda f: (SEVERITIES.index(f.severity), f.id))
    return findings, checked


def findings_frame(findings: list[Finding]) -> pd.DataFrame:
    """One row per finding, for display."""
    return pd.DataFrame([
        {"severity": f.severity, "id": f.id, "summary": f.summary,
         "recommendation": f.recommendation,
         "evidence": ", ".join(f"{e['file']}:{e['line']}" for e in f.evidence[:5])}
        for f in findings
    ], columns=["severity", "id", "summary", "recommendation", "evidence"])
