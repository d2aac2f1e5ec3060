"""The Parquet store: a bundle ingested once into ``<out>/<table>.parquet`` plus
``summary.json``, and read back without parsing anything again."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow.parquet as pq

from kitlib import registry, tables
from kitlib.events import to_pandas
from kitlib.ingest.pipeline import run
from kitlib.ingest.sink import to_arrow
from kitlib.guard import fresh_output
from kitlib.sources import check_output, shown
from kitlib.summary import BundleSummary

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.bundle import Bundle


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder :func:`ingest` wrote."""
    p = Path(path)
    return p.is_dir() and (p / "summary.json").is_file() and (p / "files.parquet").is_file()


def ingest(path: str | os.PathLike, out: str | os.PathLike, tz: str | dict | None = None,
           progress: bool | None = None) -> BundleSummary:
    """Parse a bundle and write each table as ``<out>/<table>.parquet`` plus ``summary.json``.
    Events and unparsed lines stream to disk block by block, so memory stays bounded.
    Returns the summary; read it all back with :func:`load`.

    Example:
        >>> s = ingest("sample_data/healthy", "/tmp/healthy.kit")   # doctest: +SKIP
        >>> load("/tmp/healthy.kit").events.shape                    # doctest: +SKIP
    """
    out = Path(out)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"bundle not found: {shown(str(path))}")
    check_output(path, out)  # before anything is written or removed
    with fresh_output(out) as tmp:  # replaces ``out`` only when everything below succeeded
        result, summary = run(path, tz, tmp, progress)
        for name, df in result.items():
            if isinstance(df, pd.DataFrame):
                pq.write_table(to_arrow(name, df), tmp / f"{name}.parquet", compression="zstd")
        (tmp / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    return summary


def load(out: str | os.PathLike) -> Bundle:
    """Read back what :func:`ingest` wrote, without parsing anything again."""
    from kitlib.bundle import Bundle
    registry.load()
    out = Path(out)
    summary = BundleSummary.from_dict(json.loads((out / "summary.json").read_text()))
    result = {}
    for p in sorted(out.glob("*.parquet")):
        name = p.stem
        t = pq.read_table(p)
        df = to_pandas(t) if name == "events" else t.to_pandas()
        # the kit's own output, redacted when it was written
        result[name] = tables.conform(name, df, redact=False) if name in tables.SCHEMAS else df
    return Bundle(summary.bundle or str(out), result, summary)


