"""Ingest on a real Dask cluster (scheduler and workers as separate processes on 127.0.0.1, and a
local cluster) gives the same tables and line accounting as a single-process ingest, including
for a log split into parts where a cut would fall inside a stack trace."""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib.ingestion.distributed import ingest_on_dask, plan, record_starts

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

TRACE = (
    "[2024-05-22 00:{m:02d}:{s:02d},{ms:03d}] ERROR [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
    "Error for partition orders-{p} at offset {o} (kafka.server.ReplicaFetcherThread)\n"
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader\n"
    + "".join(f"\tat org.apache.kafka.server.Frame{i}.call(Frame{i}.java:{i * 7})\n" for i in range(12))
)
INFO = "[2024-05-22 00:{m:02d}:{s:02d},{ms:03d}] INFO [LogCleaner] cleaned log orders-{p} in {o} ms (kafka.log.LogCleaner)\n"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Three hosts; broker-1's server.log is big enough to be split into several parts."""
    root = tmp_path_factory.mktemp("fleet") / "bundle"
    for h, n in (("broker-1", 4000), ("broker-2", 300), ("connect-1", 50)):
        d = root / h
        d.mkdir(parents=True)
        lines = []
        for i in range(n):
            t = dict(m=(i // 600) % 60, s=(i // 10) % 60, ms=i % 1000, p=i % 7, o=i)
            lines.append((TRACE if i % 3 == 0 else INFO).format(**t))
        (d / "server.log").write_text("".join(lines))
    shutil.copytree(ROOT / "sample_data" / "compaction" / "broker-1", root / "broker-3")
    return root


def tables_of(b) -> dict[str, pd.DataFrame]:
    from kitlib import tables

    out = {}
    for name in tables.SCHEMAS:
        df = b.table(name)
        if len(df):
            keys = [c for c in ("host", "file", "line", "ts") if c in df.columns]
            df = df.astype({c: "string" for c in df.columns if str(df[c].dtype) == "category"})
            out[name] = df.sort_values(keys, kind="stable").reset_index(drop=True) if keys else df
    return out


def assert_same(single: Path, dist: Path):
    a, b = kitlib.load(single), kitlib.load(dist)
    ta, tb = tables_of(a), tables_of(b)
    assert set(ta) == set(tb)
    for name in ta:
        pd.testing.assert_frame_equal(
            ta[name].drop(columns=["seconds"], errors="ignore"),
            tb[name].drop(columns=["seconds"], errors="ignore"),
            check_dtype=False,
            obj=name,
        )
    sa, sb = a.summary.to_dict(), b.summary.to_dict()
    for k in ("seconds", "bundle"):
        sa.pop(k), sb.pop(k)
    assert sa == sb


def test_cuts_fall_on_record_headers_with_exact_line_numbers(fleet):
    log = fleet / "broker-1" / "server.log"
    data = log.read_bytes()
    cuts = record_starts(log, len(data), 5)
    assert len(cuts) == 5
    for pos, line in cuts:
        assert data[pos : pos + 1] == b"[" and (pos == 0 or data[pos - 1 : pos] == b"\n")
        assert line == data[:pos].count(b"\n") + 1
        assert not data[pos:].startswith(b"\tat")


def test_a_separate_scheduler_and_workers_give_the_single_process_tables(kit, fleet, tmp_path):
    """Both ways of handling derived tables: built on the workers, one task per host (the
    default), and left to first use (``--no-derive``)."""
    single, single_derived = tmp_path / "single", tmp_path / "single-derived"
    kitlib.ingest(fleet, single, progress=False)
    kitlib.ingest(fleet, single_derived, progress=False, derive=True)
    sched_file = tmp_path / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    procs = [
        subprocess.Popen(
            [
                str(bin_dir / "dask"),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(sched_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        str(bin_dir / "dask"),
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--no-dashboard",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        split = 200 * 1024
        units, _ = plan(fleet, None, split)
        parts = [u for u in units if u.src.rel == "broker-1/server.log"]
        assert len(parts) >= 3  # the big log really is split
        r = kit(
            "ingest",
            fleet,
            "--out",
            tmp_path / "dist",
            "--scheduler",
            address,
            "--split-mb",
            1,
            "--no-progress",
            "--no-derive",
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        s = ingest_on_dask(
            fleet,
            tmp_path / "dist2",
            scheduler=address,
            split_bytes=split,
            progress=False,
            log=lambda *a: None,
            derive=True,
        )
        assert s.rows["events"] == kitlib.load(single).summary.rows["events"]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)
    assert_same(single_derived, tmp_path / "dist2")
    assert_same(single, tmp_path / "dist")
    # the derived tables were written by the hosts' finishing tasks, or left for first use
    assert s.deferred == [] and sorted(p.name for p in (tmp_path / "dist2" / "cleaner_events").iterdir()) == [
        "host=broker-1",
        "host=broker-2",
        "host=broker-3",
        "host=connect-1",
    ]
    assert kitlib.load(tmp_path / "dist").summary.deferred and not (tmp_path / "dist" / "cleaner_events").exists()
    # one dataset per table, partitioned by host
    assert sorted(p.name for p in (tmp_path / "dist2" / "events").iterdir()) == [
        "host=broker-1",
        "host=broker-2",
        "host=broker-3",
        "host=connect-1",
    ]
    assert len(list((tmp_path / "dist2" / "events" / "host=broker-1").glob("*.parquet"))) == len(parts)
    # the stack traces around the cuts are whole
    ev = kitlib.load(tmp_path / "dist2").events
    traces = ev[ev["level"] == "ERROR"]
    assert (traces["nlines"] == 14).all() and traces["message"].str.count("\tat ").eq(12).all()


def test_a_local_cluster_from_the_cli(kit, fleet, tmp_path):
    single = tmp_path / "single"
    kitlib.ingest(fleet, single, progress=False, derive=True)  # a Dask ingest builds them on the workers
    r = kit("ingest", fleet, "--out", tmp_path / "dist", "--workers", 2, "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Dask dashboard: http://127.0.0.1:" in r.stdout
    assert_same(single, tmp_path / "dist")
    b = kitlib.load(tmp_path / "dist")
    by_level = b.sql("select level, count(*) as n from events group by level order by level")
    assert dict(zip(by_level["level"], by_level["n"])) == b.events.groupby("level", observed=True).size().to_dict()
