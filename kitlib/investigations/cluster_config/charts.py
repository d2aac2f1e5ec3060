"""Charts for the cluster_config notebook.

Example:
    >>> from kitlib.investigations.cluster_config import charts
    >>> charts.per_broker(layout.partition_counts(bundle), "replicas")      # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import missing
from kitlib.display.axes import chart_times, time_x

NO_LAYOUT = (
    "replica lists",
    "They come from kafka-topics --describe output (save it with the bundle) or from log-dir sizes "
    "(kafka-log-dirs --describe, or kitlib capture).",
)
NO_SIZES = (
    "log-dir sizes over time",
    "Run kafka-log-dirs --describe (after a `date -Is` line) every few minutes, or kitlib capture more than once.",
)


def per_broker(counts: pd.DataFrame, what: str):
    """Bars of a count per broker, with the even split as a rule and the skew % as a label."""
    if not len(counts):
        return missing(*NO_LAYOUT)
    d = counts.reset_index().assign(broker=lambda x: "broker " + x["broker_id"].astype(str))
    d = d[["broker", "count", "even", "skew_pct"]].astype(
        {"count": "float64", "even": "float64", "skew_pct": "float64"}
    )
    base = alt.Chart(d)
    bars = base.mark_bar().encode(
        x=alt.X("broker:N", title=None, sort=None),
        y=alt.Y("count:Q", title=what),
        color=alt.condition("datum.skew_pct >= 20", alt.value("#d62728"), alt.value("#4c78a8")),
        tooltip=["broker", "count", alt.Tooltip("even:Q", format=".1f"), alt.Tooltip("skew_pct:Q", format=".0f")],
    )
    rule = base.mark_rule(strokeDash=[4, 3]).encode(y="mean(even):Q")
    text = base.mark_text(dy=-6).encode(
        x=alt.X("broker:N", sort=None), y="count:Q", text=alt.Text("skew_pct:Q", format="+.0f")
    )
    return (bars + rule + text).properties(
        title=f"{what} per broker (dashed: even split; label: skew %)", width=320, height=200
    )


def log_dir_growth(sizes: pd.DataFrame, tz: str = "UTC"):
    """Bytes per log dir over time, one line per broker and log dir."""
    s = sizes[sizes["ts"].notna()] if len(sizes) else sizes
    if not len(s) or s["ts"].nunique() < 2:
        return missing(*NO_SIZES)
    d = s.groupby(["ts", "broker_id", "log_dir"], as_index=False)["bytes"].sum()
    d = d.assign(
        ts=chart_times(d["ts"], tz), dir="broker " + d["broker_id"].astype(str) + " " + d["log_dir"].astype(str)
    )
    d["MB"] = d["bytes"].astype("float64") / 1e6
    return (
        alt.Chart(d[["ts", "dir", "MB"]])
        .mark_line(point=True)
        .encode(x=time_x("ts", d["ts"], tz, what="snapshot"), y=alt.Y("MB:Q", title="MB in the log dir"), color="dir:N")
        .properties(title="log-dir size per snapshot", width=560, height=220)
    )
