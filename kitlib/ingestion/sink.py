"""Where parser output goes: held in memory, or (ingest to Parquet) streamed to disk block by
block. Tables derived from log records (the extractors') are built at the end from the records
set aside while the log streamed; an ingest to Parquet can leave them instead to be built on first
use from the stored events (``derive=False``, see :mod:`kitlib.ingestion.derive`)."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kitlib import extract, tables
from kitlib.events import to_pandas
from kitlib.extract import BuildError
from kitlib.formats.logs.matching import annotate
from kitlib.ingestion.blockwise import BlockwiseProcess, BuiltBatch, built_apart, received, tables_built_apart
from kitlib.ingestion.keys import sort_keys
from kitlib.ingestion.memory import lean_allocator, release_memory
from kitlib.redact import REDACTED_BY_PARSER, redact_table

# Parquet statistics are written for these columns only, the ones reads filter on: the bundle's
# window (pyarrow and DuckDB skip a row group by its min and max time) and, in DuckDB queries, a
# host, a file or a range of lines. Levels, loggers and text are in every block, prune nothing,
# and min/max of their strings cost a fifth of the write.
PRUNED_BY = ("ts", "host", "file", "line")
# record times and line numbers rise through a file: delta encoding stores them in a few bits a
# value, without a codec (a third of what zstd on plain values costs, and smaller)
RISING = ("ts", "line")
# a streamed table's rows are written once this many are pending (or ROW_GROUP_BYTES of them):
# the blocks of a big log make a row group each, the rows of many small files are gathered into
# one (a row group per small file gave 100,000 one-row groups, a 66 MB footer, and the writer
# held every group's metadata in memory until it closed). A log block (4 MiB, about 19,000
# records) is written as it comes: at 64 Ki rows three blocks waited, 30 MB more peak on 1 GB.
ROW_GROUP_ROWS = 16 * 1024
ROW_GROUP_BYTES = 16 * 1024 * 1024
COMBINE = 256  # pending small tables are joined this many at a time
# row groups handed to the writer thread and not written yet: the one being written and the next.
# With one, the reading thread waited for each write before it handed on the next block, and the
# parse and match threads ran dry behind it (about 1 s of waiting in a 3 s ingest of the 1 GB log);
# with two, the write of the 1 GB log ends 6 % sooner for about 4 MB more peak. A third gave nothing.
WRITES_AHEAD = 2


def stream_options(schema: pa.Schema) -> dict:
    """The ``pq.ParquetWriter`` options of a streamed table (events, unparsed)."""
    names = schema.names
    rising = [n for n in RISING if n in names]
    zstd = [n for n in names if n not in rising]
    return dict(
        table_options(schema),
        compression={n: "zstd" if n in zstd else "none" for n in names},
        compression_level={n: 1 for n in zstd},  # level 3 took 1.5x the time for the same size on broker logs
        column_encoding={n: "DELTA_BINARY_PACKED" for n in rising},
        write_statistics=[n for n in names if n in PRUNED_BY],
    )


def table_options(schema: pa.Schema) -> dict:
    """The Parquet options of every table written: zstd, a dictionary for the columns Arrow holds
    as one (categories) only (Parquet's default tries one on every text column: 15-25 % of the
    write's CPU on the dense incident's tables, files 5-20 % larger), and a row group handed to
    the encoders at once, not 1,024 rows at a time (a tenth less CPU, the same files)."""
    return dict(
        compression="zstd",
        use_dictionary=[f.name for f in schema if pa.types.is_dictionary(f.type)],
        write_batch_size=4 * ROW_GROUP_ROWS,
    )


class Sink:
    """Collects parser output in memory, or streams the big tables to Parquet."""

    STREAMED = ("events", "unparsed")

    def __init__(self, out: Path | None, derive: bool = True, partition_key: str | None = None, parallel: bool = False):
        self.out = out
        # a column the streamed files leave out: the key of the partition they are moved into
        # (a Dask ingest's ``host``), kept in the rows handed to the extractors
        self.partition_key = partition_key
        self.derive = derive or out is None  # in memory, derived tables are always built
        self.parts: dict[str, list] = {}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.pending: dict[str, list[pa.Table]] = {}  # streamed rows not written yet, per table
        self.pending_size: dict[str, tuple[int, int]] = {}  # their (rows, bytes)
        self.written: set[str] = set()  # derived tables already written to ``out``
        # the records the extractors want (spilled next to the output when streaming); with
        # ``parallel`` (a streaming ingest of a big bundle) picked and built in a second process
        self.selection = (
            Selection(out, BlockwiseProcess(out) if parallel and out is not None else None) if self.derive else None
        )
        self.rows: dict[str, int] = {}
        self.first_ts: int | None = None  # first and last record time seen (ms since the epoch, UTC)
        self.last_ts: int | None = None
        # Parquet writes run on their own thread (one in flight, in order) so that reading
        # and parsing the next blocks overlaps with compressing this one
        self._pool = ThreadPoolExecutor(1) if out is not None else None
        self._writes: deque[Future] = deque()  # in order; at most WRITES_AHEAD
        # a streamed ingest without derived tables (or with them built in a second process)
        # matches each events block's templates on a thread of its own while the next block is
        # parsed (in order, one block in flight)
        self._match = (
            ThreadPoolExecutor(1)
            if out is not None and (self.selection is None or self.selection.remote is not None)
            else None
        )
        self._matching: Future | None = None

    def add(self, name: str, chunk) -> int:
        """Take one chunk of a parser's output. Every chunk is conformed to its table's schema
        and passed through the redaction rules here, on arrival (so a value the table cannot hold
        costs the file it came from, inside the pipeline's per-file guard, and nothing unredacted
        is ever kept or written)."""
        n = chunk.num_rows if isinstance(chunk, pa.Table) else len(chunk)
        if n == 0:
            return 0
        if isinstance(chunk, pa.Table):
            chunk = redact_table(name, chunk, skip=REDACTED_BY_PARSER.get(name, ()))
        elif name in tables.SCHEMAS:
            chunk = tables.conform(name, chunk)
        self.rows[name] = self.rows.get(name, 0) + n
        if name == "events" and self._matching is not None and not isinstance(chunk, pa.Table):
            before = self._matching.result()  # the block before it goes first: rows stay in order
            self._matching = None
            self._matched(before)
        if name == "events" and self._match is not None and isinstance(chunk, pa.Table):
            # each record's Kafka log statement, matched on the redacted text
            self._span(chunk)
            ahead, self._matching = self._matching, self._match.submit(self._annotate, chunk)
            if ahead is not None:
                self._matched(ahead.result())
            return n
        if name == "events":
            # each record's Kafka log statement, matched on the redacted text
            chunk = annotate(chunk) if isinstance(chunk, pa.Table) else chunk
            self._span(chunk)
            if self.selection is not None:
                self.selection.add(chunk)
        if self.out is not None and name in self.STREAMED:
            self._stream(name, chunk)
        else:
            self.parts.setdefault(name, []).append(chunk)
        return n

    def _annotate(self, events: pa.Table) -> pa.Table:
        """On the matcher's thread, one block at a time in order: the block's templates matched,
        then (with a second process) the block handed to the thread that picks the blockwise
        groups' records for it, and the other groups picked here."""
        events = annotate(events)
        if self.selection is not None:
            self.selection.add(events)
        return events

    def _matched(self, events: pa.Table) -> None:
        """An events block matched (and picked from) on the thread (:meth:`_annotate`): to the
        stream."""
        self._stream("events", events)

    def _stream(self, name: str, chunk) -> None:
        """Hold a chunk of a streamed table, written as a row group once enough is held."""
        assert self.out is not None  # streaming only
        at = chunk if isinstance(chunk, pa.Table) else to_arrow(name, chunk)
        if self.partition_key in at.column_names:
            at = at.drop_columns([self.partition_key])
        w = self.writers.get(name)
        if w is None:
            w = self.writers[name] = pq.ParquetWriter(
                self.out / f"{name}.parquet", at.schema, **stream_options(at.schema)
            )
        at = at.cast(w.schema) if at.schema != w.schema else at
        held = self.pending.setdefault(name, [])
        held.append(at)
        if len(held) >= 2 * COMBINE and held[-COMBINE].num_rows < ROW_GROUP_ROWS // COMBINE:
            # many small tables (a file each): their rows joined into one, so that memory holds
            # the rows, not an Arrow table's buffers and metadata per file
            held[-COMBINE:] = [pa.concat_tables(held[-COMBINE:]).combine_chunks()]
        rows, size = self.pending_size.get(name, (0, 0))
        rows, size = rows + at.num_rows, size + at.nbytes
        self.pending_size[name] = (rows, size)
        if rows >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
            self._write(name)

    def _write(self, name: str) -> None:
        """Write the pending rows of streamed table ``name`` as one row group, on the writer thread."""
        held = self.pending.pop(name, [])
        self.pending_size.pop(name, None)
        if not held:
            return
        while len(self._writes) >= WRITES_AHEAD:
            self._writes.popleft().result()
        assert self._pool is not None  # streaming implies a writer thread
        t = held[0] if len(held) == 1 else pa.concat_tables(held)
        self._writes.append(self._pool.submit(self.writers[name].write_table, t, row_group_size=max(t.num_rows, 1)))

    def _span(self, events: pa.Table) -> None:
        lo_hi = pc.min_max(events.column("ts").cast(pa.int64()))  # the events schema keeps ms since the epoch
        lo_ms, hi_ms = lo_hi["min"].as_py(), lo_hi["max"].as_py()
        if lo_ms is None or hi_ms is None:
            return
        self.first_ts = lo_ms if self.first_ts is None else min(self.first_ts, lo_ms)
        self.last_ts = hi_ms if self.last_ts is None else max(self.last_ts, hi_ms)

    def time_span(self) -> list[str] | None:
        """First and last record time of every events chunk seen, as ISO strings (UTC)."""
        if self.first_ts is None or self.last_ts is None:
            return None
        return [pd.Timestamp(t, unit="ms", tz="UTC").isoformat() for t in (self.first_ts, self.last_ts)]

    @property
    def block_errors(self) -> dict[str, BuildError]:
        """Blockwise builders that failed on a batch (the rest of their table still loads)."""
        return self.selection.block_errors if self.selection is not None else {}

    def close_streams(self) -> dict[str, Path]:
        """Finish the Parquet writes and close the spill files; returns the spill file of each
        selection group (streaming only)."""
        if self._matching is not None:
            ahead, self._matching = self._matching, None
            self._matched(ahead.result())
        if self._match is not None:
            self._match.shutdown()
        spilled = self.selection.close() if self.selection is not None else {}
        for name in list(self.pending):
            self._write(name)
        while self._writes:
            self._writes.popleft().result()
        if self._pool is not None:
            self._pool.shutdown()
        for w in self.writers.values():
            w.close()
        return spilled

    def abort(self) -> None:
        """Stop the second process, if any (the ingest was given up)."""
        if self.selection is not None and self.selection.remote is not None:
            self.selection.remote.close()

    def finish(self) -> tuple[dict[str, pd.DataFrame], list[BuildError]]:
        """Close the streams, build every derived table; returns the tables still in memory (all
        of them unless streaming) and the builders that failed."""
        self.close_streams()
        out: dict[str, pd.DataFrame] = {}
        for name, parts in self.parts.items():
            if name == "events":
                df = to_pandas(pa.concat_tables(parts))
            else:
                frames = [p.to_pandas() if isinstance(p, pa.Table) else p for p in parts]
                df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            # every part was conformed and redacted on arrival (add)
            out[name] = tables.conform(name, df, redact=False) if name in tables.SCHEMAS else df.reset_index(drop=True)
        errors: dict[str, BuildError] = {}
        release_memory()
        remote = self.selection.remote if self.selection is not None else None
        if remote is not None:
            # the blockwise tables are put together and written by the second process meanwhile,
            # given the rows file formats put in them (configs: logs + live capture)
            theirs = tables_built_apart()
            filled = {k: out.pop(k) for k in list(out) if k in theirs}
            remote.start_finish({k: v for k, v in filled.items() if len(v)})
            assert self.selection is not None
            # (the blockwise tables built here are written from their spill files, as in one process)
            here = self.selection.build(self.out, {k for k, v in out.items() if len(v)})
            done = {
                k: (n, err)
                for k, n, err, _ in write_derived(((k, v, err) for k, v, err in here if k not in theirs), out, self.out)
            }
            done.update({k: (n, err) for k, n, err in remote.wait()})
            for k in extract.EXTRACTORS:  # in the order one process builds them
                if k in done:
                    n, err = done[k]
                    if err is not None:
                        errors.setdefault(k, err)
                    self.rows[k] = n
                    self.written.add(k)
            return out, list(errors.values())
        keep = {k for k, v in out.items() if len(v)}
        built = self.selection.build(self.out, keep) if self.selection is not None else iter(())
        for k, n, err, v in write_derived(built, out, self.out):
            if err is not None:
                errors.setdefault(k, err)
            self.rows[k] = n
            if v is None:
                self.written.add(k)
            else:
                out[k] = v
        return out, list(errors.values())


