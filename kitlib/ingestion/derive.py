"""Tables derived from log records, built on first use from an ingest output's stored events.

An ingest only parses: the events go to Parquet as the log streams, and the tables the
extractors derive from some of those records (commit attempts, cleaner runs, group and partition
timelines, request rows, ...) are left for later (the summary lists them in ``deferred``). When a
bundle opened on that output is first asked for one of them, the records its extractor wants are
read back with the logger filter pushed down to the Parquet scan (so only they are held, not the
events), and built by the same code an in-memory load runs (:func:`kitlib.extract.iter_build`).
Every table of the same selection is built in that one pass. The output folder is never written.

Example:
    >>> from kitlib.ingestion.derive import build_group                  # doctest: +SKIP
    >>> built = build_group(Path("incident.kit"), "commit_attempts")     # doctest: +SKIP
    >>> built["commit_attempts"].frame.shape                             # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from kitlib import extract, registry, tables
from kitlib.events import EVENTS_SCHEMA, to_pandas
from kitlib.extract import BuildError


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
    logger_names: list[str] | None = None  # every logger in the stored events, read once
    built: dict[str, Derived] = field(default_factory=dict)

    def get(self, name: str) -> Derived:
        """Table ``name`` (every table of its selection is built with it)."""
        if name not in self.built:
            from kitlib.ingestion.store import stored_tables

            if self.logger_names is None:
                events = stored_tables(self.store).get("events")
                self.logger_names = loggers(events) if events is not None else []
            self.built.update(build_group(self.store, extract.groups()[name], self.logger_names))
        return self.built[name]


def loggers(events: Path) -> list[str]:
    """Every logger name in the stored events (read from the column's dictionaries batch by
    batch, so a fleet's events are never held)."""
    names: set[str] = set()
    for batch in _dataset(events).to_batches(columns=["logger"]):
        col = batch.column(0)
        if pa.types.is_dictionary(col.type):
            names.update(v for v in col.dictionary.to_pylist() if v is not None)
        else:
            names.update(v for v in pc.unique(col).to_pylist() if v is not None)
    return sorted(names)


def selected_records(events: Path, group: str, names: list[str] | None = None) -> pa.Table:
    """The stored events the extractor ``group`` wants, in stored order: the logger test is
    pushed down to the scan, the extractor's ``contains`` regex then runs on those rows only."""
    ex = extract.EXTRACTORS[group]
    wanted = [v for v in (names if names is not None else loggers(events)) if ex.wants(v)]
    if not wanted:
        return EVENTS_SCHEMA.empty_table()
    cond = pc.field("logger").cast(pa.string()).isin(wanted)
    t = _dataset(events).to_table(filter=cond)
    if ex.contains and t.num_rows:
        message = t.column("message")
        hit = pc.fill_null(pc.match_substring_regex(message, ex.contains), False)
        t = t.filter(hit)
    return t


def build_group(store: Path, group: str, names: list[str] | None = None) -> dict[str, Derived]:
    """Every table of selection ``group`` (see :func:`kitlib.extract.groups`) built from the
    events stored in ``store``, plus the rows a file format put in the same table at ingest
    (a live capture's configs) ahead of them, as an in-memory load puts them."""
    from kitlib.ingestion.store import read_table, stored_tables

    registry.load()
    stored = stored_tables(store)
    members = [t for t, g in extract.groups().items() if g == group]
    events = stored.get("events")
    records = selected_records(events, group, names) if events is not None else EVENTS_SCHEMA.empty_table()
    ex = extract.EXTRACTORS[group]
    selected: dict[str, list[pa.Table]] = {}
    errors: dict[str, BuildError] = {}
    if ex.blockwise:  # built in batches, as the streaming ingest builds them
        for table in members:
            selected[table] = []
        for off in range(0, records.num_rows, extract.BATCH_ROWS):
            pieces, failed = extract.build_blockwise(group, records.slice(off, extract.BATCH_ROWS))
            for err in failed:
                errors.setdefault(err.table, err)
            for table, piece in pieces.items():
                if piece.num_rows:
                    selected[table].append(piece)
    elif records.num_rows:
        selected[group] = [records]
    del records
    out: dict[str, Derived] = {}
    for table, frame, err in extract.iter_build(selected, to_pandas):
        if table not in members:
            continue
        err = errors.get(table) or err
        if table in stored:  # rows a file format put in this table come first
            filled = read_table(stored[table], table)
            if len(filled):
                frame = tables.conform(table, pd.concat([filled, frame], ignore_index=True)) if len(frame) else filled
        out[table] = Derived(frame.reset_index(drop=True), err)
    return out


def cut(df: pd.DataFrame, name: str, start=None, end=None, hosts: list[str] | None = None) -> pd.DataFrame:
    """The rows of table ``name`` in ``start <= ts < end`` and on ``hosts`` (each when given);
    tables without a ``ts`` column are only cut by host (``files`` never by time)."""
    keep = np.ones(len(df), bool)
    if "ts" in df.columns and pd.api.types.is_datetime64_any_dtype(df["ts"]) and name != "files":
        if start is not None:
            keep &= (df["ts"] >= start).fillna(False).to_numpy(bool)
        if end is not None:
            keep &= (df["ts"] < end).fillna(False).to_numpy(bool)
    if hosts and "host" in df.columns:
        keep &= df["host"].astype("string").isin([str(h) for h in hosts]).fillna(False).to_numpy(bool)
    return df if keep.all() else df[keep].reset_index(drop=True)


def _dataset(path: Path) -> ds.Dataset:
    return ds.dataset(str(path), format="parquet", partitioning=None)
