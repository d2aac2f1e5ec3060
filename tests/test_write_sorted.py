"""Blockwise derived tables written a row group at a time from their spilled pieces
(:func:`kitlib.ingestion.sink.write_sorted`) hold the same rows, values, types and order as the
whole table built as one frame."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kitlib import extract, registry
from kitlib.ingestion import sink
from kitlib.ingestion.derive import scan
from kitlib.ingestion.keys import sort_keys
from kitlib.ingestion.sink import Selection, Written, _take
from kitlib.ingestion.store import ingest

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["isr-flapping", "rebalance-storm", "controller-failover"])
def test_written_as_built_equals_the_whole_frame(name, tmp_path, monkeypatch):
    registry.load()
    ingest(SAMPLES / name, tmp_path / "store", derive=False, progress=False)
    # row groups of a few rows: the sort, the takes and the categories cross many of them
    monkeypatch.setattr(sink, "WRITE_ROWS", 7)
    monkeypatch.setattr(extract, "BATCH_ROWS", 50)
    whole, parts = Selection(tmp_path), Selection(tmp_path / "spill")
    (tmp_path / "spill").mkdir()
    (tmp_path / "dest").mkdir()
    for batch in scan(tmp_path / "store" / "events.parquet", rows=97):
        block = pa.Table.from_batches([batch])
        whole.add(block)
        parts.add(block)
    frames = {t: f for t, f, _ in whole.build()}
    written = {t: f for t, f, _ in parts.build(tmp_path / "dest")}
    direct = [t for t, f in written.items() if isinstance(f, Written)]
    assert any(len(written[t]) > 20 for t in direct)  # the sample has rows in some blockwise table
    for t in direct:
        assert extract.EXTRACTORS[t].blockwise
        got = pq.read_table(tmp_path / "dest" / f"{t}.parquet")
        # the whole frame as the ingest wrote it before (write_derived), read back
        pq.write_table(pa.Table.from_pandas(frames[t], preserve_index=False), tmp_path / "whole.parquet")
        want = pq.read_table(tmp_path / "whole.parquet")
        assert got.schema.equals(want.schema, check_metadata=False), t
        assert got.equals(want), t
        assert got.to_pandas().equals(want.to_pandas()), t
        assert len(written[t]) == len(frames[t])
    assert not list((tmp_path / "spill").glob(".selected-*"))  # spill files removed


def test_take_reads_only_the_batches_it_needs():
    t = pa.Table.from_batches([pa.record_batch({"a": pa.array(np.arange(i * 10, i * 10 + 10))}) for i in range(5)])
    for seed in range(4):
        rows = pa.array(np.random.default_rng(seed).permutation(50)[: 20 + seed])
        assert _take(t, rows).equals(t.take(rows))
    assert _take(t, pa.array([], pa.int64())).num_rows == 0


def test_sort_keys_order_rows_as_their_columns_do():
    """Text keys held as ranks sort the rows as the text does: missing values last, text beyond
    ASCII, a chunk with no row, chunks with their own values, ties broken by the next key."""
    rng = np.random.default_rng(7)
    order = ["ts", "host", "file", "line"]
    hosts = ["broker-2", "broker-10", "broker-1", "Broker-1", "brøker-3", ""]
    files = ["server.log", "server.log.1", "controller.log", "state-change.log"]
    for _ in range(100):
        chunks = []
        for _ in range(int(rng.integers(1, 5))):
            m = int(rng.integers(0, 40))
            chunks.append(
                pa.table(
                    {
                        "ts": pa.array(rng.integers(0, 4, m) * 1000, pa.timestamp("ms", tz="UTC")),
                        "host": pa.array(
                            [None if rng.random() < 0.1 else str(rng.choice(hosts)) for _ in range(m)],
                            pa.large_string(),
                        ),
                        "file": pa.array(
                            [None if rng.random() < 0.1 else str(rng.choice(files)) for _ in range(m)],
                            pa.large_string(),
                        ),
                        "line": pa.array(rng.integers(1, 6, m), pa.int64()),
                    }
                )
            )
        t = pa.concat_tables(chunks)
        keys = sort_keys(t, order)
        assert [keys.column(k).type for k in order] == [t.column("ts").type, pa.int32(), pa.int32(), pa.int64()]
        by = [(k, "ascending") for k in order]
        assert pc.sort_indices(keys, sort_keys=by).equals(pc.sort_indices(t.combine_chunks(), sort_keys=by))


def test_spilled_pieces_keep_their_dictionaries_and_read_back_as_text(tmp_path):
    # pieces as pandas gives them: categories of their own, codes of 8 or 16 bits (300 values),
    # a category column with no value; spilled as dictionaries of one type, read back as text
    import pandas as pd

    many = [f"broker-{i}" for i in range(300)]
    frames = [
        pd.DataFrame({"host": pd.Series(["b", "a", None], dtype="category"), "n": [1, 2, 3]}),
        pd.DataFrame({"host": pd.Series(many, dtype="category"), "n": range(300)}),
        pd.DataFrame({"host": pd.Series([None, None], dtype="string").astype("category"), "n": [7, 8]}),
    ]
    pieces = [pa.Table.from_pandas(f, preserve_index=False) for f in frames]
    assert {p.schema.field("host").type.index_type for p in pieces} == {pa.int8(), pa.int16()}
    sel = Selection(tmp_path)
    for p in pieces:
        sel._keep("demo", p)
    path = sel.close()["demo"]
    with pa.memory_map(str(path)) as f:
        back = pa.ipc.open_stream(f).read_all()
    assert back.schema.field("host").type == pa.dictionary(pa.int32(), pa.large_string())
    assert [len(c.dictionary) for c in back.column("host").chunks] == [2, 300, 0]
    text = back.cast(sel.spill_decoded["demo"])
    assert text.schema.field("host").type == pa.large_string()
    assert text.column("host").to_pylist() == ["b", "a", None, *many, None, None]
    assert text.column("n").to_pylist() == [1, 2, 3, *range(300), 7, 8]