class Selection:
    """The records the table extractors want, picked from events chunks as they arrive (by logger
    name and ``contains``, see :func:`kitlib.extract.select`), and the derived tables built from
    them. Blockwise groups are built from batches of about ``BATCH_ROWS`` records as they come and
    only their rows are kept; the other groups' records are kept until :meth:`build`. Kept rows
    are held in memory, or spilled to Arrow stream files in ``spill`` (a streaming ingest's output
    folder), so that thousands of small selections do not pin memory that the parser's big blocks
    then cannot reuse (it measured +250 MB RSS on a 2 GB log)."""

    def __init__(
        self, spill: Path | None = None, remote: BlockwiseProcess | None = None, picks: Callable | None = None
    ):
        self.spill = spill
        self.remote = remote  # picks and builds the blockwise groups in a second process
        # the groups picked here (None: all): with a second process, those that are not blockwise
        self.picks = picks if picks is not None or remote is None else (lambda g: not built_apart(g))
        self.kept: dict[str, list[pa.Table]] = {}
        self.spills: dict[str, pa.ipc.RecordBatchStreamWriter] = {}
        self.spilled: dict[str, Path] = {}  # closed spill files, read back by build()
        # each spilled group's schema in its file, and its columns as their text (what build()
        # reads back for a frame)
        self.spill_schema: dict[str, pa.Schema] = {}
        self.spill_decoded: dict[str, pa.Schema] = {}
        self.pending: dict[str, list[pa.Table]] = {}  # records of blockwise groups not built yet
        self.block_errors: dict[str, BuildError] = {}  # blockwise builders that failed on a batch

    def add(self, events: pa.Table) -> None:
        """Pick what every extractor wants from one chunk of events (with a second process, the
        chunk goes on to it first, and only the groups that are not blockwise are picked here)."""
        if self.remote is not None:
            self.remote.add(events)
        self.take(extract.select(events, self.picks))

    def take(self, picked: dict[str, pa.Table]) -> None:
        """Keep (or batch and build) the records picked from one chunk of events, by group."""
        for g, sel in picked.items():
            if extract.EXTRACTORS[g].blockwise:
                self.pending.setdefault(g, []).append(sel)
                if sum(t.num_rows for t in self.pending[g]) >= extract.BATCH_ROWS:
                    self._build_pending(g)
            else:
                self._keep(g, sel)

    def _build_pending(self, group: str) -> None:
        records = pa.concat_tables(self.pending.pop(group, []), promote_options="permissive")
        if records.num_rows:
            self.built(group, records)

    def built(self, group: str, records: pa.Table) -> None:
        """Build a batch of a blockwise group's records and keep the pieces."""
        self.keep_built(*extract.build_blockwise(group, records))

    def keep_built(self, pieces: dict[str, pa.Table], errors: list[BuildError]) -> None:
        """Keep the pieces one batch was built into (here, or by the ingest's own process) and
        what failed."""
        for err in errors:
            self.block_errors.setdefault(err.table, err)
        for table, piece in pieces.items():
            if piece.num_rows:
                self._keep(table, piece)

    def _keep(self, group: str, sel: pa.Table) -> None:
        if self.spill is None:
            self.kept.setdefault(group, []).append(sel)
            return
        w = self.spills.get(group)
        spilled = self.spill_schema.get(group)
        if w is None or spilled is None:
            # text columns of few values (host, file, level, kind) stay dictionaries, each piece
            # with its own (an Arrow stream replaces them batch by batch): a fifth less to write
            # than their text on the dense incident's node_events, and no text made per row
            spilled = self.spill_schema[group] = pa.schema(
                [pa.field(f.name, _spilled_type(f.type)) for f in sel.schema]
            )
            w = self.spills[group] = pa.ipc.new_stream(self.spill / f".selected-{group}.arrow", spilled)
            self.spill_decoded[group] = pa.schema(
                [pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in sel.schema]
            )
        w.write_table(sel.cast(spilled) if sel.schema != spilled else sel)

    def close(self) -> dict[str, Path]:
        """Build what is pending and close the spill files; returns the spill file of each group."""
        for group in list(self.pending):
            self._build_pending(group)
        for group, w in self.spills.items():
            w.close()
            assert self.spill is not None  # only a spilling selection has writers
            self.spilled[group] = self.spill / f".selected-{group}.arrow"
        self.spills = {}
        return dict(self.spilled)

    def build(self, dest: Path | None = None, keep: frozenset[str] | set[str] = frozenset()):
        """Every derived table, one at a time, as ``(table, frame, error)`` (see
        :func:`kitlib.extract.iter_build`); the spill files are read back and removed. With
        ``dest``, a blockwise table whose pieces were spilled (and not in ``keep``: tables some
        file format also fills) is sorted and written to ``dest`` row group by row group
        instead (see :func:`write_sorted`): its frame is then a :class:`Written`."""
        direct: dict[str, Path] = {}
        for group, path in self.close().items():
            ex = extract.EXTRACTORS.get(group)
            if dest is not None and ex is not None and ex.blockwise and group not in keep:
                direct[group] = path  # kept under the table's own name (built)
                continue
            with pa.memory_map(str(path)) as f:
                back = pa.ipc.open_stream(f).read_all()
            decoded = self.spill_decoded.get(group)
            self.kept[group] = [back.cast(decoded) if decoded is not None and back.schema != decoded else back]
            del back
            path.unlink()
        self.spilled = {}
        kept, self.kept = self.kept, {}
        # the spilled tables sorted and written on threads of their own (Parquet's encoding and
        # compression, Arrow's sort and take let go of the GIL), at most WRITERS at once, while
        # the others are built; each is said in its turn
        pool, writing = None, {}
        if dest is not None and len(direct) > 1:
            to = dest
            pool = ThreadPoolExecutor(WRITERS, thread_name_prefix="kitlib-write")
            writing = {t: pool.submit(write_sorted, t, path, to) for t, path in direct.items()}
        try:
            for table, frame, err in extract.iter_build(kept, to_pandas):
                if table in direct:
                    assert dest is not None  # only then are tables written here
                    path = direct.pop(table)
                    frame = Written(
                        writing.pop(table).result() if table in writing else write_sorted(table, path, dest)
                    )
                yield table, frame, err if err is not None else self.block_errors.get(table)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)


