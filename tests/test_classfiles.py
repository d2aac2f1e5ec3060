"""The statements catalogue's second input: log calls read from compiled class files (Kafka's 4.x
release jars). Small Java sources are compiled here with the JDK's ``javac`` (the lab needs a JDK
anyway), against stand-ins for SLF4J's ``Logger`` and Scala's ``Function0`` (the shape of the
calls Kafka's Scala code compiles to: the message built in a lambda, passed to ``info``)."""

from __future__ import annotations

import shutil
import subprocess
import zipfile

import pytest

from kitlib.formats.logs import classfiles, lineage
from kitlib.formats.logs import statements as st

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")

SOURCES = {
    "org/slf4j/Logger.java": """package org.slf4j;
public interface Logger {
    void trace(String m, Object... a); void debug(String m, Object... a); void info(String m, Object... a);
    void warn(String m, Object... a); void error(String m, Object... a);
}""",
    "org/slf4j/LoggerFactory.java": """package org.slf4j;
public class LoggerFactory {
    public static Logger getLogger(Class<?> c) { return null; }
    public static Logger getLogger(String name) { return null; }
}""",
    "scala/Function0.java": "package scala;\npublic interface Function0<R> { R apply(); }",
    "org/apache/kafka/logger/StateChangeLogger.java": """package org.apache.kafka.logger;
public class StateChangeLogger { public void info(String m) {} }""",
    # a Scala class mixing in Logging: its own info(=> String) and warn(=> String, => Throwable)
    "kafka/cluster/Partition.java": """package kafka.cluster;
import scala.Function0;
public class Partition {
    private final org.apache.kafka.logger.StateChangeLogger stateChangeLogger = null;
    void info(Function0<String> m) {}
    void warn(Function0<String> m, Function0<Throwable> e) {}
    void shrink(String from, String to, int brokerId, Exception err) {
        info(() -> "Shrinking ISR from " + from + " to " + to + ". Leader: broker " + brokerId);
        warn(() -> "Failed to shrink ISR", () -> err);
        info(() -> "Constant sentence of the partition");
        stateChangeLogger.info("Skipped the become-leader state change for " + from + " with topic id " + to);
        info(() -> "Shrinking ISR from " + from + " to " + to + " in the new words");
    }
}""",
    "org/apache/kafka/controller/QuorumController.java": """package org.apache.kafka.controller;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
public class QuorumController {
    private static final Logger LOG = LoggerFactory.getLogger(QuorumController.class);
    private final Logger log = LoggerFactory.getLogger("org.apache.kafka.controller.Named");
    void fence(int broker, long epoch, String reason, Object x) {
        LOG.info("Fencing broker {} at epoch {} because {}", broker, epoch, reason);
        log.warn("Creating new QuorumController with clusterId " + reason + " and " + x);
        LOG.error(String.format("Broker %d failed after %d ms", broker, epoch));
        new Inner().go(broker);
    }
    class Inner {
        void go(int b) { LOG.debug("Inner work for {}", b); }
    }
}""",
}


@pytest.fixture(scope="module")
def jar(tmp_path_factory):
    root = tmp_path_factory.mktemp("classes")
    src = root / "src"
    for path, text in SOURCES.items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text)
    out = root / "out"
    subprocess.run(["javac", "-nowarn", "--release", "11", "-d", str(out), *[str(src / p) for p in SOURCES]],
                   check=True, capture_output=True)  # fmt: skip
    jar = root / "kafka-test-4.0.0.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for f in sorted(out.rglob("*.class")):
            z.write(f, f.relative_to(out).as_posix())
    return jar


@pytest.mark.slow  # javac
def test_log_calls_are_read_from_class_files(jar):
    got = {(f.logger, f.level, f.template) for f, _ in classfiles.jar_statements(jar)}
    assert got == {
        # Scala's shape: the message is the string a lambda returns, the logger the calling class
        ("kafka.cluster.Partition", "info", "Shrinking ISR from {} to {}. Leader: broker {}"),
        ("kafka.cluster.Partition", "warn", "Failed to shrink ISR"),
        ("kafka.cluster.Partition", "info", "Constant sentence of the partition"),
        ("kafka.cluster.Partition", "info", "Shrinking ISR from {} to {} in the new words"),
        ("state.change.logger", "info", "Skipped the become-leader state change for {} with topic id {}"),
        # SLF4J: a constant template, a concatenation, String.format; the logger a field was made with
        ("org.apache.kafka.controller.QuorumController", "info", "Fencing broker {} at epoch {} because {}"),
        ("org.apache.kafka.controller.Named", "warn", "Creating new QuorumController with clusterId {} and {}"),
        ("org.apache.kafka.controller.QuorumController", "error", "Broker {} failed after {} ms"),
        ("org.apache.kafka.controller.QuorumController", "debug", "Inner work for {}"),  # the outer class's field
    }
    by_text = {f.template: f for f, _ in classfiles.jar_statements(jar)}
    assert by_text["Fencing broker {} at epoch {} because {}"].types == ("broker_id", "epoch", "any")
    classes = {cls for _, cls in classfiles.jar_statements(jar)}
    assert "org/apache/kafka/controller/QuorumController$Inner.class" in classes


