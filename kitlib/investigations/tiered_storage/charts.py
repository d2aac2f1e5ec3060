"""Charts for the tiered-storage notebook.

Example:
    >>> from kitlib.investigations.tiered_storage.charts import read_iops_chart
    >>> read_iops_chart(bundle.file_io, rating=40000)      # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import bin_time, missing, step_text
from kitlib.display.axes import chart_times, count_x, time_x
from kitlib.investigations.tiered_storage.analysis import read_iops


def _per(step: pd.Timedelta | None, what: str) -> str:
    """The title's note on binned data ("" when every row is drawn)."""
    return "" if step is None else f" ({what} per {step_text(step)} bucket)"


def read_iops_chart(file_io: pd.DataFrame, rating: float | None = None, tz: str = "UTC"):
    """Read operations per second per broker over time, with the device's rated IOPS as a line."""
    d = read_iops(file_io)
    if not len(d):
        return missing(
            "I/O traces",
            "Trace reads per file on the brokers (e.g. an fatrace or bpftrace capture "
            "saved as the kit's iotrace format) while the imbalance is on.",
        )
    step = None
    if d["ts"].notna().all():
        d, step = bin_time(d, "ts", ["host"], {"reads": "sum", "iops": "mean"})
        d = d.assign(ts=chart_times(d["ts"], tz))
        x = time_x("ts", d["ts"], tz)
    else:
        d = d.assign(ts=d["interval"])
        x = alt.X("ts:Q", title="interval", axis=alt.Axis(tickMinStep=1, format=",d"))
    lines = (
        alt.Chart(d, name="tiered_read_iops")
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("iops:Q", title="read ops / s"),
            color=alt.Color("host:N", title="broker"),
            tooltip=["host:N", alt.Tooltip("iops:Q", format=",.0f")],
        )
    )
    if rating:
        rule = (
            alt.Chart(pd.DataFrame({"rating": [rating]}), name="tiered_rating")
            .mark_rule(color="#b00020", strokeDash=[6, 4])
            .encode(y="rating:Q")
        )
        lines = lines + rule
    return lines.properties(
        width=640,
        height=260,
        title="Read I/O per broker" + (f" (dashed: rated {rating:,.0f} IOPS)" if rating else "") + _per(step, "mean"),
    )


def reads_by_kind(file_io: pd.DataFrame):
    """Share of each broker's reads by file kind (log segment, index, tier state, ...)."""
    r = file_io[file_io["op"] == "R"]
    if not len(r):
        return missing("traced reads", "The I/O trace holds no read operations.")
    g = r.groupby(["host", "kind"], observed=True)["count"].sum().reset_index()
    g["host"] = g["host"].astype("string")
    g["kind"] = g["kind"].astype("string")
    return (
        alt.Chart(g, name="tiered_reads_by_kind")
        .mark_bar()
        .encode(
            y=alt.Y("host:N", title=None),
            x=count_x("count:Q", "reads", stack="zero"),
            color=alt.Color("kind:N"),
            tooltip=["host:N", "kind:N", alt.Tooltip("count:Q", format=",")],
        )
        .properties(width=560, height=220, title="Reads by file kind")
    )


def state_size_chart(sizes: pd.DataFrame):
    """Tier-state file size before and after cleanup per partition."""
    if not len(sizes):
        return missing(
            "tier-state cleanups",
            "They come from the FileTierPartitionState lines of server.log "
            "(Confluent Tiered Storage with the tier partition state cleanup enabled).",
        )
    d = sizes.assign(partition=sizes["topic"].astype("string") + "-" + sizes["partition"].astype("string"))
    long = d.melt(id_vars=["partition"], value_vars=["size_before", "size_after"], var_name="when", value_name="bytes")
    long["MB"] = long["bytes"] / 1e6
    return (
        alt.Chart(long, name="tiered_state_sizes")
        .mark_bar()
        .encode(
            y=alt.Y("partition:N", sort="-x", title=None),
            x=alt.X("MB:Q", title="state file MB"),
            color=alt.Color(
                "when:N", scale=alt.Scale(domain=["size_before", "size_after"], range=["#d9480f", "#2b8a3e"])
            ),
            yOffset="when:N",
            tooltip=["partition:N", "when:N", alt.Tooltip("MB:Q", format=",.1f")],
        )
        .properties(width=520, title="Tier-state file size before / after cleanup")
    )


