"""Controller failover on a three-node cluster: the active controller (a combined broker +
controller node) is killed with SIGKILL under acks=all produce load, another voter becomes the
active controller, the partitions the dead node led get new leaders; then it is started again on
its data and rejoins as a follower.

broker.session.timeout.ms=6000 (heartbeats every 1 s) so the dead node's broker side is fenced
and its leaderships move within seconds.

    .venv/bin/python lab/scenarios/controller_failover.py OUT_DIR
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "orders"
SETTINGS = {"broker.session.timeout.ms": 6000, "broker.heartbeat.interval.ms": 1000}


def evidence(killed: int, new: int) -> list[lab.Evidence]:
    return [
        lab.Evidence(
            f"node {killed} was the active controller before the kill",
            r"Becoming the active controller at epoch",
            file="controller.log",
            host=f"broker-{killed}",
        ),
        lab.Evidence(
            f"node {new} becomes the active controller after the kill",
            r"Becoming the active controller at epoch",
            file="controller.log",
            host=f"broker-{new}",
        ),
        lab.Evidence(
            f"the new controller fences the dead node {killed}",
            rf"Fencing broker {killed} because its session has timed out",
            file="controller.log",
            host=f"broker-{new}",
        ),
        lab.Evidence(
            f"node {killed} starts again after the kill (its second start-up)",
            r"Kafka Server started",
            host=f"broker-{killed}",
        ),
    ]


def run(
    out: str | Path,
    before_s: float = 10,
    down_s: float = 15,
    after_s: float = 12,
    rate: int = 400,
    work: Path | None = None,
) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="controller-failover", work=work, settings=SETTINGS)
        old = lab.active_controller(c)
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        a.create_topics([NewTopic(TOPIC, 6, 3, topic_configs={"min.insync.replicas": "2"})])
        a.close()
        lab.wait_for_full_isr(c, TOPIC)
        s.mark(
            f"cluster up; active controller node {old.node_id}; topic {TOPIC} (6 partitions, RF 3, "
            "min.insync.replicas=2, leaders spread over the three nodes)"
        )
        with lab.ProduceLoad(c.bootstrap, TOPIC, rate=rate) as load:
            s.mark(f"produce load started ({rate} records/s, acks=all)")
            time.sleep(before_s)
            offsets = {n.node_id: lab.log_offset(n, "controller.log") for n in c.nodes}
            lab.kill_node(old)
            s.mark(f"node {old.node_id}, the active controller, killed (SIGKILL)")
            others = [n for n in c.nodes if n is not old]
            new = None
            deadline = time.monotonic() + 60
            while new is None and time.monotonic() < deadline:
                for n in others:
                    try:
                        lab.wait_for_log(
                            n,
                            "Becoming the active controller",
                            timeout=0.5,
                            after=offsets[n.node_id],
                            log="controller.log",
                        )
                        new = n
                        break
                    except lab.LabError:
                        pass
            if new is None:
                raise lab.LabError(f"no node became the active controller within 60 s of killing node {old.node_id}")
            s.mark(f"node {new.node_id} is the new active controller")
            lab.wait_for_log(
                new,
                re.compile(rf"Fencing broker {old.node_id} because"),
                timeout=30,
                after=offsets[new.node_id],
                log="controller.log",
            )
            s.mark(f"node {new.node_id} fenced the dead node {old.node_id}; its leaderships moved")
            time.sleep(max(0.0, down_s - 8))
            lab.restart_node(old)
            s.mark(f"node {old.node_id} started again (now a follower voter)")
            s.jmxtool(old, lab.CLUSTER_MBEANS, out / f"broker-{old.node_id}" / "jmx-broker-restarted.csv")
            time.sleep(after_s)
        s.mark(f"produce load stopped: {load.stats.line()}")
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    lab.write_provenance(
        s,
        "controller-failover: the active controller dies",
        f"Three combined broker+controller nodes under acks=all load; node {old.node_id}, the active controller, "
        f"is killed with SIGKILL; node {new.node_id} becomes the active controller, fences node {old.node_id} and "
        f"moves its leaderships; node {old.node_id} is started again ~{down_s:.0f} s later and rejoins.",
        "Folders `broker-1..3` are the three nodes (node id = folder number) with the stock log files, "
        "kafkaServer-gc.log and `jmx-broker.csv` (JmxTool every second: ActiveControllerCount moves from the "
        f"killed node to node {new.node_id}, OfflinePartitionsCount, FencedBrokerCount, UnderReplicatedPartitions, "
        f"IsrShrinks/ExpandsPerSec, LeaderCount, ...); the killed node's JmxTool ends at the kill and a second "
        "file, `jmx-broker-restarted.csv`, covers its second run. `live/` is a capture after the run. "
        f"Settings beyond the lab's: {', '.join(f'{k}={v}' for k, v in SETTINGS.items())}.",
        f"`controller-failover` (active controller node {old.node_id} -> node {new.node_id}), `broker-fenced` "
        f"(node {old.node_id}, while it is down), possibly `isr-shrink` (node {old.node_id} leaves every ISR)",
        evidence(old.node_id, new.node_id),
        f".venv/bin/python lab/scenarios/controller_failover.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/controller-failover"))
