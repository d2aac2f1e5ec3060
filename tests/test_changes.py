"""``kitlib changes``: the log statements that changed in a window, on a lab bundle with a known
incident window, on a stationary generated log (no change is beyond chance) and through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kitlib
from kitlib import changes as ch
from kitlib.changes import stats
from kitlib.changes.keys import keys as record_keys
from kitlib.cli import main

ROOT = Path(__file__).resolve().parents[1]
ISR = ROOT / "sample_data" / "isr-flapping"
# the pauses of node 2 (PROVENANCE.md: first pause 11:59:49.960, node back in the ISR 12:00:36.444)
ISR_WINDOW = "2026-11-23T11:59:49..2026-11-23T12:00:37"


@pytest.fixture(scope="module")
def isr():
    return kitlib.load_bundle(ISR)


@pytest.fixture(scope="module")
def stationary(tmp_path_factory):
    """A generated broker log whose 31 message shapes are drawn at random the whole time."""
    sys.path.insert(0, str(ROOT / "bench"))
    from genlog import generate

    root = tmp_path_factory.mktemp("stationary") / "b"
    (root / "broker-1").mkdir(parents=True)
    with open(root / "broker-1" / "server.log", "wb") as fh:
        generate(2_000_000, fh)
    return kitlib.load_bundle(root)


def test_chi_square_quantile_and_g():
    assert abs(stats.chi2_isf(0.05) - 3.841) < 0.01
    assert abs(stats.chi2_sf(stats.chi2_isf(1e-4)) - 1e-4) < 1e-7
    g = stats.g_statistic(np.array([8, 3]), np.array([0, 27]), 0.1)
    assert g[0] > 30 and g[1] < 0.01  # 8 of 8 in a tenth of the log; 3 of 30 is the expected share


@pytest.mark.slow
def test_isr_shrinks_are_new_in_the_incident_window(isr):
    res = ch.changes(isr, ch.parse_span(ISR_WINDOW))
    top = res.overall.head(10)
    shrink = top[top["template"].str.startswith("Shrinking ISR")]
    assert len(shrink) == 1
    row = shrink.iloc[0]
    assert row["kind"] == "new" and row["baseline"] == 0 and row["window"] >= 8
    assert row["logger"] == "kafka.cluster.Partition" and row["level"] == "INFO"
    assert set(row["hosts"]) == {"broker-1", "broker-3"}  # the leaders shrink; node 2 is the one paused
    assert row["releases"].startswith("0.8.0..")  # one lineage with the 0.10 wording
    assert len(row["examples"]) == 2 and all(":" in e and "Shrinking ISR" in e for e in row["examples"])
    # the values that changed: the ISR before and after, node 2 left out
    vals = {v["value"] for v in row["values"]}
    assert vals & {"1,3,2", "3,1,2"} and any(v in vals for v in ("1,3", "3,1"))
    assert res.window[0] <= row["first"] <= row["last"] < res.window[1]
    # per host: the shrinks of both leaders
    ph = res.per_host[res.per_host["template"].str.startswith("Shrinking ISR")]
    assert set(ph["host"]) <= {"broker-1", "broker-3"}


@pytest.mark.slow
def test_an_empty_window_reports_nothing(isr):
    res = ch.changes(isr, ("2026-01-01", "2026-01-02"))
    assert res.records[0] == 0 and res.overall.empty and res.per_host.empty


@pytest.mark.slow
def test_a_stationary_log_changes_in_no_window(stationary):
    lo, hi = stationary.span()
    alarms = 0
    for k in range(8):
        start = lo + (hi - lo) * (0.05 + 0.11 * k)
        res = ch.changes(stationary, (start, start + (hi - lo) * 0.08))
        assert res.records[0] > 300
        alarms += len(res.overall) + len(res.per_host)
    assert alarms == 0


@pytest.mark.slow
def test_a_burst_in_a_stationary_log_is_found(stationary, tmp_path):
    """The same log with 12 fenced-broker lines in one minute: found without a window, ranked first."""
    src = Path(stationary.root) / "broker-1" / "server.log"
    root = tmp_path / "b"
    (root / "broker-1").mkdir(parents=True)
    text = src.read_text()
    lines = text.splitlines(keepends=True)
    mid = len(lines) // 2
    stamp = lines[mid][1:24]
    burst = [
        f"[{stamp}] INFO [QuorumController id=1] Fencing broker {3} because its session has timed out. "
        "(org.apache.kafka.controller.ReplicationControlManager)\n"
    ] * 12
    (root / "broker-1" / "server.log").write_text("".join(lines[:mid] + burst + lines[mid:]))
    b = kitlib.load_bundle(root)
    res = ch.changes(b)
    assert res.found_window
    first = res.overall.iloc[0]
    assert first["template"].startswith("Fencing broker") and first["kind"] == "new"
    assert {"slot": 0, "value": "3", "window": 12, "baseline": 0} in first["values"]


def test_lines_outside_the_catalogue_take_part_as_patterns():
    t = pa.table(
        {
            "message": pa.array(
                ["Order 1234 shipped to /srv/a/b.txt", "Order 98 shipped to /srv/c.txt", "Order shipped"],
                pa.large_string(),
            ),
            "logger": pa.array(["com.example.Shop"] * 3).dictionary_encode(),
            "template_id": pa.array([None, None, None], pa.string()),
        }
    )
    keys = record_keys(t).to_pylist()
    assert keys[0] == keys[1] == "p:com.example.Shop Order <*> shipped to <*>"
    assert keys[2] != keys[0]


@pytest.mark.slow
def test_the_command_prints_json(capsys, isr):
    assert main(["changes", str(ISR), "--window", ISR_WINDOW, "--json", "--top", "10"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["window"][0].startswith("2026-11-23T11:59:49")
    assert "G (log-likelihood ratio)" in doc["test"]
    assert any(c["template"].startswith("Shrinking ISR") and c["kind"] == "new" for c in doc["changes"])
    assert main(["changes", str(ISR), "--window", "12:00..11:00"]) == 2
    assert main(["changes", str(ISR), "--window", ISR_WINDOW, "--json", "--logger", "kafka.cluster"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["changes"] and {c["logger"] for c in doc["changes"]} == {"kafka.cluster.Partition"}
    assert main(["changes", str(ISR), "--investigation", "no-such-one"]) == 2
    assert "no investigation 'no-such-one'" in capsys.readouterr().err


def test_window_text_is_checked():
    with pytest.raises(ValueError):
        ch.parse_span("2026-11-23T12:00")
    lo, hi = ch.parse_span("2026-11-23T12:00+01:00..2026-11-23T12:30+01:00")
    assert lo == pd.Timestamp("2026-11-23T11:00", tz="UTC") and hi > lo


@pytest.mark.slow
def test_an_ingest_output_gives_the_changes_of_the_bundle_in_memory(isr, tmp_path):
    """Counted by DuckDB over the stored Parquet files, the same changes as from the tables in memory."""
    kitlib.ingest(ISR, tmp_path / "out", progress=False)
    stored = kitlib.load(tmp_path / "out")
    assert stored.lazy("events")
    mem, disk = ch.changes(isr, ISR_WINDOW), ch.changes(stored, ISR_WINDOW)
    assert disk.records == mem.records and disk.tested == mem.tested and disk.share == mem.share

    def rows(df):
        return sorted(
            (r.kind, r.template, r.window, r.baseline, r.g, r.first, r.last, r.level) for r in df.itertuples()
        )

    assert rows(disk.overall) == rows(mem.overall) and len(mem.overall) >= 5
    shrink = disk.overall[disk.overall["template"].str.startswith("Shrinking ISR")].iloc[0]
    assert len(shrink["examples"]) == 2 and shrink["values"]
    assert sorted(map(tuple, disk.per_host[["host", "key", "window"]].values.tolist())) == sorted(
        map(tuple, mem.per_host[["host", "key", "window"]].values.tolist())
    )


@pytest.mark.slow
def test_the_changes_of_some_loggers_only(isr):
    """An investigation's loggers: only their records are compared (a name keeps the loggers under it)."""
    res = ch.changes(isr, ISR_WINDOW, loggers=["kafka.cluster"])
    assert len(res.overall) and set(res.overall["logger"]) == {"kafka.cluster.Partition"}
    assert any(t.startswith("Shrinking ISR") for t in res.overall["template"].head(3))
    everything = ch.changes(isr, ISR_WINDOW)
    assert sum(res.records) < sum(everything.records)
    assert ch.changes(isr, ISR_WINDOW, loggers=["kafka.clus"]).records == (0, 0)  # a name, not any prefix
    assert ch.changes(isr, ISR_WINDOW, loggers=[]).overall.empty
    # an investigation's declared loggers: cluster health sees the shrinks, compaction sees none of this
    health = ch.changes(isr, ISR_WINDOW, investigation="cluster_health")
    assert any(t.startswith("Shrinking ISR") for t in health.overall["template"])
    declared = kitlib.registry.investigation("cluster_health").loggers
    assert all(any(lg == d or lg.startswith((d + ".", d + "$")) for d in declared) for lg in health.overall["logger"])
    assert ch.changes(isr, ISR_WINDOW, investigation="compaction").overall.empty