# spilled blockwise tables written at once (each holds its sort keys and a row group)
WRITERS = 2


class Written:
    """A derived table already written to the output folder, and how many rows it has."""

    def __init__(self, rows: int):
        self.rows = rows

    def __len__(self) -> int:
        return self.rows


# rows of a blockwise table converted and written at a time, once sorted (a row group each); 128 Ki
# took the 1 GB mix's first triage from 515-521 to 535-546 MB, 32 Ki to 438-441
WRITE_ROWS = 32 * 1024


def write_sorted(table: str, spilled: Path, dest: Path) -> int:
    """Write blockwise table ``table`` from its spilled pieces (conformed and redacted as built)
    to ``dest``, its rows in the table's order (:attr:`kitlib.extract.Extractor.order`, the
    stable sort one frame gets), a row group at a time: the sort keys are copied out (names as
    ranks, :func:`sort_keys`) and sorted in Arrow, then each row group's rows are taken from the
    spill file mapped afresh (so that memory holds the keys and one row group, not the table nor
    every page of the file; a run of rows already in order is sliced, not taken). The first row
    group is converted through pandas as a whole frame is (each categorical column given the
    categories the whole table has), which gives the file its schema; the others, conformed
    already, are put in that schema in Arrow (:func:`_as_written`), without pandas. Returns the
    number of rows; the spill file is removed."""
    order = list(extract.EXTRACTORS[table].order)

    def mapped() -> pa.Table:
        with pa.memory_map(str(spilled)) as f:
            return pa.ipc.open_stream(f).read_all()

    t = mapped()
    n = t.num_rows
    keys = sort_keys(t, order)  # copied out of the mapped file, text as ranks
    # a whole frame's categorical types: made from every value of the column as conform makes
    # them (tables._cast), so that each row group gets the categories (and their type) one
    # frame would have
    whole: dict[str, pd.CategoricalDtype] = {}
    for f in tables.arrow_schema(table):
        if pa.types.is_dictionary(f.type) and f.name in t.column_names:
            values = pc.unique(t.column(f.name))
            whole[f.name] = pd.Series(values.to_pandas()).astype("string").astype("category").dtype
    del t
    idx = pc.sort_indices(keys, sort_keys=[(k, "ascending") for k in order])
    del keys
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(0, max(n, 1), WRITE_ROWS):
            at = idx.slice(start, WRITE_ROWS).to_numpy().astype(np.int64)
            if len(at) and at[-1] - at[0] == len(at) - 1 and (np.diff(at) == 1).all():
                rows = mapped().slice(at[0], len(at))  # in order already
            else:
                rows = _take(mapped(), pa.array(at))  # the mapped pages let go after
            done = _as_written(rows, writer.schema, whole) if writer is not None else None
            if done is not None and writer is not None:
                del rows
                writer.write_table(done)
                del done
                continue
            df = tables.conform(table, rows.to_pandas(), redact=False)
            del rows
            for c in df.columns:
                if isinstance(df[c].dtype, pd.CategoricalDtype) and c in whole:
                    df[c] = df[c].astype(whole[c])
            at = pa.Table.from_pandas(df, preserve_index=False)
            del df
            if writer is None:
                writer = pq.ParquetWriter(dest / f"{table}.parquet", at.schema, **table_options(at.schema))
            writer.write_table(at.cast(writer.schema) if at.schema != writer.schema else at)
    finally:
        if writer is not None:
            writer.close()
    del idx
    spilled.unlink()
    release_memory()
    return n


