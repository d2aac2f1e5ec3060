"""The summary page of a bundle's report: what happened, when, where, the findings ranked by
severity with their fix, and an evidence appendix quoting the cited lines (:mod:`.evidence`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kitlib.findings import Severity
from kitlib.report.evidence import cited_lines, line_number

EVIDENCE_PER_FINDING = 10  # cited lines quoted per finding in the appendix


def span_text(time_span) -> str:
    """``2024-05-22 00:00:01 → 00:01:03 UTC (62 s)`` from a summary's ISO time span.

    Example:
        >>> span_text(["2024-05-22T00:00:01+00:00", "2024-05-23T01:00:00+00:00"])
        '2024-05-22 00:00:01 → 2024-05-23 01:00:00 UTC (25.0 h)'
        >>> span_text(None)
        'no timestamps in the bundle'
    """
    import pandas as pd

    if not time_span:
        return "no timestamps in the bundle"
    lo, hi = (pd.Timestamp(t) for t in time_span[:2])
    lo = lo.tz_localize("UTC") if lo.tzinfo is None else lo.tz_convert("UTC")
    hi = hi.tz_localize("UTC") if hi.tzinfo is None else hi.tz_convert("UTC")
    secs = (hi - lo).total_seconds()
    dur = (
        f"{secs:.0f} s"
        if secs < 120
        else f"{secs / 60:.0f} min"
        if secs < 7200
        else f"{secs / 3600:.1f} h"
        if secs < 3 * 86400
        else f"{secs / 86400:.1f} days"
    )
    end = f"{hi:%H:%M:%S}" if lo.date() == hi.date() else f"{hi:%Y-%m-%d %H:%M:%S}"
    return f"{lo:%Y-%m-%d %H:%M:%S} → {end} UTC ({dur})"


def summary_view(plan, runs: list[dict]) -> dict:
    """Everything the summary template shows, as plain values: ``plan`` is the bundle's
    :class:`kitlib.report.run.BundleReport` (its summary, triage, bundle path and link up), ``runs``
    its notebooks' statuses."""
    from kitlib.findings import value_text

    # incidents first, then configuration risks (a risk never heads the page over an outage)
    s, findings = plan.summary, sorted(plan.triage.findings, key=lambda f: (f.risk, Severity.rank_of(f.severity)))
    pages = {r["notebook"]: r for r in runs}
    lines = cited_lines(plan.bundle_path, [e for f in findings for e in f.evidence[:EVIDENCE_PER_FINDING]])
    fviews = []
    first_risk = next((f for f in findings if f.risk), None)
    seen: dict[str, int] = {}
    for f in findings:
        seen[f.id] = seen.get(f.id, 0) + 1  # one id may name several findings: each its own anchor
        anchor = f.id if seen[f.id] == 1 else f"{f.id}--{seen[f.id]}"
        page = pages.get(Path(f.notebook).name) if f.notebook else None
        ev = []
        for e in f.evidence[:EVIDENCE_PER_FINDING]:
            key = (str(e.get("file") or ""), line_number(e.get("line")))
            got = lines.get(key)
            ev.append(
                {
                    "host": e.get("host") or "",
                    "where": f"{key[0]}:{key[1]}" if key[1] else key[0],
                    "ts": _short_ts(e.get("ts")),
                    "text": got[1] if got else (e.get("text") or ""),
                    "before": got[0] if got else [],
                    "after": got[2] if got else [],
                    "quoted": e.get("text") or "",
                }
            )
        fviews.append(
            {
                "id": f.id,
                "anchor": anchor,
                "severity": f.severity,
                "summary": f.summary,
                "recommendation": f.recommendation,
                "numbers": [(k, value_text(v)) for k, v in f.numbers.items()],
                "extent": f.rests_on().text(),
                "page": page,
                "evidence": ev,
                "more": max(0, len(f.evidence) - EVIDENCE_PER_FINDING),
                "risk": f.risk,
                "first_risk": f is first_risk,
            }
        )
    runs_ = plan.triage.runs
    worst = findings[0].severity if findings else "none"
    if findings:
        more = f" (and {len(findings) - 1} more finding{'s' if len(findings) > 2 else ''})" if len(findings) > 1 else ""
        headline = f"{findings[0].severity.capitalize()}: {findings[0].summary}{more}"
    else:
        ran = sum(r.status == "ok" for r in runs_)
        headline = f"No problem found: {ran} checks ran on this bundle and none fired."
    return {
        "bundle": plan.bundle_path.name,
        "up_href": plan.up_href,
        "headline": headline,
        "worst": worst,
        "span": span_text(s.time_span),
        "hosts": list(s.hosts),
        "hosts_text": f"{len(s.hosts)} host{'s' if len(s.hosts) != 1 else ''}: " + ", ".join(s.hosts)
        if s.hosts
        else "no hosts",
        "files_text": f"{s.files} files ({s.bytes:,} bytes)",
        "formats_text": ", ".join(f"{k} ({v})" for k, v in s.formats.items()) or "–",
        "unparsed": f"{s.unparsed_lines:,}",
        "errors": list(s.errors),
        "findings": fviews,
        "pages": runs,
        "checked_text": "Checked: " + "; ".join(r.checks for r in runs_ if r.status == "ok"),
        "checks": [
            {"investigation": r.investigation, "checks": r.checks, "status": r.status, "reason": r.reason}
            for r in runs_
        ],
        "checks_ok": sum(r.status == "ok" for r in runs_),
        "checks_skipped": sum(r.status == "skipped" for r in runs_),
        "checks_failed": sum(r.status == "failed" for r in runs_),
        "changes_html": _changes_html(plan, findings),
    }


def _changes_html(plan, findings) -> str:
    """The summary page's "what else changed" block (:mod:`kitlib.display.changes`), on the whole
    stored bundle: the pinned view's window when there is one, else the findings' span, else the
    span found; '' for a plan without stored tables. The block :func:`kitlib.report.run.prepare`
    made with the triage when it has one. Escaped here; redacted with the whole page."""
    made = getattr(plan, "changes", None)
    if made is not None:
        return made.html
    tables = getattr(plan, "tables", None)
    if tables is None or not Path(tables).is_dir():
        return ""
    return changes_for(Path(tables), getattr(plan, "pinned", None) or {}, findings).html


def changes_for(tables: Path, pinned: dict, findings) -> Any:
    """The summary page's "what else changed" block (:mod:`kitlib.display.changes`), on the whole
    stored bundle (its pinned hosts, when a view pins them): the pinned view's window when there is
    one, else the findings' span, else the span found. A comparison that fails gives a line saying
    so: the block must not take the summary page down."""
    import kitlib
    from kitlib.display import esc
    from kitlib.display.changes import changes_block
    from kitlib.display.markup import HTML
    from kitlib.params import as_list

    try:
        whole = kitlib.load(tables)
        if pinned.get("HOSTS"):
            whole = kitlib.window(whole, None, None, as_list(pinned["HOSTS"]))
        return changes_block(whole, findings, pinned.get("START"), pinned.get("END"), heading=None)
    except Exception as e:  # noqa: BLE001
        text = f"The changes in the window could not be compared: {type(e).__name__}: {e}"
        return HTML(f"<p class='kit-muted'>{esc(text)}</p>", text)


def _short_ts(ts) -> str:
    return str(ts).replace("T", " ")[:23] if ts else ""
