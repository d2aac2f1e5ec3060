"""Charts for the compaction notebook.

Example:
    >>> from kitlib.investigations.compaction.charts import runs_timeline
    >>> runs_timeline(bundle.cleaner_runs)        # doctest: +SKIP
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import HTML


def _prep(runs: pd.DataFrame) -> pd.DataFrame:
    return runs.assign(ts=runs["ts"].dt.tz_convert("UTC").dt.tz_localize(None), log=runs["log"].astype("string"),
                       host=runs["host"].astype("string"))


def runs_timeline(runs: pd.DataFrame):
    """Per run: size reduction (bars) and buffer utilization (line), per partition."""
    if not len(runs):
        return HTML("<p><i>No cleaner runs in this bundle.</i></p>", "No cleaner runs.")
    d = _prep(runs)[["ts", "host", "log", "size_reduction_pct", "buffer_utilization_pct", "dirty_start", "dirty_end"]]
    base = alt.Chart(d, name="cleaner_runs").encode(x=alt.X("ts:T", title="run finished (UTC)"))
    bars = base.mark_bar(opacity=0.6, size=8).encode(
        y=alt.Y("size_reduction_pct:Q", title="% size reduction / % buffer used", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("log:N", title="log"), tooltip=["host:N", "log:N", "dirty_start:Q", "dirty_end:Q",
                                                        "size_reduction_pct:Q", "buffer_utilization_pct:Q"])
    line = base.mark_line(point=True, color="#d9480f").encode(y="buffer_utilization_pct:Q", detail="log:N")
    return (bars + line).properties(width=640, height=240,
                                    title="Cleaner runs: size reduction (bars) and dedupe buffer utilization (line)")


def throughput(runs: pd.DataFrame):
    """Cleaner MB/s per run and the dirty offsets each run covered."""
    if not len(runs):
        return HTML("<p><i>No cleaner runs in this bundle.</i></p>", "No cleaner runs.")
    d = _prep(runs)[["ts", "log", "mb_per_s", "dirty_start", "dirty_end", "mb_processed"]]
    cover = alt.Chart(d, name="cleaner_dirty_sections").mark_bar(height=10).encode(
        x=alt.X("dirty_start:Q", title="offset"), x2="dirty_end:Q", y=alt.Y("ts:T", title="run (UTC)"),
        color=alt.Color("log:N"), tooltip=["log:N", "dirty_start:Q", "dirty_end:Q", "mb_processed:Q"],
    ).properties(width=300, height=200, title="Dirty section covered by each run")
    speed = alt.Chart(d, name="cleaner_speed").mark_line(point=True).encode(
        x=alt.X("ts:T", title="run finished (UTC)"), y=alt.Y("mb_per_s:Q", title="MB/s"), color="log:N",
    ).properties(width=300, height=200, title="Cleaner throughput")
    return alt.hconcat(cover, speed)


def cleaner_metrics(metrics: pd.DataFrame):
    """LogCleaner / LogCleanerManager gauges over time (max buffer utilization, recopy %, max
    clean time, max dirty %), when the bundle has them."""
    m = metrics[metrics["type"].astype("string").isin(["LogCleaner", "LogCleanerManager"])
                & metrics["attribute"].isin(["Value"])] if len(metrics) else metrics
    if not len(m):
        return HTML("<p><i>No LogCleaner metrics in this bundle.</i></p>", "No LogCleaner metrics.")
    d = pd.DataFrame({"ts": m["ts"].dt.tz_convert("UTC").dt.tz_localize(None), "metric": m["name"].astype("string"),
                      "host": m["host"].astype("string"), "value": m["value"]})
    return alt.Chart(d, name="cleaner_metrics").mark_line(point=True).encode(
        x=alt.X("ts:T", title="time (UTC)"), y=alt.Y("value:Q", title=None), color=alt.Color("host:N"),
        facet=alt.Facet("metric:N", columns=2, title=None), tooltip=["host:N", "metric:N", "value:Q"],
    ).properties(width=300, height=120).resolve_scale(y="independent")
