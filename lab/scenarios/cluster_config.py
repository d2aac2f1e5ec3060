"""Configuration and layout risks planted in a healthy three-node cluster, for the cluster_config
investigation: nothing breaks during the run, but the bundle shows what would break first.

- topic ``scratch``: one partition, replication factor 1, on node 2 only, written at a steady
  rate all along, so node 2's log directory fills at a known rate;
- topic ``payments``: RF 3 with ``min.insync.replicas=3`` (one replica behind stops acks=all);
- topic ``clickstream``: RF 3 with ``unclean.leader.election.enable=true``;
- topic ``orders``: six partitions, RF 3, moved by a reassignment (kafka-reassign-partitions)
  that puts node 1 first in every replica list, then a preferred-leader election
  (kafka-leader-election): node 1 leads all six;
- topic ``legacy``: written by a client pinned to the protocol of Kafka 0.10.1 (kafka-python with
  ``api_version=(0, 10, 1)``: Produce v2), a version Kafka 3.9 marks deprecated and 4.0 removes.

Every node's JmxTool also records the request metrics per API version (``RequestsPerSec`` and
``DeprecatedRequestsPerSec`` with their ``version`` tags), the network processors' idle, the
request queue and the replica fetchers' lag (``jmx-requests.csv``), and ``df -k`` of each node's
log directory is recorded on its host (``broker-N/df.txt``) at every capture.

The kit's own capture runs every ``every`` seconds into ``live/`` (log-dir sizes, configs);
Kafka's kafka-topics --describe and kafka-log-dirs --describe outputs go into ``cli/``.

    .venv/bin/python lab/scenarios/cluster_config.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from kitlib import lab

TOPICS_TOOL = "org.apache.kafka.tools.TopicCommand"
LOG_DIRS_TOOL = "org.apache.kafka.tools.LogDirsCommand"
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
# started once the clients run: JmxTool resolves its patterns when it starts
REQUEST_MBEANS = [
    "kafka.network:type=RequestMetrics,name=RequestsPerSec,*",
    "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec,*",
    "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent",
    "kafka.network:type=RequestChannel,name=RequestQueueSize",
    "kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica",
]
ELECTION_TOOL = "org.apache.kafka.tools.LeaderElectionCommand"


def evidence() -> list[lab.Evidence]:
    return [
        lab.Evidence("every node started once", r"\[KafkaRaftServer nodeId=\d+\] Kafka Server started"),
        lab.Evidence("the reassignment of orders reached the controller", r"(?i)reassign", file="*"),
    ]


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _tool_output(path: Path, main_class: str, args: list[str]) -> str:
    """Run one of Kafka's tools and append its output to ``path`` after an ISO time line, as a
    ``date -Is; kafka-...`` loop would."""
    stamp = _stamp()
    text = lab.run_tool(main_class, args, stderr=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(f"{stamp}\n{text}" + ("" if text.endswith("\n") else "\n"))
    return text


def _legacy_batch(producer, n: int = 20) -> int:
    """Send ``n`` records to ``legacy`` and wait for each; returns how many were acknowledged."""
    futures = [producer.send("legacy", b"invoice %d" % i) for i in range(n)]
    producer.flush(timeout=30)
    return sum(1 for f in futures if f.succeeded())


def run(out: str | Path, seconds: float = 180, every: float = 15, rate: int = 400, size: int = 1000, work=None) -> Path:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from kitlib import capture

    out = Path(out)
    with lab.Scenario(out) as s:
        c = s.cluster(3, name="cluster-config", work=work)
        for n in c.nodes:
            s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv", interval_ms=5000)
        a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
        a.create_topics(
            [
                NewTopic("scratch", -1, -1, replica_assignments={0: [2]}),
                NewTopic("payments", 3, 3, topic_configs={"min.insync.replicas": "3"}),
                NewTopic("clickstream", 3, 3, topic_configs={"unclean.leader.election.enable": "true"}),
                NewTopic("orders", 6, 3),
                NewTopic("legacy", 1, 3),
            ]
        )
        a.close()
        for t in ("scratch", "payments", "clickstream", "orders", "legacy"):
            lab.wait_for_full_isr(c, t)
        s.mark(
            "topics created: scratch (1 partition, RF 1, on node 2), payments (RF 3, min.insync.replicas=3), "
            "clickstream (RF 3, unclean.leader.election.enable=true), orders (6 partitions, RF 3), legacy (RF 3)"
        )
        # node 1 first in every replica list of orders, then the preferred leaders elected
        plan = {
            "version": 1,
            "partitions": [
                {"topic": "orders", "partition": p, "replicas": [1, *([2, 3] if p % 2 else [3, 2])]} for p in range(6)
            ],
        }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(plan, f)
        cli = out / "cli"
        cli.mkdir(parents=True, exist_ok=True)
        got = lab.run_tool(
            REASSIGN_TOOL, ["--bootstrap-server", c.bootstrap, "--execute", "--reassignment-json-file", f.name]
        )
        s.mark(
            "reassignment of orders submitted: node 1 first in every replica list: " + json.dumps(plan["partitions"])
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            got = lab.run_tool(
                REASSIGN_TOOL, ["--bootstrap-server", c.bootstrap, "--verify", "--reassignment-json-file", f.name]
            )
            if "is still in progress" not in got:
                break
            time.sleep(2)
        Path(f.name).unlink()
        got = lab.run_tool(
            ELECTION_TOOL, ["--bootstrap-server", c.bootstrap, "--election-type", "PREFERRED", "--all-topic-partitions"]
        )
        s.mark("preferred-leader election run: " + " ".join(got.split())[:160])
        _tool_output(cli / "topics-describe.txt", TOPICS_TOOL, ["--bootstrap-server", c.bootstrap, "--describe"])
        _tool_output(cli / "log-dirs.txt", LOG_DIRS_TOOL, ["--bootstrap-server", c.bootstrap, "--describe"])
        # a client pinned to Kafka 0.10.1's protocol (Produce v2): a few records at every capture
        legacy = KafkaProducer(
            bootstrap_servers=c.bootstrap, client_id="legacy-billing", api_version=(0, 10, 1), acks=1
        )
        legacy_sent = _legacy_batch(legacy)
        with lab.ProduceLoad(c.bootstrap, "scratch", rate=rate, size=size, client_id="scratch-writer") as load:
            s.mark(f"produce load on scratch started ({rate} records/s of {size} bytes, acks=all)")
            s.mark(
                "client legacy-billing (kafka-python, api_version=(0, 10, 1): Produce v2) writes 20 records to "
                "legacy at every capture"
            )
            for node in c.nodes:
                s.jmxtool(node, REQUEST_MBEANS, out / f"broker-{node.node_id}" / "jmx-requests.csv", interval_ms=5000)
            t_end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < t_end:
                t0 = time.monotonic()
                capture.capture(c.bootstrap, out / "live")
                legacy_sent += _legacy_batch(legacy)
                for node in c.nodes:
                    lab.record_df([Path(node.work) / "data"], out / f"broker-{node.node_id}" / "df.txt")
                n += 1
                time.sleep(max(0.0, every - (time.monotonic() - t0)))
                # two captures in one second would share a file name
                time.sleep(1.0)
        legacy.close(timeout=10)
        s.mark(
            f"produce load stopped after {n} captures: {load.stats.line()}; legacy-billing: {legacy_sent} records "
            "acknowledged"
        )
        _tool_output(cli / "log-dirs.txt", LOG_DIRS_TOOL, ["--bootstrap-server", c.bootstrap, "--describe"])
        _tool_output(cli / "topics-describe.txt", TOPICS_TOOL, ["--bootstrap-server", c.bootstrap, "--describe"])
        s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    lab.write_provenance(
        s,
        "cluster-config: a healthy cluster with configuration and layout risks planted",
        "Three combined broker+controller nodes. Nothing fails during the run; the bundle holds the risks the "
        "cluster_config investigation must name: an RF 1 topic (scratch), min.insync.replicas equal to RF "
        "(payments), unclean leader election enabled on a topic (clickstream), every leader of orders on node 1 "
        "after a reassignment and a preferred-leader election, and node 2's log directory filling at a steady rate "
        "(scratch is written all along).",
        "Folders `broker-1..3` are the nodes (node id = folder number) with their stock logs and `jmx-broker.csv` "
        "(JmxTool every 5 s, LeaderCount among them), `jmx-requests.csv` (request rates per API version, deprecated "
        "versions with the client software that sent them, network idle, request queue, replica fetcher lag; "
        "JmxTool every 5 s from a few seconds into the load) and `df.txt` (`df -k` of the node's log directory at "
        "every capture, after an ISO time line); `live/` holds the kit's capture every few seconds during the "
        "load (log-dir sizes per partition, configs) and one at the end; `cli/` holds kafka-topics --describe and "
        "kafka-log-dirs --describe output (each run after an ISO time line), before and after the load, and the "
        "reassignment plan that was executed.",
        "replication-factor-low (scratch), min-isr-blocks-writes (payments), unclean-election-enabled "
        "(clickstream), leader-skew (node 1), disk-use-skew (node 2), log-dir-filling (node 2's log dir, with "
        "the time until its file system is full from df), clients-on-removed-protocol (Produce v2 of legacy-billing); "
        "and from the throughput investigation down-conversion (legacy-billing's message format v1)",
        evidence(),
        f".venv/bin/python lab/scenarios/cluster_config.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/cluster-config"))
