"""What the notebooks of a report read from a bundle's store: the cells that chart or count log
records push their columns and filters down to the Parquet scan instead of loading the events, so
no kernel of a big bundle's report holds its log; and what they show is what the whole table gave."""

from __future__ import annotations

from pathlib import Path

import nbformat
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
