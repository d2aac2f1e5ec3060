"""Tier-state lines (seed 004 wording and variations), restarts, and the two findings on the
synthetic seed-004 bundle and on healthy input; KIP-405 remote-log events and the remote-copy-errors
finding. The I/O traces the findings read are tested in tests/test_iotrace.py."""

import pytest
from samples import sample

import kitlib
from kitlib.formats.logs import parse_bytes
from kitlib.investigations.tiered_storage import analysis as tiered
from kitlib.investigations.tiered_storage.tierstate import build, parse_line

SEED = b"""[2024-05-22 00:32:03,023] INFO Migrating tier partition state file format for flE-6I70RCyT2gK2Qc3YBw:retriever-mutation-10 (kafka.tier.state.FileTierPartitionState)
[2024-05-22 00:32:29,962] INFO tier partition state file format migration complete for topicIdPartition flE-6I70RCyT2gK2Qc3YBw:retriever-mutation-10, state file size changed from 508509470 to 591531390 (kafka.tier.state.FileTierPartitionState)
[2024-05-19 15:04:47,458] INFO 1292021 segments removed by cleanup from tier partition state file for topicIdPartition 7XWCdjQqTIyy9OgycPxg2A:retriever-mutation-0, state file size changed from 147891612 to 601218 (kafka.tier.state.FileTierPartitionState)                                   
"""


def test_seed_lines_pair_migrations_and_compute_change():
    ev, un = parse_bytes(SEED)
    t = build(ev)
    assert t["kind"].tolist() == ["migration_start", "migration_complete", "cleanup"]
    done = t.iloc[1]
    assert (done["topic"], done["partition"], done["size_before"], done["size_after"]) == (
        "retriever-mutation",
        10,
        508509470,
        591531390,
    )
    assert done["duration_s"] == pytest.approx(26.939)
    c = t.iloc[2]
    assert c["segments_removed"] == 1292021 and c["pct_change"] == pytest.approx(-99.593, abs=1e-3)
    assert c["topic_id"] == "7XWCdjQqTIyy9OgycPxg2A"


def test_variations_are_tolerated():
    assert (
        parse_line(
            "TIER PARTITION STATE FILE FORMAT MIGRATION COMPLETE for topicIdPartition "
            "flE-6I70RCyT2gK2Qc3YBw:orders-3 state file size changed from 10 to 20"
        )["size_after"]
        == 20
    )
    assert (
        parse_line(
            "1 segment removed by cleanup from tier partition state file for topicIdPartition "
            "flE-6I70RCyT2gK2Qc3YBw-orders-3, state file size changed from 10 to 5"
        )["partition"]
        == 3
    )
    assert parse_line("Opened tier partition state for orders-3 in status ONLINE") is None


@pytest.mark.slow
def test_findings_on_the_synthetic_seed_004_bundle():
    b = sample("tiered-storage")
    found = {f.id: f for f in kitlib.triage(b).findings}
    assert set(found) == {"tierstate-metadata-growth", "broker-io-imbalance"}
    io = found["broker-io-imbalance"]
    assert io.numbers["host"] == "broker-4" and 6 <= io.numbers["ratio"] <= 10
    assert 45000 <= io.numbers["read_iops"] <= 60000 and io.numbers["share_tierstate_pct"] > 80
    assert all(".tierstate" in e["text"] for e in io.evidence[:5])
    ts = found["tierstate-metadata-growth"]
    assert ts.numbers["largest_state_file_bytes"] > 600_000_000 and ts.numbers["cleanup_median_pct_change"] < -99
    assert "confluent.tier.partition.state.cleanup.enable=true" in ts.recommendation and "delay" in ts.recommendation
    sizes = tiered.state_sizes(b.tierstate_events)
    p40 = sizes[sizes["partition"] == 40].iloc[0]
    assert p40["segments_removed"] == 6089448 and p40["size_change"] == -694197072
    assert p40["pct_change"] == pytest.approx(-99.394814, abs=1e-5)
    r = b.restarts.dropna(subset=["duration_s"])
    assert r["duration_s"].max() > 20 * 60 and r["duration_s"].min() < 60


def test_silent_on_balanced_brokers_and_small_state(tmp_path):
    for i in range(1, 5):
        d = tmp_path / "b" / f"broker-{i}"
        d.mkdir(parents=True)
        (d / "trace.txt").write_text(
            "# interval=60\n"
            + "".join(
                f"--- 2024-06-03 14:0{m}:00\nR {20000 + 500 * i} /var/lib/kafka/data/orders-{i}/00000000000000000000.log\n"
                for m in range(5)
            )
        )
        (d / "server.log").write_text(
            "[2024-05-22 00:32:03,023] INFO 12 segments removed by cleanup from tier partition state file for "
            "topicIdPartition flE-6I70RCyT2gK2Qc3YBw:orders-1, state file size changed from 60000 to 58000 "
            "(kafka.tier.state.FileTierPartitionState)\n"
        )
    b = kitlib.load_bundle(tmp_path / "b")
    assert tiered.detect_io_imbalance(b) == [] and tiered.detect_tierstate_growth(b) == []


