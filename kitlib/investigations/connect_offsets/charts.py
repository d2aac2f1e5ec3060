"""Charts for the Kafka Connect offset-commit investigation (``notebooks/connect_offsets.ipynb``).

Every chart has an explicit name and carries at most MAX_CHART_ROWS rows (binned in time by
:func:`kitlib.display.bin_time` when the input has more).

Example:
    >>> from kitlib.investigations.connect_offsets import charts as connect
    >>> connect.commit_timeline(kitlib_commits)      # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import MAX_CHART_ROWS, bin_time, step_text
from kitlib.display.axes import chart_times, count_y, time_x

TASKS_SHOWN = 12  # a binned chart names this many tasks; the others are drawn as one series
OTHER_TASKS = "(other tasks)"
OUTCOME_COLORS = {"success": "#2b8a3e", "timeout": "#d9480f", "failed": "#b00020", "unknown": "#868e96"}


def commit_points(commits: pd.DataFrame) -> pd.DataFrame:
    """Commits reduced for charting: one point per task, outcome and time bucket (max
    outstanding / remaining, count of attempts) when there are too many attempts to plot; then
    only the :data:`TASKS_SHOWN` tasks with the most failed or timed-out attempts keep their name.

    Example:
        >>> commit_points(pd.DataFrame(columns=["ts", "connector", "task", "outcome", "outstanding", "remaining"])).empty
        True
    """
    if commits.empty:
        return pd.DataFrame(columns=["ts", "task_id", "outcome", "outstanding", "remaining", "attempts"])
    c = commits.copy()
    c["task_id"] = c["connector"].astype(str) + "-" + c["task"].astype(str)
    c["outcome"] = c["outcome"].astype(str)
    c["outstanding"] = pd.to_numeric(c["outstanding"], errors="coerce")
    c["remaining"] = pd.to_numeric(c["remaining"], errors="coerce")
    c["attempts"] = 1
    if len(c) > MAX_CHART_ROWS and c["task_id"].nunique() > TASKS_SHOWN:
        # too many tasks to tell apart: the ones with the most failed or timed-out attempts (then
        # the most attempts) by name, the others as one series
        bad = c["outcome"].ne("success")
        rank = (
            c.assign(bad=bad)
            .groupby("task_id")[["bad", "attempts"]]
            .sum()
            .sort_values(["bad", "attempts"], ascending=False)
        )
        c["task_id"] = c["task_id"].where(c["task_id"].isin(rank.index[:TASKS_SHOWN]), OTHER_TASKS)
    c, _ = bin_time(
        c, "ts", ["task_id", "outcome"], {"outstanding": "max", "remaining": "max", "attempts": "sum"}, MAX_CHART_ROWS
    )
    return c[["ts", "task_id", "outcome", "outstanding", "remaining", "attempts"]]


def commit_timeline(commits: pd.DataFrame, tz: str = "UTC", changes=None):
    """Outstanding messages at each commit attempt per task, coloured by outcome (timeouts and
    failures stand out); a second panel counts attempts by outcome over time. ``changes``: times
    of producer config changes, drawn as dashed rules."""
    p = commit_points(commits)
    if p.empty:
        return None
    p = p.copy()
    p["time"] = chart_times(p["ts"], tz)
    has_outstanding = p["outstanding"].notna().any()
    color = alt.Color("outcome:N", scale=alt.Scale(domain=list(OUTCOME_COLORS), range=list(OUTCOME_COLORS.values())))
    base = alt.Chart(p)
    if has_outstanding:
        top = (
            base.mark_circle(size=28)
            .encode(
                x=time_x("time", p["time"], tz),
                y=count_y("outstanding:Q", "outstanding messages at flush"),
                color=color,
                shape=alt.Shape("task_id:N", title="task"),
                tooltip=["time:T", "task_id:N", "outcome:N", "outstanding:Q", "remaining:Q"],
            )
            .properties(width=640, height=220, title="Outstanding messages when each offset commit started")
        )
    else:
        top = (
            base.mark_tick(thickness=2)
            .encode(
                x=time_x("time", p["time"], tz),
                y=alt.Y("task_id:N", title="task"),
                color=color,
            )
            .properties(width=640, height=120, title="Offset commit attempts by outcome")
        )
    if changes is not None and len(changes):
        ch = pd.DataFrame({"time": chart_times(pd.Series(list(changes)), tz)})
        top = alt.layer(top, alt.Chart(ch).mark_rule(strokeDash=[4, 3], color="#495057").encode(x="time:T"))
    counts = (
        p.assign(bucket=p["time"].dt.floor("5min"))
        .groupby(["bucket", "outcome"], observed=True)["attempts"]
        .sum()
        .reset_index()
    )
    counts, step = bin_time(counts, "bucket", ["outcome"], {"attempts": "sum"})
    width = step_text(max(step, pd.Timedelta(minutes=5))) if step is not None else "5-minute"
    per = "per 5 minutes" if step is None else f"per {width} bucket"
    bottom = (
        alt.Chart(counts)
        .mark_bar(width=7)
        .encode(
            x=time_x("bucket", counts["bucket"], tz, what=f"{width} buckets"),
            y=count_y("attempts:Q", "commit attempts"),
            color=color,
        )
        .properties(width=640, height=110, title=f"Commit attempts {per}")
    )
    return alt.vconcat(top, bottom, name="connect_commit_timeline")


PRODUCER_ATTRS = [
    "records-per-request-avg",
    "batch-size-avg",
    "request-size-avg",
    "record-queue-time-avg",
    "buffer-available-bytes",
]
TASK_ATTRS = [
    "source-record-active-count-max",
    "offset-commit-failure-percentage",
    "offset-commit-max-time-ms",
    "batch-size-avg",
]
DEBEZIUM_ATTRS = ["QueueRemainingCapacity"]


def metric_panel(metrics: pd.DataFrame, tz: str = "UTC", connector: str | None = None) -> pd.DataFrame:
    """The producer / Connect task / Debezium metrics of the investigation, one row per
    (time bucket, group, attribute) with the mean value; ``group`` says which MBean family.

    Example:
        >>> metric_panel(pd.DataFrame()).empty
        True
    """
    cols = ["time", "group", "series", "attribute", "value"]
    if metrics is None or metrics.empty or "attribute" not in metrics:
        return pd.DataFrame(columns=cols)
    m = metrics.reset_index(drop=True)

    def col(name):
        if name not in m:
            return pd.Series("", index=m.index, dtype="object")
        return m[name].astype("object").where(m[name].notna(), "").astype(str)

    typ, dom, attr = col("type"), col("domain"), col("attribute")
    grp = pd.Series("", index=m.index, dtype="object")
    grp[(typ == "producer-metrics") & attr.isin(PRODUCER_ATTRS)] = "producer"
    grp[typ.isin(["connector-task-metrics", "source-task-metrics"]) & attr.isin(TASK_ATTRS)] = "connect task"
    grp[dom.str.startswith("debezium") & attr.isin(DEBEZIUM_ATTRS)] = "debezium"
    task_series = col("connector") + "-" + col("task")
    m = m.assign(
        group=grp,
        series=col("client_id").where(grp == "producer", task_series),
        _cid=col("client_id"),
        _conn=col("connector"),
    )
    m = m[m["group"] != ""]
    if connector is not None:
        keep = (m["_conn"] == connector) | m["_cid"].str.contains(connector, regex=False) | (m["group"] == "debezium")
        m = m[keep]
    if m.empty:
        return pd.DataFrame(columns=cols)
    m["value"] = pd.to_numeric(m["value"], errors="coerce")
    m["time"] = m["ts"].dt.tz_convert(tz).dt.tz_localize(None)
    keys = ["group", "series", "attribute"]
    out = m.groupby(["time", *keys], observed=True)["value"].mean().reset_index()
    if len(out) > MAX_CHART_ROWS:  # too many samples to draw: the mean per time bucket instead
        out, _ = bin_time(m[["time", *keys, "value"]], "time", keys, {"value": "mean"})
    return out[cols]


def metrics_chart(panel: pd.DataFrame, group: str, name: str, tz: str = "UTC"):
    """Small multiples (one panel per attribute, own y scale) for one metric group of
    :func:`metric_panel`; None when the group has no samples."""
    p = panel[panel["group"] == group]
    if p.empty:
        return None
    p = p.assign(time=p["time"].dt.tz_localize("UTC"))  # metric_panel's times are wall-clock times in tz
    return (
        alt.Chart(p)
        .mark_line(point=False)
        .encode(
            x=time_x("time", p["time"], tz, ticks=4),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("series:N", title=group),
        )
        .properties(width=300, height=120)
        .facet(
            facet=alt.Facet("attribute:N", title=None),
            columns=2,
            name=name,
        )
        .resolve_scale(y="independent")
    )


def drain_chart(table: pd.DataFrame, name: str = "connect_drain_whatif"):
    """Bars of the predicted drain time per setting from :func:`kitlib.investigations.connect_offsets.arithmetic.what_if`,
    with the offset.flush.timeout.ms rule."""
    if table.empty:
        return None
    t = table.copy()
    t["label"] = t["setting"] + " (batch.size " + t["batch.size"].astype(str) + ")"
    bars = (
        alt.Chart(t)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title=None, sort=None),
            x=alt.X("drain_s:Q", title="seconds to drain the outstanding messages"),
            color=alt.Color(
                "fits_timeout:N",
                title="fits the timeout",
                scale=alt.Scale(domain=[True, False], range=["#2b8a3e", "#d9480f"]),
            ),
        )
    )
    rule = alt.Chart(t.head(1)).mark_rule(strokeDash=[4, 3], color="black").encode(x="timeout_s:Q")
    return alt.layer(bars, rule, name=name).properties(
        width=560, height=90, title="Drain time vs offset.flush.timeout.ms"
    )
