"""log-cleaner.log into cleaner_runs / cleaner_events across Kafka versions, the planner against
seed 003's figures, and the compaction findings (silent on healthy runs)."""

from pathlib import Path

import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib.formats.logs import parse_bytes
from kitlib.investigations.compaction import analysis as c
from kitlib.investigations.compaction.cleaner import build_events, build_runs, parse_stats

ROOT = Path(__file__).resolve().parents[2]

BLOCK_3X = """[2026-11-23 03:17:40,988] INFO Cleaner 0: Beginning cleaning of log orders-3 (kafka.log.LogCleaner)
[2026-11-23 03:17:40,990] INFO Cleaner 0: Building offset map for log orders-3 for 31 segments in offset range [0, 412977). (kafka.log.LogCleaner)
[2026-11-23 03:17:44,901] INFO [kafka-log-cleaner-thread-0]: 
\tLog cleaner thread 0 cleaned log orders-3 (dirty section = [0, 412977])
\t1,212.4 MB of log processed in 3.9 seconds (54.5 MB/sec).
\tIndexed 212.4 MB in 2.0 seconds (106.2 Mb/sec, 51.3% of total time)
\tBuffer utilization: 90.0%
\tCleaned 212.4 MB in 1.9 seconds (111.8 Mb/sec, 48.7% of total time)
\tStart size: 212.4 MB (1,412,977 messages)
\tEnd size: 118.0 MB (229,410 messages)
\t44.4% size reduction (44.4% fewer messages)
 (kafka.log.LogCleaner)
"""
# 2.x: "Beginning cleaning of log X." with a period; a docker paste that lost the trailing space
BLOCK_2X = """[2019-06-01 10:00:00,000] INFO Cleaner 0: Beginning cleaning of log __consumer_offsets-0. (kafka.log.LogCleaner)
[2019-06-01 10:00:00,010] INFO Cleaner 0: Building offset map for log __consumer_offsets-0 for 1 segments in offset range [213401, 213401). (kafka.log.LogCleaner)
[2019-06-01 10:00:00,412] INFO [kafka-log-cleaner-thread-0]:
\tLog cleaner thread 0 cleaned log __consumer_offsets-0 (dirty section = [213401, 213401])
\t28.4 MB of log processed in 0.4 seconds (65.9 MB/sec).
\tIndexed 28.4 MB in 0.3 seconds (104.4 Mb/sec, 63.1% of total time)
\tBuffer utilization: 0.0%
\tCleaned 28.4 MB in 0.2 seconds (178.6 Mb/sec, 36.9% of total time)
\tStart size: 28.4 MB (218,698 messages)
\tEnd size: 0.0 MB (58 messages)
\t100.0% size reduction (100.0% fewer messages)
 (kafka.log.LogCleaner)
"""
# 4.1: new logger names; an instant clean prints NaN / Infinity
BLOCK_41 = """[2025-09-05 10:11:10,616] INFO Cleaner 0: Beginning cleaning of log events-7 (org.apache.kafka.storage.internals.log.Cleaner)
[2025-09-05 10:11:10,700] INFO [kafka-log-cleaner-thread-0]: 
\tLog cleaner thread 0 cleaned log events-7 (dirty section = [140, 308])
\t0.0 MB of log processed in 0.0 seconds (NaN MB/sec).
\tIndexed 0.0 MB in 0.0 seconds (Infinity Mb/sec, NaN% of total time)
\tBuffer utilization: 0.0%
\tCleaned 0.0 MB in 0.0 seconds (NaN Mb/sec, NaN% of total time)
\tStart size: 0.0 MB (168 messages)
\tEnd size: 0.0 MB (12 messages)
\t97.1% size reduction (92.9% fewer messages)
 (org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread)
[2025-09-05 10:12:00,000] WARN [kafka-log-cleaner-thread-0]: Unexpected exception thrown when cleaning log Log(dir=/var/lib/kafka/data/events-8, topic=events, partition=8). Marking its partition (events-8) as uncleanable (org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread)
org.apache.kafka.common.errors.CorruptRecordException: Record size 0 is less than the minimum record overhead (14)
"""


def runs_of(text):
    ev, _ = parse_bytes(text.encode())
    return build_runs(ev), build_events(ev)


def test_3x_block_with_thousands_separators_and_run_events():
    runs, _ = runs_of(BLOCK_3X)
    r = runs.iloc[0]
    assert (r["topic"], r["partition"], r["dirty_start"], r["dirty_end"]) == ("orders", 3, 0, 412977)
    assert r["mb_processed"] == 1212.4 and r["start_messages"] == 1412977 and r["end_messages"] == 229410
    assert r["buffer_utilization_pct"] == 90.0 and r["size_reduction_pct"] == 44.4 and r["index_pct"] == 51.3
    assert r["segments"] == 31 and r["duration_s"] == pytest.approx(3.913)
    assert r["line"] == 3


def test_2x_wording_and_docker_trimmed_header():
    runs, ev = runs_of(BLOCK_2X)
    r = runs.iloc[0]
    assert r["log"] == "__consumer_offsets-0" and r["partition"] == 0 and r["dirty_start"] == r["dirty_end"] == 213401
    assert r["end_messages"] == 58 and r["size_reduction_pct"] == 100.0 and r["segments"] == 1
    assert ev["kind"].tolist() == ["begin", "offset_map"]
    assert ev.loc[0, "log"] == "__consumer_offsets-0"  # the 2.x trailing period is not part of the name


