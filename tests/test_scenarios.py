"""Every lab scenario against a real broker (shortened), checked through the kit itself: the
bundle it captures loads cleanly and triage finds what the incident is about."""

import importlib.util
from pathlib import Path

import pytest

import kitlib

pytestmark = pytest.mark.broker
SCEN = Path(__file__).resolve().parents[1] / "lab" / "scenarios"


def scenario(name):
    spec = importlib.util.spec_from_file_location(f"scenario_{name}", SCEN / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ids(bundle):
    return {f.id for f in kitlib.triage(bundle).findings}


def clean(bundle):
    assert bundle.summary.unparsed_lines == 0, bundle.unparsed.head()
    assert not bundle.summary.errors, bundle.summary.errors


def test_down_conversion(tmp_path):
    out = scenario("down_conversion").run(tmp_path / "b", records=20000, probe_seconds=8, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    clean(b)
    # the 0.9 client's Fetch v1 and ListOffsets v0 are versions Kafka 4.0 removes: a risk beside the incident
    assert ids(b) == {"down-conversion", "clients-on-removed-protocol"}
    assert set(b.probe_throughput["api_version"]) == {"0.9", "auto"}


def test_compaction(tmp_path):
    out = scenario("compaction").run(tmp_path / "b", keys=90000, min_runs=3, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    clean(b)
    assert {"cleaner-buffer-too-small", "cleaner-no-reclaim"} <= ids(b)
    assert (b.cleaner_runs["buffer_utilization_pct"] == 90.0).sum() >= 2


def test_connect_offsets(tmp_path):
    out = scenario("connect_offsets").run(tmp_path / "b", lines=200000, period_s=10, work=tmp_path / "w" / "broker")
    b = kitlib.load_bundle(out)
    clean(b)
    assert "offset-commit-timeouts" in ids(b)
    assert (b.commits["outcome"] != "success").any() and (b.commits["outcome"] == "success").any()
    assert set(b.configs[b.configs["key"] == "batch.size"]["value"]) >= {"16", "327680"}


def test_codecs(tmp_path):
    out = scenario("codecs").run(tmp_path / "b", records=1000, repeat=2, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    assert set(b.probe_codecs["codec"]) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert ids(b) == set()


def test_healthy(tmp_path):
    out = scenario("healthy").run(tmp_path / "b", records=5000, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    clean(b)
    assert ids(b) == set()
    assert len(b.cleaner_runs) >= 1 and b.consumer_lag["lag"].sum() == 0


def test_remote_storage(tmp_path):
    out = scenario("remote_storage").run(tmp_path / "b", records=20000, phase_s=12, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    clean(b)
    assert ids(b) == {"remote-copy-errors"}
    r = b.remote_log_events
    err = r[r["kind"] == "copy_error"]
    assert len(err) >= 2 and err["exception"].str.contains("FileSystemException").all()
    # copies before the outage and after it: the finding says they resumed
    assert (r[r["kind"] == "copied"]["ts"] < err["ts"].min()).any() and (
        r[r["kind"] == "copied"]["ts"] > err["ts"].max()
    ).any()
    assert kitlib.triage(b).findings[0].numbers["partitions_still_failing"] == 0
    assert (b.metrics["name"].astype("string") == "RemoteCopyErrorsPerSec").any()