KIP405 = b"""[2025-12-04 12:08:40,101] INFO [RemoteLogManager=0 partition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-0] Copying 00000000000001857762.log to remote storage. (kafka.log.remote.RemoteLogManager$RLMCopyTask)
[2025-12-04 12:08:40,900] INFO [RemoteLogManager=0 partition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-0] Copied 00000000000001857762.log to remote storage with segment-id: RemoteLogSegmentId{topicIdPartition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-0, id=qPXBijDMQ46h0ALQU_itqw} (kafka.log.remote.RemoteLogManager$RLMCopyTask)
[2025-12-04 13:00:00,000] ERROR [RemoteLogManager=0 partition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-1] Error occurred while copying log segments of partition: zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-1 (kafka.log.remote.RemoteLogManager$RLMCopyTask)
org.apache.kafka.server.log.remote.storage.RemoteStorageException: bucket unreachable
[2025-12-04 14:00:00,000] INFO [RemoteLogManager=0 partition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-0] About to delete remote log segment RemoteLogSegmentId{topicIdPartition=zjCAoo05TfOtzEaZ4BnsAw:tiered-storage-test-0, id=qPXBijDMQ46h0ALQU_itqw} due to retention time 604800000ms breach based on the largest record timestamp in the segment (kafka.log.remote.RemoteLogManager$RLMExpirationTask)
"""


def test_kip405_remote_log_events(tmp_path):
    d = tmp_path / "b" / "broker-0"
    d.mkdir(parents=True)
    (d / "server.log").write_bytes(KIP405)
    r = kitlib.load_bundle(tmp_path / "b").remote_log_events
    assert r["kind"].tolist() == ["copying", "copied", "copy_error", "delete_retention_time"]
    assert r["segment"].tolist()[:2] == ["00000000000001857762.log"] * 2
    assert r.loc[1, "segment_id"] == "qPXBijDMQ46h0ALQU_itqw" and r.loc[2, "partition"] == 1
    assert set(r["topic"]) == {"tiered-storage-test"} and set(r["broker"]) == {0}
    assert r["line"].tolist() == [1, 2, 3, 5]


def _kip405_outage(copied_after: bool) -> bytes:
    """A KIP-405 copy outage in the shape the 3.9 lab broker logs it: ERROR with the stack trace and
    its root cause, retried every second, then (optionally) copies succeeding again."""
    head = "[RemoteLogManager=2 partition=Q1w2E3r4T5y6U7i8O9p0aQ:clickstream-3]"
    out = [
        f"[2026-03-02 10:00:0{i},100] INFO {head} Copied 0000000000000000{i}000.log to remote storage with segment-id: "
        f"RemoteLogSegmentId{{topicIdPartition=Q1w2E3r4T5y6U7i8O9p0aQ:clickstream-3, id=seg{i}AAAAAAAAAAAAAAAAAA}} "
        "(kafka.log.remote.RemoteLogManager$RLMCopyTask)"
        for i in range(3)
    ]
    for i in range(40):
        out += [
            f"[2026-03-02 10:01:{i:02d},500] ERROR {head} Error occurred while copying log segments of partition: "
            "Q1w2E3r4T5y6U7i8O9p0aQ:clickstream-3 (kafka.log.remote.RemoteLogManager$RLMCopyTask)",
            "org.apache.kafka.server.log.remote.storage.RemoteStorageException: Failed to upload segment",
            "\tat kafka.log.remote.RemoteLogManager$RLMCopyTask.copyLogSegment(RemoteLogManager.java:948)",
            "Caused by: software.amazon.awssdk.services.s3.model.S3Exception: Access Denied (Service: S3, Status Code: 403)",
            "\t... 11 more",
        ]
    if copied_after:
        out.append(
            f"[2026-03-02 10:02:30,000] INFO {head} Copied 00000000000000003000.log to remote storage with "
            "segment-id: RemoteLogSegmentId{topicIdPartition=Q1w2E3r4T5y6U7i8O9p0aQ:clickstream-3, "
            "id=seg3AAAAAAAAAAAAAAAAAA} (kafka.log.remote.RemoteLogManager$RLMCopyTask)"
        )
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("recovered", [False, True])
def test_remote_copy_errors_finding(tmp_path, recovered):
    d = tmp_path / "b" / "broker-2"
    d.mkdir(parents=True)
    (d / "server.log").write_bytes(_kip405_outage(recovered))
    b = kitlib.load_bundle(tmp_path / "b")
    r = b.remote_log_events
    assert (r["kind"] == "copy_error").sum() == 40
    assert set(r.loc[r["kind"] == "copy_error", "exception"]) == {
        "software.amazon.awssdk.services.s3.model.S3Exception: Access Denied (Service: S3, Status Code: 403)"
    }
    [f] = tiered.detect_remote_copy_errors(b)
    assert f.id == "remote-copy-errors"
    assert f.numbers["copy_errors"] == 40 and f.numbers["failing_s"] == 39.0 and f.numbers["partitions"] == 1
    assert f.numbers["partitions_still_failing"] == (0 if recovered else 1)
    assert f.severity == ("medium" if recovered else "high")
    assert "S3Exception: Access Denied (Service: S3, Status Code: 403)" in f.summary and "clickstream-3" in f.summary
    assert "remote.log.copy.disable=true" in f.recommendation
    lines = [e["line"] for e in f.evidence]
    assert lines[0] == 4 and all(isinstance(n, int) for n in lines)
    per = tiered.remote_copies(r)
    assert per.loc[0, "copied"] == (4 if recovered else 3) and per.loc[0, "copied_after_errors"] == (
        1 if recovered else 0
    )


def test_remote_copies_without_errors_is_silent(tmp_path):
    d = tmp_path / "b" / "broker-0"
    d.mkdir(parents=True)
    (d / "server.log").write_bytes(KIP405.replace(b"ERROR", b"INFO").split(b"[2025-12-04 13:00")[0])
    b = kitlib.load_bundle(tmp_path / "b")
    assert len(b.remote_log_events) == 2 and tiered.detect_remote_copy_errors(b) == []
    assert tiered.remote_copies(b.remote_log_events).loc[0, "median_copy_s"] == 0.799