def test_41_loggers_nan_values_and_uncleanable():
    runs, ev = runs_of(BLOCK_41)
    r = runs.iloc[0]
    assert r["log"] == "events-7" and r["fewer_messages_pct"] == 92.9
    assert r["mb_per_s"] != r["mb_per_s"]  # NaN stays NaN, never a crash
    unc = ev[ev["kind"] == "uncleanable"].iloc[0]
    assert unc["log"] == "events-8" and unc["partition"] == 8


def test_parse_stats_ignores_other_text():
    assert parse_stats("Cleaner 0: Beginning cleaning of log x-1") is None


def test_planner_reproduces_seed_003():
    e128 = c.entries_per_pass(128 * 1024 * 1024)
    assert e128 == 5_592_405  # "5,592,405 entries"
    assert c.passes_needed(2.4e9 / 8, e128) == 54  # "54 log cleaner runs"
    e1g = c.entries_per_pass(1024**3)
    assert round(e1g / 1e6) == 45  # "approximately 45 million messages"
    assert c.passes_needed(2.4e9 / 8, e1g) == 7  # "would still require 7 runs"
    assert c.partitions_for_one_pass(2.4e9, e1g) == (54, 60)  # "53.333 ... round up to 60"
    assert round(c.buffer_for_one_pass(300e6) / 1e9, 1) == 7.2  # "7.2 GB memory"
    assert c.reserve_storage(16e12, 0.5, 0.10)["monthly_cost"] == 1600.0
    assert round(c.days_until_cleaning(1.6e9, 300, 0.5)) == 62  # "61 days"
    assert c.entries_per_pass(1048577, load_factor=0.9) == 39321  # the lab's 1 MiB buffer per pass


def test_findings_on_the_real_lab_bundle():
    b = sample("compaction")
    [small] = c.detect_buffer_too_small(b)
    assert small.numbers["keys_per_pass"] == 39321 and small.numbers["dedupe_buffer_bytes"] == 1048577
    assert small.numbers["settings_source"] == "configs" and small.numbers["full_buffer_runs"] >= 3
    assert "log.cleaner.dedupe.buffer.size" in small.recommendation
    assert all(e["file"] == "broker-1/log-cleaner.log" for e in small.evidence)
    [zero] = c.detect_no_reclaim(b)
    assert zero.numbers["zero_reclaim_runs"] >= 2
    assert c.detect_stalled(b) == []


def test_silent_on_healthy_cleaning():
    b = sample("healthy")
    assert len(b.cleaner_runs) >= 1
    assert c.detect_buffer_too_small(b) == [] and c.detect_no_reclaim(b) == [] and c.detect_stalled(b) == []


def test_stalled_finding_cites_the_uncleanable_line(tmp_path):
    d = tmp_path / "b" / "broker-2"
    d.mkdir(parents=True)
    (d / "log-cleaner.log").write_text(BLOCK_41)
    [f] = c.detect_stalled(kitlib.load_bundle(tmp_path / "b"))
    assert f.id == "cleaner-stalled" and "events-8" in f.summary
    assert f.evidence[0]["line"] == 12


def test_cleaner_tables_are_the_same_whatever_the_slice(monkeypatch):
    from kitlib.investigations.compaction import cleaner

    b = sample("compaction")
    ev = b.events[b.events["logger"].astype(str).str.contains("LogCleaner")]
    ev = ev.sort_values(["host", "ts", "file", "line"], kind="stable").reset_index(drop=True)
    from kitlib.tables import conform

    runs, events = conform("cleaner_runs", cleaner.build_runs(ev)), conform("cleaner_events", cleaner.build_events(ev))
    monkeypatch.setattr(cleaner, "SLICE", 5)
    pd.testing.assert_frame_equal(runs, conform("cleaner_runs", cleaner.build_runs(ev)))
    pd.testing.assert_frame_equal(events, conform("cleaner_events", cleaner.build_events(ev)))
    assert len(runs) == 7 and (events["kind"] == "begin").sum() >= 7


def test_cleaner_runs_from_what_cleaner_events_read():
    """build_runs given the records build_events was just given takes what it read of them: the
    same table as reading them again."""
    from kitlib.investigations.compaction import cleaner
    from kitlib.tables import conform

    b = sample("compaction")
    ev = b.events[b.events["logger"].astype(str).str.contains("LogCleaner")].reset_index(drop=True)
    alone = conform("cleaner_runs", cleaner.build_runs(ev))
    cleaner.build_events(ev)
    assert cleaner._READ and cleaner._READ[0]() is ev
    shared = conform("cleaner_runs", cleaner.build_runs(ev))
    assert not cleaner._READ  # taken once
    pd.testing.assert_frame_equal(alone, shared)
    assert len(alone) == 7
    cleaner.build_events(ev.copy())  # other records: read again
    pd.testing.assert_frame_equal(alone, conform("cleaner_runs", cleaner.build_runs(ev)))
