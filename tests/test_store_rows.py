"""Rows taken by position from a stored table (``Bundle.rows_at``'s scan): the same rows whether
the file is read page by page or through the dataset scanner, across batch boundaries, in the
order asked, repeats included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from kitlib.ingestion import store


def test_rows_by_position_across_batches_as_the_scanner_gives_them(tmp_path):
    n = 3 * store.TAKE_BATCH + 123  # one row group, several batches
    rng = np.random.default_rng(3)
    text = pa.array([None if i % 7 == 0 else f"line {i} " + "x" * int(rng.integers(0, 90)) for i in range(n)])
    table = pa.table({"ts": pa.array(np.arange(n, dtype=np.int64)), "message": text})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=n)
    dataset = ds.dataset(str(path), format="parquet")
    rows = np.r_[n - 1, 0, rng.integers(0, n, 300), store.TAKE_BATCH - 1, store.TAKE_BATCH, 5, 5]
    want = table.take(pa.array(rows))
    got = store._take(dataset, None, ["message", "ts"], rows)  # page by page
    assert got.equals(want.select(["message", "ts"]))
    keeps_all = pc.field("ts") >= 0  # through the dataset scanner
    assert store._take(dataset, keeps_all, ["message"], rows).equals(want.select(["message"]))
    assert store._take(dataset, None, None, rows[:4]).equals(table.take(pa.array(rows[:4])))
    with pytest.raises(IndexError):
        store._take(dataset, None, ["message"], [n])


def test_the_span_from_the_footers_is_the_columns_min_and_max(tmp_path):
    """footer_span gives what min and max over the time column give: across files and row groups,
    past a row group with no time at all, and None when no row holds one; a file written without
    statistics is refused (the caller reads the column then)."""
    import pandas as pd

    rng = np.random.default_rng(5)
    ms = np.sort(rng.integers(1_700_000_000_000, 1_800_000_000_000, 5000))
    times = pa.array(ms, pa.timestamp("ms", tz="UTC"))
    folder = tmp_path / "events"
    (folder / "host=b1").mkdir(parents=True)
    (folder / "host=b2").mkdir(parents=True)
    pq.write_table(pa.table({"ts": times.slice(0, 3000)}), folder / "host=b1" / "part-0.parquet", row_group_size=700)
    nulls = pa.concat_arrays([pa.nulls(900, times.type), times.slice(3000)])  # a first group of no time
    pq.write_table(pa.table({"ts": nulls}), folder / "host=b2" / "part-0.parquet", row_group_size=900)
    lo, hi = store.footer_span(folder)
    assert (lo, hi) == (
        pd.Timestamp(int(ms.min()), unit="ms", tz="UTC"),
        pd.Timestamp(int(ms.max()), unit="ms", tz="UTC"),
    )
    assert str(lo.tz) == "UTC"
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"ts": pa.nulls(10, times.type)}), empty)
    assert store.footer_span(empty) is None
    bare = tmp_path / "bare.parquet"
    pq.write_table(pa.table({"ts": times}), bare, write_statistics=False)
    with pytest.raises(LookupError):
        store.footer_span(bare)
