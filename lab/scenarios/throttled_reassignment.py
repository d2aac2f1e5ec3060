"""A partition reassignment throttled to a crawl: topic ``ledger`` lives on nodes 1 and 2 of a
three-node cluster; an operator adds node 3 to every replica list with kafka-reassign-partitions
and ``--throttle 8000`` (8 kB/s, a typo for 8 MB/s), while producers keep writing far faster than
that. The new replicas fall further behind every second; the reassignment never finishes until
the throttle is raised (``--additional --throttle``) and ``--verify`` removes the throttles.

No detector of the kit is about reassignments or replication throttles: nothing fails, no
partition is under-replicated (the adding replicas do not count), no request errors. What the
brokers log is their own: the throttle configs arriving as dynamic broker and topic configs
(``Updating node N with new configuration``, ``Updating topic ledger with new configuration``),
the controller accepting the reassignment, node 3 creating the new logs and starting fetchers,
and at the end AlterPartition completing each reassignment. It is the unknown incident for
``kitlib changes``: the PROVENANCE.md states its window (reassignment submitted .. throttles
removed), and the changes in that window against the rest of the bundle name it.

    .venv/bin/python lab/scenarios/throttled_reassignment.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kitlib import lab

TOPIC = "ledger"
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
PARTITIONS = 3
THROTTLE = 8000  # bytes/s: what the operator typed
LIFTED = 200_000_000


def evidence() -> list[lab.Evidence]:
    return [
        lab.Evidence(
            "the replication throttle arrives as a dynamic broker config",
            r"Updating node \d+ with new configuration : .*replication\.throttled\.rate -> " + str(THROTTLE),
        ),
        lab.Evidence(
            "the throttled replicas of ledger arrive as a topic config",
            rf"Updating topic {TOPIC} with new configuration : .*replication\.throttled\.replicas",
        ),
        lab.Evidence(
            "the controller accepts the reassignment",
            r"Successfully altered \d+ out of \d+ partition reassignment",
            file="controller.log",
        ),
        lab.Evidence(
            "node 3 starts fetching the new replicas",
            r"\[ReplicaFetcherManager on broker 3\] Added fetcher to broker",
            host="broker-3",
        ),
        lab.Evidence(
            "node 3 joins the ISR of each partition once the throttle is lifted",
            r"Replayed partition assignment change PartitionChangeRecord\(partitionId=\d+, topicId=\S+, isr=\[(\d+, )*3[,\]]",
            file="controller.log",
        ),
    ]


def _plan(replicas: dict[int, list[int]]) -> str:
    plan = {
        "version": 1,
        "partitions": [{"topic": TOPIC, "partition": p, "replicas": r} for p, r in replicas.items()],
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(plan, f)
    return f.name


def _reassign(c: lab.Cluster, plan: str, *args: str) -> str:
    return " ".join(
        lab.run_tool(
            REASSIGN_TOOL, ["--bootstrap-server", c.bootstrap, "--reassignment-json-file", plan, *args]
        ).split()
    )


def run(
    out: str | Path,
    preload_s: float = 10,
    before_s: float = 60,
    crawl_s: float = 75,
    after_s: float = 50,
    rate: int = 300,
    size: int = 500,
    work: Path | None = None,
) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="throttled-reassignment", work=work)
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv", interval_ms=5000)
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        before = {p: [1 + p % 2, 2 - p % 2] for p in range(PARTITIONS)}
        a.create_topics([NewTopic(TOPIC, replica_assignments=before)])
        a.close()
        lab.wait_for_full_isr(c, TOPIC)
        s.mark(f"topic {TOPIC} created: {PARTITIONS} partitions on nodes 1 and 2 ({json.dumps(before)})")
        with lab.ProduceLoad(c.bootstrap, TOPIC, rate=1500, size=1000, client_id="ledger-backfill") as fill:
            time.sleep(preload_s)
        s.mark(f"backfill written: {fill.stats.line()}")
        with lab.ProduceLoad(c.bootstrap, TOPIC, rate=rate, size=size, client_id="ledger-writer") as load:
            s.mark(f"steady produce load started ({rate} records/s of {size} bytes, acks=all)")
            time.sleep(before_s)
            plan = _plan({p: [*r, 3] for p, r in before.items()})
            start = datetime.now(UTC)
            got = _reassign(c, plan, "--execute", "--throttle", str(THROTTLE))
            s.mark(f"reassignment submitted: node 3 added to every replica list, --throttle {THROTTLE}: {got[-160:]}")
            t_end = time.monotonic() + crawl_s
            while time.monotonic() < t_end:
                time.sleep(15)
                got = _reassign(c, plan, "--verify", "--preserve-throttles")
                s.mark(f"--verify: {got[:200]}")
            got = _reassign(c, plan, "--execute", "--additional", "--throttle", str(LIFTED))
            s.mark(f"throttle raised to {LIFTED} bytes/s (--additional): {got[-120:]}")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(3)
                got = _reassign(c, plan, "--verify")
                if "still in progress" not in got:
                    break
            # the other nodes replay the removal of the throttles a moment later, and later still
            # on a busy machine: the window ends a few seconds on so that it holds their lines
            end = datetime.now(UTC) + timedelta(seconds=5)
            s.mark(f"reassignment complete, throttles removed by --verify: {got[-200:]}")
            Path(plan).unlink()
            lab.wait_for_full_isr(c, TOPIC)
            time.sleep(after_s)
        s.mark(f"produce load stopped: {load.stats.line()}")
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    lab.write_provenance(
        s,
        "throttled-reassignment: a partition reassignment throttled to a crawl",
        f"Three combined broker+controller nodes; topic {TOPIC} ({PARTITIONS} partitions, RF 2 on nodes 1 and 2) is "
        f"backfilled, then written at {rate} records/s of {size} bytes. kafka-reassign-partitions adds node 3 to every "
        f"replica list with --throttle {THROTTLE} (bytes/s, far below the write rate), so the new replicas crawl and "
        f"the reassignment does not finish; after {crawl_s:.0f} s the throttle is raised with --additional and "
        "--verify removes the throttles once it completes. No kit detector is about this: it is the unknown "
        "incident `kitlib changes` finds by its log statements.",
        "Folders `broker-1..3` are the nodes (node id = folder number) with their stock logs, kafkaServer-gc.log and "
        "`jmx-broker.csv` (JmxTool every 5 s); `live/` is a capture after the run.",
        "none (no detector covers a throttled reassignment); `kitlib changes --window` with the incident window "
        "ranks the throttle configs, the reassignment and the new fetchers of node 3 among its top changes",
        evidence(),
        f".venv/bin/python lab/scenarios/throttled_reassignment.py {out}",
        window=(start.replace(microsecond=0), end),
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/throttled-reassignment"))
