"""Display helpers shared by every notebook: offline chart rendering and findings as HTML.

Charts render as static SVG through vl-convert (altair's ``svg`` renderer): no JavaScript,
nothing fetched from a CDN, identical output on every run (so nbval can compare it strictly),
and no notebook trust needed in JupyterLab. Shared pieces: :mod:`kitlib.display.axes` (the time and
count axes every chart uses), :mod:`kitlib.display.tables` (:func:`table`: formatted tables, and
:func:`missing`: the one line an empty section shows). Per-investigation charts live in each
investigation's ``charts`` module.

Example:
    >>> from kitlib import display
    >>> display.setup()                       # doctest: +SKIP
    >>> display.findings_html([])             # doctest: +SKIP
"""

from __future__ import annotations

import sys

# altair validates chart specs with jsonschema, which imports rfc3987_syntax when it is installed
# (a Jupyter dependency) and that compiles a grammar at import: seconds of CPU in every notebook
# kernel, for an IRI format check no chart spec uses. Skip that optional import unless something
# already loaded it.
if "jsonschema" not in sys.modules:
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "do not import"

import pandas as pd

from kitlib.display.bins import MAX_CHART_ROWS, bin_time, step_text
from kitlib.display.markup import HTML, esc
from kitlib.display.sample import sample_notice
from kitlib.display.tables import missing, table


def setup(explore: bool = False) -> None:
    """Call once at the top of a notebook: offline SVG charts, compact pandas output. With
    ``explore`` (see :mod:`kitlib.explore`) the same chart specs render as live charts instead
    (altair's ``JupyterChart``: tooltips, zoom, selections), their JavaScript (Vega, Vega-Lite,
    vega-embed) bundled by the installed vl-convert, so nothing is fetched from a CDN. A chart
    carries at most :data:`MAX_CHART_ROWS` rows either way: the charts aggregate before plotting."""
    import altair as alt

    if explore:
        alt.renderers.enable("jupyter", offline=True)
    else:
        alt.renderers.enable("svg")
    alt.data_transformers.enable("default", max_rows=MAX_CHART_ROWS)
    pd.set_option("display.max_colwidth", 160)
    pd.set_option("display.max_rows", 60)


def findings_html(findings, title: str = "Findings", bundle=None, tz=None) -> HTML:
    """Findings as an HTML block: severity, id, summary, numbers, recommendation, evidence
    (file:line and the quoted log text, escaped). With ``bundle`` (the notebook's bundle, or a
    mapping of its parameters) each "open next" link states that bundle and window and gives the
    parameters that open the next notebook on them (:mod:`kitlib.display.links`); ``tz`` is the
    notebook's TZ parameter, carried over when set."""
    from kitlib.display.links import open_next, view_params

    params = view_params(bundle, tz)
    if not findings:
        return HTML(f"<p><b>{esc(title)}:</b> nothing found.</p>", f"{title}: nothing found.")
    parts = [f"<h4>{esc(title)} ({len(findings)})</h4>"]
    text = []
    for f in findings:
        nums = "".join(f"<li><code>{esc(k)}</code> = {esc(_fmt(v))}</li>" for k, v in f.numbers.items())
        ev = "".join(
            f"<tr><td><code>{esc(e.get('file'))}:{esc(e.get('line'))}</code></td><td>{esc(e.get('host'))}</td>"
            f"<td><pre style='white-space:pre-wrap;margin:0'>{esc(e.get('text'))}</pre></td></tr>"
            for e in f.evidence[:10]
        )
        parts.append(
            f"<div class='kit-finding' data-id='{esc(f.id)}' style='border-left:4px solid {_color(f.severity)};"
            f"padding:4px 10px;margin:8px 0'>"
            f"<b>[{esc(f.severity)}] {esc(f.id)}</b>: {esc(f.summary)}"
            f"<p class='kit-extent' style='margin:2px 0;color:#555'>{esc(f.rests_on().text())}</p>"
            f"<ul>{nums}</ul><p><b>Recommended change:</b> {esc(f.recommendation)}</p>"
            + (
                f"<div class='kit-open'><b>Open next:</b> {open_next(f.notebook, _title(f), params).html}</div>"
                if f.notebook
                else ""
            )
            + (
                f"<p><b>Evidence</b> ({len(f.evidence)} rows):</p><table class='kit-evidence'>{ev}</table>"
                if ev
                else ""
            )
            + "</div>"
        )
        text.append(f"[{f.severity}] {f.id}: {f.summary}")
    return HTML("\n".join(parts), "\n".join(text))


def _title(f) -> str:
    """The title of the investigation a finding points to (its notebook name if unknown)."""
    try:
        from kitlib import registry

        return registry.investigation(f.investigation).title
    except Exception:  # noqa: BLE001 - an unknown investigation still gets a link
        return f.notebook


def _fmt(v) -> str:
    from kitlib.findings import value_text

    return value_text(v)


def _color(sev: str) -> str:
    from kitlib.findings import Severity

    colors: dict[str, str] = {
        Severity.CRITICAL: "#b00020",
        Severity.HIGH: "#d9480f",
        Severity.MEDIUM: "#f59f00",
        Severity.LOW: "#1c7ed6",
    }
    return colors.get(sev, "#868e96")  # info: grey


__all__ = [
    "HTML",
    "MAX_CHART_ROWS",
    "bin_time",
    "esc",
    "findings_html",
    "missing",
    "sample_notice",
    "setup",
    "step_text",
    "table",
]
