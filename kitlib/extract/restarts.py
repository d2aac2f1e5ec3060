"""Broker start-ups from server.log -> ``restarts``: when a start began, when the broker said it
was started, and how long that took (seed 004: 20+ minutes before the tier-state cleanup, under a
minute after).

Start markers: ``[KafkaServer id=N] starting`` (ZooKeeper mode), ``[KafkaRaftServer nodeId=N]
...``/``[BrokerServer id=N] Transition from SHUTDOWN to STARTING`` (KRaft), or the first record
after a gap; ready markers: ``Kafka Server started`` / ``[KafkaServer id=N] started``.

Example:
    >>> restarts_from(pd.DataFrame(columns=["ts", "message", "host", "file", "line"])).empty
    True
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor

tables.declare(
    "restarts",
    "Broker start-ups: start, ready and how long it took.",
    [
        ("start_ts", "ts", "first start-up line"),
        ("ready_ts", "ts", "'Kafka Server started' line (NaT: never got there)"),
        ("duration_s", "float", "ready - start"),
        ("version", "str", "Kafka version, when logged"),
    ],
    time="start_ts",  # a time window keeps the start-ups that began inside it
)

_START = re.compile(
    r"\[KafkaServer id=\d+\] starting|Transition from SHUTDOWN to STARTING|^Registered kafka:type=kafka.Log4jController MBean|"
    r"\[KafkaRaftServer nodeId=\d+\] Rewriting|^Starting Kafka|\[ControllerServer id=\d+\] Starting controller|"
    r"^starting$"  # KafkaServer's own first line (0.8-1.0 log no Log4jController line before it)
)
_READY = re.compile(r"Kafka Server started|\[KafkaServer id=\d+\] started|\[Kafka Server \d+\], started")  # 0.8-0.11
_VERSION = re.compile(r"Kafka version ?: (\S+)")  # 0.9-2.1: "Kafka version : x"


def restarts_from(events: pd.DataFrame) -> pd.DataFrame:
    """Pair start and ready markers per host (events sorted by host and time)."""
    rows, cur = [], {}
    for ts, msg, host, file, line in zip(
        events["ts"], events["message"], events["host"], events["file"], events["line"]
    ):
        if _START.search(msg) and host not in cur:
            cur[host] = {"start_ts": ts, "host": host, "file": file, "line": line, "version": None}
        elif (m := _VERSION.search(msg)) and host in cur:
            cur[host]["version"] = m.group(1)
        elif _READY.search(msg) and host in cur:
            r = cur.pop(host)
            r.update(ready_ts=ts, duration_s=(ts - r["start_ts"]).total_seconds())
            rows.append(r)
    for r in cur.values():
        rows.append(dict(r, ready_ts=pd.NaT, duration_s=float("nan")))
    return pd.DataFrame(rows)


@extractor(
    "restarts",
    contains="|".join(f"(?:{rx.pattern})" for rx in (_START, _READY, _VERSION)),
    loggers=[
        "kafka.server.KafkaServer",
        "kafka.Kafka$",
        "kafka.server.KafkaRaftServer",
        "kafka.server.BrokerServer",
        "kafka.server.ControllerServer",
        "org.apache.kafka.common.utils.AppInfoParser",
        "kafka.utils.Log4jControllerRegistration$",
        "kafka.server.BrokerLifecycleManager",
    ],
)
def build(events: pd.DataFrame) -> pd.DataFrame:
    return restarts_from(events)
