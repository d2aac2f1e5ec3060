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

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import arrow_messages, extractor

tables.declare(
    "requests",
    "One row per request the broker logged as completed (request logger at DEBUG).",
    [
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
    ],
)

# 0.10-1.0 logged no ",response:..." (and no throttleTime)
_OLD = re.compile(
    r"Completed request:(?P<desc>.*?)(?:,response:.*)? from connection (?P<conn>[^;]+);(?P<times>.*)$", re.S
)
_OLD_HDR = re.compile(
    r"api_key=(?:(?P<key>\d+)|[^,]*),api_version=(?P<ver>\d+),correlation_id=(?P<corr>-?\d+),client_id=(?P<cid>[^,}]*)"
    # 1.0-2.7: RequestHeader.toString, the API by name
    # (the redaction keeps it: an apiKey that is one of Kafka's API names is no secret)
    r"|RequestHeader\(apiKey=(?:(?P<name>[A-Z_]+)|[^,]*), apiVersion=(?P<ver2>\d+), clientId=(?P<cid2>.*?), "
    r"correlationId=(?P<corr2>-?\d+)\)"
)
_OLD_T = re.compile(r"(\w+):([^,]+)")
_API_NAMES = {
    0: "PRODUCE",
    1: "FETCH",
    2: "LIST_OFFSETS",
    3: "METADATA",
    8: "OFFSET_COMMIT",
    9: "OFFSET_FETCH",
    10: "FIND_COORDINATOR",
    11: "JOIN_GROUP",
    12: "HEARTBEAT",
    13: "LEAVE_GROUP",
    14: "SYNC_GROUP",
    18: "API_VERSIONS",
    19: "CREATE_TOPICS",
}
_API_KEYS = {v: k for k, v in _API_NAMES.items()}  # the 1.0-2.7 header names the API


def _client_address(conn: str) -> str:
    # connection id: <broker host:port>-<client host:port>-<index> (0.10: no index)
    parts = conn.split("-")
    return parts[1] if len(parts) >= 2 else conn


def _row_json(msg: str) -> dict | None:
    i = msg.find("{")
    try:
        d = json.loads(msg[i:])
    except (ValueError, TypeError, RecursionError):
        return None
    h = d.get("requestHeader") or {}
    ci = d.get("clientInformation") or {}
    return {
        "api_name": h.get("requestApiKeyName"),
        "api_key": h.get("requestApiKey"),
        "api_version": h.get("requestApiVersion"),
        "correlation_id": h.get("correlationId"),
        "client_id": h.get("clientId"),
        "client_address": _client_address(d.get("connection", "")),
        "principal": d.get("principal"),
        "listener": d.get("listener"),
        "software": f"{ci.get('softwareName', '')}/{ci.get('softwareVersion', '')}" if ci else None,
        "total_ms": d.get("totalTimeMs"),
        "request_queue_ms": d.get("requestQueueTimeMs"),
        "local_ms": d.get("localTimeMs"),
        "remote_ms": d.get("remoteTimeMs"),
        "throttle_ms": d.get("throttleTimeMs"),
        "response_queue_ms": d.get("responseQueueTimeMs"),
        "send_ms": d.get("sendTimeMs"),
        "conversion_ms": d.get("messageConversionsTime"),
        "temporary_memory_bytes": d.get("temporaryMemoryBytes"),
    }


def _row_text(msg: str) -> dict | None:
    m = _OLD.search(msg)
    if not m:
        return None
    h = _OLD_HDR.search(m.group("desc"))
    t = dict(_OLD_T.findall(m.group("times")))
    # the 0.10 header's fields, else (1.0-2.7) the RequestHeader's ("ver2", ...)
    hd: dict[str, str] = {k.rstrip("2"): v for k, v in (h.groupdict() if h else {}).items() if v is not None}
    key = int(hd["key"]) if "key" in hd else _API_KEYS.get(hd.get("name", ""))
    f = lambda k: float(t[k]) if k in t else None
    return {
        "api_name": hd.get("name") or (_API_NAMES.get(key, str(key)) if key is not None else None),
        "api_key": key,
        "api_version": int(hd["ver"]) if "ver" in hd else None,
        "correlation_id": int(hd["corr"]) if "corr" in hd else None,
        "client_id": hd.get("cid"),
        "client_address": _client_address(m.group("conn")),
        "principal": t.get("principal"),
        "listener": t.get("listener"),
        "software": t.get("clientInformation"),
        "total_ms": f("totalTime"),
        "request_queue_ms": f("requestQueueTime"),
        "local_ms": f("localTime"),
        "remote_ms": f("remoteTime"),
        "throttle_ms": f("throttleTime"),
        "response_queue_ms": f("responseQueueTime"),
        "send_ms": f("sendTime"),
        "conversion_ms": f("messageConversionsTime"),
        "temporary_memory_bytes": f("temporaryMemoryBytes"),
    }


