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
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kitlib import registry, tables
from kitlib.extract import BuildError
from kitlib.ingestion.sink import Selection, table_options


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

    def get(self, name: str) -> Derived:
        """Table ``name``: read from the output's cache of derived tables when an earlier reader
        left one, else built (every derived table, in one pass over the events) and cached."""
        if name not in self.built:
            cached = read_cache(self.store)
            if cached is None:
                cached = build_all(self.store)
                write_cache(self.store, cached)
            self.built.update(cached)
        return self.built[name]


# derived tables, once built, are kept here inside the ingest output (a hidden folder: never
# taken for a table) so that the next kernel, triage or report reads them instead of building
CACHE = ".derived"


def read_cache(store: Path) -> dict[str, Derived] | None:
    """The derived tables an earlier reader of ``store`` built and wrote, or None."""
    from kitlib.ingestion.store import read_table

    folder = store / CACHE
    try:
        index = json.loads((folder / "index.json").read_text())
        return {
            name: Derived(
                read_table(folder / f"{name}.parquet", name),
                BuildError(name, error) if error else None,
            )
            for name, error in index["tables"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):  # none, or unreadable: built again
        return None


def write_cache(store: Path, built: dict[str, Derived]) -> bool:
    """Write ``built`` into ``store``'s cache folder, all or nothing: written to a temporary folder
    beside it and renamed into place (two readers racing build the same tables; the first rename
    wins). A store that cannot be written to (read-only, full) is left as it is: False."""
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f"{CACHE}-", dir=store))
        for name, d in built.items():
            at = (
                tables.to_arrow(name, d.frame)
                if name in tables.SCHEMAS
                else pa.Table.from_pandas(d.frame, preserve_index=False)
            )
            pq.write_table(at, tmp / f"{name}.parquet", **table_options(at.schema))
        index = {"tables": {name: d.error.message if d.error else "" for name, d in built.items()}}
        (tmp / "index.json").write_text(json.dumps(index, indent=1) + "\n")
        os.rename(tmp, store / CACHE)
        return True
    except OSError:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return False


def build_all(store: Path) -> dict[str, Derived]:
    """Every derived table built from the events stored in ``store``, in one pass over them: each
    scan batch goes through the same selection as a streaming ingest (:class:`~kitlib.ingestion.sink.Selection`), then
    the same builders run. The rows a file format put in one of these tables at ingest (a live
    capture's configs) come first, as an in-memory load puts them."""
    from kitlib.ingestion.store import read_table, stored_tables

    registry.load()
    stored = stored_tables(store)
    out: dict[str, Derived] = {}
    # the kept records are spilled to a temporary folder (never into the store) and read back one
    # selection at a time, as a streaming ingest does
    with tempfile.TemporaryDirectory(prefix="kitlib-derive-") as spill:
        selection = Selection(Path(spill))
        events = stored.get("events")
        if events is not None:
            for batch in scan(events):
                selection.add(pa.Table.from_batches([batch]))
        for table, frame, err in selection.build():
            if table in stored:  # rows a file format put in this table come first
                filled = read_table(stored[table], table)
                if len(filled):
                    frame = (
                        tables.conform(table, pd.concat([filled, frame], ignore_index=True)) if len(frame) else filled
                    )
            out[table] = Derived(frame.reset_index(drop=True), err)
    return out


def scan(path: Path, rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """The batches of a stored table (one Parquet file, or a dataset folder read file by file in
    path order), read one at a time so that memory holds one batch, not the table."""
    import pyarrow.dataset as ds

    from kitlib.ingestion.store import host_partitioning

    dataset = ds.dataset(str(path), format="parquet", partitioning=host_partitioning(path))
    # one thread: the batches come in file order, one at a time
    yield from dataset.scanner(batch_size=rows, use_threads=False).to_batches()
