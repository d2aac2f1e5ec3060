"""The Parquet store: a bundle ingested once into ``<out>/<table>.parquet`` plus
``summary.json``, and read back without parsing anything again."""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kitlib import tables
from kitlib.events import to_pandas
from kitlib.ingestion.guard import fresh_output, is_kit_output
from kitlib.ingestion.pipeline import run
from kitlib.ingestion.sink import table_options, to_arrow
from kitlib.sources import check_output, shown
from kitlib.summary import BundleSummary
from kitlib.window import Window, utc


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder :func:`ingest` (or a Dask ingest) wrote: it carries the kit's
    marker (:data:`kitlib.ingestion.guard.MARKER`, written into every output) beside ``summary.json`` and
    ``files.parquet``. A raw bundle that holds a ``summary.json`` or Parquet files of its own is not
    one: those files are evidence (listed as not read), never taken for the kit's state."""
    p = Path(path)
    return p.is_dir() and is_kit_output(p) and (p / "summary.json").is_file() and (p / "files.parquet").is_file()


def ingest(
    path: str | os.PathLike,
    out: str | os.PathLike,
    tz: str | dict | None = None,
    progress: bool | None = None,
    derive: bool = False,
    writer: str = "kitlib ingest",
) -> BundleSummary:
    """Parse a bundle and write each table as ``<out>/<table>.parquet`` plus ``summary.json``.
    Events and unparsed lines stream to disk block by block, so memory stays bounded.
    Returns the summary; read it all back with :func:`kitlib.bundle.load`.

    The tables derived from log records (commit attempts, cleaner runs, group and partition
    timelines, ...) are built when first read from the output, from the stored events
    (:mod:`kitlib.ingestion.derive`): the ingest itself only parses. ``derive=True`` builds and
    writes them during the ingest instead (the records they need are set aside as the log streams).
    ``writer`` is the command named in the output's marker (:func:`kitlib.ingestion.guard.mark`).

    Example:
        >>> s = ingest("sample_data/healthy", "/tmp/healthy.kit")   # doctest: +SKIP
        >>> kitlib.load("/tmp/healthy.kit").events.shape             # doctest: +SKIP
    """
    out = Path(out)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"bundle not found: {shown(str(path))}")
    check_output(path, out)  # before anything is written or removed
    with fresh_output(out, writer) as tmp:  # replaces ``out`` only when everything below succeeded
        result, summary = run(path, tz, tmp, progress, derive)
        for name, df in result.items():
            if isinstance(df, pd.DataFrame):
                at = to_arrow(name, df)
                pq.write_table(at, tmp / f"{name}.parquet", **table_options(at.schema))
        (tmp / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    return summary


def read_summary(out: Path) -> BundleSummary:
    """The summary an ingest output holds (``summary.json``)."""
    return BundleSummary.from_dict(json.loads((out / "summary.json").read_text()))


def stored_tables(out: Path) -> dict[str, Path]:
    """Table name -> its Parquet file (single-process ingest) or folder (dataset by host)."""
    found = {p.stem: p for p in out.glob("*.parquet")}
    found.update(
        {p.name: p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".") and any(p.rglob("*.parquet"))}
    )
    return found


def duckdb_connection(**config):
    """A DuckDB connection for the kit's questions over its tables: ``config`` as DuckDB's settings
    (a memory bound, a spill folder), and never a progress bar, which DuckDB otherwise prints on
    stdout once a query runs for two seconds (into ``--json`` output and the notebooks' cells)."""
    import duckdb

    con = duckdb.connect(config=config)
    con.execute("set enable_progress_bar = false")
    return con


def host_partitioning(path: Path):
    """How the stored table at ``path`` is opened with ``pyarrow.dataset``: a folder written by a
    Dask ingest (``<table>/host=<host>/part-*.parquet``) keeps the host only in its partition
    key, read as a string (the URL-escaped folder name decoded), so that pyarrow's hive
    partitioning, DuckDB and pandas read it the same way; a single file, or a folder whose files
    still hold a ``host`` column (written before), has no partitioning."""
    import pyarrow.dataset as ds

    if path.is_file():
        return None
    first = next(iter(sorted(path.rglob("*.parquet"))), None)
    if first is None or "host" in pq.read_schema(first).names:
        return None
    return ds.partitioning(pa.schema([("host", pa.string())]), flavor="hive")