def _as_written(rows: pa.Table, schema: pa.Schema, whole: dict[str, pd.CategoricalDtype]) -> pa.Table | None:
    """Conformed rows of a blockwise table put in ``schema`` (the file's, made through pandas
    from its first row group), the values a trip through pandas gives them: each categorical
    column coded against the whole table's categories; or None when a column is missing, or
    would change type other than by a cast."""
    columns = []
    for f in schema:
        if f.name not in rows.column_names:
            return None
        c = rows.column(f.name)
        if pa.types.is_dictionary(f.type):
            if f.name not in whole:
                return None
            cats = pa.array(whole[f.name].categories.astype(object), f.type.value_type)
            if pa.types.is_dictionary(c.type):  # (as spilled) each piece's dictionary coded, then its rows
                chunks = []
                for x in c.chunks:
                    at = pc.index_in(x.dictionary.cast(f.type.value_type), value_set=cats)
                    chunks.append(pa.DictionaryArray.from_arrays(at.take(x.indices).cast(f.type.index_type), cats))
            elif pa.types.is_large_string(c.type):
                codes = pc.index_in(c.cast(f.type.value_type), value_set=cats).cast(f.type.index_type)
                chunks = [pa.DictionaryArray.from_arrays(x, cats) for x in codes.chunks]
            else:
                return None
            c = pa.chunked_array(chunks or [pa.array([], f.type)], f.type)
        elif pa.types.is_dictionary(c.type) or c.type != f.type and not _castable(c.type, f.type):
            return None
        else:
            c = c.cast(f.type)
        columns.append(c)
    return pa.Table.from_arrays(columns, schema=schema)


