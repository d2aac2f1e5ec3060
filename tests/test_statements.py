"""The catalogue of Kafka's log statements: the extractor on a small generated git repository with
two releases, and the catalogue that ships with the kit."""

from __future__ import annotations

import subprocess

import pytest

from kitlib.formats.logs import statements as st

SCALA_1 = """package kafka.cluster

class Partition(val topic: String, val partitionId: Int) extends Logging {
  def maybeShrinkIsr(): Unit = {
    info(s"Shrinking ISR from ${inSyncReplicaIds.mkString(",")} to ${newIsr.mkString(",")}")
    warn("Leader " + leaderId +
      " is not in the ISR for partition " + topicPartition)
    // info("a statement in a comment")
  }
}

object Partition extends Logging {
  def apply(): Unit = debug("Creating partition %s with leader epoch %d".format(tp, leaderEpoch))
}

// a value of a class that mixes in Logging logs as that class
case class RetentionBreach(log: UnifiedLog) {
  def logReason(): Unit = log.info(s"Deleting segment $segment due to retention")
}
"""

# 1.1.0: the ISR variables renamed, the warn statement gone
SCALA_2 = """package kafka.cluster

class Partition(val topic: String, val partitionId: Int) extends Logging {
  def maybeShrinkIsr(): Unit = {
    info(s"Shrinking ISR from ${currentIsr.mkString(",")} to ${shrunkIsr.mkString(",")}")
  }
}

object Partition extends Logging {
  def apply(): Unit = debug("Creating partition %s with leader epoch %d".format(tp, leaderEpoch))
}

// a value of a class that mixes in Logging logs as that class
case class RetentionBreach(log: UnifiedLog) {
  def logReason(): Unit = log.info(s"Deleting segment $segment due to retention")
}
"""

JAVA_1 = """package org.apache.kafka.clients;

import org.slf4j.Logger;

public class NetworkClient {
    private final Logger log;

    public NetworkClient(LogContext logContext) {
        this.log = logContext.logger(NetworkClient.class);
    }

    void poll(long elapsedMs) {
        log.info("Node {} disconnected after {} ms.",
                 nodeId,
                 elapsedMs);
        log.error("Unexpected error from " + node.id() + "; closing", e);
    }

    static class Updater {
        private static final Logger LOG = LoggerFactory.getLogger(Updater.class);

        void update() {
            LOG.debug("Updating metadata for {}", "bootstrap");
        }
    }
}
"""

JAVA_2 = JAVA_1.replace("nodeId,", "node.idString(),").replace(
    "    void poll",
    '    void close() {\n        log.trace("Closing the client, epoch {}", epoch);\n    }\n\n    void poll',
)


def _git(repo, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
         *args], check=True, capture_output=True,
    )  # fmt: skip


def _release(repo, tag: str, files: dict[str, str]) -> None:
    for path, text in files.items():
        p = repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", tag)
    _git(repo, "tag", tag)


@pytest.fixture
def kafka_repo(tmp_path):
    repo = tmp_path / "kafka"
    repo.mkdir()
    _git(repo, "init", "-q")
    scala, java = "core/src/main/scala/kafka/cluster/Partition.scala", "clients/src/main/java/org/apache/kafka/clients/NetworkClient.java"  # fmt: skip
    test_file = "clients/src/test/java/org/apache/kafka/clients/NetworkClientTest.java"
    _release(repo, "1.0.0", {scala: SCALA_1, java: JAVA_1, test_file: JAVA_1})
    _release(repo, "1.1.0-rc0", {java: JAVA_2})  # a candidate of a release that has its final tag: left out
    _release(repo, "1.1.0", {scala: SCALA_2, java: JAVA_2})
    _release(repo, "1.2.0-rc0", {})  # a release still being voted on: its last candidate stands for it
    return repo