def _scan(path: Path, name: str, window: Window | None, isin: dict[str, list] | None = None):
    """The dataset of the stored table at ``path`` and the filter that keeps the rows in ``window``
    (and, for each ``isin`` entry, whose column is one of the given values)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet", partitioning=host_partitioning(path))
    names = dataset.schema.names
    # ts, or the table's own time column (restarts: start_ts)
    cond = window.arrow(names, tables.time_column(name)) if window is not None else None
    for col, values in (isin or {}).items():
        c = pc.field(col).cast(pa.string()).isin([str(v) for v in values])
        cond = c if cond is None else cond & c
    return dataset, cond


def count_rows(path: Path, name: str, window: Window | None = None) -> int:
    """How many rows of the stored table at ``path`` fall in ``window``: from the Parquet footers
    when the window is whole, else by a scan of the time (and host) columns only. No row is read
    into pandas."""
    dataset, cond = _scan(path, name, window)
    return int(dataset.count_rows(filter=cond))


_TEXT = {pa.large_string(): pd.StringDtype("pyarrow"), pa.string(): pd.StringDtype("pyarrow")}
# declared dtype label -> how a column of it comes out of Arrow directly in its declared dtype (no
# second copy made by the cast); any other column is converted as the whole table's is, then cast
_DIRECT = {"str": _TEXT, "int": {pa.int64(): pd.Int64Dtype()}}


def _declared(name: str, t: pa.Table, categories: tuple[str, ...] = ()) -> pd.DataFrame:
    """Some columns of table ``name`` (an Arrow table of them) as :func:`read_table` gives them
    when it reads the whole table: each column converted as the whole table's is, then cast to its
    declared dtype (:func:`kitlib.tables.conform`, column by column); those named in
    ``categories`` as :func:`as_categories` makes them."""
    spec = tables.SCHEMAS[name]
    out = {}
    for c in spec.columns:
        if c.name not in t.column_names:
            continue
        if c.name in categories:
            out[c.name] = as_categories(t.column(c.name))
            continue
        one = t.select([c.name])
        mapper = (
            _TEXT if name == "events" else _DIRECT.get(c.dtype, {})
        )  # events: as kitlib.events.to_pandas reads them
        col = one.to_pandas(types_mapper=mapper.get)[c.name]
        del one
        out[c.name] = tables._cast(col, c.dtype, tables.DTYPES[c.dtype])
    return pd.DataFrame(out, index=pd.RangeIndex(t.num_rows))


def as_categories(text: pa.ChunkedArray | pa.Array) -> pd.Series:
    """A text column as a pandas category column, the same as the column's pandas text would give
    with ``astype("category")`` (categories sorted, of the kit's text dtype; nulls as no category),
    without that text ever in pandas: Arrow encodes it, and pandas gets a code per row.

    Example:
        >>> as_categories(pa.chunked_array([["b", None], ["a", "b"]])).tolist()
        ['b', <NA>, 'a', 'b']
    """
    encoded = pc.dictionary_encode(text)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.unify_dictionaries()
        chunks = encoded.chunks
        values = chunks[0].dictionary if chunks else pa.array([], pa.large_string())
        index = pa.chunked_array([c.indices for c in chunks], pa.int32())
    else:
        values, index = encoded.dictionary, encoded.indices
    order = np.asarray(pc.array_sort_indices(values), np.int64)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    at = np.asarray(pc.fill_null(index, -1).to_numpy(zero_copy_only=False), np.int64)
    codes = np.where(at >= 0, rank[np.maximum(at, 0)] if len(rank) else -1, -1)
    names = pd.Index(values.take(pa.array(order)).to_pylist(), dtype=pd.StringDtype("pyarrow"))
    return pd.Series(pd.Categorical.from_codes(codes, categories=names), copy=False)


TAKE_BATCH = 8192  # rows a batch when rows are taken by position from whole files


# declared dtype labels whose pandas columns are fixed-width arrays: filled slice by slice
_FILLED = ("ts", "int", "float", "bool")
SLICE_ROWS = 1 << 16  # rows a slice when a table's columns are read slice by slice
FILL_ROWS = 1 << 20  # rows of the fixed-width columns converted at a time (8 MB a column)


def _declared_slices(name: str, dataset, columns: list[str], categories: tuple[str, ...] = ()) -> pd.DataFrame:
    """:func:`_declared` of ``columns`` of the whole stored table ``name`` (``dataset``, no
    filter), without holding the whole Arrow table beside its pandas copy: the time, number and
    flag columns are converted slice by slice (each slice as :func:`_declared` converts it) into
    arrays of the table's length; the text and category columns are kept in Arrow (a pandas text
    column is its Arrow data), joined one column at a time and converted whole as before. On the
    dense incident's ``node_events`` (1.6M rows, 137 MB as pandas) the read's peak went from
    +440 to +530 MB of resident memory to +260 MB. The text columns named in ``categories`` come
    as :func:`as_categories` makes them, encoded from their pieces (never joined as text)."""
    spec = tables.SCHEMAS[name]
    rows = dataset.count_rows()
    if not rows:
        return _declared(name, dataset.to_table(columns=columns), categories)
    filled = [c.name for c in spec.columns if c.name in columns and c.dtype in _FILLED]
    # a number or flag column with no value in any row is not read: made missing, its values never held
    empty = {c.name: c.dtype for c in spec.columns if c.name in _valueless(dataset, filled) and c.dtype in _NULLS}
    filled = [c for c in filled if c not in empty]
    kept = [c for c in columns if c not in filled and c not in empty]
    pieces: dict[str, list] = {c: [] for c in kept}
    into: dict[str, tuple] = {}  # column -> (its pandas array, the buffers filled)
    at = 0
    waiting: list[pa.RecordBatch] = []  # the fixed-width columns of batches not converted yet
    held = 0

    def fill() -> None:
        # the waiting batches' fixed-width columns converted together: a conversion through
        # pandas costs about a millisecond a column whatever its length, which a slice at a time
        # made a third of reading the dense incident's 1.6M node events
        nonlocal at, held
        part = _declared(name, pa.Table.from_batches(waiting).select(filled))
        waiting.clear()
        for c in filled:
            arr = part[c].array
            if c not in into:
                into[c] = _empty_like(arr, rows)
            for dst, src in zip(into[c][1], _buffers(arr)):
                dst[at : at + held] = src
        at += held
        held = 0

    for batch in _batches(dataset, None, columns, SLICE_ROWS):
        if filled:
            waiting.append(batch.select(filled))
            held += batch.num_rows
            if held >= FILL_ROWS:
                fill()
        else:
            at += batch.num_rows
        for c in kept:
            pieces[c].append(batch.column(c))
        del batch
    if waiting:
        fill()
    if at != rows:
        raise OSError(f"{name}: {at} rows read, {rows} counted")
    joined, coded = {}, {}
    for c in kept:  # each column's pieces let go once it is joined (or encoded)
        whole = pa.chunked_array(pieces.pop(c), dataset.schema.field(c).type)
        if c in categories:
            coded[c] = as_categories(whole)
        else:
            joined[c] = tables.contiguous(pa.table({c: whole}))[c]
        del whole
    rest = _declared(name, pa.table(joined)) if joined else None
    del joined
    out = {}
    for c in spec.columns:
        if c.name in empty:
            out[c.name] = pd.Series(_NULLS[c.dtype](rows), copy=False)
        elif c.name in into:
            out[c.name] = pd.Series(into[c.name][0], copy=False)
        elif c.name in coded:
            out[c.name] = coded.pop(c.name)
        elif c.name in kept:
            assert rest is not None  # (made above whenever a text column is kept)
            out[c.name] = rest[c.name]
    return pd.DataFrame(out, index=pd.RangeIndex(rows), copy=False)


def footer_span(path: Path, column: str = "ts") -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The smallest and largest value of the time column ``column`` of the table stored at
    ``path`` (a Parquet file or a dataset folder), from the files' footers alone: the min and max
    each row group's statistics give, in UTC; None when no row holds a time. What ``min`` and
    ``max`` over the column say, without reading it, nor starting a query engine for it (DuckDB
    kept 33 MB of its library resident in the process that asked). Raises LookupError when a
    row group that holds a time has no such statistics: the caller reads the column then."""
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    lo = hi = None
    for f in files:
        meta = pq.read_metadata(f)
        at = meta.schema.to_arrow_schema().get_field_index(column)
        if at < 0:
            raise LookupError(f"{f}: no column {column}")
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            stats = group.column(at).statistics
            if stats is not None and stats.has_null_count and stats.null_count == group.num_rows:
                continue  # no time in this group
            if stats is None or not stats.has_min_max:
                raise LookupError(f"{f}: row group {g} has no min and max of {column}")
            lo = stats.min if lo is None else min(lo, stats.min)
            hi = stats.max if hi is None else max(hi, stats.max)
    if lo is None or hi is None:
        return None
    return utc(pd.Timestamp(lo)), utc(pd.Timestamp(hi))


