"""Confluent Tiered Storage state-file lines (``kafka.tier.state.FileTierPartitionState``) ->
``tierstate_events``: format migrations (start and completion, paired into a duration) and
cleanups (segments removed, size before and after).

These lines are only public through seed 004; their wording there is the specification and
small variations (case, a missing comma, trailing blanks) are tolerated.

Example:
    >>> parse_line("1292021 segments removed by cleanup from tier partition state file for topicIdPartition "
    ...            "7XWCdjQqTIyy9OgycPxg2A:retriever-mutation-0, state file size changed from 147891612 to 601218")["kind"]
    'cleanup'
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kitlib import tables
from kitlib.extract import extractor

tables.declare(
    "tierstate_events",
    "Tier partition state file migrations and cleanups (Confluent Tiered Storage).",
    [
        ("ts", "ts", "record time"),
        ("kind", "category", "migration_start, migration_complete or cleanup"),
        ("topic_id", "str", "topic id (base64)"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("segments_removed", "int", "segments dropped from the state file by a cleanup"),
        ("size_before", "int", "state file bytes before"),
        ("size_after", "int", "state file bytes after"),
        ("size_change", "int", "size_after - size_before"),
        ("pct_change", "float", "100 × (after - before) / before"),
        ("duration_s", "float", "migration start -> complete on the same host and partition"),
    ],
)

_TIP = r"(?P<tid>[A-Za-z0-9_-]{22})[:-](?P<tp>\S+?)"
_RX = [
    ("migration_start", re.compile(rf"(?i)migrating tier partition state file format for {_TIP}\s*$")),
    (
        "migration_complete",
        re.compile(
            rf"(?i)tier partition state file format migration complete for topicIdPartition "
            rf"{_TIP},?\s+state file size changed from (?P<a>\d+) to (?P<b>\d+)"
        ),
    ),
    (
        "cleanup",
        re.compile(
            rf"(?i)(?P<n>\d+) segments? removed by cleanup from tier partition state file for "
            rf"topicIdPartition {_TIP},?\s+state file size changed from (?P<a>\d+) to (?P<b>\d+)"
        ),
    ),
]


def parse_line(message: str) -> dict | None:
    """Fields of one tier-state message, or None."""
    text = message.strip()
    for kind, rx in _RX:
        m = rx.search(text)
        if not m:
            continue
        topic, _, part = m.group("tp").rpartition("-")
        r = {
            "kind": kind,
            "topic_id": m.group("tid"),
            "topic": topic,
            "partition": int(part) if part.isdigit() else None,
        }
        if "a" in rx.groupindex:
            a, b = int(m.group("a")), int(m.group("b"))
            r.update(size_before=a, size_after=b, size_change=b - a, pct_change=100.0 * (b - a) / a if a else np.nan)
        if "n" in rx.groupindex:
            r["segments_removed"] = int(m.group("n"))
        return r
    return None


@extractor("tierstate_events", loggers=["kafka.tier.state.FileTierPartitionState"], prefixes=["kafka.tier.state."])
def build(events: pd.DataFrame) -> pd.DataFrame:
    rows = []
    open_: dict[tuple, pd.Timestamp] = {}
    for ts, msg, host, file, line in zip(
        events["ts"], events["message"], events["host"], events["file"], events["line"]
    ):
        r = parse_line(msg)
        if r is None:
            continue
        key = (host, r["topic_id"], r["partition"])
        if r["kind"] == "migration_start":
            open_[key] = ts
        elif r["kind"] == "migration_complete" and key in open_:
            r["duration_s"] = (ts - open_.pop(key)).total_seconds()
        r.update(ts=ts, host=host, file=file, line=line)
        rows.append(r)
    return pd.DataFrame(rows)
