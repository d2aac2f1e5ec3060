"""The multi-node lab against real Kafka: a three-node KRaft cluster (session fixture
``cluster``) replicates with RF 3, every node writes the stock files and GC log and answers JMX
on loopback; each broker-health scenario runs on a real cluster of its own and its bundle holds
the lines the incident is about."""

import csv
import gzip
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
from rolled_logs import rolled_lines

import kitlib
from kitlib import lab

pytestmark = pytest.mark.broker
SCEN = Path(__file__).resolve().parents[1] / "lab" / "scenarios"
STOCK_FILES = (
    "server.log",
    "controller.log",
    "state-change.log",
    "log-cleaner.log",
    "kafka-request.log",
    "kafka-authorizer.log",
    "kafkaServer-gc.log",
)


def scenario(name):
    spec = importlib.util.spec_from_file_location(f"scenario_{name}", SCEN / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read(path: Path) -> list[str]:
    """A bundle file's lines, gzipped or not (``server.log`` also finds ``server.log.gz``)."""
    if not path.exists():
        path = path.with_name(path.name + ".gz")
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode().splitlines()


def jmx_rows(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """JmxTool's CSV (its quoted MBean names hold commas): header and rows."""
    header, *rows = list(csv.reader(lines))
    return header, rows


def grep(bundle: Path, host: str, name: str, pattern: str) -> list[str]:
    """Matching lines of a host's file and its rolled pieces (server.log.2026-11-23-11, .gz), oldest first."""
    return rolled_lines(bundle / host, name, pattern)


def loads_cleanly_but_gc_logs(out: Path):
    """The bundle loads; the only lines the kit does not parse yet are the JVM's GC logs."""
    b = kitlib.load_bundle(out)
    assert not b.summary.errors, b.summary.errors
    if len(b.unparsed):
        names = set(b.unparsed["file"].astype(str).str.rsplit("/", n=1).str[-1])
        assert all(n.startswith("kafkaServer-gc.log") for n in names), names
    assert {"broker-1", "broker-2", "broker-3"} <= set(b.summary.hosts)
    return b


def no_paths_of_this_machine(out: Path, work: Path):
    """What the brokers wrote names no folder of this machine (PROVENANCE.md quotes the command,
    with the output folder the caller chose)."""
    for f in out.rglob("*"):
        if f.is_file() and f.suffix != ".gz" and f.name != "PROVENANCE.md":
            assert str(work) not in f.read_text(errors="replace"), f


# --- the session cluster -------------------------------------------------------------------


def test_cluster_replicates_three_ways_with_acks_all(cluster):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    assert [n.node_id for n in cluster.nodes] == [1, 2, 3] and all(n.alive() for n in cluster.nodes)
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    a.create_topics([NewTopic("rf3-check", 3, 3, topic_configs={"min.insync.replicas": "2"})])
    p = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    futures = [p.send("rf3-check", key=b"k%d" % (i % 7), value=b"v%d" % i) for i in range(300)]
    p.flush()
    assert all(f.get(timeout=30).offset >= 0 for f in futures)
    p.close()
    c = KafkaConsumer(
        "rf3-check", bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    assert sorted(int(m.value[1:]) for m in c) == list(range(300))
    c.close()
    (desc,) = a.describe_topics(["rf3-check"])
    assert len(desc["partitions"]) == 3
    for part in desc["partitions"]:
        assert sorted(part["replica_nodes"]) == [1, 2, 3] and sorted(part["isr_nodes"]) == [1, 2, 3]
    # each partition has one leader; the leaders are spread over the nodes
    assert len({part["leader_id"] for part in desc["partitions"]}) >= 2
    a.close()


def test_cluster_nodes_write_stock_files_with_gc_logging_as_kafka_run_class(cluster):
    for n in cluster.nodes:
        logs = Path(n.logs)
        for name in STOCK_FILES:
            assert (logs / name).is_file(), (n.name, name)
        assert rolled_lines(logs, "server.log", rf"\[KafkaRaftServer nodeId={n.node_id}\] Kafka Server started")
        cmdline = Path(f"/proc/{n.pid}/cmdline").read_bytes().split(b"\0")
        assert f"-Xlog:gc*:file={logs}/kafkaServer-gc.log:time,tags:filecount=10,filesize=100M".encode() in cmdline
        assert re.search(
            r"^\[\S+\]\[gc\s*\] GC\(\d+\) Pause Young", (logs / "kafkaServer-gc.log").read_text(), re.MULTILINE
        )


def test_cluster_listens_on_loopback_only(cluster):
    ss = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True, check=True).stdout
    for n in cluster.nodes:
        mine = [ln for ln in ss.splitlines() if f"pid={n.pid}," in ln]
        assert len(mine) >= 3, n.name  # client listener, controller listener, JMX
        assert all("127.0.0.1" in ln.split()[3] for ln in mine), mine


def test_jmxtool_samples_health_mbeans_on_every_node(cluster, tmp_path):
    active = lab.active_controller(cluster)
    counts = {}
    procs = {
        n.node_id: lab.run_jmxtool(n, lab.CLUSTER_MBEANS, tmp_path / f"jmx-{n.node_id}.csv", wait=False)
        for n in cluster.nodes
    }
    import time

    time.sleep(6)
    for node_id, p in procs.items():
        out = lab.finish_jmxtool(p, tmp_path / f"jmx-{node_id}.csv")
        assert out is not None, f"JmxTool took no sample on node {node_id}"
        header, rows = jmx_rows(out.read_text().splitlines())
        for mbean in (
            "UnderReplicatedPartitions",
            "IsrShrinksPerSec",
            "IsrExpandsPerSec",
            "ActiveControllerCount",
            "OfflinePartitionsCount",
            "OfflineLogDirectoryCount",
            "RequestHandlerAvgIdlePercent",
        ):
            assert any(mbean in h for h in header), (node_id, mbean)
        col = next(i for i, h in enumerate(header) if "ActiveControllerCount" in h)
        counts[node_id] = float(rows[-1][col])
        offline = next(i for i, h in enumerate(header) if "OfflineLogDirectoryCount" in h)
        assert float(rows[-1][offline]) == 0
    # exactly one active controller, the one the quorum tool names
    assert counts == {n: (1.0 if n == active.node_id else 0.0) for n in counts}


# --- the broker-health scenarios, each on a cluster of its own -----------------------------


@pytest.mark.slow
def test_isr_flapping(tmp_path):
    out = scenario("isr_flapping").run(tmp_path / "b", pauses=2, work=tmp_path / "w")
    fenced = [
        ln
        for h in ("broker-1", "broker-2", "broker-3")
        for ln in grep(out, h, "controller.log", r"Fencing broker \d+ because its session has timed out")
    ]
    assert len(fenced) == 1, fenced
    paused = int(re.search(r"Fencing broker (\d+)", fenced[0]).group(1))
    leaders = [f"broker-{i}" for i in (1, 2, 3) if i != paused]
    shrinks = [ln for h in leaders for ln in grep(out, h, "server.log", rf"Shrinking ISR .*\(brokerId: {paused},")]
    # back in: the leader's own "ISR updated to" line, or the metadata state change when that line is skipped
    back = [
        ln
        for h in leaders
        for ln in grep(out, h, "server.log", rf"ISR updated to (\d+,)*{paused}\b")
        + grep(out, h, "state-change.log", rf"isr=\[(\d+, )*{paused}[,\]]")
    ]
    first_shrink = min(ln[1:24] for ln in shrinks)
    back = [ln for ln in back if ln[1:24] > first_shrink]
    assert len(shrinks) >= 3 * 2 and len(back) >= 3 * 2  # each leader, each of the 3 pauses (2 short + long)
    assert not grep(out, f"broker-{paused}", "server.log", r"Shrinking ISR")  # it leads nothing
    provenance = (out / "PROVENANCE.md").read_text()
    assert f"Fencing broker {paused} because" in provenance and "Shrinking ISR" in provenance
    b = loads_cleanly_but_gc_logs(out)
    assert (b.metrics["name"].astype("string") == "IsrShrinksPerSec").any()
    no_paths_of_this_machine(out, tmp_path)


@pytest.mark.slow
def test_controller_failover(tmp_path):
    out = scenario("controller_failover").run(tmp_path / "b", before_s=6, down_s=10, after_s=6, work=tmp_path / "w")
    hosts = ("broker-1", "broker-2", "broker-3")
    started = {h: len(grep(out, h, "server.log", r"Kafka Server started")) for h in hosts}
    (killed,) = [h for h, n in started.items() if n == 2]  # the killed node started twice
    becoming = {h: grep(out, h, "controller.log", r"Becoming the active controller at epoch") for h in hosts}
    assert becoming[killed], "the killed node was the active controller before the kill"
    new = [h for h in hosts if h != killed and becoming[h]]
    assert len(new) == 1, becoming
    stamp = lambda ln: ln[1:24]
    assert stamp(becoming[new[0]][-1]) > stamp(becoming[killed][0])
    assert grep(out, new[0], "controller.log", rf"Fencing broker {killed[-1]} because its session has timed out")
    assert (out / killed / "jmx-broker.csv").is_file()  # sampled until the kill
    loads_cleanly_but_gc_logs(out)
    no_paths_of_this_machine(out, tmp_path)


@pytest.mark.slow
def test_log_dir_failure(tmp_path):
    mod = scenario("log_dir_failure")
    out = mod.run(tmp_path / "b", work=tmp_path / "w")
    provenance = (out / "PROVENANCE.md").read_text()
    cause = "No space left on device" if "tmpfs mounted" in provenance else "Not a directory"
    assert grep(out, "broker-3", "server.log", cause)
    stopping = grep(out, "broker-3", "server.log", r"Stopping serving logs in dir")
    assert stopping and all("small-disk" in ln for ln in stopping)
    assert not grep(out, "broker-1", "server.log", "Stopping serving logs in dir")
    header, rows = jmx_rows(read(out / "broker-3" / "jmx-broker.csv"))
    col = next(i for i, h in enumerate(header) if "OfflineLogDirectoryCount" in h)
    assert {float(r[col]) for r in rows} >= {0.0, 1.0}
    loads_cleanly_but_gc_logs(out)
    no_paths_of_this_machine(out, tmp_path)


@pytest.mark.slow
def test_gc_pressure(tmp_path):
    out = scenario("gc_pressure").run(tmp_path / "b", seconds=25, work=tmp_path / "w")
    pauses = {
        h: grep(out, h, "kafkaServer-gc.log", r"\]\[gc\s*\] GC\(\d+\) Pause ")
        for h in ("broker-1", "broker-2", "broker-3")
    }
    assert grep(out, "broker-2", "kafkaServer-gc.log", r"Heap Max Capacity: 64M")
    assert len(pauses["broker-2"]) > 2 * max(len(pauses["broker-1"]), len(pauses["broker-3"])), {
        h: len(p) for h, p in pauses.items()
    }
    loads_cleanly_but_gc_logs(out)


@pytest.mark.slow
def test_healthy_cluster(tmp_path):
    out = scenario("healthy_cluster").run(tmp_path / "b", seconds=15, work=tmp_path / "w")
    for h in ("broker-1", "broker-2", "broker-3"):
        assert not grep(out, h, "controller.log", r"Fencing broker")
        assert not grep(out, h, "server.log", r"Stopping serving logs|No space left")
        assert len(grep(out, h, "server.log", r"Kafka Server started")) == 1
    b = loads_cleanly_but_gc_logs(out)
    assert {f.id for f in kitlib.triage(b).findings} == set()
    lag = b.consumer_lag
    assert (lag["group"].astype(str) == "order-ledger").any() and lag["lag"].sum() == 0