def _valueless(dataset, names: list[str]) -> set[str]:
    """Those of columns ``names`` that the Parquet footers of the stored table show to have no
    value in any row (a column chunk's null count equal to its row group's rows); a chunk without
    that statistic counts as having values."""
    left = set(names)
    for path in dataset.files:
        if not left:
            break
        meta = pq.read_metadata(path)
        schema = meta.schema.to_arrow_schema()
        at = {n: schema.get_field_index(n) for n in left}
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for n, i in list(at.items()):
                stats = group.column(i).statistics if i >= 0 else None
                if stats is None or not stats.has_null_count or stats.null_count != group.num_rows:
                    left.discard(n)
                    del at[n]
    return left


def _untouched_zeros(rows: int, dtype) -> np.ndarray:
    """A writable array of ``rows`` zeros in pages of their own that the system maps only when
    written (an anonymous private mapping: a process forked after it gets its own copy of a page
    it writes, as with any memory): no memory a row until a value is set."""
    dtype = np.dtype(dtype)
    private = getattr(mmap, "MAP_PRIVATE", None)
    if not rows or private is None:  # (no such mapping here: plain zeros)
        return np.zeros(rows, dtype)
    return np.frombuffer(mmap.mmap(-1, rows * dtype.itemsize, flags=private | mmap.MAP_ANONYMOUS), dtype)