def _spilled_type(kind: pa.DataType) -> pa.DataType:
    """How a column of a kept piece is spilled: a dictionary of text as one of 32-bit codes over
    large strings (the same type for every piece of the group, whatever pandas gave each), any
    other dictionary as its values, the rest as it is."""
    if not pa.types.is_dictionary(kind):
        return kind
    if pa.types.is_string(kind.value_type) or pa.types.is_large_string(kind.value_type):
        return pa.dictionary(pa.int32(), pa.large_string())
    return kind.value_type


def _castable(have: pa.DataType, want: pa.DataType) -> bool:
    """Types whose values a trip through pandas leaves alone: text to text, integers to integers
    (the same type is never cast)."""
    text = (pa.types.is_string, pa.types.is_large_string)
    return (
        any(f(have) for f in text)
        and any(f(want) for f in text)
        or (pa.types.is_integer(have) and pa.types.is_integer(want))
    )


def write_derived(built, out: dict[str, pd.DataFrame], dest: Path | None):
    """Take each derived table from ``built`` (``(table, frame, error)``, see
    :meth:`Selection.build`), put the rows a file format filled in the same table (``out``)
    first, and write it to ``dest`` (streaming: so derived tables never pile up in memory; the
    table then leaves ``out``); yields ``(table, rows, error, frame or None when written)``."""
    for k, v, err in built:
        if isinstance(v, Written):  # written as it was built (Selection.build with a folder)
            out.pop(k, None)
            yield k, v.rows, err, None
            continue
        if k in out and len(out[k]):  # a table some file format also fills (configs: logs + live capture)
            v = tables.conform(k, pd.concat([out[k], v], ignore_index=True)) if len(v) else out[k]
        n = len(v)
        if dest is not None:
            # already conformed and redacted (iter_build): written as it is, in its declared schema
            # (left to pandas, the columns of an empty categorical came out of Arrow's null type and
            # read back as object, and a table's types depended on which process wrote it)
            at = tables.to_arrow(k, v) if k in tables.SCHEMAS else pa.Table.from_pandas(v, preserve_index=False)
            pq.write_table(at, dest / f"{k}.parquet", **table_options(at.schema))
            del at
            out.pop(k, None)
            del v
            release_memory()
            yield k, n, err, None
        else:
            yield k, n, err, v


