"""Charts for the compaction notebook.

Example:
    >>> from kitlib.investigations.compaction.charts import runs_timeline
    >>> runs_timeline(bundle.cleaner_runs)        # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import bin_time, missing, step_text
from kitlib.display.axes import chart_times, time_x, time_y

NO_RUNS = (
    "cleaner runs",
    "They come from the brokers' log-cleaner.log (logger kafka.log.LogCleaner at INFO, "
    "on by default): collect it with server.log.",
)


def _per(step: pd.Timedelta | None, what: str) -> str:
    """The title's note on binned runs ("" when every run is drawn)."""
    return "" if step is None else f" ({what} per {step_text(step)} bucket)"


def _prep(runs: pd.DataFrame, tz: str = "UTC") -> pd.DataFrame:
    return runs.assign(
        ts=chart_times(runs["ts"], tz), log=runs["log"].astype("string"), host=runs["host"].astype("string")
    )


def runs_timeline(runs: pd.DataFrame, tz: str = "UTC"):
    """Per run: size reduction (bars) and buffer utilization (line), per partition. The two
    layers are separate charts over the same rows (one named chart as both layers drew every bar
    with height 0), and the y scale reaches below 0 when a run grew the log."""
    if not len(runs):
        return missing(*NO_RUNS)
    d = _prep(runs, tz)[
        ["ts", "host", "log", "size_reduction_pct", "buffer_utilization_pct", "dirty_start", "dirty_end"]
    ]
    low = min(0.0, float(d["size_reduction_pct"].min()))
    d, step = bin_time(
        d,
        "ts",
        ["host", "log"],
        {"size_reduction_pct": "mean", "buffer_utilization_pct": "max", "dirty_start": "min", "dirty_end": "max"},
        count="runs",
    )
    x = time_x("ts", d["ts"], tz, what="run finished")
    y_scale = alt.Scale(domain=[low, 100])
    bars = (
        alt.Chart(d)
        .mark_bar(opacity=0.7, size=10)
        .encode(
            x=x,
            y=alt.Y("size_reduction_pct:Q", title="% size reduction (bars) / % buffer used (line)", scale=y_scale),
            color=alt.Color("log:N", title="log"),
            tooltip=[
                "host:N",
                "log:N",
                "dirty_start:Q",
                "dirty_end:Q",
                "size_reduction_pct:Q",
                "buffer_utilization_pct:Q",
            ]
            + ([] if step is None else ["runs:Q"]),
        )
    )
    line = (
        alt.Chart(d)
        .mark_line(point=True, color="#d9480f")
        .encode(x=x, y=alt.Y("buffer_utilization_pct:Q", scale=y_scale), detail="log:N")
    )
    return alt.layer(bars, line, name="cleaner_runs").properties(
        width=640,
        height=240,
        title="Cleaner runs: size reduction (bars) and dedupe buffer utilization (line)"
        + _per(step, "mean reduction, highest utilization"),
    )


def throughput(runs: pd.DataFrame, tz: str = "UTC"):
    """Cleaner MB/s per run and the dirty offsets each run covered."""
    if not len(runs):
        return missing(*NO_RUNS)
    d = _prep(runs, tz)[["ts", "log", "mb_per_s", "dirty_start", "dirty_end", "mb_processed"]]
    d, step = bin_time(
        d, "ts", ["log"], {"mb_per_s": "mean", "dirty_start": "min", "dirty_end": "max", "mb_processed": "sum"}
    )
    cover = (
        alt.Chart(d, name="cleaner_dirty_sections")
        .mark_bar(height=10)
        .encode(
            x=alt.X("dirty_start:Q", title="offset", axis=alt.Axis(format=",d")),
            x2="dirty_end:Q",
            y=time_y("ts", d["ts"], tz, what="run"),
            color=alt.Color("log:N"),
            tooltip=["log:N", "dirty_start:Q", "dirty_end:Q", "mb_processed:Q"],
        )
        .properties(width=300, height=200, title="Dirty section covered by each run" + _per(step, "runs"))
    )
    speed = (
        alt.Chart(d, name="cleaner_speed")
        .mark_line(point=True)
        .encode(
            x=time_x("ts", d["ts"], tz, what="run finished", ticks=4),
            y=alt.Y("mb_per_s:Q", title="MB/s"),
            color="log:N",
        )
        .properties(width=300, height=200, title="Cleaner throughput" + _per(step, "mean"))
    )
    return alt.hconcat(cover, speed)


def cleaner_metrics(metrics: pd.DataFrame, tz: str = "UTC"):
    """LogCleaner / LogCleanerManager gauges over time (max buffer utilization, recopy %, max
    clean time, max dirty %), when the bundle has them."""
    m = (
        metrics[
            metrics["type"].astype("string").isin(["LogCleaner", "LogCleanerManager"])
            & metrics["attribute"].isin(["Value"])
        ]
        if len(metrics)
        else metrics
    )
    if not len(m):
        return missing(
            "LogCleaner metrics",
            "Capture the kafka.log:type=LogCleaner and LogCleanerManager MBeans "
            "with JmxTool or a Prometheus JMX exporter during the incident.",
        )
    d = pd.DataFrame(
        {
            "ts": chart_times(m["ts"], tz),
            "metric": m["name"].astype("string"),
            "host": m["host"].astype("string"),
            "value": m["value"],
        }
    )
    d, _ = bin_time(d, "ts", ["metric", "host"], {"value": "max"})
    return (
        alt.Chart(d, name="cleaner_metrics")
        .mark_line(point=True)
        .encode(
            x=time_x("ts", d["ts"], tz, ticks=4),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("host:N"),
            facet=alt.Facet("metric:N", columns=2, title=None),
            tooltip=["host:N", "metric:N", "value:Q"],
        )
        .properties(width=300, height=120)
        .resolve_scale(y="independent")
    )
