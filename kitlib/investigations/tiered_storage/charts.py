"""Charts for the tiered-storage notebook.

Example:
    >>> from kitlib.investigations.tiered_storage.charts import read_iops_chart
    >>> read_iops_chart(bundle.file_io, rating=40000)      # doctest: +SKIP
"""
from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.investigations.tiered_storage.analysis import read_iops
from kitlib.display import HTML


def read_iops_chart(file_io: pd.DataFrame, rating: float | None = None):
    """Read operations per second per broker over time, with the device's rated IOPS as a line."""
    d = read_iops(file_io)
    if not len(d):
        return HTML("<p><i>No I/O traces in this bundle.</i></p>", "No I/O traces.")
    d = d.assign(ts=d["ts"].dt.tz_convert("UTC").dt.tz_localize(None) if d["ts"].notna().all() else d["interval"])
    x = alt.X("ts:T", title="time (UTC)") if pd.api.types.is_datetime64_any_dtype(d["ts"]) else alt.X("ts:Q", title="interval")
    lines = alt.Chart(d, name="tiered_read_iops").mark_line(point=True).encode(
        x=x, y=alt.Y("iops:Q", title="read ops / s"), color=alt.Color("host:N", title="broker"),
        tooltip=["host:N", alt.Tooltip("iops:Q", format=",.0f")])
    if rating:
        rule = alt.Chart(pd.DataFrame({"rating": [rating]}), name="tiered_rating").mark_rule(
            color="#b00020", strokeDash=[6, 4]).encode(y="rating:Q")
        lines = lines + rule
    return lines.properties(width=640, height=260, title="Read I/O per broker" + (f" (dashed: rated {rating:,.0f} IOPS)" if rating else ""))


def reads_by_kind(file_io: pd.DataFrame):
    """Share of each broker's reads by file kind (log segment, index, tier state, ...)."""
    r = file_io[file_io["op"] == "R"]
    if not len(r):
        return HTML("<p><i>No reads traced.</i></p>", "No reads traced.")
    g = r.groupby(["host", "kind"], observed=True)["count"].sum().reset_index()
    g["host"] = g["host"].astype("string")
    g["kind"] = g["kind"].astype("string")
    return alt.Chart(g, name="tiered_reads_by_kind").mark_bar().encode(
        y=alt.Y("host:N", title=None), x=alt.X("count:Q", title="reads", stack="zero"), color=alt.Color("kind:N"),
        tooltip=["host:N", "kind:N", alt.Tooltip("count:Q", format=",")],
    ).properties(width=560, height=220, title="Reads by file kind")


def state_size_chart(sizes: pd.DataFrame):
    """Tier-state file size before and after cleanup per partition."""
    if not len(sizes):
        return HTML("<p><i>No tier-state cleanups in this bundle.</i></p>", "No tier-state cleanups.")
    d = sizes.assign(partition=sizes["topic"].astype("string") + "-" + sizes["partition"].astype("string"))
    long = d.melt(id_vars=["partition"], value_vars=["size_before", "size_after"], var_name="when", value_name="bytes")
    long["MB"] = long["bytes"] / 1e6
    return alt.Chart(long, name="tiered_state_sizes").mark_bar().encode(
        y=alt.Y("partition:N", sort="-x", title=None), x=alt.X("MB:Q", title="state file MB"),
        color=alt.Color("when:N", scale=alt.Scale(domain=["size_before", "size_after"], range=["#d9480f", "#2b8a3e"])),
        yOffset="when:N", tooltip=["partition:N", "when:N", alt.Tooltip("MB:Q", format=",.1f")],
    ).properties(width=520, title="Tier-state file size before / after cleanup")


REMOTE_KINDS = {"copied": "#2b8a3e", "copy_error": "#c92a2a", "delete_retention_size": "#1c7ed6",
                "delete_retention_time": "#4dabf7", "delete_log_start": "#748ffc", "undeletable": "#e8590c"}


def remote_activity_chart(remote: pd.DataFrame):
    """KIP-405 activity over time: segment copies, copy errors and remote deletions, one tick each,
    one row per kind (faceted by partition when there are several)."""
    r = remote[remote["kind"].astype("string").isin(list(REMOTE_KINDS))] if len(remote) else remote
    if not len(r):
        return HTML("<p><i>No KIP-405 remote-storage activity in this bundle.</i></p>", "No KIP-405 activity.")
    d = pd.DataFrame({"ts": r["ts"].dt.tz_convert("UTC").dt.tz_localize(None), "kind": r["kind"].astype("string"),
                      "partition": r["topic"].astype("string") + "-" + r["partition"].astype("Int64").astype("string"),
                      "where": r["file"].astype("string") + ":" + r["line"].astype("string")})
    kinds = [k for k in REMOTE_KINDS if k in set(d["kind"])]
    chart = alt.Chart(d, name="tiered_remote_activity").mark_tick(thickness=2).encode(
        x=alt.X("ts:T", title="time (UTC)"), y=alt.Y("kind:N", title=None, sort=kinds),
        color=alt.Color("kind:N", scale=alt.Scale(domain=kinds, range=[REMOTE_KINDS[k] for k in kinds]), legend=None),
        tooltip=["ts:T", "kind:N", "partition:N", "where:N"]).properties(width=600, height=22 * len(kinds) + 20)
    if d["partition"].nunique() > 1:
        chart = chart.facet(row=alt.Row("partition:N", title=None))
    return chart.properties(title="Remote storage: copies, copy errors, deletions")


def remote_lag_chart(metrics: pd.DataFrame):
    """RemoteCopyLagBytes over time per broker (the bytes waiting to be tiered; they stay on local disk)."""
    from kitlib.metrics import select
    m = select(metrics, "RemoteCopyLagBytes", "Value", topic=None) if len(metrics) else metrics
    if not len(m):
        return HTML("<p><i>No RemoteCopyLagBytes samples in this bundle.</i></p>", "No RemoteCopyLagBytes samples.")
    d = pd.DataFrame({"ts": m["ts"].dt.tz_convert("UTC").dt.tz_localize(None), "host": m["host"].astype("string"),
                      "MB": m["value"] / 1e6})
    return alt.Chart(d, name="tiered_remote_lag").mark_area(line=True, opacity=0.4).encode(
        x=alt.X("ts:T", title="time (UTC)"), y=alt.Y("MB:Q", title="MB waiting to be copied"),
        color=alt.Color("host:N", title="broker"), tooltip=["ts:T", "host:N", alt.Tooltip("MB:Q", format=",.2f")],
    ).properties(width=600, height=180, title="Remote copy lag (RemoteCopyLagBytes)")
