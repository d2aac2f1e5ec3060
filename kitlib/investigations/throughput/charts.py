"""Charts for the throughput / down-conversion notebook.

Example:
    >>> from kitlib.investigations.throughput import charts as tp
    >>> tp.byte_rates(bundle.metrics)         # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import HTML, bin_time, missing, step_text
from kitlib.display.axes import chart_times, count_x, time_x
from kitlib.metrics import rate, select

JMX_HOW = (
    "Capture the broker's kafka.server:type=BrokerTopicMetrics MBeans during the incident "
    "(JmxTool, Jolokia or a Prometheus JMX exporter) and put the dump in the bundle."
)


def _none(what: str, collect: str = "") -> HTML:
    return missing(what, collect)


def rates_frame(metrics: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """Per-second rates of broker-wide counters (no topic key), long form: ts, host, metric, rate."""
    parts = []
    for n in names:
        m = select(metrics, n, "Count", topic=None)
        if len(m):
            r = rate(m)
            parts.append(
                pd.DataFrame({"ts": r["ts"], "host": r["host"].astype("string"), "metric": n, "rate": r["rate"]})
            )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["ts", "host", "metric", "rate"])


def byte_rates(metrics: pd.DataFrame, tz: str = "UTC"):
    """Bytes in and out per second per broker."""
    d = rates_frame(metrics, ["BytesInPerSec", "BytesOutPerSec"])
    if not len(d):
        return _none("byte-rate metrics (BytesInPerSec/BytesOutPerSec)", JMX_HOW)
    d, step = bin_time(d, "ts", ["host", "metric"], {"rate": "mean"})
    d = d.assign(ts=chart_times(d["ts"], tz), mb_per_s=d["rate"] / 1e6)
    per = "" if step is None else f" ({step_text(step)} means)"
    return (
        alt.Chart(d, name="throughput_bytes")
        .mark_line(point=True)
        .encode(
            x=time_x("ts", d["ts"], tz),
            y=alt.Y("mb_per_s:Q", title="MB/s"),
            color=alt.Color("metric:N", title=None),
            strokeDash=alt.StrokeDash("host:N", title="broker"),
            tooltip=["host:N", "metric:N", alt.Tooltip("mb_per_s:Q", format=".2f")],
        )
        .properties(width=640, height=220, title="Broker bytes in / out per second" + per)
    )


def conversion_rates(metrics: pd.DataFrame, tz: str = "UTC"):
    """Messages down-converted (fetch) and up-converted (produce) per second per broker."""
    d = rates_frame(metrics, ["FetchMessageConversionsPerSec", "ProduceMessageConversionsPerSec"])
    if not len(d):
        return _none("message-conversion metrics (FetchMessageConversionsPerSec)", JMX_HOW)
    if not (d["rate"].fillna(0) != 0).any():
        text = "No message conversions: the conversion counters stayed at 0 on every broker."
        return HTML(f"<p>{text}</p>", text)
    d, step = bin_time(d, "ts", ["host", "metric"], {"rate": "mean"})
    d = d.assign(ts=chart_times(d["ts"], tz))
    per = "" if step is None else f" ({step_text(step)} means)"
    return (
        alt.Chart(d, name="throughput_conversions")
        .mark_area(opacity=0.6, line=True)
        .encode(
            x=time_x("ts", d["ts"], tz),
            y=alt.Y("rate:Q", title="messages converted / s", stack=None),
            color=alt.Color("metric:N", title=None),
            row=alt.Row("host:N", title=None),
            tooltip=["host:N", "metric:N", alt.Tooltip("rate:Q", format=",.0f")],
        )
        .properties(width=640, height=160, title="Message format conversions per second" + per)
    )


def api_versions(client_versions: pd.DataFrame):
    """Fetch/Produce requests per client and API version; versions that force conversion in red."""
    if not len(client_versions):
        return _none(
            "request log",
            "Set log4j.logger.kafka.request.logger=DEBUG on the broker for a few minutes "
            "(it is verbose) and collect kafka-request.log.",
        )
    d = client_versions.copy()
    old = ((d["api_name"] == "FETCH") & (d["api_version"] <= 3)) | (
        (d["api_name"] == "PRODUCE") & (d["api_version"] <= 2)
    )
    d["format"] = old.map({True: "old (converted)", False: "current"})
    d["client"] = d["client_id"].astype("string") + " @ " + d["client_address"].astype("string")
    d["version"] = "v" + d["api_version"].astype("string")
    return (
        alt.Chart(d, name="throughput_api_versions")
        .mark_bar()
        .encode(
            y=alt.Y("client:N", title=None),
            x=count_x("requests:Q", "requests"),
            color=alt.Color(
                "format:N", scale=alt.Scale(domain=["old (converted)", "current"], range=["#d9480f", "#4c6ef5"])
            ),
            row=alt.Row("api_name:N", title=None),
            tooltip=["client:N", "version:N", "requests:Q"],
        )
        .properties(width=520, title="Requests by client and API version")
    )


def probe_throughput(probes: pd.DataFrame):
    """MB/s over time for each consume probe."""
    if not len(probes):
        return _none(
            "consume probes",
            "Run `kitlib probe consume` against the cluster with the old and the "
            "current api_version and add its output to the bundle.",
        )
    d = probes.assign(label=probes["probe"].astype("string") + " (api " + probes["api_version"].astype("string") + ")")
    return (
        alt.Chart(d, name="throughput_probes")
        .mark_line(point=True)
        .encode(
            x=alt.X("elapsed_s:Q", title="seconds since the probe started"),
            y=alt.Y("mb_per_s:Q", title="MB/s"),
            color=alt.Color("label:N", title="probe"),
            tooltip=["label:N", "mb_per_s:Q", "records:Q"],
        )
        .properties(width=640, height=220, title="Consume probes: MB/s")
    )
