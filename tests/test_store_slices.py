"""Columns of a stored table read slice by slice (``ingestion/store._declared_slices``) come as a
read of the whole table gives them: the same values, dtypes, categories and missing values."""

import pandas as pd
import pytest

import kitlib
from kitlib import tables
from kitlib.ingestion import store


@pytest.mark.parametrize("fill_rows", [13, 1 << 20])
@pytest.mark.parametrize("bundle", ["isr-flapping", "log-dir-failure", "auth-failures"])
def test_columns_read_in_slices_are_the_whole_tables_columns(tmp_path, monkeypatch, bundle, fill_rows):
    from samples import SAMPLE_DATA

    kitlib.ingest(SAMPLE_DATA / bundle, tmp_path / "kit", progress=False, derive=True)
    monkeypatch.setattr(store, "SLICE_ROWS", 7)  # many slices, and a short last one
    # the fixed-width columns converted a few slices at a time (two, a short last group), or at once
    monkeypatch.setattr(store, "FILL_ROWS", fill_rows)
    seen = 0
    for name, path in sorted(store.stored_tables(tmp_path / "kit").items()):
        if name not in tables.SCHEMAS:
            continue
        dataset, _ = store._scan(path, name, None)
        names = list(dataset.schema.names)
        for cols in (names, [c for c in names if c != "message"], names[-3:]):
            got = store.read_table(path, name, columns=cols, declared=True)
            want = store._declared(name, tables.contiguous(dataset.to_table(columns=cols)))
            pd.testing.assert_frame_equal(got, want)
            for c in got.columns:
                if isinstance(got[c].dtype, pd.CategoricalDtype):
                    assert list(got[c].cat.categories) == list(want[c].cat.categories)
                if str(got[c].dtype) == "string":
                    assert got[c].array._pa_array.num_chunks <= 1, (name, c)
        seen += len(want) > 7
    assert seen


@pytest.mark.parametrize("bundle", ["isr-flapping", "log-dir-failure"])
def test_text_columns_asked_as_categories_are_the_texts_as_categories(tmp_path, monkeypatch, bundle):
    """The cluster-health views hold their text columns of few values as categories: read from
    the store in many slices, each equals the column's text made a category by pandas (same
    categories in the same order, same codes, same missing rows)."""
    from samples import SAMPLE_DATA

    from kitlib.investigations.cluster_health.analysis import CHANGE_CATEGORIES, NODE_CATEGORIES

    kitlib.ingest(SAMPLE_DATA / bundle, tmp_path / "kit", progress=False, derive=True)
    monkeypatch.setattr(store, "SLICE_ROWS", 3)
    stored = store.stored_tables(tmp_path / "kit")
    rows = 0
    for name, cats in (("partition_changes", CHANGE_CATEGORIES), ("node_events", NODE_CATEGORIES)):
        whole = store.read_table(stored[name], name)
        cols = ["ts", *cats, "line"]
        for path_rows in (None, [2, 0, 1]):
            if path_rows is not None and len(whole) < 3:
                continue
            got = store.read_table(stored[name], name, columns=cols, declared=True, categories=cats, rows=path_rows)
            want = whole if path_rows is None else whole.iloc[path_rows].reset_index(drop=True)
            for c in cats:
                pd.testing.assert_series_equal(got[c], want[c].astype("category"), check_names=False)
            pd.testing.assert_series_equal(got["line"], want["line"], check_names=False)
        rows += len(whole)
    assert rows


def test_as_categories_of_pieces_with_their_own_dictionaries():
    """Pieces whose values differ (each read slice encodes its own), missing values, text beyond
    ASCII, and columns with no value at all: the categories are sorted as pandas sorts text."""
    import pyarrow as pa

    pieces = [["3,1", None, "é", "3,1"], [], ["2", "", None], ["zeta", "3,1", "Z"]]
    col = pa.chunked_array([pa.array(p, pa.large_string()) for p in pieces], pa.large_string())
    flat = [v for p in pieces for v in p]
    want = pd.Series(flat, dtype="string").astype("category")
    got = store.as_categories(col)
    pd.testing.assert_series_equal(got, want)
    assert list(got.cat.categories) == ["", "2", "3,1", "Z", "zeta", "é"]
    assert got.cat.codes.tolist() == [2, -1, 5, 2, 1, 0, -1, 4, 2, 3]
    none = store.as_categories(pa.chunked_array([pa.nulls(4, pa.large_string())]))
    pd.testing.assert_series_equal(none, pd.Series([None] * 4, dtype="string").astype("category"))
    empty = store.as_categories(pa.chunked_array([], pa.large_string()))
    assert len(empty) == 0 and isinstance(empty.dtype, pd.CategoricalDtype)


def test_a_number_column_with_no_value_costs_no_memory_a_row(tmp_path):
    """A stored number or flag column with no value in any row (the Parquet footers say so) comes
    as missing values that take a few bytes in all, not nine a row; a column with one value in
    its last row is read as before."""
    import mmap

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitlib import registry

    registry.load()  # (the table is declared by its investigation)
    rows = 200_000
    name = "node_events"
    t = tables.to_arrow(name, tables.conform(name, pd.DataFrame({"line": np.arange(rows), "kind": ["fenced"] * rows})))
    last = np.zeros(rows, bool)
    last[-1] = True
    t = t.set_column(t.schema.get_field_index("epoch"), "epoch", pa.array(np.where(last, 7, 0), pa.int64(), mask=~last))
    pq.write_table(t, tmp_path / "node_events.parquet", row_group_size=50_000)
    got = store.read_table(
        tmp_path / "node_events.parquet", name, columns=["line", "waited_ms", "epoch"], declared=True
    )
    waited, epoch = got["waited_ms"].array, got["epoch"].array
    assert str(waited.dtype) == "Int64" and waited.isna().all() and len(waited) == rows
    assert epoch.isna().sum() == rows - 1 and epoch[rows - 1] == 7
    assert got["line"].tolist()[-3:] == [rows - 3, rows - 2, rows - 1]

    # the missing column's values are in pages never written, not in the process's heap
    def holder(a):
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a.obj if isinstance(a, memoryview) else a

    assert isinstance(holder(waited._data), mmap.mmap) and not isinstance(holder(epoch._data), mmap.mmap)
    # and it is a column like any other: a value set in it is set
    got.loc[got["line"] < 2, "waited_ms"] = 5
    assert got["waited_ms"].tolist()[:3] == [5, 5, pd.NA] and got["waited_ms"].isna().sum() == rows - 2


def test_a_column_with_no_value_is_the_process_own_after_a_fork():
    """The detectors' second process is forked: a value it sets in a column with no value (its
    pages a private mapping) is its own, never seen by the process it was forked from."""
    import os

    import numpy as np

    values = store._untouched_zeros(100_000, np.int64)
    pid = os.fork()
    if pid == 0:  # the child writes every value, then is gone
        values[:] = 7
        os._exit(0 if int(values.sum()) == 700_000 else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not values.any()