# declared dtype label -> a column of that many rows with no value: its mask (a byte a row) and
# values not yet written (none held), an array like any other that can be written to
_NULLS = {
    "int": lambda rows: pd.arrays.IntegerArray(_untouched_zeros(rows, np.int64), np.ones(rows, bool)),
    "bool": lambda rows: pd.arrays.BooleanArray(_untouched_zeros(rows, bool), np.ones(rows, bool)),
}


def _buffers(arr) -> tuple:
    """The arrays holding a fixed-width pandas array's values (and its mask, when it has one)."""
    if isinstance(arr, pd.arrays.DatetimeArray):
        return (arr.asi8,)
    if isinstance(arr, pd.arrays.IntegerArray | pd.arrays.BooleanArray | pd.arrays.FloatingArray):
        return (arr._data, arr._mask)
    return (np.asarray(arr),)


def _empty_like(arr, rows: int) -> tuple:
    """A pandas array of ``arr``'s dtype and ``rows`` rows, not filled, and its buffers to fill
    (as :func:`_buffers` names them)."""
    if isinstance(arr, pd.arrays.DatetimeArray):
        got = pd.Series(np.empty(rows, "M8[ns]"), copy=False).dt.tz_localize(arr.dtype.tz).array
        if got.dtype != arr.dtype:
            got = got.astype(arr.dtype)
        return got, (got.asi8,)
    if isinstance(arr, pd.arrays.IntegerArray | pd.arrays.BooleanArray | pd.arrays.FloatingArray):
        data, mask = np.empty(rows, arr._data.dtype), np.empty(rows, bool)
        return type(arr)(data, mask), (data, mask)
    data = np.empty(rows, np.asarray(arr).dtype)
    return data, (data,)


