"""Connect offset commits: the commits table (2.x and 3.x/4.x wording), the drain model with
seed 001's own figures, the offset-commit-timeouts detector, the charts' data and the sample bundle;
the notebook's drain-model section (the task that failed most, its model and the what-if table)."""

from pathlib import Path

import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib import tables
from kitlib.display import MAX_CHART_ROWS
from kitlib.investigations.connect_offsets import arithmetic, charts, detector, drain, views
from kitlib.investigations.connect_offsets.commits import build_commits, classify

FIX = Path(__file__).parent.parent / "fixtures" / "connect"
ROOT = Path(__file__).resolve().parents[2]


def bundle_of(tmp_path, *names, host="worker-1"):
    d = tmp_path / "bundle" / host
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "connect.log", "wb") as out:
        for n in names:
            out.write((FIX / n).read_bytes())
    return kitlib.load_bundle(tmp_path / "bundle")


# ----------------------------------------------------------------------------- model (seed 001)
def test_seed001_records_per_request_and_x20():
    rec = arithmetic.record_bytes(16384, 23)  # ~712-byte records fill a 16 KiB batch with 23
    assert 700 < rec < 725
    assert arithmetic.records_per_request(16384, rec) == pytest.approx(23, abs=0.5)
    after = arithmetic.records_per_request(327680, rec)  # batch.size x20
    assert 455 <= after <= 500
    assert after / 23 == pytest.approx(20, rel=0.02)


def test_seed001_backlog_cannot_drain_in_5s_but_can_after_change():
    rpr = 23
    # 48437 outstanding, 31120 still outstanding after the 5 s timeout: 17317 acked in 5 s
    rtt = arithmetic.round_trip_s(48437, 31120, 5000, rpr, in_flight=1)
    assert rtt * 1000 == pytest.approx(6.64, abs=0.05)  # the round trip the model carries forward
    t = arithmetic.what_if(48437, 16384, rpr, rtt, timeout_ms=5000, in_flight=1, new_batch_size=327680)
    now, prop = t.iloc[0], t.iloc[1]
    assert now["requests_to_drain"] > 2000  # "more than 2,000 requests"
    assert now["drain_s"] == pytest.approx(14.0, abs=0.2) and not now["fits_timeout"]
    assert prop["records_per_request"] == pytest.approx(460, abs=5)
    assert prop["drain_s"] < 1.0 and prop["fits_timeout"]
    assert list(t["setting"]) == ["current", "proposed"]


def test_model_in_flight_partitions_linger_and_caps():
    assert arithmetic.records_per_request(16384, 712, partitions=4) == pytest.approx(92, abs=0.5)
    # batch.size above max.request.size is capped by it
    assert arithmetic.records_per_request(4 << 20, 1024) == pytest.approx(1024)
    base = arithmetic.drain_time_s(10000, 23, 0.005)
    assert arithmetic.drain_time_s(10000, 23, 0.005, in_flight=5) == pytest.approx(base / 5)
    assert arithmetic.drain_time_s(10000, 23, 0.005, linger_ms=20) == pytest.approx(base + 0.02)
    assert arithmetic.drain_time_s(0, 23, 0.005) == 0.0
    # default proposal is 20 x batch.size
    assert arithmetic.what_if(1000, 16384, 23, 0.005)["batch.size"].tolist() == [16384, 327680]


# ----------------------------------------------------------------------------- commits table
def test_commits_2x_seed_lines(tmp_path):
    b = bundle_of(tmp_path, "connect-2x-seed001.log")
    assert b.summary.unparsed_lines == 0
    c = b.commits
    assert len(c) == 4
    assert c["outcome"].tolist() == ["success", "timeout", "timeout", "timeout"]
    ok = c.iloc[0]
    assert (ok.connector, ok.task, ok.kind, ok.outstanding, ok.duration_ms) == (
        "my-connector",
        0,
        "source",
        1210,
        350.0,
    )
    seed = c.iloc[1]
    assert (seed.outstanding, seed.remaining, seed.nlines, seed.line) == (48437, 31120, 4, 4)
    assert seed.elapsed_ms == pytest.approx(5001)
    assert "31120" in seed.message and seed.file == "worker-1/connect.log"
    assert list(c.columns) == tables.SCHEMAS["commits"].names


