"""Jolokia read responses (JSON) -> the ``metrics`` table.

A single response ``{"request": {"mbean": ..., "type": "read"}, "value": {...}, "timestamp": s,
"status": 200}``, a bulk response (a JSON list of those), wildcard reads whose value is
``{mbean: {attribute: value}}``, single-attribute reads (scalar value), and files holding one
response per line (repeated polls appended). Failed responses (status != 200) are reported.

Example:
    >>> detect(b'{"request":{"mbean":"java.lang:type=Memory","type":"read"},"value":{},"timestamp":1,"status":200}', None)
    True
"""

from __future__ import annotations

import json

import pandas as pd

from kitlib.formats import Context, register, unparsed_frame, with_provenance
from kitlib.metrics import with_keys
from kitlib.sources import SourceError, read_chunks


def detect(head: bytes, src) -> bool:
    h = head.lstrip()[:4000]
    return h[:1] in (b"{", b"[") and b'"request"' in h and b'"value"' in h and b'"mbean"' in h


def _rows(resp: dict, line: int):
    req = resp.get("request") or {}
    ts = _time(resp.get("timestamp"))
    val = resp.get("value")
    bean = req.get("mbean", "")
    if isinstance(val, dict) and val and all(isinstance(v, dict) for v in val.values()) and ":" in next(iter(val)):
        items = [(b, a, v) for b, attrs in val.items() for a, v in attrs.items()]
    elif isinstance(val, dict):
        items = [(bean, a, v) for a, v in val.items()]
    else:
        items = [(bean, req.get("attribute", "Value"), val)]
    for b, a, v in items:
        if isinstance(v, (dict, list)):
            continue  # composite values (e.g. HeapMemoryUsage) are flattened one level below
        num = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
        yield {"ts": ts, "mbean": b, "attribute": a, "value": num, "text": None if num == num else str(v), "line": line}


def _time(value):
    """A response's ``timestamp`` (epoch seconds); NaT when missing, not a number or out of range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return pd.NaT
    if not -9_000_000_000 < value < 9_000_000_000:  # beyond 1678..2255: the tables cannot hold it
        return pd.NaT
    return pd.Timestamp(value, unit="s", tz="UTC")


def _flatten(resp: dict):
    val = resp.get("value")
    if isinstance(val, dict):
        for a, v in list(val.items()):
            if isinstance(v, dict) and not any(isinstance(x, dict) for x in v.values()) and ":" not in a:
                for sub, x in v.items():
                    val[f"{a}.{sub}"] = x
    return resp


def parse(src, ctx: Context):
    try:
        data = b"".join(read_chunks(src))
    except SourceError as e:
        ctx.fail(str(e))
        data = b""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    ctx.lines = len(lines) - (1 if text.endswith("\n") else 0)
    docs = []
    try:
        docs.append((1, json.loads(text)))
    except (json.JSONDecodeError, RecursionError) as whole_err:
        for i, ln in enumerate(lines, 1):  # one response per line (appended polls)
            if not ln.strip():
                continue
            try:
                docs.append((i, json.loads(ln)))
            except (json.JSONDecodeError, RecursionError) as e:
                where = whole_err if len(docs) == 0 else e
                line = getattr(where, "lineno", i) if where is whole_err else i
                msg = getattr(where, "msg", "nested too deeply to read")
                ctx.fail(f"{src.rel} line {line}: invalid JSON ({msg})", line)
                bad = [n for n in range(1, ctx.lines + 1)]
                yield "unparsed", unparsed_frame(src, bad, lines[: ctx.lines], "invalid Jolokia JSON")
                return
    ctx.parsed = ctx.lines
    rows = []
    for line, doc in docs:
        for resp in doc if isinstance(doc, list) else [doc]:
            if not isinstance(resp, dict):
                continue
            if resp.get("status", 200) != 200:
                ctx.fail(f"{src.rel} line {line}: Jolokia error {resp.get('status')}: {resp.get('error', '')}", line)
                continue
            bean = (resp.get("request") or {}).get("mbean", "")
            pos = text.find(json.dumps(bean)[1:-1]) if len(docs) == 1 else -1
            rows.extend(_rows(_flatten(resp), text.count("\n", 0, pos) + 1 if pos >= 0 else line))
    if rows:
        yield "metrics", with_provenance(with_keys(pd.DataFrame(rows)), src, source="jolokia")


register("jolokia", detect=detect, parse=parse, tables=("metrics",), priority=35, doc="Jolokia read responses (JSON)")