def _batches(dataset, cond, columns: list[str] | None, size: int = 0):
    """The record batches of ``dataset`` in scan order. Without a filter, and when every column
    is in the file itself, a single file is read page by page in small batches (a buffered
    stream, nothing read ahead): the dataset scanner decodes a whole row group of each column
    before its first batch, which for a long text column of one row group is its whole text
    (the ``message`` of 490,217 ``group_events`` rows: 206 MB held against 34 MB)."""
    files = list(dataset.files) if cond is None else []
    if len(files) == 1 and set(columns if columns is not None else dataset.schema.names) <= set(
        pq.read_schema(files[0]).names
    ):
        with pq.ParquetFile(files[0], pre_buffer=False, buffer_size=1 << 20) as pf:
            yield from pf.iter_batches(batch_size=size or TAKE_BATCH, columns=columns, use_threads=False)
        return
    yield from dataset.to_batches(
        columns=columns, filter=cond, use_threads=False, **({"batch_size": size} if size else {})
    )


def _take(dataset, cond, columns: list[str] | None, rows) -> pa.Table:
    """The rows at positions ``rows`` (among those ``cond`` keeps, in scan order) of ``dataset``,
    in the order given: scanned batch by batch in order, each batch's wanted rows kept, so only
    one batch of a big text column is held at a time."""
    want = np.asarray(rows, dtype=np.int64)
    order = np.argsort(want, kind="stable")
    sorted_rows = want[order]
    pieces, start = [], 0
    for batch in _batches(dataset, cond, columns):
        end = start + batch.num_rows
        lo, hi = np.searchsorted(sorted_rows, [start, end])
        if hi > lo:
            pieces.append(pa.Table.from_batches([batch]).take(pa.array(sorted_rows[lo:hi] - start)))
        start = end
        if start > sorted_rows[-1:].max(initial=-1):
            break
    got = pa.concat_tables(pieces) if pieces else dataset.head(0, columns=columns, filter=cond)
    if got.num_rows != len(want):
        raise IndexError(f"row positions out of range: {len(want) - got.num_rows} of {len(want)}")
    back = np.empty(len(order), np.int64)
    back[order] = np.arange(len(order))
    return got.take(pa.array(back))


def read_table(
    path: Path,
    name: str,
    window: Window | None = None,
    columns: list[str] | None = None,
    isin: dict[str, list] | None = None,
    declared: bool = False,
    rows=None,
    categories: tuple[str, ...] = (),
) -> pd.DataFrame:
    """One stored table as a DataFrame with its declared dtypes, only the rows in ``window`` when
    given (the filter is pushed down to the Parquet scan), and only the rows whose ``column`` is
    one of the given values for each ``isin`` entry.

    With ``columns``, only those columns are read (text as Arrow-backed strings); with
    ``declared`` as well, they come exactly as the whole table's columns do (declared dtypes,
    categories kept), the columns of a table too big to want whole; the text columns named in
    ``categories`` then come as categories (:func:`as_categories`). ``rows`` (positions among
    the rows the window keeps) takes only those rows, in that order."""
    dataset, cond = _scan(path, name, window, isin)
    if rows is None and cond is None and columns is not None and declared and name in tables.SCHEMAS:
        return _declared_slices(name, dataset, columns, categories)
    if rows is None:
        t = dataset.to_table(columns=columns, filter=cond)
    else:
        t = _take(dataset, cond, columns, rows)
    t = tables.contiguous(t)
    if columns is not None and declared and name in tables.SCHEMAS:
        return _declared(name, t, categories)
    if columns is None:
        df = to_pandas(t) if name == "events" else t.to_pandas()
        return tables.conform(name, df, redact=False) if name in tables.SCHEMAS else df
    df = t.to_pandas(
        types_mapper={pa.large_string(): pd.StringDtype("pyarrow"), pa.string(): pd.StringDtype("pyarrow")}.get
    )
    if "ts" in df.columns:
        df["ts"] = df["ts"].astype("datetime64[ns, UTC]")
    return df
