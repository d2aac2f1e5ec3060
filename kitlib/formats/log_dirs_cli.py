"""``kafka-log-dirs --describe`` output (Kafka 1.0 to 4.x) -> the ``log_dirs`` table (the same
table a live capture fills).

The tool prints two text lines and one line of compact JSON::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"orders-0","size":10667,
      "offsetLag":0,"isFuture":false}],"error":null,"logDir":"/var/lib/kafka/data"}]}],"version":1}

Key order differs between the Scala (<= 3.5) and Java (3.6+) tools, so the JSON is parsed, never
matched. ``partition`` is ``<topic>-<n>`` (split on the last ``-``); ``error`` names the exception
class of an offline directory, which then has no partitions: it becomes one row with the error
and no partition. Several runs may be appended to one file, each optionally after a time line.

Example:
    >>> detect(b"Querying brokers for log directories information\\n", None)
    True
"""

from __future__ import annotations

import json

from kitlib.formats import Context, register, text_lines
from kitlib.formats._cli import Collector, head_lines, is_comment, stamp_line

_TEXT = ("Querying brokers for log directories information", "Received log directory information from brokers")


def detect(head: bytes, src) -> bool:
    lines = head_lines(head, 10)
    if any(ln.startswith(_TEXT) for ln in lines):
        return True
    return any(ln.startswith('{"') and '"logDirs"' in ln[:300] and '"broker' in ln[:300] for ln in lines)


def _rows(doc: dict):
    for b in doc.get("brokers") or []:
        broker = b.get("broker")
        for d in b.get("logDirs") or []:
            parts = d.get("partitions") or []
            base = {"broker_id": broker, "log_dir": d.get("logDir"), "error": d.get("error")}
            if not parts:
                yield dict(base)
            for p in parts:
                name = str(p.get("partition", ""))
                topic, _, num = name.rpartition("-")
                yield dict(
                    base,
                    topic=topic or name,
                    partition=int(num) if num.isdigit() else None,
                    size_bytes=p.get("size"),
                    offset_lag=p.get("offsetLag"),
                    is_future=p.get("isFuture"),
                )


def parse(src, ctx: Context):
    out = Collector(src, ctx)
    snap = None
    for n, text, ok in text_lines(src, ctx):
        s = text.strip()
        if not ok:
            out.bad(n, text, "not valid UTF-8")
            continue
        if is_comment(s) or s.startswith(_TEXT):
            out.structure()
            continue
        t = stamp_line(s, src.tz)
        if t is not None:
            snap = t
            out.structure()
            continue
        try:
            doc = json.loads(s) if s.startswith("{") else None
        except json.JSONDecodeError as e:
            out.bad(n, text, f"invalid JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(doc, dict) or "brokers" not in doc:
            out.bad(n, text, "not kafka-log-dirs output")
            continue
        for r in _rows(doc):
            out.add("log_dirs", n, ts=snap, **r)
        out.structure()
    if out.bad_n:
        ctx.fail(f"{src.rel} line {out.bad_n[0]}: {out.bad_r[0]}", out.bad_n[0])
    yield from out.frames()


register(
    "log_dirs_cli",
    detect=detect,
    parse=parse,
    tables=("log_dirs",),
    priority=26,
    doc="kafka-log-dirs --describe output (text lines and the JSON document)",
)