REMOTE_KINDS = {
    "copied": "#2b8a3e",
    "copy_error": "#c92a2a",
    "delete_retention_size": "#1c7ed6",
    "delete_retention_time": "#4dabf7",
    "delete_log_start": "#748ffc",
    "undeletable": "#e8590c",
}


def remote_activity_chart(remote: pd.DataFrame, tz: str = "UTC"):
    """KIP-405 activity over time: segment copies, copy errors and remote deletions, one tick each,
    one row per kind (faceted by partition when there are several)."""
    r = remote[remote["kind"].astype("string").isin(list(REMOTE_KINDS))] if len(remote) else remote
    if not len(r):
        return missing(
            "KIP-405 remote-storage activity",
            "It comes from RemoteLogManager lines in server.log of "
            "brokers running Apache Kafka tiered storage (3.6+, remote.log.storage.system.enable=true).",
        )
    d = pd.DataFrame(
        {
            "ts": chart_times(r["ts"], tz),
            "kind": r["kind"].astype("string"),
            "partition": r["topic"].astype("string") + "-" + r["partition"].astype("Int64").astype("string"),
            "where": r["file"].astype("string") + ":" + r["line"].astype("string"),
        }
    )
    d, step = bin_time(d, "ts", ["kind", "partition"], {"where": "first"}, count="events")
    kinds = [k for k in REMOTE_KINDS if k in set(d["kind"])]
    chart = (
        alt.Chart(d, name="tiered_remote_activity")
        .mark_tick(thickness=2)
        .encode(
            x=time_x("ts", d["ts"], tz),
            y=alt.Y("kind:N", title=None, sort=kinds),
            color=alt.Color(
                "kind:N", scale=alt.Scale(domain=kinds, range=[REMOTE_KINDS[k] for k in kinds]), legend=None
            ),
            tooltip=["ts:T", "kind:N", "partition:N", "where:N"] + ([] if step is None else ["events:Q"]),
        )
        .properties(width=600, height=22 * len(kinds) + 20)
    )
    if d["partition"].nunique() > 1:
        chart = chart.facet(row=alt.Row("partition:N", title=None))
    return chart.properties(title="Remote storage: copies, copy errors, deletions" + _per(step, "one tick"))


def remote_lag_chart(metrics: pd.DataFrame, tz: str = "UTC"):
    """RemoteCopyLagBytes over time per broker (the bytes waiting to be tiered; they stay on local disk)."""
    from kitlib.metrics import select

    m = select(metrics, "RemoteCopyLagBytes", "Value", topic=None) if len(metrics) else metrics
    if not len(m):
        return missing(
            "RemoteCopyLagBytes samples",
            "Capture the kafka.server:type=BrokerTopicMetrics,name=RemoteCopyLagBytes MBean during the incident.",
        )
    d = pd.DataFrame({"ts": chart_times(m["ts"], tz), "host": m["host"].astype("string"), "MB": m["value"] / 1e6})
    d, step = bin_time(d, "ts", ["host"], {"MB": "max"})
    return (
        alt.Chart(d, name="tiered_remote_lag")
        .mark_area(line=True, opacity=0.4)
        .encode(
            x=time_x("ts", d["ts"], tz),
            y=alt.Y("MB:Q", title="MB waiting to be copied"),
            color=alt.Color("host:N", title="broker"),
            tooltip=["ts:T", "host:N", alt.Tooltip("MB:Q", format=",.2f")],
        )
        .properties(width=600, height=180, title="Remote copy lag (RemoteCopyLagBytes)" + _per(step, "highest"))
    )