def test_commits_3x_context_pending_and_sink(tmp_path):
    b = bundle_of(tmp_path, "connect-3x.log")
    c = b.commits
    src = c[c.kind == "source"].reset_index(drop=True)
    assert src[["connector", "task"]].drop_duplicates().values.tolist() == [["orders-src", 0]]
    assert src["outcome"].tolist() == ["success", "timeout"]
    assert src.loc[0, "acknowledged"] == 2 and src.loc[0, "outstanding"] == 0 and src.loc[0, "duration_ms"] == 8
    assert src.loc[0, "nlines"] == 4  # committer's DEBUG start + 3 WorkerSourceTask lines
    assert (src.loc[1, "acknowledged"], src.loc[1, "outstanding"], src.loc[1, "partitions"]) == (1830, 9120, 1)
    assert "Timed out waiting to flush offsets" in src.loc[1, "message"]
    sink = c[c.kind == "sink"].reset_index(drop=True)
    assert sink["outcome"].tolist() == ["success", "failed"]
    assert sink.loc[0, "duration_ms"] == 21 and sink.loc[0, "task"] == 3
    assert "\n" not in sink.loc[1, "message"] and "threw an unexpected exception" in sink.loc[1, "message"]


def test_commits_28_style_without_start_lines():
    # 2.8+: 'Committing offsets' and 'Finished ...' are DEBUG; only 'flushing N' remains at INFO
    lines = (FIX / "connect-2x-idle.log").read_text().splitlines()
    from kitlib.formats.logs import parse_bytes

    ev, _ = parse_bytes(("\n".join(lines) + "\n").encode())
    ev["host"], ev["file"] = "w", "w/connect.log"
    c = build_commits(ev)
    assert c["outstanding"].tolist() == [0, 0, 3]
    assert c["outcome"].tolist() == ["success", "success", "unknown"]


def test_classify_ignores_malformed_and_unrelated():
    assert classify("WorkerSourceTask{id=x-0} flushing many outstanding messages for offset commit") is None
    assert classify("Committing offsets") is None  # no task: cannot attribute
    assert classify("WorkerSourceTask{id=x-0} Source task finished initialization and start") is None
    # connector names with dashes: split on the last '-'
    assert classify("WorkerSourceTask{id=my-db-conn-12} Committing offsets")[:2] == ("my-db-conn", 12)


def test_commits_empty_bundle_has_schema(tmp_path):
    (tmp_path / "b" / "broker-1").mkdir(parents=True)
    (tmp_path / "b" / "broker-1" / "server.log").write_text(
        "[2024-05-22 00:32:03,023] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
    )
    b = kitlib.load_bundle(tmp_path / "b")
    assert b.commits.empty and list(b.commits.columns) == tables.SCHEMAS["commits"].names
    assert detector.detect_offset_commit_timeouts(b) == []


# ----------------------------------------------------------------------------- detector
def test_detector_fires_on_seed_with_numbers_and_evidence(tmp_path):
    b = bundle_of(tmp_path, "producer-2x.log", "connect-2x-seed001.log")
    fs = kitlib.triage(b, investigations=["connect_offsets"]).findings
    assert len(fs) == 1
    f = fs[0]
    assert f.id == "offset-commit-timeouts" and f.severity == "high"
    n = f.numbers
    assert n["failed_commits"] == 3 and n["attempts"] == 4
    assert n["batch.size"] == 16384 and n["max.in.flight"] == 1 and n["offset.flush.timeout.ms"] == 5000
    assert n["outstanding_at_flush_median"] == 48437
    assert n["drain_s_now"] > 5 and n["drain_s_after"] < 5
    assert "producer.override.batch.size=327680" in f.recommendation
    assert "producer.override.linger.ms=" in f.recommendation
    assert "connector.client.config.override.policy=All" in f.recommendation
    cited = {(e["file"], e["line"]) for e in f.evidence}
    assert ("worker-1/connect.log", 3) in cited  # batch.size = 16384 line of the dump
    assert any("31120" in e["text"] for e in f.evidence)
    assert f.notebook == "connect_offsets.ipynb" and f.investigation == "connect_offsets"


def test_detector_uses_records_per_request_metric_when_present(tmp_path):
    b = bundle_of(tmp_path, "producer-2x.log", "connect-2x-seed001.log")
    ts = b.commits["ts"]
    m = pd.DataFrame(
        {
            "ts": ts,
            "attribute": "records-per-request-avg",
            "value": 23.0,
            "client_id": "connector-producer-my-connector-0",
            "type": "producer-metrics",
        }
    )
    b2 = kitlib.Bundle(b.root, {**b.tables, "metrics": m})
    f = detector.detect_offset_commit_timeouts(b2)[0]
    assert f.numbers["records_per_request"] == 23
    assert f.numbers["round_trip_ms"] == pytest.approx(6.6, abs=0.2)
    assert f.numbers["records_per_request_after"] == pytest.approx(460, abs=5)
    assert f.numbers["requests_to_drain"] > 2000


