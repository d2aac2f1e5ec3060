"""Tables derived from log records (commits, configs, cleaner runs, tier-state events, ...).

An extractor names its table, says which records it wants by logger name, and builds its table
from those records. Selection runs on every block of events while a bundle streams in (it only
looks at the few distinct logger names, so it costs nearly nothing); ``build`` runs once at the
end on the selected records, so it may pair or group records across blocks.

Example:
    >>> @extractor("demo_rows", loggers=["kafka.Foo"])
    ... def demo_rows(events):
    ...     return events[["ts", "message", "host", "file", "line"]]
    >>> EXTRACTORS["demo_rows"].wants("kafka.Foo")
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa


@dataclass
class Extractor:
    table: str
    build: Callable[[pd.DataFrame], pd.DataFrame]
    loggers: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    match: Callable[[str], bool] | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def wants(self, logger: str) -> bool:
        hit = self._cache.get(logger)
        if hit is None:
            hit = (logger in self.loggers or logger.startswith(self.prefixes or ("\0",))
                   or logger.endswith(self.suffixes or ("\0",)) or bool(self.match and self.match(logger)))
            self._cache[logger] = hit
        return hit


EXTRACTORS: dict[str, Extractor] = {}


def extractor(table: str, loggers: Iterable[str] = (), prefixes: Iterable[str] = (),
              suffixes: Iterable[str] = (), match: Callable[[str], bool] | None = None):
    """Register ``fn(events) -> DataFrame`` as the builder of ``table`` from the records whose
    logger is one of ``loggers``, starts with one of ``prefixes``, ends with one of
    ``suffixes``, or satisfies ``match``."""
    def wrap(fn):
        EXTRACTORS[table] = Extractor(table, fn, tuple(loggers), tuple(prefixes), tuple(suffixes), match)
        return fn
    return wrap


def load_all():
    """Import every extractor module (each registers itself)."""
    import importlib
    import pkgutil
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")


def select(block: pa.Table) -> dict[str, pa.Table]:
    """The records of an events block each extractor wants, keyed by table name."""
    load_all()
    col = block.column("logger").combine_chunks()
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    values = col.dictionary.to_pylist()
    idx = col.indices.to_numpy(zero_copy_only=False)
    out = {}
    for name, ex in EXTRACTORS.items():
        want = np.array([ex.wants(v or "") for v in values], bool)
        if not want.any():
            continue
        rows = np.flatnonzero(want[idx])
        if len(rows):
            out[name] = block.take(pa.array(rows))
    return out


def build_all(selected: dict[str, list[pa.Table]], to_pandas) -> dict[str, pd.DataFrame]:
    """Run every extractor's ``build`` on its selected records (an empty frame when none).
    Returns {table: frame}; a builder that raises yields its error under ``'!' + table``."""
    from kitlib import tables
    load_all()
    out = {}
    for name, ex in EXTRACTORS.items():
        parts = selected.get(name) or []
        if parts:
            ev = to_pandas(pa.concat_tables([p.cast(parts[0].schema) for p in parts]))
        else:
            from kitlib.formats.log4j import EVENTS_SCHEMA
            ev = to_pandas(EVENTS_SCHEMA.empty_table())
        ev = ev.sort_values(["host", "ts", "file", "line"], kind="stable").reset_index(drop=True)
        try:
            df = ex.build(ev)
            out[name] = tables.conform(name, df) if name in tables.SCHEMAS else df
        except Exception as e:  # noqa: BLE001 - reported, the rest of the bundle still loads
            out[name] = tables.empty(name) if name in tables.SCHEMAS else pd.DataFrame()
            out["!" + name] = f"{type(e).__name__}: {e}"
    return out
