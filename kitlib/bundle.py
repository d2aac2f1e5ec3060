"""A bundle as the kit holds it: named tables plus a summary, loaded from a folder of files (or
from an ingest output), and cut to a time window.

Parsing lives in :mod:`kitlib.ingestion` (pipeline, sink, Parquet store); this module is what
notebooks and detectors work with.

Example:
    >>> import kitlib
    >>> b = kitlib.load_bundle("sample_data/healthy")      # doctest: +SKIP
    >>> b.events.groupby("level").size()                   # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import pandas as pd
import pyarrow as pa

from kitlib import registry, tables
from kitlib.ingestion.cache import cached_store
from kitlib.ingestion.derive import CACHE as DERIVED_CACHE
from kitlib.ingestion.derive import DerivedTables
from kitlib.ingestion.pipeline import run
from kitlib.ingestion.store import (
    count_rows,
    duckdb_connection,
    footer_span,
    host_partitioning,
    ingest,
    is_store,
    read_summary,
    read_table,
    stored_tables,
)
from kitlib.summary import BundleSummary
from kitlib.window import Window, sql_values, utc

T = TypeVar("T")

__all__ = ["Bundle", "Window", "ingest", "load", "load_bundle", "per_bundle", "window"]


@dataclass
class Bundle:
    """A loaded bundle: named tables plus a summary. Tables not present are empty frames
    with the declared schema, so ``bundle.commits`` always works.

    Example:
        >>> b = Bundle("x", {})
        >>> list(b.unparsed.columns)
        ['file', 'line', 'host', 'text', 'reason']
    """

    root: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    summary: BundleSummary = field(default_factory=lambda: BundleSummary(bundle=""))
    store: Path | None = None  # an ingest output the tables are read from on demand
    window: Window = field(default_factory=Window)  # the window every table of this bundle is cut to
    derived: DerivedTables | None = None  # the store's derived tables built so far (see deferred)
    # (table, columns, columns as categories) -> those columns of a stored table not read whole
    # (see columns)
    parts: dict[tuple[str, tuple[str, ...], tuple[str, ...]], pd.DataFrame] = field(
        default_factory=dict, repr=False, compare=False
    )
    # what functions of this bundle computed (see per_bundle); never shared with another bundle
    memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.table(name)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.table(name)

    def table(self, name: str) -> pd.DataFrame:
        """Table ``name``: its rows, or an empty frame with its declared columns."""
        t = self.__dict__.get("tables", {}).get(name)
        if t is not None:
            return t
        registry.load()
        store = self.__dict__.get("store")
        if store is not None and self.deferred(name):
            cached = self._derived_file(name)
            try:  # this one table, not every derived table the output caches
                t = None if cached is None else self.window.frame(read_table(cached, name), tables.time_column(name))
            except (OSError, pa.ArrowException):  # unreadable: built again
                t = None
            if t is None:
                t = self.window.frame(self._derive(name), tables.time_column(name))
                self._forget_derived()
            self.tables[name] = t
            return t
        if store is not None:
            path = stored_tables(store).get(name)
            if path is not None:
                t = read_table(path, name, self.window)
                self.tables[name] = t
                return t
        if name in tables.SCHEMAS:
            return tables.empty(name)
        raise AttributeError(f"bundle has no table {name!r}; known: {sorted(tables.SCHEMAS)}")

    def _on_disk(self, name: str) -> Path | None:
        """The Parquet file (or folder) table ``name`` is read from, when it is stored (or derived
        and cached by the output, and the bundle's window is whole) and not read whole yet; else
        None."""
        store = self.__dict__.get("store")
        if store is None or name in self.__dict__.get("tables", {}):
            return None
        if self.deferred(name):
            return self._derived_file(name) if self.window.whole else None
        return stored_tables(store).get(name)

    def _derived_file(self, name: str) -> Path | None:
        """The file in the output's cache of derived tables that derived table ``name`` can be read
        from alone: cached there without a build error, and not held by :attr:`derived`; else None."""
        derived = self.__dict__.get("derived")
        if self.store is None or (derived is not None and name in derived.built):
            return None
        return cached_derived(self.store).get(name)

    def _forget_derived(self) -> None:
        """Let go of the derived tables :attr:`derived` holds that the output's cache holds too
        (a build makes them all at once): each is read from there, alone, when asked for."""
        if self.derived is None or self.store is None:
            return
        for name in cached_derived(self.store):
            self.derived.built.pop(name, None)

    def let_go(self, name: str) -> bool:
        """Forget the rows of table ``name`` read so far (whole or in columns, and what
        :func:`per_bundle` computed while they were held) when they can be read again from the
        ingest output: the next reader reads them again. A table held only in memory is kept.
        True when it was let go."""
        store = self.__dict__.get("store")
        if store is None:
            return False
        if self.deferred(name):
            derived = self.derived
            if name not in cached_derived(store) or (derived is not None and name in derived.built):
                return False  # built here, and not cached: it would be built again
        elif name not in stored_tables(store):
            return False
        held = self.tables.pop(name, None)
        for key in [k for k in self.parts if k[0] == name]:
            del self.parts[key]
        if held is not None:  # answers computed while it was held name it by identity: never asked again
            gone = [k for k, (frames, _) in self.memo.items() if any(df is held for _, df in frames)]
            for key in gone:
                del self.memo[key]
        return True

    def columns(
        self, name: str, columns: list[str], categories: tuple[str, ...] = (), *, held_as_is: bool = False
    ) -> pd.DataFrame:
        """Table ``name`` with at least ``columns``: the same rows, in the same order and with the
        same dtypes as :meth:`table` gives. On an ingest output, a table not read whole is read
        with only those of its declared columns (kept for the next call asking for them or for
        fewer), so a detector that needs a few columns of a big table never holds its text;
        anywhere else it is the whole table.

        ``categories`` names text columns among them that a model reads as pandas categories
        instead (as ``astype("category")`` makes them: a code of a byte or two a row where text
        takes nine or more). Columns of few values over millions of rows are held that way:
        the topic and ISR lists of the dense incident's partition changes, about 100 MB less.

        ``held_as_is``: columns read before are taken as they were read, text or categories alike
        (for choosing rows, where a category answers as its text does), so that no second copy of
        a big table's columns is read."""
        path = self._on_disk(name)
        spec = tables.SCHEMAS.get(name)
        cats = tuple(sorted(set(categories)))
        if path is None or spec is None:
            whole = self.table(name)
            cats = tuple(c for c in cats if c in whole.columns)
            if not cats:
                return whole
            # kept with the table it was made of (see per_bundle): a table replaced makes it anew
            memo_key = ("categories", name, cats)
            kept = self.memo.get(memo_key)
            if kept is None or kept[0][0][1] is not whole:
                view = whole.assign(**{c: whole[c].astype("string").astype("category") for c in cats})
                kept = self.memo[memo_key] = (((name, whole),), view)
            return kept[1]
        wanted = set(columns) | set(cats)
        for (table, held, held_cats), part in self.parts.items():
            # read already, with others (those asked for as text or as categories the same way)
            if table == name and wanted <= set(held) and (held_as_is or set(held_cats) & wanted == set(cats)):
                return part
        key = (name, tuple(c for c in spec.names if c in wanted), cats)
        got = self.parts.get(key)
        if got is None:
            got = self.parts[key] = read_table(
                path, name, self.window, columns=list(key[1]), declared=True, categories=cats
            )
            # what the scan decoded and let go stays in Arrow's pool otherwise, under the models'
            # own arrays (about 20 MB at the dense incident's isr-shrink peak)
            pa.default_memory_pool().release_unused()
        return got

    def rows_at(self, name: str, positions, columns: list[str]) -> pd.DataFrame:
        """The rows at ``positions`` (of :meth:`table`'s rows) of table ``name``, with ``columns``,
        as :meth:`table` gives them. On an ingest output a table not read whole is not read whole
        for them: only those columns are scanned, and only those rows kept."""
        path = self._on_disk(name)
        if path is None or name not in tables.SCHEMAS:
            return self.table(name).iloc[positions][columns]
        got = read_table(path, name, self.window, columns=columns, declared=True, rows=positions)
        return got[columns]

    def rows(self, name: str) -> int:
        """How many rows table ``name`` has (within the bundle's window). On an ingest output a
        table not read yet is not read for it: its rows are counted from the Parquet files."""
        path = self._on_disk(name)
        if path is None:
            return len(self.table(name))
        for (table, *_), part in self.parts.items():
            if table == name:
                return len(part)
        return count_rows(path, name, self.window)

    def stored_rows(self, name: str) -> int:
        """How many rows table ``name`` has when it is held or stored (counted as :meth:`rows`
        counts them); 0 for a table that would have to be built first, which is not built."""
        held = self.__dict__.get("tables", {}).get(name)
        if held is not None:
            return len(held)
        return self.rows(name) if self._on_disk(name) is not None else 0

    def deferred(self, name: str) -> bool:
        """Whether table ``name`` is derived from log records that the ingest output holds, and
        is built on first use from its stored events rather than read from a file."""
        summary = self.__dict__.get("summary")
        return self.__dict__.get("store") is not None and summary is not None and name in summary.deferred

    def derive_ahead(self, names) -> None:
        """Build the tables of ``names`` that are derived from the ingest output's events (all of
        them in one pass, as their first use does), now, unless held or cached already."""
        store = self.__dict__.get("store")
        if store is None or not any(self.deferred(n) and n not in self.tables for n in names):
            return
        if self.derived is None:
            self.derived = DerivedTables(store)
        self.derived.build()

    def _derive(self, name: str) -> pd.DataFrame:
        assert self.store is not None
        if self.derived is None:
            self.derived = DerivedTables(self.store)
        got = self.derived.get(name)
        if got.error is not None:
            note = f"building {got.error.table}: {got.error.message}"
            if note not in self.summary.errors:
                self.summary.errors.append(note)
        return got.frame

    def select(self, name: str, columns: list[str] | None = None, **isin) -> pd.DataFrame:
        """Some columns of a table, only the rows whose ``column`` is one of the given values
        (``bundle.select("events", ["ts", "host", "level"], level=["WARN", "ERROR"])``). On a
        bundle opened on an ingest output both are pushed down to the Parquet scan, so the table is
        never loaded whole; in memory it is a plain filter."""
        store = self.__dict__.get("store")
        if store is not None and name not in self.tables and not self.deferred(name):
            path = stored_tables(store).get(name)
            if path is None:
                df = self.table(name)
                return df[columns] if columns else df
            return read_table(path, name, self.window, columns=columns, isin=isin)
        df = self.table(name)
        for col, values in isin.items():
            df = df[df[col].astype("string").isin([str(v) for v in values])]
        return (df[columns] if columns else df).reset_index(drop=True)

    def span(self) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        """First and last record time (UTC) within the bundle's window; None without records.
        On an ingest output it is read from the Parquet files' footers (the whole bundle), or
        computed from their statistics and columns by DuckDB (a window), not by loading the events."""
        if self.lazy("events"):
            if self.window.whole and self.store is not None:
                try:
                    return footer_span(stored_tables(self.store)["events"])
                except LookupError:  # a file without the statistics: its times are read
                    pass
            got = self.sql("select min(ts) as lo, max(ts) as hi from events where " + self.where())
            lo, hi = got["lo"].iloc[0], got["hi"].iloc[0]
            if pd.isna(lo):
                return None
            return utc(lo), utc(hi)
        ev = self.table("events")
        if not len(ev) or ev["ts"].isna().all():
            return None
        return ev["ts"].min(), ev["ts"].max()

    def lazy(self, name: str) -> bool:
        """Whether table ``name`` is on disk (an ingest output) and not loaded: questions about it
        are best asked with :meth:`sql` or :meth:`select`."""
        store = self.__dict__.get("store")
        return (
            store is not None and name not in self.tables and name in stored_tables(store) and not self.deferred(name)
        )

    def where(self, **isin) -> str:
        """The bundle's window (and ``column=[values]`` filters) as a DuckDB ``where`` clause for
        :meth:`sql`; ``true`` when there is none."""
        cond = [self.window.sql()] if not self.window.whole else []
        for col, values in isin.items():
            cond.append(f'CAST("{col}" AS VARCHAR) IN ({sql_values(values)})')
        return " and ".join(cond) or "true"

    def sql(self, query: str) -> pd.DataFrame:
        """Run a DuckDB query over the stored tables (each table is a view of its Parquet files,
        read by DuckDB without loading it into pandas), e.g. ``bundle.sql("select level, count(*)
        from events group by level")``. Only for a bundle opened on an ingest output; the
        bundle's window is not applied (add a ``where`` on ``ts``/``host``)."""
        if self.store is None:
            raise ValueError("sql() needs a bundle opened on a `kitlib ingest` output (kitlib.load(DIR))")
        con = duckdb_connection()
        for name, path in stored_tables(self.store).items():
            if self.deferred(name):
                continue
            if path.is_file():
                source = f"read_parquet('{path}', hive_partitioning=false)"
            elif host_partitioning(path) is None:  # its files hold the host themselves
                source = f"read_parquet('{path / '**' / '*.parquet'}', hive_partitioning=false)"
            else:  # the host is the partition key (host=<host>/), a string whatever it looks like
                source = f"read_parquet('{path / '**' / '*.parquet'}', hive_partitioning=true, hive_types={{'host': VARCHAR}})"
            con.execute(f'create view "{name}" as select * from {source}')
        for name in self.summary.deferred:  # built (once) only when the query names them
            if re.search(rf"\b{re.escape(name)}\b", query):
                con.register(name, self._derive(name))
        return con.execute(query).df()

    def __repr__(self) -> str:
        s = self.summary
        rows = ", ".join(f"{k}={v:,}" for k, v in sorted(s.rows.items()) if v)
        return f"<Bundle {self.root}: {s.files} files, {s.bytes:,} bytes, {s.unparsed_lines:,} unparsed lines; {rows}>"


def cached_derived(store: Path) -> dict[str, Path]:
    """The derived tables the cache folder of ingest output ``store`` holds without a build error,
    each with the Parquet file it is in (none when nothing has built them there yet)."""
    folder = store / DERIVED_CACHE
    try:
        index = json.loads((folder / "index.json").read_text())["tables"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(index, dict):
        return {}
    return {name: folder / f"{name}.parquet" for name, error in index.items() if not error}


def per_bundle(fn: Callable[..., T]) -> Callable[..., T]:
    """Compute ``fn(bundle, *args)`` once per bundle and arguments: a model that several detectors
    and charts ask for (the cluster's brokers, its replicas) is built once per triage.

    The answer is kept on the bundle (:attr:`Bundle.memo`) with the identity of the tables the
    bundle holds at the time, so a table replaced or read later computes it anew. A frame comes
    back as a shallow copy: a caller adding a column to it never changes the kept one.
    """

    @functools.wraps(fn)
    def once(bundle, *args):
        if not isinstance(bundle, Bundle):
            return fn(bundle, *args)
        frames = tuple(bundle.tables.items())
        key = (fn.__module__, fn.__qualname__, args, tuple((name, id(df)) for name, df in frames))
        try:
            hash(key)
        except TypeError:  # an argument that cannot be a key (a frame): computed each time
            return fn(bundle, *args)
        if key in bundle.memo:
            got = bundle.memo[key][1]
        else:
            got = fn(bundle, *args)
            # the frames are kept with the answer, so no other frame can take one of their ids
            bundle.memo[key] = (frames, got)
        return got.copy(deep=False) if isinstance(got, pd.DataFrame | pd.Series) else got

    return once


def load_bundle(
    path: str | os.PathLike, tz: str | dict | None = None, progress: bool | None = None, cache: bool | None = None
) -> Bundle:
    """Parse every file of a bundle (a folder, or one file) into tables held in memory; an ingest
    output is opened with :func:`load` instead.

    A big raw bundle (``KITLIB_CACHE_MIN_MB``, default 128 MiB, or more) is not read into memory:
    it is ingested once into the kit's cache (:mod:`kitlib.ingestion.cache`, in
    ``$XDG_CACHE_HOME/kitlib``) and that store is opened as :func:`load` opens an ingest output, so
    tables are read when first asked for, cut to the window; the next call on the same unchanged
    bundle opens the same store. ``cache=False`` (or ``KITLIB_NO_CACHE=1``) reads it into memory
    whatever its size; ``cache=True`` caches it whatever its size.

    ``tz`` is the timezone the logs were written in (default: the manifest's, else UTC); a dict
    maps host -> zone. ``progress`` shows a progress bar (default: on a terminal, for big bundles).

    Example:
        >>> b = load_bundle("sample_data/healthy")              # doctest: +SKIP
        >>> b.summary.unparsed_lines                          # doctest: +SKIP
        0
    """
    if is_store(path):
        return load(path, progress)
    t0 = time.perf_counter()
    store = cached_store(path, tz, progress, cache)
    if store is not None:
        b = load(store)
        b.root = b.summary.bundle = str(Path(path))  # as this call names it, as an in-memory load does
        b.summary.seconds = round(time.perf_counter() - t0, 3)  # this load's time, not the first one's
        return b
    result, summary = run(path, tz, None, progress)
    return Bundle(str(path), result, summary)


def load(out: str | os.PathLike, progress: bool | None = None) -> Bundle:
    """Open what :func:`~kitlib.ingestion.store.ingest` (or a Dask ingest) wrote, without parsing
    anything again. Tables are read when first asked for, and only the rows of the bundle's window
    (see :func:`window`), so a big output is never loaded whole by accident; use
    :meth:`Bundle.sql` for aggregates DuckDB computes over the files. ``progress``: a bar while
    the first reader builds the tables derived from the log records (default: on a terminal or in
    a notebook, for a big output)."""
    registry.load()
    summary = read_summary(Path(out))
    derived = DerivedTables(Path(out), progress=progress) if progress is not None else None
    return Bundle(summary.bundle or str(out), {}, summary, store=Path(out), derived=derived)


def window(bundle: Bundle, start=None, end=None, hosts=None) -> Bundle:
    """The same bundle with every table cut to ``start <= ts < end`` (ISO strings or
    Timestamps, naive means UTC) and to ``hosts`` (a list) where given: a :class:`Window` within
    the bundle's own. Tables without a time column are kept whole (host-filtered if they have
    ``host``). Tables not read yet from an ingest output are read with the window pushed down.

    Example:
        >>> b = window(load_bundle("sample_data/healthy"), "2026-11-23T03:00", None)  # doctest: +SKIP
    """
    wanted = Window.of(start, end, hosts)
    if wanted.whole:
        return bundle
    out = {}
    for name, df in bundle.tables.items():
        out[name] = wanted.frame(df, tables.time_column(name)) if isinstance(df, pd.DataFrame) else df
    if bundle.store is not None and bundle.derived is None:
        bundle.derived = DerivedTables(bundle.store)  # built once, for the bundle and its windows
    return Bundle(
        bundle.root,
        out,
        replace(
            bundle.summary, window=[str(start), str(end)], hosts_filter=list(wanted.hosts) if wanted.hosts else None
        ),
        store=bundle.store,
        window=bundle.window.within(wanted),
        derived=bundle.derived,
    )
