"""Broker and cluster health: GC-log and partition-state parsers (exact rows, every line accounted
for), each detector on a bundle that has its incident and on one that does not, and the rule that
a GC pause explaining a symptom makes one finding; ISR episodes with exact answers on a hand-written
KRaft broker log. Fixtures are constructed (see tests/fixtures/cluster_health/SOURCES.md); the real
lab bundles are checked by tests/test_triage.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib.findings import triage
from kitlib.investigations.cluster_health import analysis, wording
from kitlib.investigations.cluster_health.gclog import detect, parse_text

FIX = Path(__file__).parent.parent / "fixtures" / "cluster_health"
MB = 1024**2


def ids_of(bundle) -> list[str]:
    return sorted(f.id for f in triage(bundle, investigations=["cluster_health"]).findings)


def findings(bundle, fid):
    return [f for f in triage(bundle, investigations=["cluster_health"]).findings if f.id == fid]


# --- GC logs ---


def test_unified_time_tags_rows_and_accounting():
    text = (FIX / "gc" / "jdk17-g1-time-tags.log").read_text()
    rows, un = parse_text(text)
    assert len(un) == 0
    pauses = rows[rows["is_pause"]]
    assert pauses["kind"].tolist() == [
        "Young (Normal)",
        "Young (Concurrent Start)",
        "Remark",
        "Cleanup",
        "Young (Normal)",
        "Full",
    ]
    first = pauses.iloc[0]
    assert (first["gc_id"], first["cause"], first["duration_ms"]) == (11536, "G1 Evacuation Pause", 40.514)
    assert (first["heap_before"], first["heap_after"], first["heap_total"]) == (6746 * MB, 2016 * MB, 8192 * MB)
    assert first["ts"] == pd.Timestamp("2024-05-22T00:32:03.023Z")
    full = pauses.iloc[-1]
    assert (full["cause"], full["duration_ms"], full["line"]) == ("G1 Compaction Pause", 12528.301, 23)
    other = rows[~rows["is_pause"]]
    assert other["kind"].tolist() == ["Concurrent Mark Cycle", "To-space exhausted"]
    assert other["duration_ms"].iloc[0] == 854.233
    assert set(rows["log_format"]) == {"unified"}


def test_unified_uptime_level_tags_and_a_foreign_line():
    text = (FIX / "gc" / "jdk11-g1-uptime-level-tags.log").read_text()
    rows, un = parse_text(text)
    assert un[["line", "reason"]].values.tolist() == [[10, "not a GC log line"]]
    assert rows["kind"].tolist() == ["Young", "Initial Mark", "Concurrent Cycle", "To-space exhausted"]
    assert rows["cause"].tolist()[:2] == ["G1 Evacuation Pause", "G1 Humongous Allocation"]
    assert rows["uptime_s"].tolist()[:2] == [5.251, 61.010]
    assert rows["ts"].isna().all()


@pytest.mark.parametrize(
    "line, kind, cause, ms, heap_after",
    [
        (
            "[2.001s][info][gc] GC(7) Pause Young (Allocation Failure) 100M->20M(500M) 12.300ms",
            "Young",
            "Allocation Failure",
            12.3,
            20 * MB,
        ),
        (
            "[2.001s][info][gc] GC(8) Pause Full (Ergonomics) 400M->100M(500M) 812.5ms",
            "Full",
            "Ergonomics",
            812.5,
            100 * MB,
        ),
        ("[2.001s][info][gc,phases] GC(3) Pause Mark Start 0.012ms", "Mark Start", None, 0.012, None),
        ("[2.001s][info][gc,phases] GC(3) Y: Pause Mark End 0.020ms", "Mark End", None, 0.02, None),
        ("[2.001s][info][gc] GC(4) Pause Init Mark 0.456ms", "Init Mark", None, 0.456, None),
        (
            "[2.001s][info][gc] GC(4) Pause Young (Mixed) (G1 Evacuation Pause) 900M->700M(1024M) 30.0ms",
            "Young (Mixed)",
            "G1 Evacuation Pause",
            30.0,
            700 * MB,
        ),
    ],
)
def test_collectors_pause_lines(line, kind, cause, ms, heap_after):
    rows, un = parse_text(line + "\n")
    assert len(un) == 0 and len(rows) == 1
    r = rows.iloc[0]
    assert (r["kind"], r["duration_ms"], bool(r["is_pause"])) == (kind, ms, True)
    assert (None if pd.isna(r["cause"]) else r["cause"]) == cause
    assert (None if pd.isna(r["heap_after"]) else r["heap_after"]) == heap_after


def test_jdk8_g1_details_rows_and_accounting():
    text = (FIX / "gc" / "jdk8-g1-datestamps.log").read_text()
    rows, un = parse_text(text)
    assert len(un) == 0  # banners, detail lines and the heap summary are structure
    p = rows[rows["is_pause"]]
    assert p["kind"].tolist() == ["Young", "Young (initial-mark)", "Full", "Remark", "Cleanup"]
    assert p["cause"].tolist()[:3] == ["G1 Evacuation Pause", "G1 Humongous Allocation", "Allocation Failure"]
    young = p.iloc[0]
    assert young["duration_ms"] == pytest.approx(40.514)
    assert young["heap_before"] == round(5980.3 * MB) and young["heap_after"] == round(5680.1 * MB)
    assert young["ts"] == pd.Timestamp("2024-05-22T00:31:58.114Z") + pd.Timedelta(microseconds=40514)
    full = p.iloc[2]
    assert (full["heap_before"], full["heap_after"], full["heap_total"]) == (5990 * MB, 5710 * MB, 6144 * MB)
    assert full["duration_ms"] == pytest.approx(24487.912)
    assert p.iloc[3]["duration_ms"] == pytest.approx(6.1)
    conc = rows[~rows["is_pause"]]
    assert conc["kind"].tolist() == ["Concurrent root-region-scan", "Concurrent mark"]
    assert conc["duration_ms"].tolist() == pytest.approx([9.0, 3450.0])


def test_jdk8_parnew_cms():
    rows, un = parse_text((FIX / "gc" / "jdk8-cms-parnew.log").read_text())
    assert len(un) == 0
    p = rows[rows["is_pause"]]
    assert p["kind"].tolist() == ["Young", "Initial Mark", "Full"]
    assert p["duration_ms"].tolist() == pytest.approx([40.7, 12.3, 5123.4567])
    assert (p.iloc[0]["heap_before"], p.iloc[0]["heap_after"]) == (1234567 * 1024, 1000000 * 1024)
    assert (p.iloc[2]["heap_after"], p.iloc[2]["heap_total"]) == (3000000 * 1024, 4160256 * 1024)
    assert rows[~rows["is_pause"]]["kind"].tolist() == ["Concurrent mark"]


def test_detection_by_content_and_bundle_accounting(tmp_path):
    assert detect((FIX / "gc" / "jdk17-g1-time-tags.log").read_bytes(), None)
    assert detect((FIX / "gc" / "jdk8-cms-parnew.log").read_bytes(), None)
    assert not detect(b"[2024-05-22 00:32:03,023] INFO hello (kafka.Foo)\n", None)
    for f in (FIX / "gc").glob("*.log"):
        (tmp_path / "b1").mkdir(exist_ok=True)
        shutil.copy(f, tmp_path / "b1" / f"gc-{f.stem}.log")
    b = kitlib.load_bundle(tmp_path)
    files = b.files
    assert set(files["format"]) == {"gclog"}
    assert (files["parsed"] + files["unparsed"] == files["lines"]).all()
    assert (files["error"] == "").all()
    assert len(b.table("gc_pauses")) == 8 + 4 + 7 + 4


# --- partition and node state ---


def test_classify_kafka_wording():
    r = wording.classify(
        "[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 9, "
        "endOffset: 12). Out of sync replicas: (brokerId: 3, endOffset: 9)."
    )
    assert (r["kind"], r["topic"], r["partition"], r["reporter"], r["removed"]) == ("isr_shrink", "orders", 0, 1, "3")
    r = wording.classify("[Partition orders-0 broker=1] ISR updated to 1,2 (under-min-isr) and version updated to 7")
    assert (r["kind"], r["isr_after"], r["under_min_isr"]) == ("isr_updated", "1,2", True)
    r = wording.classify("[QuorumController id=2] Fencing broker 3 because its session has timed out.")
    assert (r["kind"], r["node"], r["reporter"]) == ("fenced", 3, 2)
    r = wording.classify("[QuorumController id=1] Becoming the active controller at epoch 7, next write offset 88.")
    assert (r["kind"], r["node"], r["epoch"]) == ("controller_active", 1, 7)
    r = wording.classify(
        "[QuorumController id=1] Setting new leader for topicId 4ZQmXc2lRTq0y2w4tpTf5A, partition 0 "
        "to 3 using an unclean election"
    )
    assert (r["kind"], r["partition"], r["leader"]) == ("unclean", 0, 3)
    r = wording.classify("Halting broker because dir /data/k1 is offline")
    assert (r["kind"], r["dir"]) == ("log_dir_halt", "/data/k1")
    r = wording.classify(
        "Uncaught exception in thread 'data-plane-kafka-request-handler-3':\njava.lang.OutOfMemoryError: "
        "Java heap space\n\tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)"
    )
    assert (r["kind"], r["cause"]) == ("oom", "java.lang.OutOfMemoryError: Java heap space")
    assert wording.classify("[Partition orders-0 broker=1] Log loaded")["kind"] is None


def test_zookeeper_mode_tables():
    b = kitlib.load_bundle(FIX / "zk-failover")
    ne = b.table("node_events")
    assert ne[["kind", "node"]].astype(str).values.tolist()[:1] == [["controller_active", "1"]]
    assert set(ne["kind"].astype(str)) == {
        "controller_active",
        "controller_renounce",
        "zk_session_timeout",
        "zk_session_expired",
        "broker_failed",
        "log_dir_error",
        "log_dir_offline",
        "log_dir_shutdown",
    }
    err = ne[ne["kind"] == "log_dir_error"].iloc[0]
    assert (err["dir"], err["cause"], err["line"], err["host"]) == (
        "/data/kafka",
        "No space left on device",
        2,
        "broker-3",
    )
    pc_ = b.table("partition_changes")
    assert pc_["kind"].astype(str).tolist() == ["offline", "leader_change", "unclean", "isr_shrink"]
    assert analysis.node_ids(b) == {"broker-1": 1, "broker-2": 2, "broker-3": 3}


# --- detectors ---


@pytest.mark.slow
def test_zookeeper_failover_bundle_findings():
    b = kitlib.load_bundle(FIX / "zk-failover")
    assert ids_of(b) == ["broker-fenced", "controller-failover", "isr-shrink", "log-dir-failure", "unclean-election"]
    fo = findings(b, "controller-failover")[0]
    assert (fo.numbers["lost"], fo.numbers["won"], fo.numbers["offline_partitions"]) == (1, 2, 1)
    assert fo.numbers["gap_s"] == pytest.approx(0.47)
    fenced = findings(b, "broker-fenced")[0]
    assert fenced.numbers["broker"] == 1 and "ZooKeeper" in fenced.summary
    ld = findings(b, "log-dir-failure")[0]
    assert (ld.numbers["broker"], ld.numbers["dir"], ld.numbers["cause"], ld.numbers["halted"]) == (
        3,
        "/data/kafka",
        "No space left on device",
        True,
    )
    assert ld.evidence[0]["file"] == "broker-3/server.log" and ld.evidence[0]["line"] == 2
    assert findings(b, "unclean-election")[0].numbers["partitions"] == 1
    assert findings(b, "isr-shrink")[0].numbers["broker"] == 1


def test_gc_pause_explains_isr_shrink_and_session_loss():
    """Broker 3's 24.5 s full GC is why it lost its ZooKeeper session and left the ISR: one gc-pauses
    finding names those consequences; no separate isr-shrink or broker-fenced finding."""
    b = kitlib.load_bundle(FIX / "zk-gc-isr")
    assert ids_of(b) == ["gc-pauses"]
    f = findings(b, "gc-pauses")[0]
    assert f.numbers["longest_pause_host"] == "broker-3" and f.numbers["longest_pause_ms"] == pytest.approx(24487.9)
    assert f.numbers["explained_symptoms"] == 6
    assert "node 3 lost its ZooKeeper session" in f.summary and "left the ISR (2x)" in f.summary
    assert {(e["file"], e["line"]) for e in f.evidence} >= {
        ("broker-3/kafkaServer-gc.log", 17),
        ("broker-1/server.log", 5),
    }


def test_without_the_gc_log_the_symptoms_stand_alone(tmp_path):
    dst = tmp_path / "b"
    shutil.copytree(FIX / "zk-gc-isr", dst)
    (dst / "broker-3" / "kafkaServer-gc.log").unlink()
    b = kitlib.load_bundle(dst)
    assert ids_of(b) == ["broker-fenced", "isr-shrink"]
    f = findings(b, "isr-shrink")[0]
    assert (f.numbers["broker"], f.numbers["shrinks"], f.numbers["partitions"]) == (3, 2, 2)
    assert f.numbers["longest_out_of_isr_s"] == pytest.approx(9.3)


def _write(root: Path, host: str, name: str, lines: list[str]) -> None:
    (root / host).mkdir(parents=True, exist_ok=True)
    (root / host / name).write_text("\n".join(lines) + "\n")


def test_kraft_flapping_fencing_and_healthy_negative(tmp_path):
    sick, healthy = tmp_path / "sick", tmp_path / "healthy"
    shrink = (
        "[2024-05-22 00:00:{s:02d},100] INFO [Partition orders-0 broker=1] Shrinking ISR from 1,3,2 to 1,3. "
        "Leader: (highWatermark: 10, endOffset: 12). Out of sync replicas: (brokerId: 2, endOffset: 10, "
        "lastCaughtUpTimeMs: 1716336000000). (kafka.cluster.Partition)"
    )
    back = "[2024-05-22 00:00:{s:02d},900] INFO [Partition orders-0 broker=1] ISR updated to 1,3,2  and version updated to 9 (kafka.cluster.Partition)"
    lines = []
    for s in (5, 15, 25):
        lines += [shrink.format(s=s), back.format(s=s + 3)]
    start = [
        "[2024-05-22 00:00:00,100] INFO [QuorumController id=1] Becoming the active controller at epoch 3, next "
        "write offset 10. (org.apache.kafka.controller.QuorumController)"
    ]
    _write(sick, "broker-1", "server.log", lines)
    _write(
        sick,
        "broker-1",
        "controller.log",
        start
        + [
            "[2024-05-22 00:00:40,000] INFO [QuorumController id=1] Fencing broker 2 because its session has timed out. "
            "(org.apache.kafka.controller.ReplicationControlManager)",
            "[2024-05-22 00:00:44,500] INFO [QuorumController id=1] The request from broker 2 to unfence has been granted "
            "because it has caught up with the offset of its register broker record 80. "
            "(org.apache.kafka.controller.BrokerHeartbeatManager)",
        ],
    )
    _write(
        sick,
        "broker-2",
        "server.log",
        [
            "[2024-05-22 00:00:00,200] INFO [BrokerServer id=2] Transition from "
            "SHUTDOWN to STARTING (kafka.server.BrokerServer)"
        ],
    )
    b = kitlib.load_bundle(sick)
    assert ids_of(b) == ["broker-fenced", "isr-shrink"]
    f = findings(b, "isr-shrink")[0]
    assert (f.numbers["broker"], f.numbers["shrinks"], f.numbers["flapping_partitions"]) == (2, 3, 1)
    assert f.numbers["longest_out_of_isr_s"] == pytest.approx(3.8) and "flapping" in f.summary
    fenced = findings(b, "broker-fenced")[0]
    assert fenced.numbers["broker"] == 2 and fenced.numbers["max_seconds_fenced"] == pytest.approx(4.5)

    _write(
        healthy,
        "broker-1",
        "controller.log",
        start
        + [
            "[2024-05-22 00:00:02,000] INFO [QuorumController id=1] The request from broker 2 to unfence has been granted "
            "because it has caught up with the offset of its register broker record 80. "
            "(org.apache.kafka.controller.BrokerHeartbeatManager)"
        ],
    )
    _write(
        healthy,
        "broker-1",
        "kafkaServer-gc.log",
        [
            "[2024-05-22T00:00:10.000+0000][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 300M->80M(1024M) 12.5ms",
            "[2024-05-22T00:01:10.000+0000][gc] GC(2) Pause Young (Normal) (G1 Evacuation Pause) 310M->82M(1024M) 11.0ms",
        ],
    )
    assert ids_of(kitlib.load_bundle(healthy)) == []


def test_kraft_controller_failover_and_unclean(tmp_path):
    root = tmp_path / "b"
    _write(
        root,
        "node-1",
        "controller.log",
        [
            "[2024-05-22 00:00:00,100] INFO [QuorumController id=1] Becoming the active controller at epoch 3, next write "
            "offset 10. (org.apache.kafka.controller.QuorumController)"
        ],
    )
    _write(
        root,
        "node-2",
        "controller.log",
        [
            "[2024-05-22 00:05:00,000] INFO [QuorumController id=2] In the new epoch 4, the leader is (none). "
            "(org.apache.kafka.controller.QuorumController)",
            "[2024-05-22 00:05:02,500] INFO [QuorumController id=2] Becoming the active controller at epoch 5, next write "
            "offset 900. (org.apache.kafka.controller.QuorumController)",
            "[2024-05-22 00:05:03,000] INFO [QuorumController id=2] Setting new leader for topicId 4ZQmXc2lRTq0y2w4tpTf5A, "
            "partition 0 to 3 using an unclean election (org.apache.kafka.controller.PartitionChangeBuilder)",
        ],
    )
    b = kitlib.load_bundle(root)
    assert ids_of(b) == ["controller-failover", "unclean-election"]
    fo = findings(b, "controller-failover")[0]
    assert (fo.numbers["lost"], fo.numbers["won"], fo.numbers["epoch"], fo.numbers["gap_s"]) == (1, 2, 5, 2.5)


def test_gc_pressure_and_oom_without_consequences(tmp_path):
    root = tmp_path / "b"
    _write(
        root,
        "broker-1",
        "kafkaServer-gc.log",
        ["[2024-05-22T00:00:10.000+0000][gc] GC(1) Pause Full (Allocation Failure) 1020M->1010M(1024M) 1800.0ms"],
    )
    _write(
        root,
        "broker-1",
        "server.log",
        [
            "[2024-05-22 00:00:11,000] ERROR [KafkaApi-1] Unexpected error handling request (kafka.server.KafkaApis)",
            "java.lang.OutOfMemoryError: Java heap space",
            "\tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)",
        ],
    )
    f = findings(kitlib.load_bundle(root), "gc-pauses")[0]
    assert f.severity == "critical" and f.numbers["oom_records"] == 1 and f.numbers["full_pauses"] == 1
    assert "Consequences" not in f.summary


def test_isr_shrink_from_jmx_alone(tmp_path):
    root = tmp_path / "b" / "broker-1"
    root.mkdir(parents=True)
    t0 = 1716336000000
    rows = ['"time","kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions:Value"']
    rows += [f"{t0 + i * 10_000},{2 if 10 <= i < 16 else 0}" for i in range(30)]
    (root / "jmx.csv").write_text("\n".join(rows) + "\n")
    b = kitlib.load_bundle(tmp_path / "b")
    f = findings(b, "isr-shrink")[0]
    assert f.numbers["samples_above_zero"] == 6 and f.numbers["max_under_replicated"] == 2
    rows = rows[:1] + [f"{t0 + i * 10_000},0" for i in range(30)]
    (root / "jmx.csv").write_text("\n".join(rows) + "\n")
    assert ids_of(kitlib.load_bundle(tmp_path / "b")) == []


def test_timeline_sequence_and_per_broker():
    b = kitlib.load_bundle(FIX / "zk-gc-isr")
    t = analysis.timeline(b)
    assert t["ts"].is_monotonic_increasing
    assert {"GC pause", "ISR", "fencing / session", "controller", "leaders"} <= set(t["lane"])
    seq = analysis.outage_sequence(b)
    assert seq["kind"].tolist()[:3] == ["gc_pause", "zk_session_timeout", "zk_session_expired"]
    pb = analysis.per_broker(b).set_index("node")
    assert pb.loc[3, "left_isr"] == 2 and pb.loc[3, "longest_gc_ms"] == pytest.approx(24487.912)


def test_isr_shrink_from_topics_describe_alone(tmp_path):
    """`kafka-topics --describe --under-replicated-partitions` output (parsed by the topics format)
    names the brokers missing from each ISR, leaving out replicas a reassignment is still adding."""
    (tmp_path / "ops").mkdir()
    shutil.copy(
        Path(__file__).parent.parent / "fixtures" / "cli" / "constructed-2.8-topics-under-replicated.txt",
        tmp_path / "ops",
    )
    f = findings(kitlib.load_bundle(tmp_path), "isr-shrink")[0]
    assert f.numbers == {
        "under_replicated_partitions": 3,
        "offline_partitions": 1,
        "broker_3_missing": 2,
        "broker_1_missing": 1,
    }
    assert [e["line"] for e in f.evidence] == [2, 3, 4]


# --- one node's stall, one finding ---

SAMPLES = Path(__file__).parents[2] / "sample_data"


def _elections(root: Path) -> None:
    """Append (synthetic, in Kafka 3.9's wording) the elections a combined voter frozen with SIGSTOP
    sets off when it resumes, as the issue's bundle had them: after the first resume node 2 takes
    the controller role from node 3, after the second it is elected again (it kept it), after the
    third node 1 takes it."""
    lines = {
        "broker-3": [
            "[2026-11-23 11:59:55,400] INFO [QuorumController id=3] In the new epoch 4, the leader is (none). "
            "(org.apache.kafka.controller.QuorumController)"
        ],
        "broker-2": [
            "[2026-11-23 11:59:56,300] INFO [QuorumController id=2] Becoming the active controller at epoch 4, next "
            "write offset 400. (org.apache.kafka.controller.QuorumController)",
            "[2026-11-23 12:00:06,500] INFO [QuorumController id=2] In the new epoch 5, the leader is (none). "
            "(org.apache.kafka.controller.QuorumController)",
            "[2026-11-23 12:00:07,100] INFO [QuorumController id=2] Becoming the active controller at epoch 5, next "
            "write offset 700. (org.apache.kafka.controller.QuorumController)",
        ],
        "broker-1": [
            "[2026-11-23 12:00:16,900] INFO [QuorumController id=1] In the new epoch 6, the leader is (none). "
            "(org.apache.kafka.controller.QuorumController)",
            "[2026-11-23 12:00:17,600] INFO [QuorumController id=1] Becoming the active controller at epoch 6, next "
            "write offset 900. (org.apache.kafka.controller.QuorumController)",
        ],
    }
    for host, add in lines.items():
        with open(root / host / "controller.log", "a") as f:
            f.write("\n".join(add) + "\n")


@pytest.mark.slow
def test_a_frozen_broker_is_one_finding_with_its_consequences(tmp_path):
    """Node 2 of the isr-flapping lab bundle was frozen four times (its JmxTool got no answer for
    5-15 s each time), fenced in the last; with the elections its resumes set off added, the
    stall is one broker-fenced finding listing the 16 ISR departures and the 3 elections, with no
    separate isr-shrink or controller-failover finding, and a re-election is called one."""
    root = tmp_path / "b"
    shutil.copytree(SAMPLES / "isr-flapping", root)
    _elections(root)
    b = kitlib.load_bundle(root)
    assert ids_of(b) == ["broker-fenced"]
    f = findings(b, "broker-fenced")[0]
    n = f.numbers
    assert (n["broker"], n["stalls"], n["fenced"], n["isr_shrinks"], n["isr_partitions"], n["elections"]) == (
        2,
        4,
        1,
        16,
        4,
        3,
    )
    assert "moved from node 3 to node 2 at epoch 4" in f.summary
    assert "leader re-elected (node 2 kept leadership) at epoch 5" in f.summary
    assert "moved from node 2 to node 2" not in f.summary
    cited = {(e["file"], e["line"]) for e in f.evidence}
    assert ("broker-3/controller.log", 1) in cited  # the fencing
    assert ("broker-2/jmx-broker.csv", 25) in cited  # the first sample after the 14.7 s gap


@pytest.mark.slow
def test_the_lab_stall_absorbs_the_isr_shrinks_and_all_came_back():
    """The sample as captured: the last departure (orders-3 from broker 3's ISR) has no rejoin line
    before the logs end, but broker 3's UnderReplicatedPartitions is back at 0 a few seconds later:
    every departure is back, and the one finding says so."""
    b = kitlib.load_bundle(SAMPLES / "isr-flapping")
    assert ids_of(b) == ["broker-fenced"]
    f = findings(b, "broker-fenced")[0]
    assert (f.numbers["isr_shrinks"], f.numbers["never_rejoined"]) == (16, 0)
    assert "all back" in f.summary and "never" not in f.summary


def test_a_re_election_is_not_called_a_move(tmp_path):
    start = (
        "[2024-05-22 00:00:00,100] INFO [QuorumController id=1] Becoming the active controller at epoch 3, next "
        "write offset 10. (org.apache.kafka.controller.QuorumController)"
    )
    again = (
        "[2024-05-22 00:05:00,100] INFO [QuorumController id=1] In the new epoch 4, the leader is (none). "
        "(org.apache.kafka.controller.QuorumController)",
        "[2024-05-22 00:05:01,600] INFO [QuorumController id=1] Becoming the active controller at epoch 4, next "
        "write offset 90. (org.apache.kafka.controller.QuorumController)",
    )
    _write(tmp_path, "broker-1", "controller.log", [start, *again])
    f = findings(kitlib.load_bundle(tmp_path), "controller-failover")[0]
    assert f.summary.startswith("Controller leader re-elected (node 1 kept leadership) (epoch 4)")
    assert (f.numbers["lost"], f.numbers["won"]) == (1, 1)


def test_a_departure_the_logs_do_not_see_back_but_jmx_does(tmp_path):
    """The log ends before the rejoin; broker 1's UnderReplicatedPartitions (it leads the
    partition) falls back to 0 afterwards: the departure is not reported as never back. Without
    the JMX file it is, when the log goes on past the departure without the rejoin; a log that ends
    right after the departure shows nothing either way."""
    shrink = (
        "[2024-05-22 00:00:05,100] INFO [Partition orders-0 broker=1] Shrinking ISR from 1,3,2 to 1,3. "
        "Leader: (highWatermark: 10, endOffset: 12). Out of sync replicas: (brokerId: 2, endOffset: 10, "
        "lastCaughtUpTimeMs: 1716336000000). (kafka.cluster.Partition)"
    )
    later = (
        "[2024-05-22 00:01:05,100] INFO [ProducerStateManager partition=orders-0] Wrote producer snapshot at "
        "offset 12 with 0 producer ids in 1 ms. (kafka.log.ProducerStateManager)"
    )
    _write(tmp_path, "broker-1", "server.log", [shrink])
    f = findings(kitlib.load_bundle(tmp_path), "isr-shrink")[0]
    assert (f.numbers["never_rejoined"], str(f.severity)) == (0, "medium")
    _write(tmp_path, "broker-1", "server.log", [shrink, later])
    name = '"kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions:Value"'
    rows = [f'"time",{name}'] + [f"{1716336000000 + i * 1000},{1 if 5 <= i < 12 else 0}" for i in range(20)]
    _write(tmp_path, "broker-1", "jmx-broker.csv", rows)
    f = findings(kitlib.load_bundle(tmp_path), "isr-shrink")[0]
    assert f.numbers["never_rejoined"] == 0 and "not seen back" not in f.summary
    (tmp_path / "broker-1" / "jmx-broker.csv").unlink()
    f = findings(kitlib.load_bundle(tmp_path), "isr-shrink")[0]
    assert f.numbers["never_rejoined"] == 1 and "1 departure(s) not seen back in any source" in f.summary


# --- ISR episodes ---


def _shrink(t: str, p: int, before: str, after: str, out: int) -> str:
    return (
        f"[2026-11-23 12:00:{t}] INFO [Partition orders-{p} broker=1] Shrinking ISR from {before} to {after}. "
        f"Leader: (highWatermark: 10, endOffset: 20). Out of sync replicas: (brokerId: {out}, endOffset: 10, "
        "lastCaughtUpTimeMs: 1795435189933). (kafka.cluster.Partition)"
    )


def _updated(t: str, p: int, isr: str, version: int) -> str:
    return (
        f"[2026-11-23 12:00:{t}] INFO [Partition orders-{p} broker=1] ISR updated to {isr}  and version "
        f"updated to {version} (kafka.cluster.Partition)"
    )


LOG = [
    _shrink("01,000", 0, "1,3,2", "1,3", 2),
    _updated("03,500", 0, "1,3,2", 2),  # broker 2 back on orders-0 after 2.5 s
    _shrink("05,000", 0, "1,3,2", "1,3", 2),
    _updated("06,000", 1, "1,3,2", 7),  # a rejoin on another partition: not orders-0's
    _shrink("09,000", 0, "1,3,2", "1,3", 2),  # no rejoin logged between: back by this shrink
    _shrink("10,000", 1, "1,2,3", "1,2", 3),  # broker 3 leaves orders-1 and is never seen back
    _updated("12,000", 0, "1,3,2", 4),  # broker 2 back on orders-0 after the third shrink
]


def test_episodes_pair_each_departure_with_its_own_rejoin(tmp_path: Path):
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "server.log").write_text("\n".join(LOG) + "\n")
    ep = analysis.isr_episodes(kitlib.load_bundle(tmp_path))
    ep = ep.sort_values(["left", "node"]).reset_index(drop=True)
    t = lambda s: pd.Timestamp(f"2026-11-23 12:00:{s}", tz="UTC")
    assert ep["node"].tolist() == [2, 2, 2, 3]
    assert ep["partition"].tolist() == [0, 0, 0, 1]
    assert ep["left"].tolist() == [t("01"), t("05"), t("09"), t("10")]
    assert ep["rejoined"].tolist()[0] == t("03.5")
    assert pd.isna(ep["rejoined"][1])  # the next rejoin of orders-0 comes after the next shrink
    assert ep["back_by"].tolist()[:3] == [t("03.5"), t("09"), t("12")]
    assert ep["out_s"].tolist()[0] == 2.5 and ep["out_s"].tolist()[2] == 3.0
    assert pd.isna(ep["back_by"][3]) and pd.isna(ep["rejoined"][3])
    assert ep["line"].tolist() == [1, 3, 5, 6]
    assert (ep["file"] == "broker-1/server.log").all()


# --- older brokers' wording (lines built from the catalogue's templates: `kitlib templates --grep ...`) ---


def _log(ts: str, level: str, message: str, logger: str) -> str:
    return f"[{ts}] {level} {message} ({logger})"


def _rows(df: pd.DataFrame, cols: list[str]) -> list[list]:
    """The rows of ``df`` for ``cols``, missing values as None."""
    return [[None if pd.isna(v) else v for v in row] for row in df[cols].astype(object).values.tolist()]


def test_zookeeper_0_10_wording_tables_and_findings(tmp_path):
    """A 0.10 cluster: "Partition [t,N] on broker B: Shrinking ISR for partition [t,N] from A to B"
    (0.8.0-0.10.2.2), the expand in its 0.10.2 form "for partition t-N" and its 0.8-0.10.1 form
    "[t,N]", "N successfully elected as leader" (ZookeeperLeaderElector, 0.8.0-0.10.2.2), the
    broker-change handler's "Newly added brokers: , deleted brokers: 2, all live brokers: ..." (0.8.0-0.10.1.1
    under "[BrokerChangeListener on Controller 1]: ") and "[Controller 1]: Broker failure callback for 2"
    (0.8.0-trunk): the same rows and findings as the 3.x wording, naming broker 2."""
    part = "kafka.cluster.Partition"
    _write(
        tmp_path,
        "broker-1",
        "server.log",
        [
            _log(
                "2019-04-10 06:22:02,491",
                "INFO",
                "Partition [orders,24] on broker 1: Shrinking ISR for partition [orders,24] from 1,2,0 to 1,0",
                part,
            ),
            _log(
                "2019-04-10 06:22:02,520",
                "INFO",
                "Partition [pay.ments-eu,3] on broker 1: Shrinking ISR for partition [pay.ments-eu,3] from 2,1 to 1",
                part,
            ),
            _log(
                "2019-04-10 06:22:09,100",
                "INFO",
                "Partition [orders,24] on broker 1: Expanding ISR for partition orders-24 from 1,0 to 1,0,2",
                part,
            ),
            _log(
                "2019-04-10 06:22:09,300",
                "INFO",
                "Partition [pay.ments-eu,3] on broker 1: Expanding ISR for partition [pay.ments-eu,3] from 1 to 1,2",
                part,
            ),
        ],
    )
    _write(
        tmp_path,
        "broker-1",
        "controller.log",
        [
            _log(
                "2019-04-10 06:00:00,100",
                "INFO",
                "1 successfully elected as leader",
                "kafka.server.ZookeeperLeaderElector",
            ),
            _log(
                "2019-04-10 06:22:01,900",
                "INFO",
                "[BrokerChangeListener on Controller 1]: Newly added brokers: , "
                "deleted brokers: 2, all live brokers: 0,1",
                "kafka.controller.ReplicaStateMachine$BrokerChangeListener",
            ),
            _log(
                "2019-04-10 06:22:01,903",
                "INFO",
                "[Controller 1]: Broker failure callback for 2",
                "kafka.controller.KafkaController",
            ),
        ],
    )
    b = kitlib.load_bundle(tmp_path)
    cols = ["kind", "topic", "partition", "reporter", "isr_before", "isr_after", "removed", "added"]
    assert _rows(b.table("partition_changes"), cols) == [
        ["isr_shrink", "orders", 24, 1, "1,2,0", "1,0", "2", None],
        ["isr_shrink", "pay.ments-eu", 3, 1, "2,1", "1", "2", None],
        ["isr_expand", "orders", 24, 1, "1,0", "1,0,2", None, "2"],
        ["isr_expand", "pay.ments-eu", 3, 1, "1", "1,2", None, "2"],
    ]
    ne = b.table("node_events")
    # the handler's line and the callback are one failure
    assert _rows(ne, ["kind", "node", "reporter", "line"]) == [
        ["controller_active", 1, None, 1],
        ["broker_failed", 2, 1, 3],
    ]
    assert ids_of(b) == ["broker-fenced", "isr-shrink"]
    f = findings(b, "isr-shrink")[0]
    assert (f.numbers["broker"], f.numbers["shrinks"], f.numbers["partitions"]) == (2, 2, 2)
    fenced = findings(b, "broker-fenced")[0]
    assert fenced.numbers["broker"] == 2 and fenced.numbers["broker_failed"] == 1


def test_zookeeper_controller_wording_of_0_11_to_2_x(tmp_path):
    """KafkaController under "[Controller 3]: " (0.8.0-0.11.0) and "[Controller id=3] " (1.0.0-trunk):
    "N successfully elected as the controller" (0.11.0.0-2.0.1), "Broker N resigned as the controller"
    (0.9.0.0-0.11.0.3), "Controller resigning, broker id N" (0.9.0.0-0.11.0.3, debug), "Newly added
    brokers: ..., deleted brokers: ..., all live brokers: ..." (0.11.0.0-2.1.1) and its 2.2.0-trunk
    form with "bounced brokers"; a handler's line alone (an excerpt) is still a failure."""
    ctl = "kafka.controller.KafkaController"
    _write(
        tmp_path,
        "broker-3",
        "controller.log",
        [
            _log("2018-02-01 10:00:00,100", "INFO", "[Controller 3]: 3 successfully elected as the controller", ctl),
            _log(
                "2018-02-01 10:05:00,200",
                "INFO",
                "[Controller 3]: Newly added brokers: , deleted brokers: 1, all live brokers: 2,3",
                ctl,
            ),
            _log("2018-02-01 10:05:00,201", "INFO", "[Controller 3]: Broker failure callback for 1", ctl),
            _log("2018-02-01 10:09:00,000", "DEBUG", "[Controller 3]: Controller resigning, broker id 3", ctl),
            _log("2018-02-01 10:09:00,010", "INFO", "[Controller 3]: Broker 3 resigned as the controller", ctl),
        ],
    )
    _write(
        tmp_path,
        "broker-2",
        "controller.log",
        [
            _log("2018-02-01 10:09:01,000", "INFO", "[Controller id=2] 2 successfully elected as the controller", ctl),
            _log(
                "2018-02-01 10:12:00,000",
                "INFO",
                "[Controller id=2] Newly added brokers: , deleted brokers: 1,4, "
                "bounced brokers: , all live brokers: 2,3",
                ctl,
            ),
        ],
    )
    ne = kitlib.load_bundle(tmp_path).table("node_events")
    assert _rows(ne, ["kind", "node", "reporter", "host"]) == [
        ["controller_active", 3, 3, "broker-3"],
        ["broker_failed", 1, 3, "broker-3"],
        ["controller_renounce", 3, 3, "broker-3"],
        ["controller_renounce", 3, 3, "broker-3"],
        ["controller_active", 2, 2, "broker-2"],
        ["broker_failed", 1, 2, "broker-2"],
    ]


