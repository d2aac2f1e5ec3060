"""What a bundle says about a Connect task's producer and worker: the producer's settings from
its ProducerConfig dumps, ``offset.flush.timeout.ms`` from the worker's, and the samples of one
metric from the metrics table.
"""

from __future__ import annotations

import math

import pandas as pd

from kitlib.investigations.connect_offsets.arithmetic import DEFAULT_FLUSH_TIMEOUT_MS

WORKER_SCOPES = ("DistributedConfig", "StandaloneConfig", "WorkerConfig")

PRODUCER_KEYS = [
    "batch.size",
    "linger.ms",
    "max.in.flight.requests.per.connection",
    "max.request.size",
    "buffer.memory",
    "acks",
    "compression.type",
]


def number(v, default=None):
    """A config or metric value as a finite float, or ``default``."""
    try:
        x = float(str(v).strip())
        return x if math.isfinite(x) else default
    except (TypeError, ValueError):
        return default


def producer_client_id(connector: str, task: int) -> str:
    """The client.id Connect gives a source task's producer.

    Example:
        >>> producer_client_id("orders", 0)
        'connector-producer-orders-0'
    """
    return f"connector-producer-{connector}-{task}"


def producer_settings(configs: pd.DataFrame, connector: str, task: int, before=None) -> dict:
    """The task's producer config (last ProducerConfig dump before ``before``), with the rows
    it came from under ``_rows``: the dump of ``connector-producer-<conn>-<task>``, else a
    producer whose client.id names the connector, else the only producer in the bundle."""
    if configs is None or configs.empty:
        return {}
    p = configs[configs["scope"] == "ProducerConfig"]
    if before is not None:
        p = p[p["ts"] <= before]
    if p.empty:
        return {}
    ents = p["entity"].astype(str)
    cid = producer_client_id(connector, task)
    pick = p[ents == cid]
    if pick.empty:
        pick = p[ents.str.contains(connector, regex=False)]
    if pick.empty and ents.nunique() == 1:
        pick = p
    if pick.empty:
        return {}
    last_ts = pick["ts"].max()
    rows = pick[pick["ts"] == last_ts]
    out = dict(zip(rows["key"].astype(str), rows["value"].astype(str)))
    out["_rows"] = rows
    return out


def flush_timeout_ms(configs: pd.DataFrame, before=None) -> tuple[float, pd.DataFrame]:
    """offset.flush.timeout.ms from the worker config dump (default 5000) and its row."""
    if configs is None or configs.empty:
        return DEFAULT_FLUSH_TIMEOUT_MS, pd.DataFrame()
    w = configs[configs["scope"].isin(WORKER_SCOPES) & (configs["key"] == "offset.flush.timeout.ms")]
    if before is not None and (w["ts"] <= before).any():
        w = w[w["ts"] <= before]
    if w.empty:
        return DEFAULT_FLUSH_TIMEOUT_MS, w
    w = w.sort_values("ts").tail(1)
    return number(w["value"].iloc[0], DEFAULT_FLUSH_TIMEOUT_MS), w


def metric_series(
    metrics: pd.DataFrame,
    attribute: str,
    client_id: str | None = None,
    connector: str | None = None,
    task: int | None = None,
) -> pd.DataFrame:
    """Samples (ts, value, host, file, line) of one metric attribute, filtered by client id or
    connector/task when those columns are present."""
    if metrics is None or metrics.empty or "attribute" not in metrics:
        return pd.DataFrame(columns=["ts", "value"])
    m = metrics[metrics["attribute"] == attribute]
    if client_id is not None and "client_id" in m:
        m = m[m["client_id"] == client_id]
    if connector is not None and "connector" in m:
        m = m[m["connector"] == connector]
    if task is not None and "task" in m:
        m = m[m["task"].astype(str) == str(task)]
    m = m[pd.to_numeric(m["value"], errors="coerce").notna()]
    return m.sort_values("ts")


def producer_history(configs: pd.DataFrame, connector: str | None = None) -> pd.DataFrame:
    """One row per ProducerConfig dump (time, client.id) with the settings that decide
    batching: a change between two rows is a producer re-created with new settings.

    Example:
        >>> producer_history(pd.DataFrame(columns=["ts", "scope", "entity", "key", "value"])).empty
        True
    """
    cols = ["ts", "client_id"] + PRODUCER_KEYS
    if configs is None or configs.empty:
        return pd.DataFrame(columns=cols)
    p = configs[(configs["scope"] == "ProducerConfig") & configs["key"].isin(PRODUCER_KEYS)]
    if connector is not None:
        p = p[p["entity"].astype(str).str.contains(str(connector), regex=False)]
    if p.empty:
        return pd.DataFrame(columns=cols)
    w = p.pivot_table(index=["ts", "entity"], columns="key", values="value", aggfunc="last", observed=True)
    w = w.reset_index().rename(columns={"entity": "client_id"})
    for k in PRODUCER_KEYS:
        if k not in w:
            w[k] = pd.NA
    return w[cols].sort_values("ts").reset_index(drop=True)
