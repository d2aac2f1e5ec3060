"""One time window for every read: ``start <= time < end`` whether a table is cut in memory, read
from Parquet with the filter pushed down, or asked through DuckDB, and every investigation keeps
to it."""

from __future__ import annotations

import pandas as pd
import pytest

import kitlib
from kitlib import registry, tables
from kitlib.bundle import window
from kitlib.window import Window
from tests.samples import SAMPLE_DATA, sample


def middle_third(bundle) -> tuple[pd.Timestamp, pd.Timestamp]:
    lo, hi = bundle.span()
    third = (hi - lo) / 3
    return lo + third, hi - third


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """Each sample bundle an investigation names, ingested once."""
    out = {}
    root = tmp_path_factory.mktemp("stores")
    for inv in registry.load().values():
        for name in inv.examples:
            if name not in out:
                kitlib.ingest(SAMPLE_DATA / name, root / name)
                out[name] = root / name
    return out


def test_end_is_exclusive_in_every_form(tmp_path):
    times = pd.to_datetime(["2026-11-23 10:00", "2026-11-23 10:01", "2026-11-23 10:02"], utc=True)
    df = pd.DataFrame({"ts": times, "host": ["a", "b", "a"], "n": [1, 2, 3]})
    w = Window.of("2026-11-23 10:00", "2026-11-23 10:02")
    assert w.frame(df)["n"].tolist() == [1, 2]
    assert Window.of(None, None, ["a"]).frame(df)["n"].tolist() == [1, 3]

    import duckdb
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(df), tmp_path / "t.parquet")
    scanned = ds.dataset(str(tmp_path / "t.parquet")).to_table(filter=w.arrow(list(df.columns))).to_pandas()
    assert scanned["n"].tolist() == [1, 2]
    got = duckdb.sql(f"select n from read_parquet('{tmp_path / 't.parquet'}') where {w.sql()} order by n").df()
    assert got["n"].tolist() == [1, 2]


def test_a_window_within_a_window_is_their_overlap():
    outer = Window.of("2026-11-23 10:00", "2026-11-23 11:00", ["a", "b"])
    inner = outer.within(Window.of("2026-11-23 10:30", "2026-11-23 12:00"))
    assert (inner.start, inner.end, inner.hosts) == (
        pd.Timestamp("2026-11-23 10:30", tz="UTC"),
        pd.Timestamp("2026-11-23 11:00", tz="UTC"),
        ("a", "b"),
    )


def cases():
    for inv in registry.load().values():
        for name in sorted(inv.examples):
            yield pytest.param(inv.name, name, id=f"{inv.name}-{name}")


@pytest.mark.slow
@pytest.mark.parametrize("investigation,sample_name", list(cases()))
def test_every_table_an_investigation_shows_lies_in_the_window(investigation, sample_name, stores):
    inv = registry.investigation(investigation)
    whole = sample(sample_name)
    start, end = middle_third(whole)
    host = sorted(whole.files["host"].astype(str).unique())[0]
    for opened in (whole, kitlib.load(stores[sample_name])):
        cut = window(opened, start, end, [host])
        assert cut.window == Window.of(start, end, [host])
        for name in inv.tables:
            df = cut.table(name)
            col = tables.time_column(name)
            if col and col in df.columns and len(df):
                t = df[col]
                assert ((t >= start) & (t < end)).all(), f"{name}: rows outside [{start}, {end})"
            if "host" in df.columns and len(df):
                assert set(df["host"].astype(str)) == {host}, name
        for f in kitlib.triage(cut, [investigation]).findings:
            for row in f.evidence:
                if row.get("ts") is not None:
                    ts = pd.Timestamp(row["ts"])
                    assert start <= ts < end, f"{f.id}: evidence at {ts} outside [{start}, {end})"


@pytest.mark.slow
def test_a_window_cuts_the_restarts_table(tmp_path):
    """START/END cut restarts by when each start-up began, in memory and on an ingest output."""
    from kitlib.bundle import window

    lo, hi = pd.Timestamp("2026-11-23 12:02:00", tz="UTC"), pd.Timestamp("2026-11-23 12:03:00", tz="UTC")
    whole = kitlib.load_bundle(SAMPLE_DATA / "controller-failover")
    assert len(whole.restarts) == 4 and (whole.restarts["start_ts"] < lo).sum() == 3
    kitlib.ingest(SAMPLE_DATA / "controller-failover", tmp_path / "kit", progress=False)
    for b in (whole, kitlib.load(tmp_path / "kit")):
        r = window(b, lo, hi).restarts
        assert r["host"].astype(str).tolist() == ["broker-3"]
        assert ((r["start_ts"] >= lo) & (r["start_ts"] < hi)).all()
        assert len(window(b, None, lo).restarts) == 3
