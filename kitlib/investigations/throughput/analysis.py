"""Message-format down-conversion (seed 000): a broker converting record batches for clients
that only understand an older message format, losing zero-copy sends.

Evidence comes from JMX (``FetchMessageConversionsPerSec`` / ``ProduceMessageConversionsPerSec``
counters, ``MessageConversionsTimeMs``) and from the request log (Fetch v0-v3 means message
format v0/v1; ``messageConversionsTime`` on a request is the broker saying it converted).

Example:
    >>> from kitlib.investigations.throughput.analysis import detect_down_conversion
    >>> detect_down_conversion(kitlib.load_bundle("sample_data/down-conversion"))[0].id   # doctest: +SKIP
    'down-conversion'
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kitlib.findings import Finding, detector, evidence
from kitlib.metrics import rate, select

OLD_FETCH_MAX = 3  # Fetch v0-v3 read message format v0/v1 (v4+ understand record batches v2)
OLD_PRODUCE_MAX = 2  # Produce v0-v2 send message format v0/v1


def conversions(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per host and kind (fetch/produce): converted messages counted by the broker's counters
    over the dump, with the peak per-second rate and the rows where the counter rose."""
    out = []
    for kind, name in (("fetch", "FetchMessageConversionsPerSec"), ("produce", "ProduceMessageConversionsPerSec")):
        m = select(metrics, name, "Count", topic=None) if len(metrics) else metrics
        if not len(m):
            continue
        r = rate(m)
        for host, g in r.groupby("host", observed=True):
            total = float(g["delta"].sum())
            out.append(
                {
                    "host": str(host),
                    "kind": kind,
                    "messages": total,
                    "peak_per_s": float(g["rate"].max()) if len(g) else 0.0,
                    "rows": g[g["delta"] > 0],
                }
            )
    return pd.DataFrame(out, columns=["host", "kind", "messages", "peak_per_s", "rows"])


def old_clients(requests: pd.DataFrame) -> pd.DataFrame:
    """Clients whose Fetch/Produce versions force a conversion, with counts and share."""
    cols = [
        "api_name",
        "client_id",
        "client_address",
        "api_version",
        "requests",
        "share",
        "conversion_ms",
        "first_seen",
    ]
    if not len(requests):
        return pd.DataFrame(columns=cols)
    r = requests[requests["api_name"].astype("string").isin(["FETCH", "PRODUCE"])]
    # a current producer's batch converted by the broker is a recompression (the topic's
    # compression.type differs from the producer's), not a down-conversion: only fetch-side
    # conversion time counts here
    old = r[
        ((r["api_name"] == "FETCH") & ((r["api_version"] <= OLD_FETCH_MAX) | r["conversion_ms"].notna()))
        | ((r["api_name"] == "PRODUCE") & (r["api_version"] <= OLD_PRODUCE_MAX))
    ]
    if not len(old):
        return pd.DataFrame(columns=cols)
    per_api = r.groupby("api_name", observed=True).size()
    g = old.sort_values("ts").groupby(["api_name", "client_id", "client_address", "api_version"], observed=True)
    out = g.agg(
        requests=("ts", "size"), conversion_ms=("conversion_ms", "sum"), file=("file", "first"), line=("line", "first")
    ).reset_index()
    out["share"] = out.apply(lambda x: x["requests"] / per_api.get(x["api_name"], 1), axis=1)
    out["first_seen"] = out["file"].astype("string") + ":" + out["line"].astype("string")
    return out[cols].sort_values("requests", ascending=False).reset_index(drop=True)


@detector(
    ids=["down-conversion"],
    needs=(),
    checks="broker message-format conversion counters and Fetch/Produce API versions in the request log",
)
def detect_down_conversion(bundle) -> list[Finding]:
    conv = conversions(bundle.metrics)
    conv = conv[conv["messages"] > 0] if len(conv) else conv
    req = bundle.requests
    clients = old_clients(req)
    if len(conv) and not (clients["api_name"] == "PRODUCE").any():
        # produce-side conversions from current producers are recompressions (compression.type on the
        # topic or broker differs from the producer's codec): a cost, but not down-conversion
        conv = conv[conv["kind"] == "fetch"]
    if not len(conv) and not len(clients):
        return []
    nums: dict[str, Any] = {}
    ev = []
    if len(conv):
        for r in conv.itertuples():
            nums[f"{r.kind}_conversions_{r.host}"] = int(r.messages)
            nums[f"{r.kind}_conversions_peak_per_s_{r.host}"] = round(r.peak_per_s, 1)
            ev += evidence(
                r.rows.head(3),
                text=lambda x: (
                    f"{x['mbean']} {x['attribute']} = {x['value']:,.0f} (+{x['delta']:,.0f} in {x['seconds']:.0f} s)"
                ),
            )
    who = []
    if len(clients):
        fetch = req[req["api_name"] == "FETCH"]
        old_fetch = clients[clients["api_name"] == "FETCH"]["requests"].sum()
        nums["fetch_requests"] = int(len(fetch))
        nums["old_version_fetch_requests"] = int(old_fetch)
        nums["share_of_fetches_converted_pct"] = round(100 * old_fetch / max(len(fetch), 1), 1)
        conv_ms = req["conversion_ms"].dropna()
        if len(conv_ms):
            nums["conversion_ms_total"] = round(float(conv_ms.sum()), 1)
            nums["temporary_memory_bytes_max"] = int(req["temporary_memory_bytes"].max())
        for c in clients.head(5).itertuples():
            who.append(f"{c.client_id} at {c.client_address} ({c.api_name} v{c.api_version}, {c.requests} requests)")
        rows = req[
            req["client_id"].isin(clients["client_id"])
            & (((req["api_name"] == "FETCH") & (req["api_version"] <= OLD_FETCH_MAX)) | req["conversion_ms"].notna())
        ]
        ev += evidence(
            rows.sort_values("ts").head(5),
            text=lambda x: (
                f"{x['api_name']} v{x['api_version']} from {x['client_id']} ({x['client_address']}), "
                f"conversion {x['conversion_ms'] if pd.notna(x['conversion_ms']) else 0} ms, "
                f"temporary memory {x['temporary_memory_bytes'] if pd.notna(x['temporary_memory_bytes']) else 0} bytes"
            ),
        )
    if len(conv):
        total = int(conv["messages"].sum())
        lead = f"brokers converted {total:,} messages to an older message format"
    else:
        lead = "clients fetch with API versions that make the broker convert message formats"
    summary = (
        lead
        + (": " + "; ".join(who) if who else "")
        + ". Converted fetches lose zero-copy and cost broker CPU and memory."
    )
    severity = (
        "high"
        if (len(conv) and conv["messages"].sum() > 10000) or nums.get("share_of_fetches_converted_pct", 0) > 10
        else "medium"
    )
    return [
        Finding(
            id="down-conversion",
            severity=severity,
            summary=summary,
            numbers=nums,
            recommendation=(
                "Upgrade the listed clients to a library that speaks Fetch v4+ / Produce v3+ (record batch "
                "format v2; any Kafka client 0.11 or later) — seed 000's consumer went from ~50 MB/min to "
                "~2.5 GB/min after its 0.8 client was upgraded. Until then, on brokers before 3.0 set "
                "log.message.format.version (or the topic's message.format.version) to the old clients' "
                "version so data is stored in the format they read; note that Kafka 4.0 removes "
                "down-conversion and rejects these old request versions outright."
            ),
            evidence=ev,
        )
    ]
