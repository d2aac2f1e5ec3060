"""Columns read by their categories' codes (cluster_health/codes.py) give what the row-by-row
conversions they replace gave, and an evidence extent counted from its two parts (rows with and
without a line number) is the count of the rows ``extent_rows`` joins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib.findings import Finding, evidence_extent
from kitlib.findings.extent import extent_rows
from kitlib.investigations.cluster_health.analysis import node_col, node_events, node_ids
from kitlib.investigations.cluster_health.codes import host_ids, text_values

HOSTS = ["broker-2", None, "broker-1", "broker-9", "broker-2", None]


@pytest.mark.parametrize("dtype", ["category", "string", object])
def test_host_ids_are_the_map_of_each_rows_host(dtype):
    ids = {"broker-1": 1, "broker-2": 2}
    host = pd.Series(HOSTS, dtype=dtype, index=[5, 3, 1, 0, 2, 4])
    got = host_ids(host, ids)
    want = host.astype("string").map(ids).astype("Float64")
    pd.testing.assert_series_equal(got, want, check_names=False)


@pytest.mark.parametrize("dtype", ["category", object])
def test_text_values_are_astype_str(dtype):
    values = pd.Series(["b1/server.log", "b2/server.log", "b1/server.log"], dtype=dtype)
    assert text_values(values).tolist() == values.astype(str).to_numpy().tolist()
    missing = pd.Series(["b1/server.log", None, "b2/server.log"], dtype="category")
    got, want = text_values(missing), missing.astype(str).to_numpy()
    assert got.dtype == want.dtype == object
    assert [v for v in got if isinstance(v, str)] == [v for v in want if isinstance(v, str)]
    assert pd.isna(got[1]) and pd.isna(want[1])
    # not categorical, not every value a string: the conversion itself
    mixed = pd.Series(["a", None, 3], dtype=object)
    assert text_values(mixed).tolist() == mixed.astype(str).tolist()


def test_node_col_on_a_real_bundle_is_the_row_by_row_map():
    b = sample("controller-failover")
    ne = node_events(b)
    ne = ne.assign(node=ne["node"].mask(np.arange(len(ne)) % 2 == 1))  # every other row without its own
    assert isinstance(ne["host"].dtype, pd.CategoricalDtype) and ne["node"].isna().any()
    ids = node_ids(b)
    by_host = ne["host"].astype("string").map(ids).astype("Float64")
    want = ne["node"].astype("Float64").fillna(by_host).astype("Int64")
    pd.testing.assert_series_equal(node_col(ne, ids), want)


def test_extent_counts_the_rows_extent_rows_joins():
    """A finding with both quoted evidence (some rows without a line) and counted rows of a
    table: the extent from the parts is the extent of the joined frame."""
    b = sample("rebalance-storm")
    ge = b.table("group_events")
    group = ge["group"].dropna().iloc[0]
    f = Finding(
        "rebalance-storm",
        "high",
        "x",
        counted_from={"r": ("group_events", f"kind == 'prepare_rebalance' and group == {group!r}")},
        evidence=[
            {"file": "elsewhere.log", "line": None, "host": "h9", "ts": "2026-01-01T00:00:00+00:00", "text": "a"},
            {"file": "elsewhere.log", "line": None, "host": "h9", "ts": "2026-01-01T00:00:00+00:00", "text": "a"},
            {"file": "elsewhere.log", "line": None, "host": "h9", "ts": "2026-01-01T00:00:01+00:00", "text": "b"},
            {"file": str(ge["file"].iloc[0]), "line": int(ge["line"].iloc[0]), "host": "", "ts": None, "text": "c"},
        ],
    )
    d = extent_rows(f, b)
    ext = evidence_extent(f, b)
    lines = int(d["line"].notna().sum())
    assert (ext.lines, ext.other) == (lines, len(d) - lines) and ext.other == 2
    assert ext.hosts == tuple(sorted(h for h in d["host"].unique() if h != ""))
    assert ext.files == sum(1 for x in d["file"].unique() if x != "")
    assert (ext.first, ext.last) == (d["ts"].min(), d["ts"].max())
    # the table's rows the query selects, each once, beside the evidence
    sel = ge.query(f"kind == 'prepare_rebalance' and group == {group!r}", engine="python")
    assert lines == len(
        pd.MultiIndex.from_arrays([sel["file"].astype(str), sel["line"]]).union(
            pd.MultiIndex.from_arrays([[str(ge["file"].iloc[0])], [int(ge["line"].iloc[0])]])
        )
    )
    assert np.isin(["h9"], list(ext.hosts)).all()


def test_triage_extents_are_unchanged_by_the_parts():
    """Every finding's extent of a sample, counted by triage, equals the one counted from the
    joined frame of extent_rows."""
    b = sample("rebalance-storm")
    for f in kitlib.triage(b).findings:
        d = extent_rows(f, b)
        lines = int(d["line"].notna().sum())
        assert (f.extent.lines, f.extent.other) == (lines, len(d) - lines), f.id


def test_the_earliest_rows_and_the_kinds_counted_are_what_sorting_and_astype_give():
    """earliest(rows, n) is rows.sort_values("ts").head(n) with ties, missing times and an index
    that is not 0..n; text_counts(col) is col.astype(str).value_counts(), ties included, on a
    categorical column with unused categories and on text."""
    from kitlib.investigations.cluster_health.codes import earliest, text_counts

    rng = np.random.default_rng(7)
    n = 5000
    ts = pd.Series(pd.to_datetime(rng.integers(0, 40, n), unit="s", utc=True))  # many ties
    ts[rng.random(n) < 0.1] = pd.NaT
    rows = pd.DataFrame({"ts": ts, "x": np.arange(n)}, index=rng.permutation(n) * 3)
    for k in (0, 1, 8, 200, n + 5):
        pd.testing.assert_frame_equal(earliest(rows, k), rows.sort_values("ts").head(k))
    kinds = ["fenced", "broker_failed", "zk_session_expired", "heartbeat_timeout"]
    col = pd.Series(pd.Categorical(rng.choice(kinds[:3], n), categories=kinds))
    tied = pd.Series(pd.Categorical(["b", "a"] * 50, categories=["a", "b", "c"]))
    for c in (col, tied, col.astype("string")):
        pd.testing.assert_series_equal(text_counts(c), c.astype(str).value_counts())


def test_rows_repeating_a_file_and_line_are_found_as_a_frame_finds_them():
    """_repeated (an extent's rows told apart by file and line) is DataFrame.duplicated of the two
    columns: with lines close together (one key) and lines too far apart for one (the frame)."""
    from kitlib.findings.extent import _repeated

    rng = np.random.default_rng(9)
    file = rng.integers(0, 5, 20000)
    for line in (rng.integers(1, 300, 20000), rng.choice([-(2**62), 3, 2**62], 20000)):
        want = pd.DataFrame({"f": file, "l": line}).duplicated().to_numpy()
        assert (_repeated(file, line) == want).all() and want.any() and not want.all()
    assert _repeated(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