def test_extract_reads_every_release_and_keeps_ids_across_renamed_variables(kafka_repo):
    cat = st.extract(kafka_repo)
    assert cat.releases == ["1.0.0", "1.1.0", "1.2.0-rc0", "trunk"]
    got = {(s.logger, s.level, s.template, s.types, s.releases) for s in cat.statements}
    later = ("1.1.0", "1.2.0-rc0", "trunk")
    assert got == {
        ("kafka.cluster.Partition", "info", "Shrinking ISR from {} to {}", ("replica_list", "replica_list"),
         ("1.0.0", *later)),
        ("kafka.cluster.Partition", "warn", "Leader {} is not in the ISR for partition {}",
         ("broker_id", "topic_partition"), ("1.0.0",)),
        ("kafka.cluster.Partition$", "debug", "Creating partition {} with leader epoch {}",
         ("topic_partition", "epoch"), ("1.0.0", *later)),
        ("org.apache.kafka.clients.NetworkClient", "info", "Node {} disconnected after {} ms.",
         ("broker_id", "duration"), ("1.0.0", *later)),
        ("org.apache.kafka.clients.NetworkClient", "error", "Unexpected error from {}; closing", ("any",),
         ("1.0.0", *later)),
        ("org.apache.kafka.clients.NetworkClient", "trace", "Closing the client, epoch {}", ("epoch",), later),
        ("kafka.cluster.UnifiedLog", "info", "Deleting segment {} due to retention", ("any",), ("1.0.0", *later)),
        ("org.apache.kafka.clients.NetworkClient$Updater", "debug", "Updating metadata for bootstrap", (),
         ("1.0.0", *later)),
    }  # fmt: skip
    shrink = next(s for s in cat.statements if s.template.startswith("Shrinking"))
    assert shrink.id == st.template_id("Shrinking ISR from {} to {}")
    assert shrink.names == ('currentIsr.mkString(",")', 'shrunkIsr.mkString(",")')  # as the newest release says
    assert shrink.typed() == "Shrinking ISR from {replica_list} to {replica_list}"
    assert (shrink.first, shrink.last, shrink.source) == ("1.0.0", "trunk", "core/src/main/scala/kafka/cluster/Partition.scala")  # fmt: skip
    node = next(s for s in cat.statements if s.template.startswith("Node"))
    assert node.names == ("node.idString()", "elapsedMs")


def test_a_saved_catalogue_loads_back_the_same(kafka_repo, tmp_path):
    cat = st.extract(kafka_repo, tags=["1.0.0"], trunk=False)
    st.save(cat, tmp_path / "s.json.gz")
    back = st.load(tmp_path / "s.json.gz")
    assert back.releases == ["1.0.0"] and back.statements == cat.statements
    assert [s.level for s in st.select(back.statements, logger="partition$")] == ["debug"]
    assert len(st.select(back.statements, grep="isr")) == 2


def test_the_shipped_catalogue_holds_every_era():
    cat = st.load()
    assert cat.releases[0] == "0.8.0" and "2.8.2" in cat.releases
    # the source up to trunk, then the 4.x releases read from their class files
    assert cat.releases[cat.releases.index("trunk") :] == ["trunk", "4.0.0", "4.1.0", "4.2.0", "4.3.0", "4.4.0"]
    assert sorted(cat.notes["class_files"]) == ["4.0.0", "4.1.0", "4.2.0", "4.3.0", "4.4.0"]
    assert "kafka_2.13-4.4.0.jar" in cat.notes["class_files"]["4.4.0"]
    assert len(cat.statements) > 8_000
    assert set(st.counts(cat)["by_level"]) == set(st.LEVELS)

    def one(logger: str, template: str) -> st.Statement:
        hits = [s for s in cat.statements if s.logger == logger and s.template == template]
        assert len(hits) == 1, (logger, template, hits)
        return hits[0]

    # an ISR shrink in the wording of 0.8-0.10, of 0.11-2.1 and of 2.2 on
    old = one("kafka.cluster.Partition", "Shrinking ISR for partition [{},{}] from {} to {}")
    assert (old.level, old.types) == ("info", ("topic", "partition", "replica_list", "replica_list"))
    assert (old.first, old.last) == ("0.8.0", "0.10.2.2")
    mid = one("kafka.cluster.Partition", "Shrinking ISR from {} to {}")
    assert (mid.first, mid.last) == ("0.11.0.0", "2.1.1")
    new = one(
        "kafka.cluster.Partition",
        "Shrinking ISR from {} to {}. Leader: (highWatermark: {}, endOffset: {}). Out of sync replicas: {}.",
    )
    assert (new.first, new.last, new.types[:2]) == ("2.2.0", "4.4.0", ("replica_list", "replica_list"))
    # a ZooKeeper controller's listener, nested in the state machine (0.8-0.10.1)
    zk = one("kafka.controller.ReplicaStateMachine$BrokerChangeListener", "Newly added brokers: {}, deleted brokers: {}, all live brokers: {}")  # fmt: skip
    assert (zk.level, zk.first, zk.last) == ("info", "0.8.0", "0.10.1.1")
    # the same sentence moved to KafkaController keeps its id
    assert one("kafka.controller.KafkaController", zk.template).id == zk.id
    # a KRaft-era broker's controller discovery, and a Java client's fencing
    kraft = one("kafka.server.BrokerToControllerRequestThread", "Recorded new controller, from now on will use node {}")
    assert (kraft.first, kraft.last, kraft.types) == ("3.3.2", "3.6.2", ("broker_id",))
    fenced = one(
        "org.apache.kafka.clients.consumer.internals.AbstractCoordinator",
        "JoinGroup failed: The group instance id {} has been fenced by another instance. Sent generation was {}",
    )
    assert (fenced.level, fenced.first, fenced.last) == ("error", "2.7.0", "4.4.0")