def test_detector_silent_when_healthy(tmp_path):
    b = bundle_of(tmp_path, "connect-2x-idle.log")
    assert len(b.commits) == 3
    assert detector.detect_offset_commit_timeouts(b) == []


def test_detector_stuck_producer_is_not_a_batching_problem(tmp_path):
    b = bundle_of(tmp_path, "connect-2x-stuck.log")
    f = detector.detect_offset_commit_timeouts(b)[0]
    assert "not delivering" in f.summary
    assert "batch.size" not in f.recommendation.split("before")[0]


def test_sink_failures_reported(tmp_path):
    b = bundle_of(tmp_path, "connect-3x.log")
    fs = detector.detect_offset_commit_timeouts(b)
    assert {f.summary.split(":")[0] for f in fs} == {"Source task orders-src-0", "Sink task s3-sink-3"}


# ----------------------------------------------------------------------------- charts' data
def test_commit_points_aggregate_under_limit():
    n = 30000
    c = pd.DataFrame(
        {
            "ts": pd.date_range("2024-01-01", periods=n, freq="10s", tz="UTC"),
            "connector": "c",
            "task": [i % 3 for i in range(n)],
            "outcome": ["timeout" if i % 7 == 0 else "success" for i in range(n)],
            "outstanding": range(n),
            "remaining": None,
        }
    )
    p = charts.commit_points(c)
    assert len(p) < MAX_CHART_ROWS and p["attempts"].sum() == n
    assert p["outstanding"].max() == n - 1
    ch = charts.commit_timeline(c)
    assert ch.name == "connect_commit_timeline"


def test_metric_panel_groups_and_names():
    ts = pd.date_range("2024-01-01", periods=4, freq="1min", tz="UTC")
    m = pd.concat(
        [
            pd.DataFrame(
                {
                    "ts": ts,
                    "attribute": "records-per-request-avg",
                    "value": [23, 22, 24, 23],
                    "type": "producer-metrics",
                    "domain": "kafka.producer",
                    "client_id": "connector-producer-c-0",
                    "connector": None,
                    "task": None,
                }
            ),
            pd.DataFrame(
                {
                    "ts": ts,
                    "attribute": "source-record-active-count-max",
                    "value": [1, 2, 3, 4],
                    "type": "source-task-metrics",
                    "domain": "kafka.connect",
                    "client_id": None,
                    "connector": "c",
                    "task": "0",
                }
            ),
            pd.DataFrame(
                {
                    "ts": ts,
                    "attribute": "QueueRemainingCapacity",
                    "value": 0,
                    "type": "connector-metrics",
                    "domain": "debezium.mysql",
                    "client_id": None,
                    "connector": None,
                    "task": None,
                }
            ),
            pd.DataFrame(
                {
                    "ts": ts,
                    "attribute": "request-rate",
                    "value": 1,
                    "type": "producer-metrics",
                    "domain": "kafka.producer",
                    "client_id": "x",
                    "connector": None,
                    "task": None,
                }
            ),
        ]
    )
    p = charts.metric_panel(m)
    assert sorted(p["group"].unique()) == ["connect task", "debezium", "producer"]
    assert "request-rate" not in set(p["attribute"])
    assert charts.metrics_chart(p, "producer", "n1").name == "n1"
    assert charts.metrics_chart(p, "nothing", "n2") is None


# ----------------------------------------------------------------------------- sample bundle
def test_sample_bundle_2x_before_after():
    b = sample("connect-offsets-2x")
    assert b.summary.unparsed_lines == 0
    ba = views.before_after(b.commits, b.configs, "my-connector", 0)
    assert ba["batch.size"].tolist() == ["16384", "327680"]
    assert ba.loc[0, "failed_or_timeout"] > 10 and ba.loc[1, "failed_or_timeout"] == 0
    assert ba.loc[1, "outstanding_max"] < ba.loc[0, "outstanding_max"] / 10
    f = detector.detect_offset_commit_timeouts(b)
    assert len(f) == 1 and f[0].severity == "low" and "Resolved" in f[0].summary
    seed = b.commits[b.commits.outstanding == 48437]
    assert seed["remaining"].tolist() == [31120]


def test_3x_timeout_points_at_offset_store(tmp_path):
    b = bundle_of(tmp_path, "connect-3x.log")
    f = [x for x in detector.detect_offset_commit_timeouts(b) if "orders-src" in x.summary][0]
    assert "offset write did not complete" in f.summary and "9,120" in f.summary
    assert "offset.storage.topic" in f.recommendation
    assert "producer.override.batch.size=327680" in f.recommendation


