"""What else changed in a window, under the findings: the top rows of
:func:`kitlib.changes.changes` as one HTML block for the triage notebook, the investigation
notebooks and the report's summary page (static HTML, every log text escaped and redacted).

The window is the one asked for (a notebook's START/END, a report's pinned view); else the span of
the incident findings' evidence (the first to the last record they rest on); else the span found
where the log departs most from the rest, and the block says which and why. With nothing beyond
chance the block is one line.

Example:
    >>> from kitlib.display.changes import findings_window
    >>> findings_window([]) is None
    True
"""

from __future__ import annotations

import pandas as pd

from kitlib.changes import ALPHA, Changes, changes
from kitlib.display.markup import HTML, esc
from kitlib.redact import redact_text

HEADING = "What else changed in this window"
ROWS = 10
CHANGES_CLASS = "kit-changes"
QUIET_CLASS = "kit-changes-quiet"
PAD = pd.Timedelta(seconds=1)  # a window ends after its last record


def findings_window(findings) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The span of the incident findings' evidence (configuration risks left out): from the first
    record any of them rests on to one second after the last; None without timed evidence."""
    lo: pd.Timestamp | None = None
    hi: pd.Timestamp | None = None
    for f in findings:
        if getattr(f, "risk", False):
            continue
        ext = f.rests_on()
        if ext.first is None or ext.last is None:
            continue
        lo = ext.first if lo is None else min(lo, ext.first)
        hi = ext.last if hi is None else max(hi, ext.last)
    if lo is None or hi is None:
        return None
    return _utc(lo), _utc(hi) + PAD


def _utc(t) -> pd.Timestamp:
    t = pd.Timestamp(t)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def what_changed(bundle, findings=(), start=None, end=None, top: int = ROWS, **kw) -> tuple[Changes, str]:
    """The changes for the block and why its window was taken: ``start``/``end`` when given (an
    open end is the bundle's), else the findings' span (:func:`findings_window`), else the span
    found in the log. ``bundle`` is the whole bundle (the baseline is the rest of it); ``kw`` goes
    to :func:`kitlib.changes.changes` (``loggers``, ``investigation``)."""
    if start is not None or end is not None:
        span = bundle.span()
        lo = _utc(start) if start is not None else (span[0] if span else None)
        hi = _utc(end) if end is not None else (span[1] + PAD if span else None)
        if lo is not None and hi is not None and hi > lo:
            return changes(bundle, (lo, hi), top=top, **kw), "the window asked for (START and END)"
    got = findings_window(findings)
    if got is not None:
        return changes(bundle, got, top=top, **kw), "the span of the findings' evidence (first to last record cited)"
    res = changes(bundle, None, top=top, **kw)
    return res, f"no window was given and no finding has one, so it was found: {res.found_by}"


def _when(t, day: str) -> str:
    if t is None or pd.isna(t):
        return ""
    t = _utc(t)
    return f"{t:%H:%M:%S}.{t.microsecond // 1000:03d}" if f"{t:%Y-%m-%d}" == day else f"{t:%Y-%m-%d %H:%M:%S}"


def _span(res: Changes) -> str:
    lo, hi = res.window
    end = f"{hi:%H:%M:%S}" if lo.date() == hi.date() else f"{hi:%Y-%m-%d %H:%M:%S}"
    secs = (hi - lo).total_seconds()
    dur = (
        f"{secs * 1000:.0f} ms"
        if secs < 1
        else f"{secs:.0f} s"
        if secs < 120
        else f"{secs / 60:.0f} min"
        if secs < 7200
        else f"{secs / 3600:.1f} h"
    )
    return f"{lo:%Y-%m-%d %H:%M:%S} → {end} UTC ({dur})"


def _clean(text) -> str:
    """Log text as a reader may see it: secrets masked, then escaped."""
    return esc(redact_text("" if text is None else str(text)))


def changes_html(res: Changes, why: str = "", rows: int = ROWS, heading: str | None = HEADING) -> HTML:
    """The top ``rows`` changes as an HTML block: per row its kind, template, logger, level,
    counts in the window and the baseline, hosts, first and last time in the window, the slot
    values that changed most and one example line with its file:line; one line when nothing
    changed beyond chance."""
    base = f"{res.baseline[0]:%Y-%m-%d %H:%M:%S} → {res.baseline[1]:%H:%M:%S} UTC" if res.baseline else "the rest"
    head = f"<h4>{esc(heading)}</h4>" if heading else ""
    intro = (
        f"<p class='kit-changes-window'>Window {esc(_span(res))}"
        + (f": {esc(why)}" if why else "")
        + f". Compared with {esc(base)} of the bundle: {res.records[0]:,} records in the window, "
        f"{res.records[1]:,} in the baseline.</p>"
    )
    if res.context:
        intro += (
            "<p class='kit-changes-lifecycle'>Lifecycle steps, context rather than changes"
            + (" (compared like the other records)" if res.lifecycle_included else " (set aside from the test)")
            + f": {_clean('; '.join(res.context))}.</p>"
        )
    test = (
        f"each Kafka log statement (other lines by their pattern) is tested for its share of the log in the "
        f"window: G test, beyond chance when G > {res.threshold:.1f} (alpha {ALPHA} over {res.tested} statements; "
        "where a side expects under five records, the exact binomial tail decides too)"
    )
    if not len(res.overall):
        text = f"Nothing else changed beyond chance in this window: {test}."
        return HTML(
            f"<div class='{CHANGES_CLASS}'>{head}{intro}<p class='{QUIET_CLASS}'>{esc(text)}</p></div>",
            f"{heading}: {text}" if heading else text,
        )
    day = f"{res.window[0]:%Y-%m-%d}"
    body, lines = [], []
    for r in res.overall.head(rows).itertuples():
        hosts = ", ".join(f"{h} ({n:,})" for h, n in list(r.hosts.items())[:4])
        if len(r.hosts) > 4:
            hosts += f", +{len(r.hosts) - 4} more"
        vals = "; ".join(f"slot {v['slot']} = {v['value']} ({v['window']} vs {v['baseline']})" for v in r.values)
        example = r.examples[0] if r.examples else ""
        where, _, said = example.partition(": ")
        body.append(
            f"<tr data-kind='{esc(r.kind)}'><td><b>{esc(r.kind)}</b></td>"
            f"<td><code class='kit-template'>{_clean(r.template)}</code>"
            + (f"<div class='kit-changes-values'>{_clean(vals)}</div>" if vals else "")
            + (
                f"<div class='kit-changes-example'><code>{esc(where)}</code>"
                f"<pre style='white-space:pre-wrap;overflow-wrap:anywhere;margin:0'>{_clean(said)}</pre></div>"
                if example
                else ""
            )
            + f"</td><td class='kit-changes-logger' style='overflow-wrap:anywhere'>{esc(r.logger)}</td>"
            f"<td>{esc(r.level)}</td>"
            f"<td style='text-align:right'>{r.window:,}</td><td style='text-align:right'>{r.baseline:,}</td>"
            f"<td>{esc(hosts)}</td><td>{esc(_when(r.first, day))}</td><td>{esc(_when(r.last, day))}</td></tr>"
        )
        lines.append(f"{r.kind.upper():5} {redact_text(str(r.template))} ({r.window} vs {r.baseline})")
    more = len(res.overall) - rows
    table = (
        "<table class='kit-changes-table'><thead><tr><th>change</th>"
        "<th>template (the slot values that changed most; the first line in the window, file:line)</th>"
        "<th>logger</th><th>level</th><th>window</th><th>baseline</th><th>hosts</th><th>first</th><th>last</th>"
        "</tr></thead><tbody>" + "".join(body) + "</tbody></table>"
    )
    note = f"<p class='kit-muted'>The rows: {esc(test)}; what rose first, then what fell."
    note += " More changed beyond chance: <code>kitlib changes</code> lists them all.</p>" if more > 0 else "</p>"
    return HTML(f"<div class='{CHANGES_CLASS}'>{head}{intro}{table}{note}</div>", "\n".join(lines))


def changes_block(
    bundle, findings=(), start=None, end=None, rows: int = ROWS, heading: str | None = HEADING, **kw
) -> HTML:
    """:func:`what_changed` rendered by :func:`changes_html`; a bundle without timed records gets
    one line saying so."""
    try:
        res, why = what_changed(bundle, findings, start, end, top=max(rows, 20), **kw)
    except ValueError as e:  # too few timed records to find a window
        return HTML(f"<p class='{QUIET_CLASS}'>{esc(f'No window to compare: {e}.')}</p>", f"No window to compare: {e}.")
    return changes_html(res, why, rows, heading)