def test_kraft_broker_records_the_new_controller(tmp_path):
    """ "Recorded new controller, from now on will use broker <node>" (2.7.0-3.3.1) and "... will use
    node <node>" (3.3.2-3.7.0), the node written as host:port (id: N rack: r), under the request
    thread's "[BrokerToControllerChannelManager broker=1 name=forwarding]: " (before 3.7) or
    "[broker-1-to-controller-forwarding-channel-manager]: " (3.7): the controller the broker now
    uses, as a controller_epoch row without an epoch; not an election."""
    thread = "kafka.server.BrokerToControllerRequestThread"
    _write(
        tmp_path,
        "broker-1",
        "server.log",
        [
            _log(
                "2023-03-01 08:00:00,100",
                "INFO",
                "[BrokerToControllerChannelManager broker=1 name=forwarding]: "
                "Recorded new controller, from now on will use broker kafka-3:9093 (id: 3 rack: null)",
                thread,
            ),
            _log(
                "2024-03-01 08:00:00,100",
                "INFO",
                "[broker-1-to-controller-heartbeat-channel-manager]: Recorded "
                "new controller, from now on will use node kafka-2:9093 (id: 2 rack: null)",
                "kafka.server.NodeToControllerRequestThread",
            ),
        ],
    )
    b = kitlib.load_bundle(tmp_path)
    assert _rows(b.table("node_events"), ["kind", "node", "reporter", "epoch"]) == [
        ["controller_epoch", 3, 1, None],
        ["controller_epoch", 2, 1, None],
    ]
    assert ids_of(b) == []
