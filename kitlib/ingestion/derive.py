"""Tables derived from log records, built on first use from an ingest output's stored events.

An ingest only parses: the events go to Parquet as the log streams, and the tables the
extractors derive from some of those records (commit attempts, cleaner runs, group and partition
timelines, request rows, ...) are left for later (the summary lists them in ``deferred``). When a
bundle opened on that output is first asked for one of them, the stored events are read back
batch by batch, once, through the same selection a streaming ingest applies
(:class:`~kitlib.ingestion.sink.Selection`: only the records some extractor wants are kept), and
every derived table is built by the same code an in-memory load runs. The tables are then kept in
a hidden folder of the output (``.derived/``, written whole or not at all) for the next reader;
an output that cannot be written to is only read, and its tables are built by every reader.

Example:
    >>> from kitlib.ingestion.derive import build_all                    # doctest: +SKIP
    >>> build_all(Path("incident.kit"))["commits"].frame.shape           # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kitlib import extract, registry
from kitlib.extract import BuildError
from kitlib.ingestion.sink import Selection


@dataclass(frozen=True)
class Derived:
    """One derived table as built from the stored events: all its rows (no window applied),
    and the builder's failure when it failed (the frame is then empty)."""

    frame: pd.DataFrame
    error: BuildError | None = None


@dataclass
class DerivedTables:
    """The derived tables of one ingest output, built when first asked for and kept (a bundle
    and the windows cut from it share one)."""

    store: Path
    built: dict[str, Derived] = field(default_factory=dict)
    progress: bool | None = None  # a bar while they are built (default: see build_into)

    def get(self, name: str) -> Derived:
        """Table ``name``: read from the output's cache of derived tables when an earlier reader
        left one, else built (every derived table, in one pass over the events, written to the
        cache as each is built) and read from there; held here only when the output cannot be
        written to."""
        if name not in self.built:
            got = read_cache(self.store, name)
            if got is None:
                self.built.update(build_all(self.store, self.progress))
                got = self.built.get(name) or read_cache(self.store, name)
            if got is None:
                raise KeyError(f"{name} is not a table derived from log records")
            self.built[name] = got
        return self.built[name]

    def build(self) -> None:
        """Build every derived table now, unless the output's cache or this object has them
        already (as the first :meth:`get` would): before a triage forks its second process, so
        that the two do not each build them, each in its turn."""
        if self.built:
            return
        try:
            json.loads((self.store / CACHE / "index.json").read_text())["tables"]
            return
        except (OSError, ValueError, KeyError, TypeError):  # none, or unreadable: built
            pass
        self.built.update(build_all(self.store, self.progress))


# derived tables, once built, are kept here inside the ingest output (a hidden folder: never
# taken for a table) so that the next kernel, triage or report reads them instead of building
CACHE = ".derived"


def read_cache(store: Path, name: str) -> Derived | None:
    """Derived table ``name`` as an earlier reader of ``store`` built and wrote it, or None (no
    cache, or not readable)."""
    from kitlib.ingestion.store import read_table

    folder = store / CACHE
    try:
        error = json.loads((folder / "index.json").read_text())["tables"][name]
        return Derived(read_table(folder / f"{name}.parquet", name), BuildError(name, error) if error else None)
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):  # none, or unreadable: built again
        return None