def test_interleaved_tasks_and_rotated_start():
    # two tasks commit at the same moment on one worker; the log starts mid-attempt (rotation)
    ts = pd.to_datetime(
        [
            "2021-03-10 10:00:00",
            "2021-03-10 10:00:10",
            "2021-03-10 10:00:10",
            "2021-03-10 10:00:10",
            "2021-03-10 10:00:10",
            "2021-03-10 10:00:15",
            "2021-03-10 10:00:15",
        ],
        utc=True,
    )
    msgs = [
        "WorkerSourceTask{id=a-0} Failed to commit offsets",
        "WorkerSourceTask{id=a-0} Committing offsets",
        "WorkerSourceTask{id=b-1} Committing offsets",
        "WorkerSourceTask{id=a-0} flushing 10 outstanding messages for offset commit",
        "WorkerSourceTask{id=b-1} flushing 90000 outstanding messages for offset commit",
        "WorkerSourceTask{id=b-1} Failed to flush, timed out while waiting for producer to flush outstanding 70000 messages",
        "WorkerSourceTask{id=a-0} Finished commitOffsets successfully in 2 ms",
    ]
    ev = pd.DataFrame({"ts": ts, "message": msgs, "host": "w", "file": "w/connect.log", "line": range(1, 8)})
    c = build_commits(ev).set_index(["connector", "ts"])
    assert len(c) == 3
    assert c.loc[("a", ts[0]), "outcome"] == "failed"
    assert c.loc[("a", ts[1]), ["outstanding", "outcome", "duration_ms"]].tolist() == [10, "success", 2.0]
    assert c.loc[("b", ts[2]), ["task", "outstanding", "remaining", "outcome"]].tolist() == [1, 90000, 70000, "timeout"]


def test_commits_are_the_same_whatever_the_classification_slice(monkeypatch):
    """build_commits classifies in slices (bounded memory); slice edges must not change a row."""
    from kitlib.investigations.connect_offsets import commits as connect

    b = sample("connect-offsets-2x")
    ev = b.events[b.events["logger"].astype(str).isin(connect.LOGGERS)]
    ev = ev.sort_values(["host", "ts", "file", "line"], kind="stable").reset_index(drop=True)
    whole = connect.build_commits(ev)
    real = connect._classify_in_slices
    monkeypatch.setattr(connect, "_classify_in_slices", lambda m, size=65536: real(m, 7))
    sliced = connect.build_commits(ev)
    assert len(whole) == 120
    pd.testing.assert_frame_equal(whole, sliced)


# ----------------------------------------------------------------------------- drain model section
def _worst(**kw) -> drain.WorstTask:
    b = sample("connect-offsets-2x")
    commits = views.filter_commits(b.commits)
    return drain.worst_task(b, views.task_summary(commits), commits, **kw)


def test_the_worst_task_of_seed001_and_its_what_if_rows():
    worst = _worst()
    assert worst.text().splitlines() == [
        "task my-connector-0: 32 of 120 commits failed",
        "  offset.flush.timeout.ms 5,000 ms; batch.size 16,384 bytes; linger.ms 0 ms; max.in.flight 1",
        "  records per request ~23.0 (metric records-per-request-avg)",
        "  outstanding at flush: median 38,669, max 61,389 (log)",
        "  acknowledged per timeout window: 17,320 -> round trip 6.64 ms (acknowledged during the timed-out flushes)",
    ]
    t = worst.table()
    assert t["setting"].tolist() == ["current", "proposed"] and "timeout_s" not in t
    assert t["batch.size"].tolist() == [16384, 327680] and t["linger.ms"].tolist() == [0, 10]
    assert t["requests_to_drain"].tolist() == [1682, 85] and t["fits_timeout"].tolist() == [False, True]
    assert t["timeout_ms"].tolist() == [5000.0, 5000.0]
    assert worst.whatif["drain_s"].round(2).tolist() == [11.17, 0.57]


def test_the_settings_tried_are_the_ones_given():
    t = _worst(new_batch_size=65536, new_linger_ms=5).table()
    assert t["batch.size"].tolist() == [16384, 65536] and t["linger.ms"].tolist() == [0, 5]


def test_no_failed_source_task_means_no_model():
    commits = tables.empty("commits")
    worst = drain.worst_task(None, views.task_summary(commits), commits)
    assert worst.model is None and worst.table().empty
    assert worst.text() == "No source task timed out or failed to commit in this window."


def test_a_model_lacking_the_round_trip_says_so_and_has_no_what_if():
    b = sample("connect-offsets-2x")
    commits = views.filter_commits(b.commits)
    commits = commits.assign(remaining=pd.Series(pd.NA, index=commits.index, dtype="Int64"))
    worst = drain.worst_task(b, views.task_summary(commits), commits)
    assert worst.model is not None and worst.whatif.empty and worst.table().empty
    assert "the drain model lacks" in worst.text().splitlines()[-1]
