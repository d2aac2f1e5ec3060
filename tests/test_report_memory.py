"""What the notebooks of a report read from a bundle's store: the cells that chart or count log
records push their columns and filters down to the Parquet scan instead of loading the events, so
no kernel of a big bundle's report holds its log; and what they show is what the whole table gave."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pandas as pd
import pytest

import kitlib
from kitlib.investigations.cluster_health import charts

ROOT = Path(__file__).resolve().parent.parent


def _cell(notebook: str, needle: str) -> str:
    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    found = [c.source for c in nb.cells if c.cell_type == "code" and needle in c.source]
    assert len(found) == 1, f"{notebook}: one code cell with {needle!r}"
    return found[0]


@pytest.mark.slow
@pytest.mark.parametrize("window", [False, True])
def test_cluster_health_warn_error_chart_reads_no_events_whole(tmp_path, window):
    kitlib.ingest(ROOT / "sample_data" / "isr-flapping", tmp_path / "kit", progress=False)
    whole = kitlib.open(tmp_path / "kit")
    start = end = None
    if window:  # a window cutting the WARN records in two, as a pinned view passes START and END
        warn = whole.select("events", ["ts"], level=["WARN", "ERROR"])["ts"].sort_values()
        lo, hi = whole.span()
        start, end = warn.iloc[len(warn) // 2], hi
    bundle = kitlib.open(tmp_path / "kit", None, start, end)
    got = eval(_cell("cluster_health.ipynb", "view.log_rates("), {"view": charts, "bundle": bundle})
    assert "events" not in bundle.tables and bundle.lazy("events")
    want = charts.log_rates(kitlib.open(tmp_path / "kit", None, start, end).table("events"))
    assert got.to_dict() == want.to_dict()  # an Altair chart: the sample has WARN records in the window
    rows = got.to_dict()["datasets"]
    counted = sum(r["records"] for d in rows.values() for r in d)
    total = len(whole.select("events", ["ts"], level=["WARN", "ERROR", "FATAL"]))
    assert 0 < counted < total if window else counted == total


@pytest.mark.slow
def test_connect_offsets_counts_the_log_records_without_reading_them(tmp_path):
    kitlib.ingest(ROOT / "sample_data" / "connect-offsets", tmp_path / "kit", progress=False)
    src = _cell("connect_offsets.ipynb", "log records")
    assert "bundle.events" not in src and "bundle.rows('events')" in src
    bundle = kitlib.open(tmp_path / "kit")
    n = bundle.rows("events")
    assert "events" not in bundle.tables
    assert (
        n
        == len(kitlib.open(tmp_path / "kit").table("events"))
        == len(kitlib.open(ROOT / "sample_data" / "connect-offsets").events)
    )
    assert n > 100


@pytest.mark.slow
def test_changes_on_a_store_spill_past_their_memory_bound_with_the_same_answer(tmp_path, monkeypatch):
    """What changed, on a store of a generated broker log beside a broker's ISR storm (the sample's),
    is the same when DuckDB may hold 64 MB (it spills to a folder of its own) as unbounded; that
    folder is gone once the comparison is done."""
    import gc
    import shutil
    import sys
    import tempfile

    import kitlib.changes as ch

    sys.path.insert(0, str(ROOT / "bench"))
    from genlog import generate

    root = tmp_path / "b"
    (root / "broker-1").mkdir(parents=True)
    with open(root / "broker-1" / "server.log", "wb") as fh:
        generate(12 << 20, fh, seed=3)
    # a second broker whose log is the sample's ISR storm: its span is the window to compare
    (root / "broker-2").mkdir()
    shutil.copy(ROOT / "sample_data" / "isr-flapping" / "broker-2" / "server.log", root / "broker-2" / "server.log")
    kitlib.ingest(root, tmp_path / "kit", progress=False)
    storm = kitlib.open(tmp_path / "kit").select("events", ["ts"], host=["broker-2"])["ts"]
    window = (storm.min(), storm.max())
    spills = tmp_path / "tmp"
    spills.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spills))
    got = {}
    for bound in ("64MB", "8GB"):
        monkeypatch.setattr(ch, "DUCKDB_MEMORY", bound)
        got[bound] = ch.changes(kitlib.open(tmp_path / "kit"), window, top=50)
        gc.collect()
        assert list(spills.iterdir()) == []
    a, b = got["64MB"], got["8GB"]
    assert a.records == b.records and a.records[1] > 50_000
    assert len(a.overall) or len(a.per_host), "a generated log's window differs from its rest somewhere"
    pd.testing.assert_frame_equal(a.overall, b.overall)
    pd.testing.assert_frame_equal(a.per_host, b.per_host)


@pytest.mark.slow
def test_cited_lines_from_a_log_s_first_to_last_line_hold_only_the_lines_shown(tmp_path):
    """The summary page quotes evidence from the first to the last line of a big log: the lines
    come back with their context as the file has them, and reading them holds those lines only,
    not every line between (which took 1.7 GB on the 1 GB mix)."""
    import sys
    import tracemalloc

    from kitlib.report.evidence import cited_lines, redact_line
    from kitlib.sources.files import CHUNK

    sys.path.insert(0, str(ROOT / "bench"))
    from genlog import generate

    (tmp_path / "broker-1").mkdir()
    log = tmp_path / "broker-1" / "server.log"
    with open(log, "wb") as fh:
        generate(8 * CHUNK, fh, seed=5)
    lines = log.read_bytes().decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    cited = [1, 2, len(lines) // 3, len(lines) // 2, len(lines) - 1, len(lines)]
    evidence = [{"file": "broker-1/server.log", "line": n} for n in cited]
    tracemalloc.start()
    got = cited_lines(tmp_path, evidence)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # a few blocks of the file at a time and the lines shown (every line as text: over 8 blocks)
    assert peak < 5 * CHUNK
    assert sorted(n for _, n in got) == cited
    for n in cited:
        before, line, after = got[("broker-1/server.log", n)]
        assert line == redact_line(lines[n - 1])
        assert before == ([redact_line(lines[n - 2])] if n > 1 else [])
        assert after[:1] == ([redact_line(lines[n])] if n < len(lines) else [])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["isr-flapping", "log-dir-failure"])
def test_cluster_health_per_broker_counts_warnings_without_reading_the_log(tmp_path, name):
    """per_broker's WARN and ERROR counts come from those records' host and level only: on a store
    the events stay on disk, and the table is the one the raw bundle (all in memory) gives."""
    from kitlib.investigations.cluster_health import analysis

    kitlib.ingest(ROOT / "sample_data" / name, tmp_path / "kit", progress=False)
    stored = kitlib.open(tmp_path / "kit")
    got = analysis.per_broker(stored)
    assert "events" not in stored.tables
    want = analysis.per_broker(kitlib.open(ROOT / "sample_data" / name))
    pd.testing.assert_frame_equal(got, want)
    assert (got["warn"] + got["error"]).sum() > 0
