"""Which notebooks a report runs (investigations' relevance) on an ingest output: the same answer as
on the bundle in memory, without reading a stored table whole (on a big bundle the group lines
with their text are hundreds of MB, and the report's own process asks before its notebooks run)."""

import pytest
from samples import SAMPLE_DATA, sample

import kitlib
from kitlib import registry
from kitlib.ingestion.store import stored_tables

# group lines, remote log lines (a column condition on a stored table), metrics (a column
# condition on a table that is not stored) and requests
BUNDLES = ["rebalance-storm", "remote-storage", "down-conversion"]


@pytest.mark.slow
@pytest.mark.parametrize("name", BUNDLES)
def test_relevance_on_a_store_is_the_bundles_and_reads_no_stored_table_whole(tmp_path, name):
    out = tmp_path / "out"
    kitlib.ingest(SAMPLE_DATA / name, out, progress=False, derive=True)
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
    for table, columns in stored.parts:
        assert table in on_disk and len(columns) == 1


@pytest.mark.slow
def test_relevance_counts_rows_on_a_store_with_none(tmp_path):
    """A stored table with no rows makes nothing relevant; one with rows does, by its count."""
    out = tmp_path / "out"
    kitlib.ingest(SAMPLE_DATA / "rebalance-storm", out, progress=False, derive=True)
    registry.load()
    stored = kitlib.load(out)
    assert stored.rows("group_events") > 0 and stored.rows("cleaner_runs") == 0
    assert registry.investigation("consumer_groups").relevant(stored)
    assert not registry.investigation("compaction").relevant(stored)
    assert not stored.tables