_NUM = r"-?[0-9][0-9.eE+-]*"
# the header and the tail of a 2.8+ JSON line, in the order RequestConvertToJson writes them
_J_HEAD = (
    r'"requestHeader":\{"requestApiKey":(?P<key>\d+),"requestApiVersion":(?P<ver>\d+),'
    r'"correlationId":(?P<corr>-?\d+),"clientId":(?:"(?P<cid>[^"\\]*)"|null)'
    r'(?:,"requestApiKeyName":"(?P<name>\w+)")?'
)
_J_TAIL = (
    r'"connection":"(?P<conn>[^"\\]*)","totalTimeMs":(?P<total>'
    + _NUM
    + r'),"requestQueueTimeMs":(?P<rq>'
    + _NUM
    + r'),"localTimeMs":(?P<local>'
    + _NUM
    + r'),"remoteTimeMs":(?P<remote>'
    + _NUM
    + r'),"throttleTimeMs":(?P<thr>'
    + _NUM
    + r'),"responseQueueTimeMs":(?P<respq>'
    + _NUM
    + r'),"sendTimeMs":(?P<send>'
    + _NUM
    + r'),"securityProtocol":"[^"\\]*","principal":"(?P<principal>[^"\\]*)","listener":"(?P<listener>[^"\\]*)"'
    r'(?:,"clientInformation":\{"softwareName":"(?P<sw>[^"\\]*)","softwareVersion":"(?P<swv>[^"\\]*)"\})?'
    r'(?:,"temporaryMemoryBytes":(?P<tmp>\d+))?(?:,"messageConversionsTime":(?P<conv>' + _NUM + r"))?\}\s*$"
)
_SLICE = 65536


def _fast_json(msgs: pa.Array) -> tuple[np.ndarray, dict]:
    """The common 2.8+ JSON lines read with Arrow's regex kernels: (mask of the rows read, their
    columns). Lines in any other shape are left to the per-line readers."""
    msgs = pc.cast(msgs, pa.string())  # a slice is far below 2 GB
    head = pc.extract_regex(msgs, _J_HEAD)
    tail = pc.extract_regex(msgs, _J_TAIL)
    ok = np.asarray(pc.and_(pc.is_valid(head), pc.is_valid(tail)).fill_null(False).to_numpy(zero_copy_only=False), bool)
    rows = pa.array(np.flatnonzero(ok))
    h, t = head.take(rows), tail.take(rows)

    def s(struct, f):
        return pc.struct_field(struct, f)

    def num(struct, f, typ=pa.float64()):
        v = s(struct, f)
        return pc.cast(pc.if_else(pc.equal(v, ""), pa.scalar(None, v.type), v), typ)

    key = num(h, "key", pa.int64())
    name = s(h, "name")
    names = (
        [n if n else _API_NAMES.get(k, str(k)) for n, k in zip(name.to_pylist(), key.to_pylist())]
        if pc.any(pc.equal(name, "")).as_py()
        else name
    )
    sw, swv = s(t, "sw"), s(t, "swv")
    has_sw = pc.or_(pc.not_equal(sw, ""), pc.not_equal(swv, ""))
    software = pc.if_else(has_sw, pc.binary_join_element_wise(sw, swv, "/"), pa.scalar(None, pa.string()))
    conn = s(t, "conn").to_pylist()
    cid = s(h, "cid")
    cid_null = pc.match_substring(msgs.take(rows), '"clientId":null')
    cols = {
        "api_name": names,
        "api_key": key,
        "api_version": num(h, "ver", pa.int64()),
        "correlation_id": num(h, "corr", pa.int64()),
        "client_id": pc.if_else(cid_null, pa.scalar(None, cid.type), cid),
        "client_address": [_client_address(c) for c in conn],
        "principal": s(t, "principal"),
        "listener": s(t, "listener"),
        "software": software,
        "total_ms": num(t, "total"),
        "request_queue_ms": num(t, "rq"),
        "local_ms": num(t, "local"),
        "remote_ms": num(t, "remote"),
        "throttle_ms": num(t, "thr"),
        "response_queue_ms": num(t, "respq"),
        "send_ms": num(t, "send"),
        "conversion_ms": num(t, "conv"),
        "temporary_memory_bytes": num(t, "tmp", pa.int64()),
    }
    return ok, {k: (v.to_pandas() if isinstance(v, (pa.Array, pa.ChunkedArray)) else v) for k, v in cols.items()}


@extractor("requests", loggers=["kafka.request.logger", "kafka.network.RequestChannel$"], blockwise=True)
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("requests")
    frames = []
    prov = ["ts", "host", "file", "line"]
    for i in range(0, len(events), _SLICE):
        ev = events.iloc[i : i + _SLICE]
        msgs = arrow_messages(ev)
        ok, cols = _fast_json(msgs)
        if ok.any():
            fast = pd.DataFrame(cols)
            for c in prov:
                fast[c] = ev[c].to_numpy()[ok]
            fast["_row"] = np.flatnonzero(ok) + i
            frames.append(fast)
        rows = []
        for j in np.flatnonzero(~ok).tolist():  # the other shapes, line by line
            msg = msgs[j].as_py()
            if "Completed request:" not in msg:
                continue
            r = _row_json(msg) if 'Completed request:{"' in msg else _row_text(msg)  # 0.10: '{api_key=...
            if r is None:
                continue
            r.update({c: ev[c].iat[j] for c in prov}, _row=j + i)
            rows.append(r)
        if rows:
            frames.append(pd.DataFrame(rows))
    if not frames:
        return tables.empty("requests")
    out = pd.concat(
        [tables.conform("requests", f).assign(_row=f["_row"].to_numpy()) for f in frames], ignore_index=True
    )
    return out.sort_values("_row", kind="stable").drop(columns="_row").reset_index(drop=True)


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
    out = g.agg(
        requests=("ts", "size"),
        first_ts=("ts", "min"),
        last_ts=("ts", "max"),
        first_file=("file", "first"),
        first_line=("line", "first"),
    ).reset_index()
    out["first_seen"] = out["first_file"].astype("string") + ":" + out["first_line"].astype("string")
    return out[cols].sort_values(["api_name", "client_id", "api_version"]).reset_index(drop=True)
