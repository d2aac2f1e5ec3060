"""``kafka-topics --describe`` output (Kafka 1.x to 4.x) -> ``topic_partitions`` (and the topic
configs it prints -> ``configs``, source 'cli').

Fields are tab-separated ``Key: value`` pairs. Topic lines: ``Topic:orders<TAB>PartitionCount:3
<TAB>ReplicationFactor:2<TAB>Configs:retention.ms=...`` (1.x-2.3, no space after the colon) or
``Topic: orders<TAB>TopicId: ...<TAB>PartitionCount: 3<TAB>...`` (newer). Partition lines start
with a tab: ``Topic: orders<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1,2<TAB>Isr: 1`` plus,
depending on version, ``Adding Replicas``/``Removing Replicas`` (reassignment, 2.4+),
``Elr``/``LastKnownElr`` (3.7+), ``MarkedForDeletion: true``. A partition without a leader shows
``Leader: none`` (or ``-1``). ``--under-replicated-partitions`` and ``--unavailable-partitions``
print partition lines only.

Example (real 3.9 output):
    >>> detect(b"Topic: orders\\tTopicId: _qP8e2lNREyFiYxmVLA-Ng\\tPartitionCount: 3\\tReplicationFactor: 1\\t"
    ...        b"Configs: retention.ms=604800000\\n"
    ...        b"\\tTopic: orders\\tPartition: 0\\tLeader: 1\\tReplicas: 1\\tIsr: 1\\n", None)
    True
"""

from __future__ import annotations

import re

from kitlib import tables
from kitlib.formats import Context, register
from kitlib.formats.cli.frame import ToolOutput, head_lines, to_int
from kitlib.redact import redact_value
from kitlib.sources import SourceFile

tables.declare(
    "topic_partitions",
    "Partitions as `kafka-topics --describe` printed them: leader, replicas, "
    "ISR and flags, with the topic's line (id, counts, configs) repeated on each partition.",
    [
        ("snapshot_ts", "ts", "time line before the output, if the file has one"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("leader", "int", "leader broker id; empty when the partition has no leader ('none' or -1)"),
        ("replicas", "str", "replica broker ids, comma-separated, preferred leader first"),
        ("isr", "str", "in-sync replica broker ids, comma-separated"),
        ("replica_count", "int", "number of replicas"),
        ("isr_count", "int", "number of in-sync replicas"),
        (
            "under_replicated",
            "bool",
            "fewer in-sync replicas than replicas (replicas being added by a "
            "reassignment not counted), as the tool's --under-replicated-partitions decides",
        ),
        ("offline", "bool", "no leader: the partition is unavailable"),
        ("elr", "str", "eligible leader replicas (KIP-966, 3.7+), comma-separated"),
        ("last_known_elr", "str", "last known eligible leader replicas (3.7+)"),
        ("adding_replicas", "str", "replicas being added by a reassignment"),
        ("removing_replicas", "str", "replicas being removed by a reassignment"),
        ("marked_for_deletion", "bool", "the topic is being deleted"),
        ("topic_id", "str", "topic id (2.8+ output)"),
        ("partition_count", "int", "partitions of the topic (from its topic line)"),
        ("replication_factor", "int", "replication factor of the topic (from its topic line)"),
        ("topic_configs", "str", "the topic line's Configs: non-default topic configs, k=v comma-separated"),
    ],
)

_TOPIC_LINE = re.compile(r"^Topic: ?(\S+)\t(?:TopicId|PartitionCount):")
_PART_LINE = re.compile(r"^\s*Topic: ?(\S+)\tPartition: ?\d+\tLeader:")
_KEYS = {
    "Topic": "topic",
    "TopicId": "topic_id",
    "PartitionCount": "partition_count",
    "ReplicationFactor": "replication_factor",
    "Configs": "topic_configs",
    "Partition": "partition",
    "Leader": "leader",
    "Replicas": "replicas",
    "Isr": "isr",
    "Elr": "elr",
    "LastKnownElr": "last_known_elr",
    "Adding Replicas": "adding_replicas",
    "Removing Replicas": "removing_replicas",
    "MarkedForDeletion": "marked_for_deletion",
}


def detect(head: bytes, src) -> bool:
    return any(_TOPIC_LINE.match(ln) or _PART_LINE.match(ln) for ln in head_lines(head, 20))


def _pairs(text: str) -> dict | None:
    out = {}
    for part in text.strip("\r\n").lstrip("\t ").split("\t"):
        if not part.strip():
            continue
        k, sep, v = part.partition(":")
        if not sep or k.strip() not in _KEYS:
            return None
        out[_KEYS[k.strip()]] = v.strip()
    return out


def _ids(s: str | None) -> list[str]:
    return [x for x in (s or "").split(",") if x.strip()]


class Topics(ToolOutput):
    """``kafka-topics --describe``: a topic's line, then a line per partition."""

    def __init__(self, src: SourceFile, ctx: Context) -> None:
        super().__init__(src, ctx)
        self.topic_info: dict[str, dict] = {}  # a topic's own line, repeated on its partitions

    def line(self, n: int, text: str) -> None:
        out, snap, topic_info = self.out, self.snap, self.topic_info
        kv = _pairs(text)
        if not kv or "topic" not in kv:
            out.bad(n, text, "not a kafka-topics --describe line")
            return
        if "partition" not in kv:  # the topic's own line
            topic_info[kv["topic"]] = {
                "topic_id": kv.get("topic_id"),
                "partition_count": to_int(kv.get("partition_count")),
                "replication_factor": to_int(kv.get("replication_factor")),
                "topic_configs": kv.get("topic_configs") or None,
            }
            for item in _ids(kv.get("topic_configs")):
                key, _, value = item.partition("=")
                out.add(
                    "configs",
                    n,
                    ts=snap,
                    source="cli",
                    scope="topic",
                    entity=kv["topic"],
                    key=key,
                    value=redact_value(key, value),
                )
            out.structure()
            return
        part = to_int(kv["partition"])
        if part is None:
            out.bad(n, text, "partition is not a number")
            return
        leader = to_int(kv.get("leader"))
        replicas, isr = _ids(kv.get("replicas")), _ids(kv.get("isr"))
        adding = _ids(kv.get("adding_replicas"))  # replicas being added do not count until they join
        out.add(
            "topic_partitions",
            n,
            snapshot_ts=snap,
            topic=kv["topic"],
            partition=part,
            leader=leader if leader is not None and leader >= 0 else None,
            replicas=",".join(replicas),
            isr=",".join(isr),
            replica_count=len(replicas),
            isr_count=len(isr),
            under_replicated=len(isr) < len(replicas) - len(adding),
            offline=leader is None or leader < 0,
            elr=kv.get("elr"),
            last_known_elr=kv.get("last_known_elr"),
            adding_replicas=kv.get("adding_replicas") or None,
            removing_replicas=kv.get("removing_replicas") or None,
            marked_for_deletion=kv.get("marked_for_deletion") == "true",
            **topic_info.get(kv["topic"], {}),
        )
        out.structure()


register(
    "topics",
    detect=detect,
    parse=Topics.parse,
    tables=("topic_partitions", "configs"),
    priority=26,
    doc="kafka-topics --describe output (also --under-replicated-partitions / --unavailable-partitions)",
)
