"""GC pressure on one node of a three-node cluster: node 2 runs with a tiny heap (-Xmx/-Xms
64m where its peers have 512m; its log cleaner's dedupe buffer cut to 8 MiB, since the default
128 MiB alone does not fit and the node would die at start-up) while acks=all producers push batches of 4 KiB records.
Its kafkaServer-gc.log (written exactly as kafka-run-class.sh enables it:
``-Xlog:gc*:file=<logs>/kafkaServer-gc.log:time,tags:filecount=10,filesize=100M``) fills with
young pauses, mixed and full collections; the other nodes' GC logs are the baseline.

    .venv/bin/python lab/scenarios/gc_pressure.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "media-events"
VICTIM = 2
HEAP = "64m"
# the cleaner's dedupe buffer (128 MiB by default) is allocated at start-up and alone would not fit
SMALL_NODE = {"log.cleaner.dedupe.buffer.size": 8_388_608}


def evidence(node: int) -> list[lab.Evidence]:
    return [
        lab.Evidence(
            f"GC pauses on node {node} (its kafkaServer-gc.log)",
            r"\bPause (Young|Full|Remark|Cleanup)\b",
            file="kafkaServer-gc.log",
            host=f"broker-{node}",
        ),
        lab.Evidence(
            f"the heap size of node {node}, as the GC log states it at start",
            r"Heap Max Capacity|Heap Region Size|Initial Capacity",
            file="kafkaServer-gc.log",
            host=f"broker-{node}",
        ),
    ]


def run(
    out: str | Path, seconds: float = 45, rate: int = 600, size: int = 4096, heap: str = HEAP, work: Path | None = None
) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="gc-pressure", work=work, node_heap={VICTIM: heap}, node_settings={VICTIM: SMALL_NODE})
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        a.create_topics([NewTopic(TOPIC, 12, 3, topic_configs={"min.insync.replicas": "2"})])
        a.close()
        lab.wait_for_full_isr(c, TOPIC)
        s.mark(
            f"cluster up; node {VICTIM} with heap {heap}, nodes "
            f"{[n.node_id for n in c.nodes if n.node_id != VICTIM]} with 512m; topic {TOPIC} "
            "(12 partitions, RF 3, min.insync.replicas=2)"
        )
        loads = [
            lab.ProduceLoad(
                c.bootstrap,
                TOPIC,
                rate=rate,
                size=size,
                client_id=f"media-ingest-{i}",
                batch_size=262_144,
                linger_ms=20,
                max_request_size=4_194_304,
            )
            for i in range(2)
        ]
        for ld in loads:
            ld.start()
        s.mark(f"produce load started (2 producers x {rate} records/s of {size} bytes, 256 KiB batches, acks=all)")
        try:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and c.node(VICTIM).alive():
                time.sleep(1)
            if not c.node(VICTIM).alive():
                s.mark(f"node {VICTIM} is no longer running")
        finally:
            stats = [ld.stop() for ld in loads]
        s.mark("produce load stopped: " + "; ".join(st.line() for st in stats))
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c if all(n.alive() for n in c.nodes) else None)
    lab.write_provenance(
        s,
        "gc-pressure: a broker with a heap far too small",
        f"Three combined broker+controller nodes under acks=all load with large batches; node {VICTIM} runs with "
        f"-Xmx{heap} -Xms{heap} (G1) and log.cleaner.dedupe.buffer.size=8388608 (the default 128 MiB buffer "
        "alone does not fit in that heap), the others with 512m and defaults.",
        "Folders `broker-1..3` are the three nodes (node id = folder number) with the stock log files, "
        "kafkaServer-gc.log (unified JVM logging, `gc*` tags, `time,tags` decorations, as kafka-run-class.sh "
        "sets it) and `jmx-broker.csv` (JmxTool every second: RequestHandlerAvgIdlePercent, "
        "UnderReplicatedPartitions, IsrShrinks/ExpandsPerSec, byte rates, ...); `live/` is a capture after the run.",
        f"`gc-pauses` (node {VICTIM}; the other nodes' GC logs are the baseline), possibly `isr-shrink` when a "
        f"pause of node {VICTIM} outlasts replica.lag.time.max.ms",
        evidence(VICTIM),
        f".venv/bin/python lab/scenarios/gc_pressure.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/gc-pressure"))
