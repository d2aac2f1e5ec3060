"""Charts for the client-requests notebook: failures per minute by who, throttle time per
client, handler/network idle against the 30 % floor, and request-queue time per broker.

Example:
    >>> from kitlib.investigations.client_requests import charts
    >>> charts.idle(bundle.metrics)                                 # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import HTML, bin_time, step_text
from kitlib.investigations.client_requests.analysis import IDLE_FLOOR, idle_samples


def _naive(ts: pd.Series) -> pd.Series:
    return pd.to_datetime(ts, utc=True).dt.tz_localize(None)


def _per(step: pd.Timedelta | None, what: str) -> str:
    """The title's note on binned data ("" when every row is drawn)."""
    return "" if step is None else f" ({what} per {step_text(step)} bucket)"


def auth_failures(af: pd.DataFrame):
    """Authentication and authorization failures per minute, by principal or address."""
    if not len(af):
        return HTML("<p><i>No authentication or authorization failures in this bundle.</i></p>", "No failures.")
    d = pd.DataFrame(
        {
            "minute": _naive(af["ts"]).dt.floor("min"),
            "who": af["principal"].astype("string").fillna(af["address"].astype("string")).fillna("?"),
            "kind": af["kind"].astype("string"),
        }
    )
    d = d.groupby(["minute", "who", "kind"], dropna=False).size().rename("failures").reset_index()
    d, step = bin_time(d, "minute", ["who", "kind"], {"failures": "sum"})
    return (
        alt.Chart(d, name="auth_failures")
        .mark_bar()
        .encode(
            x=alt.X("minute:T", title="minute (UTC)"),
            y=alt.Y("failures:Q", title="failures"),
            color=alt.Color("who:N", title="principal / address"),
            tooltip=["minute:T", "who:N", "kind:N", "failures:Q"],
        )
        .properties(
            width=640,
            height=200,
            title="Authentication and authorization failures per "
            + ("minute" if step is None else f"{step_text(step)} bucket"),
        )
    )


def throttling(requests: pd.DataFrame):
    """Throttle time of each request, per client id (only clients throttled at least once)."""
    r = requests[requests["throttle_ms"].fillna(0) > 0] if len(requests) else requests
    if not len(r):
        return HTML("<p><i>No throttled requests in the request log.</i></p>", "No throttled requests.")
    clients = set(r["client_id"].astype("string"))
    r = requests[requests["client_id"].astype("string").isin(clients)]
    d = pd.DataFrame(
        {
            "ts": _naive(r["ts"]),
            "client": r["client_id"].astype("string"),
            "api": r["api_name"].astype("string"),
            "throttle_ms": r["throttle_ms"].astype("float64"),
        }
    )
    d, step = bin_time(d, "ts", ["client", "api"], {"throttle_ms": "max"}, count="requests")
    return (
        alt.Chart(d, name="throttling")
        .mark_point(size=20)
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("throttle_ms:Q", title="throttleTimeMs"),
            color=alt.Color("client:N", title="client id"),
            tooltip=["ts:T", "client:N", "api:N", "throttle_ms:Q"] + ([] if step is None else ["requests:Q"]),
        )
        .properties(width=640, height=200, title="Quota throttle time per request" + _per(step, "longest"))
    )


def idle(metrics: pd.DataFrame):
    """RequestHandlerAvgIdlePercent and NetworkProcessorAvgIdlePercent per broker, with the floor."""
    s = idle_samples(metrics)
    if not len(s):
        return HTML(
            "<p><i>No request handler or network processor idle metrics in this bundle.</i></p>", "No idle metrics."
        )
    d = pd.DataFrame(
        {"ts": _naive(s["ts"]), "host": s["host"].astype("string"), "metric": s["metric"], "idle": s["idle"]}
    )
    d, step = bin_time(d, "ts", ["host", "metric"], {"idle": "min"})
    lines = (
        alt.Chart(d, name="idle")
        .mark_line(point=True)
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("idle:Q", title="idle fraction", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("host:N"),
            strokeDash=alt.StrokeDash("metric:N"),
            tooltip=["ts:T", "host:N", "metric:N", "idle:Q"],
        )
    )
    floor = alt.Chart(pd.DataFrame({"y": [IDLE_FLOOR]})).mark_rule(color="#c92a2a", strokeDash=[4, 4]).encode(y="y:Q")
    return (lines + floor).properties(
        width=640, height=200, title=f"Handler and network idle (floor {IDLE_FLOOR:.0%})" + _per(step, "lowest")
    )


def queue_time(requests: pd.DataFrame):
    """Request-queue time per broker: the 99th percentile per minute."""
    if not len(requests):
        return HTML("<p><i>No request log in this bundle.</i></p>", "No request log.")
    d = pd.DataFrame(
        {
            "minute": _naive(requests["ts"]).dt.floor("min"),
            "host": requests["host"].astype("string"),
            "queue_ms": requests["request_queue_ms"].astype("float64"),
        }
    )
    d = d.groupby(["minute", "host"])["queue_ms"].quantile(0.99).rename("p99_queue_ms").reset_index()
    d, step = bin_time(d, "minute", ["host"], {"p99_queue_ms": "max"})
    return (
        alt.Chart(d, name="queue_time")
        .mark_line(point=True)
        .encode(
            x=alt.X("minute:T", title="minute (UTC)"),
            y=alt.Y("p99_queue_ms:Q", title="requestQueueTimeMs p99"),
            color=alt.Color("host:N"),
            tooltip=["minute:T", "host:N", "p99_queue_ms:Q"],
        )
        .properties(
            width=640,
            height=200,
            title="Time requests waited for a handler thread (p99 per minute"
            + ("" if step is None else f"; the highest per {step_text(step)} bucket")
            + ")",
        )
    )
