"""Kafka's request log (``kafka.request.logger`` at DEBUG, kafka-request.log) -> ``requests``.

2.8+ writes ``Completed request:{json}``; 2.0-2.7 wrote ``Completed request:<desc>,response:...
from connection <c>;totalTime:<ms>,...``. Both give the API name and version, the client id and
address, the timings, and (when the broker converted message formats) the conversion time and
temporary memory.

Example:
    >>> client_versions(bundle.requests)            # doctest: +SKIP
"""
from __future__ import annotations

import json
import re

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor

tables.declare("requests", "One row per request the broker logged as completed (request logger at DEBUG).", [
    ("ts", "ts", "when the request completed (UTC)"),
    ("api_name", "category", "API: FETCH, PRODUCE, METADATA, ..."),
    ("api_key", "int", "API key number"),
    ("api_version", "int", "API version the client used"),
    ("correlation_id", "int", "client's correlation id"),
    ("client_id", "str", "client.id the client sent"),
    ("client_address", "str", "client host:port, from the connection id"),
    ("principal", "str", "authenticated principal"),
    ("listener", "str", "listener name"),
    ("software", "str", "client software name/version (KIP-511), 'unknown/unknown' for old clients"),
    ("total_ms", "float", "total time"),
    ("request_queue_ms", "float", "time in the request queue"),
    ("local_ms", "float", "time processing on the broker"),
    ("remote_ms", "float", "time waiting (e.g. for followers, or fetch min bytes)"),
    ("throttle_ms", "float", "quota throttle time"),
    ("response_queue_ms", "float", "time in the response queue"),
    ("send_ms", "float", "time sending the response"),
    ("conversion_ms", "float", "time spent converting message formats (down-conversion); NaN when none"),
    ("temporary_memory_bytes", "int", "memory the conversion needed; NA when none"),
])

_OLD = re.compile(r"Completed request:(?P<desc>.*?),response:.* from connection (?P<conn>[^;]+);(?P<times>.*)$", re.S)
_OLD_HDR = re.compile(r"api_key=(?P<key>\d+),api_version=(?P<ver>\d+),correlation_id=(?P<corr>-?\d+),client_id=(?P<cid>[^,}]*)")
_OLD_T = re.compile(r"(\w+):([^,]+)")
_API_NAMES = {0: "PRODUCE", 1: "FETCH", 2: "LIST_OFFSETS", 3: "METADATA", 8: "OFFSET_COMMIT", 9: "OFFSET_FETCH",
              10: "FIND_COORDINATOR", 11: "JOIN_GROUP", 12: "HEARTBEAT", 13: "LEAVE_GROUP", 14: "SYNC_GROUP",
              18: "API_VERSIONS", 19: "CREATE_TOPICS"}


def _client_address(conn: str) -> str:
    # connection id: <broker host:port>-<client host:port>-<index>
    parts = conn.split("-")
    return parts[1] if len(parts) >= 3 else conn


def _row_json(msg: str) -> dict | None:
    i = msg.find("{")
    try:
        d = json.loads(msg[i:])
    except (ValueError, TypeError):
        return None
    h = d.get("requestHeader") or {}
    ci = d.get("clientInformation") or {}
    return {"api_name": h.get("requestApiKeyName"), "api_key": h.get("requestApiKey"),
            "api_version": h.get("requestApiVersion"), "correlation_id": h.get("correlationId"),
            "client_id": h.get("clientId"), "client_address": _client_address(d.get("connection", "")),
            "principal": d.get("principal"), "listener": d.get("listener"),
            "software": f"{ci.get('softwareName', '')}/{ci.get('softwareVersion', '')}" if ci else None,
            "total_ms": d.get("totalTimeMs"), "request_queue_ms": d.get("requestQueueTimeMs"),
            "local_ms": d.get("localTimeMs"), "remote_ms": d.get("remoteTimeMs"),
            "throttle_ms": d.get("throttleTimeMs"), "response_queue_ms": d.get("responseQueueTimeMs"),
            "send_ms": d.get("sendTimeMs"), "conversion_ms": d.get("messageConversionsTime"),
            "temporary_memory_bytes": d.get("temporaryMemoryBytes")}


def _row_text(msg: str) -> dict | None:
    m = _OLD.search(msg)
    if not m:
        return None
    h = _OLD_HDR.search(m.group("desc"))
    t = dict(_OLD_T.findall(m.group("times")))
    key = int(h.group("key")) if h else None
    f = lambda k: float(t[k]) if k in t else None  # noqa: E731
    return {"api_name": _API_NAMES.get(key, str(key)) if key is not None else None, "api_key": key,
            "api_version": int(h.group("ver")) if h else None, "correlation_id": int(h.group("corr")) if h else None,
            "client_id": h.group("cid") if h else None, "client_address": _client_address(m.group("conn")),
            "principal": t.get("principal"), "listener": t.get("listener"), "software": t.get("clientInformation"),
            "total_ms": f("totalTime"), "request_queue_ms": f("requestQueueTime"), "local_ms": f("localTime"),
            "remote_ms": f("remoteTime"), "throttle_ms": f("throttleTime"), "response_queue_ms": f("responseQueueTime"),
            "send_ms": f("sendTime"), "conversion_ms": f("messageConversionsTime"),
            "temporary_memory_bytes": f("temporaryMemoryBytes")}


@extractor("requests", loggers=["kafka.request.logger", "kafka.network.RequestChannel$"])
def build(events: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for ts, msg, host, file, line in zip(events["ts"], events["message"], events["host"], events["file"], events["line"]):
        if "Completed request:" not in msg:
            continue
        r = _row_json(msg) if "Completed request:{" in msg else _row_text(msg)
        if r is None:
            continue
        r.update(ts=ts, host=host, file=file, line=line)
        rows.append(r)
    return pd.DataFrame(rows)


def client_versions(requests: pd.DataFrame, apis=("FETCH", "PRODUCE")) -> pd.DataFrame:
    """Which clients use which versions of Fetch/Produce: one row per (api, client id, address,
    version) with the request count, first and last time, and where the first one is logged.

    Example:
        >>> client_versions(pd.DataFrame(columns=["api_name"]))
        Empty DataFrame
        Columns: [api_name, client_id, client_address, api_version, requests, first_ts, last_ts, first_seen]
        Index: []
    """
    cols = ["api_name", "client_id", "client_address", "api_version", "requests", "first_ts", "last_ts", "first_seen"]
    r = requests[requests["api_name"].astype("string").isin(list(apis))] if len(requests) else requests
    if not len(r):
        return pd.DataFrame(columns=cols)
    r = r.sort_values("ts")
    g = r.groupby(["api_name", "client_id", "client_address", "api_version"], observed=True, dropna=False)
    out = g.agg(requests=("ts", "size"), first_ts=("ts", "min"), last_ts=("ts", "max"),
                first_file=("file", "first"), first_line=("line", "first")).reset_index()
    out["first_seen"] = out["first_file"].astype("string") + ":" + out["first_line"].astype("string")
    return out[cols].sort_values(["api_name", "client_id", "api_version"]).reset_index(drop=True)
