"""Apache Kafka's own tiered storage (KIP-405) on the lab broker, with a remote-store outage.

The broker runs with remote storage enabled, using LocalTieredStorage from Kafka's storage test
jar as the remote store (a directory standing in for an object store) and the topic-based
remote log metadata manager. A topic with small segments and a 5 s local retention is written to
in three phases:

1. healthy: closed segments are copied to the remote store and old ones deleted by remote
   retention size;
2. outage: the partition's folder in the remote store is swapped for a plain file, so every
   copy fails (what an expired credential or a deleted bucket looks like to the broker);
3. recovery: the folder is put back and the copies catch up.

JMX (remote copy bytes, errors and lag) is sampled throughout; the bundle gets server.log, the
JmxTool CSV and a live capture (log-dir sizes show the local backlog).

    .venv/bin/python lab/scenarios/remote_storage.py OUT_DIR
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "clickstream"
MBEANS = [
    "kafka.server:type=BrokerTopicMetrics,name=RemoteCopy*",
    "kafka.server:type=BrokerTopicMetrics,name=RemoteDelete*",
    "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
    "kafka.log.remote:type=RemoteLogManager,name=RemoteLogManagerTasksAvgIdlePercent",
]


def settings(remote_dir: Path) -> dict:
    """server.properties lines that turn KIP-405 tiered storage on with a local-directory store."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "rsm.config.dir": str(remote_dir),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
        "log.segment.delete.delay.ms": "1000",
    }


def _produce(bootstrap: str, records: int, seconds: float) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="clickstream-collector", linger_ms=20, batch_size=131072)
    pause = seconds / 20
    for burst in range(20):
        for i in range(records // 20):
            p.send(
                TOPIC, key=f"session-{i % 700}".encode(), value=(b'{"page":"/p/%d","ms":%d}' % (i, burst)).ljust(220)
            )
        p.flush()
        time.sleep(pause)
    p.close()


def run(out: str | Path, records: int = 40_000, phase_s: float = 20, work: Path | None = None) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host = out / "broker-1"
    host.mkdir(parents=True, exist_ok=True)
    work = Path(work) if work else lab.work_root() / "remote-storage-broker"
    remote = work.parent / (work.name + "-remote")
    shutil.rmtree(remote, ignore_errors=True)
    with lab.Scenario(out) as s:
        b = s.broker("remote-storage-broker", work=work, settings=settings(remote), request_log="WARN")
        s.jmxtool(b, MBEANS, host / "jmx-remote.csv", interval_ms=1000)
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics(
            [
                NewTopic(
                    TOPIC,
                    1,
                    1,
                    topic_configs={
                        "remote.storage.enable": "true",
                        "segment.bytes": "524288",
                        "local.retention.ms": "5000",
                        "retention.bytes": "6291456",
                    },
                )
            ]
        )
        _produce(b.bootstrap, records, phase_s)  # 1. healthy
        # the outage starts only once a copy has gone through: on a slow machine the first
        # copy task may still be running when the healthy phase's records are all written
        lab.wait_for_log(b, re.compile(r"Copied \S+ to remote storage"), timeout=120)
        time.sleep(3)
        store = next((remote / "kafka-tiered-storage").glob(f"{TOPIC}-0-*"))
        parked = store.with_name(store.name + ".parked")
        store.rename(parked)
        store.write_text("the remote store is unreachable\n")  # 2. outage: copies fail
        _produce(b.bootstrap, records, phase_s)
        time.sleep(5)
        store.unlink()
        parked.rename(store)  # 3. recovery
        _produce(b.bootstrap, records // 2, phase_s / 2)
        time.sleep(8)
        a.close()
        return s.finish(logs={"broker-1": (b, ("server.log", "controller.log"))}, live=b, scrub=[work, remote])


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/remote-storage"))
