"""A healthy three-node cluster under the same acks=all produce load as the broker-health
scenarios, for checking that their detectors stay silent: no pauses, no kills, no full disks, a
normal heap; a consumer group reads everything back and commits (no lag at the live capture).

    .venv/bin/python lab/scenarios/healthy_cluster.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "orders"


def evidence() -> list[lab.Evidence]:
    return [
        lab.Evidence("every node started once", r"\[KafkaRaftServer nodeId=\d+\] Kafka Server started"),
        lab.Evidence(
            "young GC pauses, short, on every node (the baseline)", r"\bPause Young\b", file="kafkaServer-gc.log"
        ),
    ]


def run(out: str | Path, seconds: float = 40, rate: int = 400, work: Path | None = None) -> Path:
    from kafka import KafkaConsumer
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="healthy-cluster", work=work)
        controller = lab.active_controller(c)
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        a.create_topics([NewTopic(TOPIC, 6, 3, topic_configs={"min.insync.replicas": "2"})])
        a.close()
        lab.wait_for_full_isr(c, TOPIC)
        s.mark(
            f"cluster up; active controller node {controller.node_id}; topic {TOPIC} (6 partitions, RF 3, "
            "min.insync.replicas=2)"
        )
        with lab.ProduceLoad(c.bootstrap, TOPIC, rate=rate) as load:
            s.mark(f"produce load started ({rate} records/s, acks=all)")
            time.sleep(seconds)
        s.mark(f"produce load stopped: {load.stats.line()}")
        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=c.bootstrap,
            group_id="order-ledger",
            client_id="order-ledger-1",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        read, deadline = 0, time.monotonic() + 90  # the first group creates __consumer_offsets (50 partitions)
        while read < load.stats.acked and time.monotonic() < deadline:
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=1000).values())
        consumer.commit()
        consumer.close()
        s.mark(f"consumer group order-ledger read {read} records and committed")
        if read != load.stats.acked:
            raise lab.LabError(f"the consumer read {read} records, the producer had {load.stats.acked} acknowledged")
        # the group's __consumer_offsets leaders come up one broker after another; let JmxTool record
        # the settled LeaderCount before the capture ends
        lab.wait_for_full_isr(c, "__consumer_offsets")
        time.sleep(3)
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    lab.write_provenance(
        s,
        "healthy-cluster: three nodes, nothing wrong",
        "Three combined broker+controller nodes (Kafka's default timeouts) under the same acks=all load as "
        "isr-flapping, controller-failover, log-dir-failure and gc-pressure; every record acknowledged and read back.",
        "Folders `broker-1..3` are the three nodes (node id = folder number) with the stock log files, "
        "kafkaServer-gc.log and `jmx-broker.csv` (JmxTool every second: UnderReplicatedPartitions stays 0, "
        "exactly one node has ActiveControllerCount 1, OfflinePartitionsCount and OfflineLogDirectoryCount 0, ...); "
        "`live/` is a capture after the run (group order-ledger with no lag). The start-up of a cluster logs a few "
        "lines that look alarming out of context (e.g. NotControllerException while the first controller is "
        "elected); they are part of the healthy baseline.",
        "none",
        evidence(),
        f".venv/bin/python lab/scenarios/healthy_cluster.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/healthy-cluster"))
