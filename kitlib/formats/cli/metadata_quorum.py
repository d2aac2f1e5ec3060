"""``kafka-metadata-quorum describe --status`` / ``--replication`` output (KRaft, Kafka 3.3 to 4.x)
-> ``quorum_status`` and ``quorum_replication``.

``--status`` prints ``Key:<spaces>value`` lines; voters and observers are id lists (``[1,2,3]``,
3.3-3.8) or JSON objects with endpoints (3.9+)::

    ClusterId:              Zhhak0S0SDygpAfaOTov4A
    LeaderId:               1
    LeaderEpoch:            1
    HighWatermark:          240
    MaxFollowerLag:         0
    MaxFollowerLagTimeMs:   0
    CurrentVoters:          [{"id": 1, "directoryId": null, "endpoints": ["CONTROLLER://127.0.0.1:52689"]}]
    CurrentObservers:       []

``--replication`` prints a tab-separated table (``DirectoryId`` since 3.9; ``--human-readable``
prints timestamps as ``<n> ms ago``)::

    NodeId  DirectoryId             LogEndOffset  Lag  LastFetchTimestamp  LastCaughtUpTimestamp  Status
    1       AAAAAAAAAAAAAAAAAAAAAA  242           0    1795433774473       1795433774473          Leader

Repeated runs in one file are fine; a time line before a run sets its ``snapshot_ts``.

Example:
    >>> detect(b"ClusterId:              Zhhak0S0SDygpAfaOTov4A\\nLeaderId:               1\\n"
    ...        b"LeaderEpoch:            1\\nHighWatermark:          240\\n", None)
    True
"""

from __future__ import annotations

import json
import re

import pandas as pd

from kitlib import tables
from kitlib.formats import register, times
from kitlib.formats.cli.frame import ToolOutput, head_lines, to_int

tables.declare(
    "quorum_status",
    "KRaft metadata quorum state from `kafka-metadata-quorum describe --status` (one row per run).",
    [
        ("snapshot_ts", "ts", "time line before the run, if the file has one"),
        ("cluster_id", "str", "cluster id"),
        ("leader_id", "int", "active controller (quorum leader) node id"),
        ("leader_epoch", "int", "leader epoch"),
        ("high_watermark", "int", "metadata log high watermark"),
        ("max_follower_lag", "int", "largest follower lag in records"),
        ("max_follower_lag_time_ms", "int", "largest follower lag in milliseconds"),
        ("voters", "str", "voter node ids, comma-separated"),
        ("observers", "str", "observer node ids, comma-separated"),
        ("voter_endpoints", "str", "voters' endpoints (3.9+ output), 'id=endpoint' comma-separated"),
    ],
)
tables.declare(
    "quorum_replication",
    "Per-replica metadata log progress from `kafka-metadata-quorum describe --replication`.",
    [
        ("snapshot_ts", "ts", "time line before the run, if the file has one"),
        ("node_id", "int", "node id"),
        ("directory_id", "str", "metadata log directory id (3.9+ output)"),
        ("log_end_offset", "int", "replica's metadata log end offset"),
        ("lag", "int", "records behind the leader"),
        ("last_fetch_ts", "ts", "last fetch from the leader (epoch-ms output)"),
        ("last_caught_up_ts", "ts", "last time the replica was caught up (epoch-ms output)"),
        ("last_fetch_ago_ms", "int", "ms since the last fetch (--human-readable output)"),
        ("last_caught_up_ago_ms", "int", "ms since last caught up (--human-readable output)"),
        ("status", "category", "Leader, Follower or Observer"),
    ],
)

_STATUS = {
    "ClusterId": "cluster_id",
    "LeaderId": "leader_id",
    "LeaderEpoch": "leader_epoch",
    "HighWatermark": "high_watermark",
    "MaxFollowerLag": "max_follower_lag",
    "MaxFollowerLagTimeMs": "max_follower_lag_time_ms",
    "CurrentVoters": "voters",
    "CurrentObservers": "observers",
}
_KV = re.compile(r"^(\w+):\s+(.*?)\s*$")
_REPL = {
    "NodeId": "node_id",
    "DirectoryId": "directory_id",
    "LogEndOffset": "log_end_offset",
    "Lag": "lag",
    "LastFetchTimestamp": "last_fetch",
    "LastCaughtUpTimestamp": "last_caught_up",
    "Status": "status",
}


