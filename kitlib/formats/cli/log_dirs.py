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

from kitlib.formats import register
from kitlib.formats.cli.frame import ToolOutput, head_lines

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


class LogDirs(ToolOutput):
    """``kafka-log-dirs --describe``: two text lines, then one JSON document per run."""

    def banner(self, text: str) -> bool:
        return text.strip().startswith(_TEXT)

    def line(self, n: int, text: str) -> None:
        out, snap, s = self.out, self.snap, text.strip()
        try:
            doc = json.loads(s) if s.startswith("{") else None
        except json.JSONDecodeError as e:
            out.bad(n, text, f"invalid JSON ({e.msg} at column {e.colno})")
            return
        if not isinstance(doc, dict) or "brokers" not in doc:
            out.bad(n, text, "not kafka-log-dirs output")
            return
        for r in _rows(doc):
            out.add("log_dirs", n, ts=snap, **r)
        out.structure()


register(
    "log_dirs_cli",
    detect=detect,
    parse=LogDirs.parse,
    tables=("log_dirs",),
    priority=26,
    doc="kafka-log-dirs --describe output (text lines and the JSON document)",
)