def _burst_log(root: Path, burst: int) -> None:
    """An hour of producer snapshots, one a second, then ``burst`` ISR shrinks of long topic names
    four milliseconds apart (synthetic, in Kafka 3.9's wording)."""
    (root / "broker-1").mkdir(parents=True)
    t0 = pd.Timestamp("2026-11-23T11:00:00")
    quiet = (t0 + pd.to_timedelta(np.arange(3600), unit="s")).strftime("%Y-%m-%d %H:%M:%S,000")
    busy = (t0 + pd.Timedelta("1h") + pd.to_timedelta(np.arange(burst) * 4, unit="ms")).strftime("%Y-%m-%d %H:%M:%S,%f")
    topic = "payments-settlement-ledger-" + "x" * 200
    with open(root / "broker-1" / "server.log", "w") as fh:
        fh.writelines(
            f"[{t}] INFO [ProducerStateManager partition={topic}-{i % 12}] Wrote producer snapshot at offset "
            f"{i * 7} with 0 producer ids in 1 ms. (kafka.log.ProducerStateManager)\n"
            for i, t in enumerate(quiet)
        )
        fh.writelines(
            f"[{t[:-3]}] INFO [Partition {topic}-{i % 500} broker=1] Shrinking ISR from 1,2,3 to 1. Leader: "
            f"(highWatermark: {i}, endOffset: {i + 9}). Out of sync replicas: (brokerId: 2, endOffset: {i}, "
            f"lastCaughtUpTimeMs: {1763895600000 + i}). (kafka.cluster.Partition)\n"
            for i, t in enumerate(busy)
        )


