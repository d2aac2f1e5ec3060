"""Charts for the cluster_health notebook (static SVG through altair, like every notebook).

Example:
    >>> from kitlib.investigations.cluster_health import analysis, charts
    >>> charts.timeline_chart(analysis.timeline(bundle))        # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import HTML, bin_time, step_text


def _naive(ts: pd.Series) -> pd.Series:
    return ts.dt.tz_convert("UTC").dt.tz_localize(None)


def _per(step: pd.Timedelta | None, what: str) -> str:
    """The title's note on binned data ("" when every row is drawn)."""
    return "" if step is None else f" ({what} per {step_text(step)} bucket)"


def timeline_chart(t: pd.DataFrame):
    """Every state change on one clock: one row per lane, colour per host."""
    if not len(t):
        return HTML("<p><i>No broker or controller state changes in this bundle.</i></p>", "No state changes.")
    d = t.assign(ts=_naive(t["ts"]), node=t["node"].astype("string").fillna("?"))[
        ["ts", "host", "node", "lane", "kind", "text"]
    ]
    d, step = bin_time(d, "ts", ["host", "lane", "kind"], {"node": "first", "text": "first"}, count="changes")
    tooltip = ["ts:T", "host:N", "node:N", "kind:N", "text:N"] + ([] if step is None else ["changes:Q"])
    return (
        alt.Chart(d, name="cluster_timeline")
        .mark_tick(thickness=2, size=14)
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("lane:N", title=None),
            color=alt.Color("host:N", title="host"),
            tooltip=tooltip,
        )
        .properties(
            width=680,
            height=200,
            title="What happened where: state changes across every host" + _per(step, "first change"),
        )
    )


def log_rates(events: pd.DataFrame, freq: str = "1min"):
    """WARN and ERROR records per interval and host."""
    e = events[events["level"].isin(["WARN", "ERROR", "FATAL"])] if len(events) else events
    if not len(e):
        return HTML("<p><i>No WARN or ERROR records.</i></p>", "No WARN/ERROR records.")
    d = (
        e.assign(ts=_naive(e["ts"]).dt.floor(freq), host=e["host"].astype(str), level=e["level"].astype(str))
        .groupby(["ts", "host", "level"])
        .size()
        .rename("records")
        .reset_index()
    )
    d, step = bin_time(d, "ts", ["host", "level"], {"records": "sum"})
    per = freq if step is None else step_text(step).replace("-", " ")
    return (
        alt.Chart(d, name="warn_error_rates")
        .mark_bar()
        .encode(
            x=alt.X("ts:T", title=f"time (UTC, per {per})"),
            y=alt.Y("records:Q", title="records"),
            color=alt.Color("host:N"),
            row=alt.Row("level:N", title=None),
            tooltip=["ts:T", "host:N", "level:N", "records:Q"],
        )
        .properties(width=640, height=110, title="WARN / ERROR records per host")
    )


def metric_lines(series: pd.DataFrame, title: str):
    """A JMX gauge per host over time (e.g. UnderReplicatedPartitions)."""
    if not len(series):
        return HTML(f"<p><i>No {title} samples (no JMX dump in the bundle).</i></p>", f"No {title} samples.")
    d = series.assign(ts=_naive(series["ts"]), host=series["host"].astype(str))[["ts", "host", "value"]]
    d, step = bin_time(d, "ts", ["host"], {"value": "max"})
    return (
        alt.Chart(d, name="jmx_" + title.replace(" ", "_"))
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("value:Q", title=title),
            color="host:N",
            tooltip=["ts:T", "host:N", "value:Q"],
        )
        .properties(width=640, height=160, title=f"JMX {title}" + _per(step, "highest"))
    )


def gc_pauses_chart(gc: pd.DataFrame):
    """Every stop-the-world pause: when, how long, per host."""
    p = gc[gc["is_pause"].fillna(False).astype(bool) & gc["ts"].notna()] if len(gc) else gc
    if not len(p):
        return HTML("<p><i>No GC log with timestamps in this bundle.</i></p>", "No GC pauses.")
    d = p.assign(
        ts=_naive(p["ts"]),
        host=p["host"].astype(str),
        kind=p["kind"].astype(str),
        cause=p["cause"].astype("string").fillna(""),
    )[["ts", "host", "kind", "cause", "duration_ms"]]
    d, step = bin_time(d, "ts", ["host", "kind"], {"duration_ms": "max", "cause": "first"}, count="pauses")
    tooltip = ["ts:T", "host:N", "kind:N", "cause:N", "duration_ms:Q"] + ([] if step is None else ["pauses:Q"])
    return (
        alt.Chart(d, name="gc_pauses")
        .mark_circle(opacity=0.7)
        .encode(
            x=alt.X("ts:T", title="pause ended (UTC)"),
            y=alt.Y("duration_ms:Q", title="pause (ms)", scale=alt.Scale(type="log")),
            color="host:N",
            tooltip=tooltip,
        )
        .properties(width=640, height=200, title="GC pauses per host (log scale)" + _per(step, "longest"))
    )
