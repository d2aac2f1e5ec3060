"""Hostile bundles at the level of files and archives: each costs only itself, is listed in the
``files`` table with why, and never hangs, recurses without bound, reads a file twice or takes a
bundle's own files for the kit's state. The cases are built by tests/adversarial/generate.py
(synthetic content), where tests/test_adversarial.py checks every promise on them too."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import kitlib
from kitlib.cli import main
from kitlib.ingestion.store import is_store
from kitlib.sources import discover_all, open_regular

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "adversarial"))
import generate  # noqa: E402
from test_adversarial import kitlib as run_cli  # noqa: E402  # the CLI in a child that reports its peak RSS
from test_adversarial import remove_tree  # noqa: E402


@pytest.fixture
def root():
    d = Path(tempfile.mkdtemp(prefix="kit-hostile-"))
    yield d
    remove_tree(d)  # one case nests folders 1,500 deep: shutil.rmtree would recurse


def files_of(bundle) -> pd.DataFrame:
    return bundle.files.set_index("file")


def cli(*args: str) -> tuple[int, str, str]:
    """The CLI in this process, with what it printed."""
    import io

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = main(list(args))
    finally:
        sys.stdout, sys.stderr = saved
    return rc, out.getvalue(), err.getvalue()


def test_a_zip_member_failing_its_crc_costs_only_itself(root, tmp_path):
    generate.zip_crc(root)
    b = kitlib.load_bundle(root / "zip-crc")
    f = files_of(b)
    bad = f.loc["logs.zip/broker-1/controller.log"]  # a stored member, a byte flipped near its end
    assert bad.lines == 40 and bad.parsed == 40, bad  # everything it held was read
    assert "logs.zip/broker-1/controller.log" in bad.error and "CRC-32" in bad.error and "line 40" in bad.error
    damaged = f.loc["logs.zip/broker-2/server.log"]  # its deflate stream damaged half way
    assert 0 < damaged.lines and damaged.parsed + damaged.unparsed == damaged.lines
    assert "corrupt zip member" in damaged.error and "line" in damaged.error
    for good, n in (("logs.zip/broker-1/server.log", 25), ("logs.zip/broker-3/server.log", 30)):
        assert f.loc[good, "lines"] == n and not f.loc[good, "error"]
    rc, out, err = cli("ingest", str(root / "zip-crc"), "--out", str(tmp_path / "o"), "--no-progress")
    assert rc == 0 and "Traceback" not in err, err
    rc, _, err = cli("triage", str(root / "zip-crc"))
    assert rc in (0, 1), err


@pytest.mark.slow
def test_a_folder_nested_1500_deep_is_walked(root):
    generate.deep_nest(root, depth=1500)
    t = time.perf_counter()
    srcs, skipped = discover_all(root / "deep-nest")
    assert time.perf_counter() - t < 30  # each folder is known by its inode: no path resolved per level
    bottom = "broker-1/" + "d/" * 1500
    rels = sorted(s.rel for s in srcs)
    assert rels == [bottom + "app.log", bottom + "server.log", "broker-1/server.log"] and not skipped
    f = files_of(kitlib.load_bundle(root / "deep-nest"))
    assert f.loc[bottom + "server.log", "lines"] == 3 and f.loc["broker-1/server.log", "lines"] == 4
    assert f.loc[bottom + "app.log", "format"] == "log-layout" and f.loc[bottom + "app.log", "parsed"] == 2


@pytest.mark.slow
def test_pipes_sockets_devices_and_odd_zip_members_are_never_opened(root, tmp_path):
    generate.special_files(root)
    run = run_cli("ingest", str(root / "special-files"), "--out", str(tmp_path / "o"), "--no-progress")
    assert run.rc == 0 and run.seconds < 120, run.err
    f = pq.read_table(tmp_path / "o" / "files.parquet").to_pandas().set_index("file")
    for rel, why in (
        ("broker-1/server.log.1", "named pipe (FIFO)"),
        ("broker-1/log4j.properties", "named pipe (FIFO)"),
        ("broker-1/current.log", "named pipe (FIFO)"),  # a link to a pipe
        ("odd-members.zip/broker-2/link.log", "stored as a symbolic link"),
        ("odd-members.zip/broker-2/pipe.log", "stored as a named pipe"),
        ("odd-members.zip/broker-2/tty.log", "stored as a character device"),
    ):
        assert f.loc[rel, "format"] == "not read" and why in f.loc[rel, "error"], (rel, f.loc[rel, "error"])
    if (root / "special-files" / "broker-1" / "jmx.sock").exists():
        assert "socket" in f.loc["broker-1/jmx.sock", "error"]
    assert f.loc["broker-1/server.log", "lines"] == 6 and f.loc["odd-members.zip/broker-2/server.log", "lines"] == 7
    # a pipe given as the bundle itself: nothing waits on it
    fifo = tmp_path / "bundle.fifo"
    os.mkfifo(fifo)
    t = time.perf_counter()
    with pytest.raises(OSError, match="named pipe"):
        open_regular(fifo)
    _, skipped = discover_all(fifo)
    assert "named pipe" in skipped[0].reason
    run = run_cli("triage", str(fifo))
    assert run.rc == 2 and "Traceback" not in run.err
    assert time.perf_counter() - t < 60


@pytest.mark.slow
def test_zip_members_are_found_without_reading_the_archive_again(root, monkeypatch):
    generate.many_member_zip(root, 2000, "zip-2000")
    reads = []
    real = zipfile.ZipFile._RealGetContents

    def counted(self):
        reads.append(1)
        return real(self)

    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", counted)
    b = kitlib.load_bundle(root / "zip-2000")
    assert len(b.files) == 2000 and b.files["lines"].sum() == 2000
    assert len(reads) == 1  # the central directory is read once, not once per member (it was 3 per member)


@pytest.mark.slow
def test_nested_zips_are_read_with_bounded_memory_and_depth(root, tmp_path):
    generate.nested_zips(root)
    run = run_cli("ingest", str(root / "nested-zip"), "--out", str(tmp_path / "o"), "--no-progress")
    assert run.rc == 0, run.err
    f = pq.read_table(tmp_path / "o" / "files.parquet").to_pandas().set_index("file")
    inner = "level-1.zip/level-2.zip"
    assert f.loc["level-1.zip/broker-1/server.log", "lines"] == 10
    assert f.loc[f"{inner}/broker-2/server.log.1", "lines"] == 600_000  # ~60 MB streamed, never held
    assert f.loc[f"{inner}/level-3.zip/level-4.zip/broker-4/server.log", "host"] == "broker-4"
    deepest = f.loc[f"{inner}/level-3.zip/level-4.zip/level-5.zip"]
    assert deepest.format == "not read" and "4 deep at most" in deepest.error
    assert run.rss_mb < 450, run.rss_mb  # the nested archives went through temporary files


@pytest.mark.slow
def test_many_small_files_make_few_row_groups_and_memory_stays_flat(root, tmp_path):
    generate.small_files(root, 500, "small-500", hosts=20)
    generate.small_files(root, 5000, "small-5000", hosts=20)
    peaks = {}
    for name, n in (("small-500", 500), ("small-5000", 5000)):
        run = run_cli("ingest", str(root / name), "--out", str(tmp_path / name), "--no-progress")
        assert run.rc == 0, run.err
        meta = pq.ParquetFile(tmp_path / name / "events.parquet").metadata
        assert meta.num_rows == n and meta.num_row_groups == 1, meta  # was one row group per file
        assert meta.serialized_size < 64 * 1024
        peaks[n] = run.rss_mb
    # 4,500 more files: a few KB each at most (it was ~17 KB a file, 1.7 GB for 100,000)
    assert peaks[5000] - peaks[500] < 45, peaks


def test_a_log_behind_many_links_is_read_once(root):
    generate.symlink_fan_in(root, links=33)
    b = kitlib.load_bundle(root / "symlink-fan-in")
    assert len(b.auth_failures) == 12  # 12 real failures (408 when every link was read)
    f = files_of(b)
    assert (f["format"] != "not read").sum() == 1 and f.loc["broker-1/server.log", "lines"] == 17
    for rel in ("broker-1/copy-1.log", "broker-1/copy-3.log", "broker-2/server.log"):  # copy-3 links to copy-2
        assert f.loc[rel, "error"].endswith("link to broker-1/server.log, read once there"), rel
    assert f.loc["alias", "error"].endswith("link to broker-1, read once there")
    assert b.summary.hosts == ["broker-1"]


def test_hard_links_are_read_once(tmp_path):
    (tmp_path / "b" / "broker-1").mkdir(parents=True)
    (tmp_path / "b" / "broker-1" / "server.log").write_bytes(generate.log_lines(3))
    os.link(tmp_path / "b" / "broker-1" / "server.log", tmp_path / "b" / "broker-1" / "server.log.bak")
    srcs, skipped = discover_all(tmp_path / "b")
    assert [s.rel for s in srcs] == ["broker-1/server.log"]
    assert skipped[0].reason == "hard link to broker-1/server.log, read once there"


def test_a_raw_bundle_is_never_taken_for_kit_output(root, tmp_path):
    generate.crafted_store(root)
    bundle = root / "crafted-store"
    assert not is_store(bundle)
    b = kitlib.load_bundle(bundle)
    assert b.summary.hosts == ["broker-1"] and b.summary.bundle.endswith("crafted-store")
    assert not b.events["message"].str.contains("FORGED").any()
    f = files_of(b)
    for rel in ("summary.json", "events.parquet", "files.parquet"):
        assert f.loc[rel, "format"] == "not read", rel
    for args in (("triage", str(bundle)), ("triage", str(bundle), "--json"), ("summary", str(bundle))):
        rc, out, err = cli(*args)
        assert "FORGED" not in out and "forged-host" not in out, (args, out)
    # the kit's own output is still one, by its marker; without it, it is a folder of files
    out = tmp_path / "o"
    kitlib.ingest(bundle, out, progress=False)
    assert is_store(out) and kitlib.load_bundle(out).store == out
    (out / ".kitlib-output").unlink()
    assert not is_store(out)


def test_file_names_with_newlines_print_no_forged_line(root, tmp_path):
    generate.odd_names(root)
    rc, out, err = cli("ingest", str(root / "odd-names"), "--out", str(tmp_path / "o"), "--no-progress")
    assert rc == 0, err
    for text in (out, cli("triage", str(tmp_path / "o"))[1]):
        lines = text.splitlines()
        assert not [ln for ln in lines if ln.startswith(("error    broker-9", "not read FORGED"))], text
        assert "notes\\nerror    broker-9: FORGED disk failure.txt" in text  # shown, escaped, on its line


def test_empty_files_are_listed_as_empty(root):
    generate.odd_names(root)
    b = kitlib.load_bundle(root / "odd-names")
    f = files_of(b)
    for rel in ("broker-1/empty.log", "broker-1/empty.log.1.gz", "broker-2/server.log"):
        assert f.loc[rel, "format"] == "empty" and f.loc[rel, "lines"] == 0 and not f.loc[rel, "error"], rel
    assert "empty" not in b.summary.unknown_files and b.summary.formats["empty"] == 3
    from kitlib.gaps import gaps_text

    assert "broker-1/empty.log: empty (no content)" in gaps_text(b)


@pytest.mark.slow
def test_a_dask_output_reads_with_hive_partitioning_duckdb_and_pandas(tmp_path):
    import duckdb
    import pyarrow.dataset as ds

    from kitlib.ingestion.distributed import ingest_on_dask

    bundle = tmp_path / "b"
    for host, n in (("broker-1", 30), ("broker 2", 20)):  # a host name that needs escaping in a path
        (bundle / host).mkdir(parents=True)
        (bundle / host / "server.log").write_bytes(generate.log_lines(n))
    (bundle / "broker-1" / "metrics.prom").write_text('kafka_server_x{topic="t"} 1 1795391000000\n')
    out = tmp_path / "dist"
    ingest_on_dask(bundle, out, workers=1, progress=False, log=lambda *a: None)
    want = {"broker-1": 30, "broker 2": 20}
    hive = ds.dataset(out / "events", partitioning="hive").to_table().to_pandas()
    assert hive.groupby("host").size().to_dict() == want
    duck = duckdb.sql(
        f"select host, count(*) n from read_parquet('{out}/events/**/*.parquet', hive_partitioning=true) group by host"
    ).fetchall()
    assert dict(duck) == want
    assert pd.read_parquet(out / "events").groupby("host", observed=True).size().to_dict() == want
    b = kitlib.load(out)  # the kit's own reads: the table, a pushed-down host filter, DuckDB
    assert b.events.groupby("host", observed=True).size().to_dict() == want
    assert len(b.select("events", ["line"], host=["broker 2"])) == 20
    assert dict(b.sql("select host, count(*) n from events group by host").values.tolist()) == want
    assert json.loads((out / "summary.json").read_text())["rows"]["events"] == 50
