"""Apache Kafka's own tiered storage (KIP-405; 3.6+): RemoteLogManager and the topic-based
remote log metadata manager -> ``remote_log_events`` (copies to remote storage, deletions and why,
errors), so copy progress and failures per partition can be followed next to the broker's other
records.

Example:
    >>> classify("[RemoteLogManager=0 partition=zjCAoo05TfOtzEaZ4BnsAw:orders-0] Copying 00000000000001857762.log to remote storage.")["kind"]
    'copying'
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor

tables.declare(
    "remote_log_events",
    "KIP-405 tiered storage activity: segment copies, remote deletions, errors.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "copying, copied, copy_error, delete_retention_size, delete_retention_time, delete_log_start, "
            "deleted_truncation, undeletable, rlmm, other",
        ),
        ("broker", "int", "broker id from the RemoteLogManager prefix"),
        ("topic_id", "str", "topic id"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("segment", "str", "local segment file (copies)"),
        ("segment_id", "str", "remote log segment id"),
        ("level", "category", "log level"),
        ("message", "str", "first line of the record"),
        ("exception", "str", "for errors: the root cause logged with it (last 'Caused by:', else the exception line)"),
    ],
)

_PREFIX = re.compile(r"\[RemoteLogManager=(?P<b>\d+) partition=(?P<tid>[A-Za-z0-9_-]{22}):(?P<tp>\S+?)\]")
_SEGID = re.compile(r"RemoteLogSegmentId\{topicIdPartition=(?P<tid>[^:]+):(?P<tp>[^,]+), id=(?P<id>[^}]+)\}")
_KINDS = [
    ("copying", re.compile(r"Copying (\S+) to remote storage")),
    ("copied", re.compile(r"Copied (\S+) to remote storage with segment-id")),
    ("copy_error", re.compile(r"Error occurred while copying log segments of partition")),
    ("delete_retention_size", re.compile(r"About to delete remote log segment .* due to retention size")),
    ("delete_retention_time", re.compile(r"About to delete remote log segment .* due to retention time")),
    ("delete_log_start", re.compile(r"About to delete remote log segment .* due to log-start-offset")),
    ("deleted_truncation", re.compile(r"Deleted remote log segment .* due to leader-epoch-cache truncation")),
    ("undeletable", re.compile(r"remote segments could not be deleted")),
    ("rlmm", re.compile(r"topic-based RLMM|__remote_log_metadata|Timed out in initializing the resources")),
]


def classify(message: str) -> dict:
    """Kind, broker, partition and segment of one remote-storage record."""
    first = message.split("\n", 1)[0]
    r: dict[str, Any] = {"kind": "other"}
    for kind, rx in _KINDS:
        m = rx.search(first)
        if m:
            r["kind"] = kind
            if kind in ("copying", "copied"):
                r["segment"] = m.group(1)
            break
    p = _PREFIX.search(first)
    s = _SEGID.search(first)
    if p:
        r["broker"] = int(p.group("b"))
        r["topic_id"] = p.group("tid")
        tp = p.group("tp")
    elif s:
        r["topic_id"] = s.group("tid")
        tp = s.group("tp")
    else:
        tp = None
    if tp:
        topic, _, part = tp.rpartition("-")
        r["topic"], r["partition"] = topic, int(part) if part.isdigit() else None
    if s:
        r["segment_id"] = s.group("id")
    return r


@extractor(
    "remote_log_events",
    match=lambda name: (
        "RemoteLogManager" in name
        or "RemoteLogMetadataManager" in name
        or name.startswith(("kafka.log.remote.", "org.apache.kafka.server.log.remote."))
    ),
    blockwise=True,
)
def build(events: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for ts, lvl, msg, host, file, line in zip(
        events["ts"], events["level"], events["message"], events["host"], events["file"], events["line"]
    ):
        r = classify(msg)
        first, _, rest = msg.partition("\n")
        r.update(ts=ts, level=lvl, message=first[:500], host=host, file=file, line=line)
        if rest and lvl in ("ERROR", "WARN"):  # the root cause: the last "Caused by:", else the exception itself
            causes = [ln[len("Caused by: ") :] for ln in rest.split("\n") if ln.startswith("Caused by: ")]
            r["exception"] = (causes[-1] if causes else rest.split("\n", 1)[0]).strip()[:300]
        rows.append(r)
    return pd.DataFrame(rows)