@pytest.mark.slow  # javac
def test_jars_extend_the_catalogue_after_trunk_and_keep_ids(jar, tmp_path):
    from tests.test_statements import _git, _release

    repo = tmp_path / "kafka"
    repo.mkdir()
    _git(repo, "init", "-q")
    scala = """package kafka.cluster
class Partition extends Logging {
  def shrink(): Unit = {
    info(s"Shrinking ISR from ${isr} to ${newIsr}. Leader: broker ${id}")
    info(s"Shrinking ISR from ${isr} to ${newIsr} in the old words")
  }
}
"""
    _release(repo, "3.9.0", {"core/src/main/scala/kafka/cluster/Partition.scala": scala})
    cat = st.extract(repo, jars={"4.0.0": [jar]})
    assert cat.releases == ["3.9.0", "trunk", "4.0.0"]
    by = {(s.logger, s.template): s for s in cat.statements}
    same = by[("kafka.cluster.Partition", "Shrinking ISR from {} to {}. Leader: broker {}")]
    assert same.releases == ("3.9.0", "trunk", "4.0.0") and same.types[:2] == ("replica_list", "replica_list")
    assert same.source.endswith("Partition.scala")  # the source's file and slot names are kept
    gone = by[("kafka.cluster.Partition", "Shrinking ISR from {} to {} in the old words")]
    assert gone.last == "trunk"
    new = by[("org.apache.kafka.controller.QuorumController", "Fencing broker {} at epoch {} because {}")]
    assert new.releases == ("4.0.0",) and new.source == "kafka-test-4.0.0.jar:org/apache/kafka/controller/QuorumController.class"  # fmt: skip
    # saved and loaded back, the jars' release is listed like any other
    st.save(cat, tmp_path / "s.json.gz")
    assert st.load(tmp_path / "s.json.gz").releases[-1] == "4.0.0"
    # a 4.x rewording takes the id of the sentence it replaced; other sentences keep their own
    fam = lineage.lineage(cat)
    reworded = by[("kafka.cluster.Partition", "Shrinking ISR from {} to {} in the new words")]
    assert reworded.releases == ("4.0.0",) and fam[reworded.id] == gone.id
    other = by[("kafka.cluster.Partition", "Constant sentence of the partition")]
    assert fam[other.id] == other.id and fam[same.id] == same.id


def test_release_jars_lists_what_a_maven_folder_lacks(tmp_path):
    repo = tmp_path / "m2"
    jar = repo / "org" / "apache" / "kafka" / "kafka-clients" / "4.0.0" / "kafka-clients-4.0.0.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    found, missing = classfiles.release_jars(repo, "4.0.0")
    assert found == [jar] and "kafka_2.13" in missing and "kafka-clients" not in missing


def test_links_found_at_class_file_releases_never_join_two_lineages_of_the_source():
    def stmt(logger: str, text: str, releases: tuple[str, ...]) -> st.Statement:
        return st.Statement(st.template_id(text), logger, "trace", text, (), (), releases)

    old = "Skipping fetch for {} because previous fetch request to {} is in flight"
    moved = "Skipping fetch for {} because previous request to {} is in flight"
    statements = [
        stmt("Share", old, ("3.9.0", "trunk", "4.0.0")),  # ends at 4.0.0, then the Fetcher's sentence
        stmt("Fetcher", moved, ("3.8.0", "3.9.0", "trunk", "4.0.0", "4.1.0")),
        stmt("Share", moved, ("4.1.0",)),
    ]
    releases = ["3.8.0", "3.9.0", "trunk", "4.0.0", "4.1.0"]
    # read from source alone, the two would be one lineage (the older id names both)
    fam = lineage.lineage(st.Catalogue(releases, statements, {}))
    assert fam[st.template_id(old)] == fam[st.template_id(moved)] == st.template_id(moved)
    # with 4.0.0 and 4.1.0 from class files, both keep the ids the source gave them
    fam = lineage.lineage(st.Catalogue(releases, statements, {"class_files": {"4.0.0": [], "4.1.0": []}}))
    assert fam[st.template_id(old)] == st.template_id(old) and fam[st.template_id(moved)] == st.template_id(moved)