def detect(head: bytes, src) -> bool:
    lines = head_lines(head, 12)
    keys = {m.group(1) for m in map(_KV.match, lines) if m}
    if {"ClusterId", "LeaderId", "HighWatermark"} <= keys:
        return True
    return any({"NodeId", "LogEndOffset", "Lag", "Status"} <= set(ln.split()) for ln in lines[:3])


def _nodes(text: str) -> tuple[str, str | None]:
    """(ids, endpoints) of a voters/observers value: ``[1,2]`` or a JSON list of objects."""
    try:
        v = json.loads(text)
    except json.JSONDecodeError:
        return ",".join(x.strip() for x in text.strip("[]").split(",") if x.strip()), None
    if not isinstance(v, list):
        return text, None
    ids = [str(x.get("id") if isinstance(x, dict) else x) for x in v]
    eps = [
        f"{x.get('id')}={'|'.join(x.get('endpoints') or [])}" for x in v if isinstance(x, dict) and x.get("endpoints")
    ]
    return ",".join(ids), ",".join(eps) or None


def _time(v: str) -> tuple[pd.Timestamp | None, int | None]:
    v = v.strip()
    m = re.fullmatch(r"(\d+) ms ago", v)
    if m:
        return None, int(m.group(1))
    n = to_int(v)
    return (times.timestamp(n, "ms") if n is not None and n > 0 else None), None


class Quorum(ToolOutput):
    """``kafka-metadata-quorum describe``: the ``--status`` lines of a run make one row (added when
    the next run or time line starts, or the file ends); ``--replication`` a row per line."""

    header: list[str] | None = None  # the --replication table's columns
    status: dict | None = None  # the --status run being read, with its first line as "_line"

    def flush(self) -> None:
        if self.status:
            status = self.status
            self.out.add("quorum_status", status.pop("_line"), snapshot_ts=self.snap, **status)

    def time(self, t: pd.Timestamp) -> None:
        self.flush()
        self.status, self.snap = None, t

    def end(self) -> None:
        self.flush()

    def line(self, n: int, text: str) -> None:
        out, snap = self.out, self.snap
        m = _KV.match(text)
        if m and m.group(1) in _STATUS:
            key, value = _STATUS[m.group(1)], m.group(2)
            if key == "cluster_id":
                self.flush()
                self.status = {"_line": n}
            if self.status is None:
                self.status = {"_line": n}
            status = self.status
            if key in ("voters", "observers"):
                status[key], eps = _nodes(value)
                if key == "voters":
                    status["voter_endpoints"] = eps
            else:
                status[key] = to_int(value) if key != "cluster_id" else value
            out.structure()
            return
        cells = [c.strip() for c in text.split("\t")] if "\t" in text else text.split()
        cells = [c for c in cells if c] if "\t" not in text else cells
        if "NodeId" in cells and "LogEndOffset" in cells:
            self.header = [c for c in cells if c]
            out.structure()
            return
        header = self.header
        if header:
            vals = [c for c in cells if c != ""] if len(cells) > len(header) else cells
            if len(vals) >= len(header) and to_int(vals[0]) is not None:
                row = {}
                for name, v in zip(header, vals):
                    col = _REPL.get(name)
                    if col in ("last_fetch", "last_caught_up"):
                        row[f"{col}_ts"], row[f"{col}_ago_ms"] = _time(v)
                    elif col in ("node_id", "log_end_offset", "lag"):
                        row[col] = to_int(v)
                    elif col:
                        row[col] = v
                out.add("quorum_replication", n, snapshot_ts=snap, **row)
                out.structure()
                return
        out.bad(n, text, "not kafka-metadata-quorum output")


register(
    "metadata_quorum",
    detect=detect,
    parse=Quorum.parse,
    tables=("quorum_status", "quorum_replication"),
    priority=26,
    doc="kafka-metadata-quorum describe --status / --replication output",
)
