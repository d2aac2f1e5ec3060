"""Which notebooks a report runs (investigations' relevance) on an ingest output: the same answer as
on the bundle in memory, without reading a stored table whole (on a big bundle the group lines
with their text are hundreds of MB, and the report's own process asks before its notebooks run).
And the consumer_groups notebook's group lines: the columns it asks for, not the text."""

import pandas as pd
import pytest
from samples import SAMPLE_DATA, sample

import kitlib
from kitlib import registry
from kitlib.ingestion.store import stored_tables
from kitlib.investigations.consumer_groups import rebalances

# group lines, remote log lines (a column condition on a stored table), metrics (a column
# condition on a table that is not stored) and requests
BUNDLES = ["rebalance-storm", "remote-storage", "down-conversion"]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Sample bundle name -> its ingest output (derived tables written), each ingested once."""
    outs: dict = {}

    def get(name):
        if name not in outs:
            outs[name] = tmp_path_factory.mktemp(name) / "out"
            kitlib.ingest(SAMPLE_DATA / name, outs[name], progress=False, derive=True)
        return outs[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", BUNDLES)
def test_relevance_on_a_store_is_the_bundles_and_reads_no_stored_table_whole(stored, name):
    out = stored(name)
    registry.load()
    stored = kitlib.load(out)
    on_disk = set(stored_tables(out))
    assert "group_events" in on_disk or name != "rebalance-storm"
    got = {inv.name: inv.relevant(stored) for inv in registry.investigations()}
    want = {inv.name: inv.relevant(sample(name)) for inv in registry.investigations()}
    assert got == want
    assert any(got.values())
    assert not on_disk & set(stored.tables), "a stored table was read whole"
    # a column condition on a stored table read that column alone
    for table, columns, _ in stored.parts:
        assert table in on_disk and len(columns) == 1


@pytest.mark.slow  # the ingest of its sample, when no test before made it
def test_relevance_counts_rows_on_a_store_with_none(stored):
    """A stored table with no rows makes nothing relevant; one with rows does, by its count."""
    out = stored("rebalance-storm")
    registry.load()
    stored = kitlib.load(out)
    assert stored.rows("group_events") > 0 and stored.rows("cleaner_runs") == 0
    assert registry.investigation("consumer_groups").relevant(stored)
    assert not registry.investigation("compaction").relevant(stored)
    assert not stored.tables


@pytest.mark.slow  # the ingest of its sample, when no test before made it
def test_group_rows_with_more_columns_are_the_tables_rows_without_their_text(stored):
    """The notebook's read: the detectors' columns and the ones it adds, every row as the whole
    table has it, and no message; a bundle in memory gives its table."""
    b = kitlib.load(stored("rebalance-storm"))
    got = rebalances.group_rows(b, ["member", "members", "kind"])
    wanted = [*rebalances.GROUP_COLUMNS, "member", "members"]
    assert set(got.columns) == set(wanted) and "message" not in got.columns
    whole = kitlib.load(stored("rebalance-storm")).table("group_events")
    assert len(got) == len(whole) > 0
    text = [c for c in wanted if c not in rebalances.GROUP_CATEGORIES]
    pd.testing.assert_frame_equal(got[text], whole[text])
    for c in rebalances.GROUP_CATEGORIES:  # the group as a category, the same values
        pd.testing.assert_series_equal(got[c], whole[c].astype("category"))
    assert not b.tables
    mem = sample("rebalance-storm")
    held = rebalances.group_rows(mem, ["member"])
    pd.testing.assert_frame_equal(held.astype({"group": "string"}), mem.table("group_events"))
    assert rebalances.group_rows(mem, ["member"]) is held  # made once while the table is the same