def _take(t: pa.Table, rows: pa.Array) -> pa.Table:
    """``t.take(rows)`` batch by batch: only the batches the rows are in are read (a take on the
    whole table joins every batch of each column first)."""
    batches = t.to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches])
    at = rows.to_numpy(zero_copy_only=False).astype(np.int64)
    which = np.searchsorted(starts, at, side="right") - 1
    by = np.argsort(which, kind="stable")
    at, which = at[by], which[by]  # grouped by batch, in order within each
    pieces = []
    for b in np.unique(which):
        lo, hi = np.searchsorted(which, [b, b + 1])
        pieces.append(pa.Table.from_batches([batches[b].take(pa.array(at[lo:hi] - starts[b]))]))
    del batches
    if not pieces:
        return t.schema.empty_table()
    joined = pa.concat_tables(pieces).combine_chunks()
    back = np.empty(len(by), np.int64)
    back[by] = np.arange(len(by))
    return joined.take(pa.array(back))


def _blockwise_main() -> None:
    """The second process of :class:`BlockwiseProcess` when started as an interpreter of its own
    (its arguments: the socket's descriptor, the output folder and the batch size)."""
    from multiprocessing.connection import Connection

    run_builder(Connection(int(sys.argv[1])), sys.argv[2], int(sys.argv[3]))


