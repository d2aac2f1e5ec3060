"""ISR flapping on a three-node cluster: one follower is frozen (SIGSTOP) and let go (SIGCONT)
several times under acks=all produce load, so the leaders shrink the ISR without it and expand
it again; the last, longer pause outlives the broker session and the controller fences it.

Settings make this happen in seconds: replica.lag.time.max.ms=2500 (a follower that has not
caught up for 2.5 s leaves the ISR), broker.session.timeout.ms=9000 (Kafka's default) with
heartbeats every 1 s. The nodes are combined broker+controller voters: a voter frozen for longer
than controller.quorum.fetch.timeout.ms calls an election the moment it wakes (Kafka 3.9 has no
Raft pre-vote) and deposes the active controller, so that timeout is raised to 20 s here to keep
this bundle about ISR churn, not controller churn.
The paused node is never the active controller and leads no partition of the load topic
(explicit replica assignment), so the other nodes' lines name it as the out-of-sync replica.

    .venv/bin/python lab/scenarios/isr_flapping.py OUT_DIR
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "orders"
SETTINGS = {
    "replica.lag.time.max.ms": 2500,
    "broker.session.timeout.ms": 9000,
    "broker.heartbeat.interval.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 20000,
}


def rejoined(node_id: int) -> re.Pattern:
    """A line saying a follower is back in a partition's ISR: the leader's "ISR updated to 1,3,2"
    (server.log) or, when the metadata update reaches the leader before its own AlterPartition
    answer and that line is skipped, the state change with "isr=[1, 3, 2]" (state-change.log)."""
    return re.compile(rf"ISR updated to (\d+,)*{node_id}\b|isr=\[(\d+, )*{node_id}[,\]]")


def evidence(paused: int) -> list[lab.Evidence]:
    return [
        lab.Evidence(
            f"ISR shrinks naming broker {paused} as out of sync (leaders' server.log)",
            rf"Shrinking ISR from .* Out of sync replicas: \(brokerId: {paused},",
        ),
        lab.Evidence(f"ISR updates that take broker {paused} back in", rejoined(paused).pattern, file="*"),
        lab.Evidence(
            f"the controller fences broker {paused} (controller.log of the active controller)",
            rf"Fencing broker {paused} (at epoch \d+ )?because its session has timed out",  # 4.x names the epoch
            file="controller.log",
        ),
    ]


def startup_shrinks(out: Path) -> str:
    """What the expected findings add when a leader shrank its ISR before any data reached the
    topic (``highWatermark: 0``): its followers had not fetched within replica.lag.time.max.ms of
    the topic's creation (seen on a busy machine, on 4.x), one ``isr-shrink`` per broker named."""
    named: set[str] = set()
    for log in sorted(out.glob("broker-*/server.log*")):
        for line in log.read_text(errors="replace").splitlines():
            if "Shrinking ISR from" in line and "Leader: (highWatermark: 0," in line:
                named.update(re.findall(r"\(brokerId: (\d+),", line))
    if not named:
        return ""
    return (
        f"; `isr-shrink` for broker(s) {', '.join(sorted(named))}: right after the topic was created, before any "
        "pause, the leaders shrank their ISRs once (highWatermark 0: the followers had not fetched yet within "
        "replica.lag.time.max.ms=2500) and took the followers back in"
    )


def run(
    out: str | Path,
    pauses: int = 3,
    short_s: float = 5,
    long_s: float = 14,
    settle_s: float = 5,
    rate: int = 400,
    work: Path | None = None,
    command: str | None = None,
) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="isr-flapping", work=work, settings=SETTINGS)
        controller = lab.active_controller(c)
        paused = next(n for n in reversed(c.nodes) if n.node_id != controller.node_id)
        others = [n.node_id for n in c.nodes if n is not paused]
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        # leaders (first replica) only on the two other nodes; every replica set holds all three
        assign = {p: [others[p % 2], others[(p + 1) % 2], paused.node_id] for p in range(4)}
        a.create_topics([NewTopic(TOPIC, replica_assignments=assign, topic_configs={"min.insync.replicas": "2"})])
        a.close()
        lab.wait_for_full_isr(c, TOPIC)
        s.mark(
            f"cluster up; active controller node {controller.node_id}; topic {TOPIC} (4 partitions, RF 3, "
            f"min.insync.replicas=2, leaders on nodes {others}); node {paused.node_id} will be paused"
        )
        with lab.ProduceLoad(c.bootstrap, TOPIC, rate=rate) as load:
            s.mark(f"produce load started ({rate} records/s, acks=all)")
            time.sleep(settle_s)
            for i in range(pauses):
                lab.pause(paused)
                s.mark(f"node {paused.node_id} paused (SIGSTOP), short pause {i + 1} of {pauses} ({short_s:.1f} s)")
                time.sleep(short_s)
                lab.resume(paused)
                s.mark(f"node {paused.node_id} resumed (SIGCONT)")
                lab.wait_for_full_isr(c, TOPIC, timeout=40)
                time.sleep(settle_s)
            ctrl_at = lab.log_offset(controller, "controller.log")
            lab.pause(paused)
            s.mark(f"node {paused.node_id} paused (SIGSTOP), long pause ({long_s:.1f} s, longer than the 9 s session)")
            fenced = re.compile(rf"Fencing broker {paused.node_id} (at epoch \d+ )?because")
            lab.wait_for_log(controller, fenced, timeout=30, after=ctrl_at, log="controller.log")
            s.mark(f"the active controller fenced node {paused.node_id}")
            time.sleep(max(0.0, long_s - 9))
            lab.resume(paused)
            s.mark(f"node {paused.node_id} resumed (SIGCONT)")
            lab.wait_for_full_isr(c, TOPIC, timeout=60)
            s.mark(f"node {paused.node_id} back in the ISR")
            time.sleep(settle_s + 3)
        s.mark(f"produce load stopped: {load.stats.line()}")
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    lab.write_provenance(
        s,
        "isr-flapping: a follower that stalls again and again",
        f"Three combined broker+controller nodes under acks=all load; node {paused.node_id} is frozen with SIGSTOP "
        f"{pauses} times for {short_s:.1f} s (longer than replica.lag.time.max.ms=2500, shorter than the broker "
        f"session) and once for {long_s:.0f} s (longer than broker.session.timeout.ms=9000).",
        "Folders `broker-1..3` are the three nodes (node id = folder number) with the stock log files, "
        "kafkaServer-gc.log and `jmx-broker.csv` (JmxTool every second: UnderReplicatedPartitions, "
        "IsrShrinksPerSec, IsrExpandsPerSec, ActiveControllerCount, OfflinePartitionsCount, FencedBrokerCount, "
        "OfflineLogDirectoryCount, RequestHandlerAvgIdlePercent, byte and message rates; a paused node's JmxTool "
        "gets no answer while it is frozen, so its rows have gaps); `live/` is a capture after the run. "
        f"Settings beyond the lab's: {', '.join(f'{k}={v}' for k, v in SETTINGS.items())}.",
        f"`broker-fenced`: one finding for the stalls of broker {paused.node_id} (fenced during the long pause), "
        f"naming their consequences (it leaves and rejoins the ISR {pauses + 1} times)" + startup_shrinks(out),
        evidence(paused.node_id),
        command or f".venv/bin/python lab/scenarios/isr_flapping.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/isr-flapping"))