@pytest.mark.slow
def test_a_change_of_many_long_records_stays_within_duckdbs_bound(tmp_path, monkeypatch, capfd):
    """A change's example lines and slot values are picked by time and place before any message is
    read: 150,000 ISR shrinks of 330-byte lines in the window are compared within a 64 MB bound
    (ranking them with a window function over their messages ran out of it), and DuckDB prints
    no progress bar into the command's JSON."""
    _burst_log(tmp_path / "b", 150_000)
    kitlib.ingest(tmp_path / "b", tmp_path / "out", progress=False)
    monkeypatch.setattr(ch, "DUCKDB_MEMORY", "64MB")
    res = ch.changes(kitlib.load(tmp_path / "out"), "2026-11-23T12:00..2026-11-23T12:11")
    shrink = res.overall.iloc[0]
    assert (shrink["kind"], shrink["window"], shrink["baseline"]) == ("new", 150_000, 0)
    assert shrink["template"].startswith("Shrinking ISR")
    # the first two records of the burst, in time order
    assert [e.split(":", 2)[1] for e in shrink["examples"]] == ["3601", "3602"]
    assert shrink["examples"][0].startswith("broker-1/server.log:3601: [Partition payments-settlement-ledger-")
    gone = res.overall.iloc[1]
    assert (gone["kind"], gone["window"], gone["baseline"]) == ("gone", 0, 3600)
    capfd.readouterr()
    assert main(["changes", str(tmp_path / "out"), "--window", "2026-11-23T12:00..2026-11-23T12:11", "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["changes"][0]["window"] == 150_000