def run_builder(conn, out: str, batch_rows: int) -> None:
    """What the second process of :class:`BlockwiseProcess` does, started either way (an
    interpreter of its own, or forked ahead by :func:`kitlib.ingestion.blockwise.fork_ahead`):
    events blocks in through ``conn``, blockwise tables written to ``out``."""
    from kitlib import registry

    extract.BATCH_ROWS = batch_rows
    registry.load()
    lean_allocator()  # a process of the kit's own, which builds from blocks of the log
    try:
        # picks the blockwise groups and keeps (spills) the built pieces as a one-process ingest does
        selection = Selection(Path(out), picks=built_apart)
        filled: dict = {}
        for picked in received(conn):
            if isinstance(picked, dict):
                selection.take(picked)
            elif isinstance(picked, BuiltBatch):
                selection.keep_built(picked.pieces, picked.errors)
            else:
                filled = picked.filled
        release_memory()
        mine = tables_built_apart()
        keep = {k for k, v in filled.items() if len(v)}
        built = ((k, v, err) for k, v, err in selection.build(Path(out), keep) if k in mine)
        conn.send(("ok", [(k, n, err) for k, n, err, _ in write_derived(built, filled, Path(out))]))
    except EOFError:  # the ingest stopped: nothing to hand back
        return
    except Exception as e:  # noqa: BLE001 - handed back, the ingest says it
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def to_arrow(name: str, df: pd.DataFrame) -> pa.Table:
    df = tables.conform(name, df) if name in tables.SCHEMAS else df
    return pa.Table.from_pandas(df, preserve_index=False)