def build_all(store: Path, progress: bool | None = None) -> dict[str, Derived]:
    """Build every derived table from the events stored in ``store`` into its cache folder: in a
    temporary folder beside it, renamed into place once whole (two readers racing build the same
    tables; the first rename wins). Returns nothing to hold when the cache was written (the tables
    are read from it, one at a time, when asked for); when ``store`` cannot be written to (read
    only, full), the tables are built in a temporary folder elsewhere and every one is returned,
    read back, and that folder removed.

    Each table is written as it is built, so that no more than one is held: on the 1 GB mix the
    first read of a derived table peaked at 1,008 MB when they were all built before any was
    written."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f"{CACHE}-", dir=store))
    except OSError:  # a store that cannot be written to: built elsewhere, held by the reader
        with tempfile.TemporaryDirectory(prefix="kitlib-derive-") as apart:
            return _read_all(Path(apart), build_into(store, Path(apart), progress))
    try:
        errors = build_into(store, tmp, progress)
        os.rename(tmp, store / CACHE)
        return {}
    except OSError:
        if (store / CACHE / "index.json").exists():  # another reader's, renamed into place first
            return {}
        if not (tmp / "index.json").exists():  # not even built there (the disk is full): built elsewhere
            with tempfile.TemporaryDirectory(prefix="kitlib-derive-") as apart:
                return _read_all(Path(apart), build_into(store, Path(apart), progress))
        return _read_all(tmp, errors)  # built, but it cannot be put in place: held by the reader
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_all(folder: Path, errors: dict[str, str]) -> dict[str, Derived]:
    """Every table :func:`build_into` wrote to ``folder``, read back, with its build error."""
    from kitlib.ingestion.store import read_table

    return {
        name: Derived(read_table(folder / f"{name}.parquet", name), BuildError(name, error) if error else None)
        for name, error in errors.items()
    }


def build_into(store: Path, folder: Path, progress: bool | None = None) -> dict[str, str]:
    """Every derived table built from the events stored in ``store``, in one pass over them, each
    written to ``folder`` as it is built (with ``index.json``: each table's build error, "" for
    none); returns those errors by table. Each scan batch goes through the same selection as a
    streaming ingest (:class:`~kitlib.ingestion.sink.Selection`) and the same builders run; a
    table built from batches is sorted and written row group by row group from its spill file
    (:func:`~kitlib.ingestion.sink.write_sorted`), as a streaming ingest writes it. The rows a
    file format put in one of these tables at ingest (a live capture's configs) come first, as an
    in-memory load puts them.

    Events of a big bundle (:func:`~kitlib.ingestion.pipeline.two_processes` of their size as
    parsed) are built as a streaming ingest of it builds them: the blockwise groups in a second
    process (:class:`~kitlib.ingestion.blockwise.BlockwiseProcess`, a fresh interpreter) while
    this one reads the events and builds the rest. On the dense incident's plain ingest output
    that first read took 45 s in one process, 28 s with the second (the 1 GB mix: 16 s and 10 s).

    ``progress``: a bar of the events read (default: as the ingest shows one, on a terminal or in
    a notebook for a big output, never under CI)."""
    from kitlib.ingestion.blockwise import BlockwiseProcess, tables_built_apart
    from kitlib.ingestion.pipeline import two_processes
    from kitlib.ingestion.store import stored_tables

    registry.load()
    stored = stored_tables(store)
    events = stored.get("events")
    remote = BlockwiseProcess(folder) if events is not None and two_processes(parsed_bytes(events)) else None
    try:
        return _build_into(stored, folder, remote, tables_built_apart() if remote is not None else set(), progress)
    except BaseException:
        if remote is not None:
            remote.close()
        raise


def _build_into(stored: dict[str, Path], folder: Path, remote, theirs: set[str], progress) -> dict[str, str]:
    """:func:`build_into` of the tables ``stored``, the tables ``theirs`` built and written by
    ``remote`` (None: every table here)."""
    from kitlib.ingestion.pipeline import progress_bar
    from kitlib.ingestion.sink import write_derived
    from kitlib.ingestion.store import read_table

    errors: dict[str, str] = {}
    # the rows a file format put in a derived table at ingest (a live capture's configs), which
    # come first in it
    filled = {t: read_table(stored[t], t) for t in extract.EXTRACTORS if t in stored}
    # the kept records are spilled to a temporary folder (never into the store) and read back one
    # selection at a time, as a streaming ingest does
    with tempfile.TemporaryDirectory(prefix="kitlib-derive-") as spill:
        selection = Selection(Path(spill), remote)
        events = stored.get("events")
        if events is not None:
            # the bar counts the events' bytes as parsed (their rows read, at the mean row's size)
            size, rows = parsed_bytes(events), stored_rows(events)
            bar = progress_bar(progress, size, events.parent.name, "derive tables of")
            for batch in scan(events):
                selection.add(pa.Table.from_batches([batch]))
                if bar is not None:
                    bar.update(round(batch.num_rows * size / max(rows, 1)))
            if bar is not None:
                bar.close()  # (what is left: the last batches built, the tables sorted and written)
                print("kitlib: writing the derived tables", file=getattr(bar, "fp", sys.stderr), flush=True)
        if remote is not None:  # the second process puts them first in its tables, as here
            remote.start_finish({t: filled.pop(t) for t in theirs if t in filled and len(filled[t])})
        built = selection.build(dest=folder, keep=set(stored))
        # (the tables of the second process are written by it, and said by wait below)
        mine = ((t, frame, err) for t, frame, err in built if t not in theirs)
        for table, _, err, _ in write_derived(mine, filled, folder):
            errors[table] = err.message if err is not None else ""
        if remote is not None:
            for table, _, err in remote.wait():
                errors[table] = err.message if err is not None else ""
    # in the order one process builds them
    errors = {t: errors[t] for t in extract.EXTRACTORS if t in errors} | errors
    (folder / "index.json").write_text(json.dumps({"tables": errors}, indent=1) + "\n")
    return errors


def stored_rows(path: Path) -> int:
    """How many rows the table stored at ``path`` (a Parquet file or a dataset folder) holds, from
    the files' footers."""
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def parsed_bytes(path: Path) -> int:
    """About how many bytes of log the events stored at ``path`` (a Parquet file or a dataset
    folder) were parsed from: their size uncompressed, from the files' footers."""
    files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
    total = 0
    for f in files:
        meta = pq.ParquetFile(f).metadata
        total += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return total


def scan(path: Path, rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """The batches of a stored table (one Parquet file, or a dataset folder read file by file in
    path order), read one at a time so that memory holds one batch, not the table: a single file
    page by page with nothing read ahead (:func:`~kitlib.ingestion.store._batches`). The dataset
    scanner's read-ahead held up to 508 MB of the 1 GB mix's decoded events at once (the first
    read of a derived table then peaked at 900 MB)."""
    import pyarrow.dataset as ds

    from kitlib.ingestion.store import _batches, host_partitioning

    dataset = ds.dataset(str(path), format="parquet", partitioning=host_partitioning(path))
    # one thread: the batches come in file order, one at a time
    yield from _batches(dataset, None, None, rows)
