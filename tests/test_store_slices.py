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
