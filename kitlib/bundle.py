"""Loading a bundle: discover its files, detect each file's format, parse every file into the
kit's tables, and (optionally) stream the result to Parquet.

Example:
    >>> import kitlib
    >>> b = kitlib.load_bundle("sample_data/healthy")      # doctest: +SKIP
    >>> b.events.groupby("level").size()                   # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kitlib import extract, formats, tables
from kitlib.formats import Context, first_nul, unknown_lines
from kitlib.sources import SourceFile, discover, head

tables.declare("files", "One row per file found in the bundle: its detected format and how its "
               "lines were accounted for (lines == parsed + unparsed for every parsed file).", [
                   ("file", "category", "path relative to the bundle root"),
                   ("host", "category", "host the file belongs to"),
                   ("format", "category", "detected format, or 'unknown' (every line kept in unparsed; binary files listed only)"),
                   ("tz", "str", "timezone its timestamps were read in"),
                   ("bytes", "int", "size on disk"),
                   ("lines", "int", "physical lines read (decompressed)"),
                   ("parsed", "int", "lines that became rows or structure"),
                   ("unparsed", "int", "lines kept in the unparsed table"),
                   ("rows", "int", "rows produced (all tables)"),
                   ("error", "str", "first problem met, naming file and line; empty when clean"),
                   ("error_line", "int", "line where that problem is"),
                   ("seconds", "float", "time spent parsing the file"),
               ], provenance=False)


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
    summary: dict = field(default_factory=dict)

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.table(name)

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.table(name)

    def table(self, name: str) -> pd.DataFrame:
        t = self.__dict__.get("tables", {}).get(name)
        if t is not None:
            return t
        if name not in tables.SCHEMAS:  # a bundle read back from Parquet may not have imported its declarer yet
            _declare_all()
        if name in tables.SCHEMAS:
            return tables.empty(name)
        raise AttributeError(f"bundle has no table {name!r}; known: {sorted(tables.SCHEMAS)}")

    def findings(self):
        """Run every detector; returns the list of findings (ranked)."""
        from kitlib.findings import run_detectors
        return run_detectors(self)[0]

    def __repr__(self) -> str:
        s = self.summary
        rows = ", ".join(f"{k}={v:,}" for k, v in sorted(s.get("rows", {}).items()) if v)
        return (f"<Bundle {self.root}: {s.get('files', 0)} files, {s.get('bytes', 0):,} bytes, "
                f"{s.get('unparsed_lines', 0):,} unparsed lines; {rows}>")


class _Sink:
    """Collects parser output in memory, or streams the big tables to Parquet."""

    STREAMED = ("events", "unparsed")

    def __init__(self, out: Path | None):
        self.out = out
        self.parts: dict[str, list] = {}
        self.selected: dict[str, list[pa.Table]] = {}
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.spills: dict[str, pa.ipc.RecordBatchStreamWriter] = {}
        self.written: set[str] = set()   # derived tables already written to ``out``
        self.block_errors: dict[str, str] = {}  # blockwise builders that failed on a block
        self.rows: dict[str, int] = {}
        # Parquet writes run on their own thread (one in flight, in order) so that reading
        # and parsing the next blocks overlaps with compressing this one
        self._pool = ThreadPoolExecutor(1) if out is not None else None
        self._last = None

    def add(self, name: str, chunk) -> int:
        n = chunk.num_rows if isinstance(chunk, pa.Table) else len(chunk)
        if n == 0:
            return 0
        self.rows[name] = self.rows.get(name, 0) + n
        if name == "events":
            for g, sel in extract.select(chunk).items():
                if g.startswith("!"):
                    self.block_errors.setdefault(g[1:], sel)
                else:
                    self._keep(g, sel)
        if self.out is not None and name in self.STREAMED:
            at = chunk if isinstance(chunk, pa.Table) else _arrow(name, chunk)
            w = self.writers.get(name)
            if w is None:
                w = self.writers[name] = pq.ParquetWriter(
                    self.out / f"{name}.parquet", at.schema, compression="zstd",
                    use_dictionary=[f.name for f in at.schema if pa.types.is_dictionary(f.type)])
            if self._last is not None:
                self._last.result()
            self._last = self._pool.submit(w.write_table, at.cast(w.schema) if at.schema != w.schema else at)
        else:
            self.parts.setdefault(name, []).append(chunk)
        return n

    def _keep(self, group: str, sel: pa.Table) -> None:
        # records the extractors want: in memory, or (streaming) spilled to an Arrow stream file
        # next to the output, so that thousands of small selections do not pin memory that the
        # parser's big blocks then cannot reuse (it measured +250 MB RSS on a 2 GB log)
        if self.out is None:
            self.selected.setdefault(group, []).append(sel)
            return
        plain = pa.schema([pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
                           for f in sel.schema])
        w = self.spills.get(group)
        if w is None:
            w = self.spills[group] = pa.ipc.new_stream(self.out / f".selected-{group}.arrow", plain)
        w.write_table(sel.cast(plain))

    def finish(self) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
        from kitlib.events import to_pandas
        if self._last is not None:
            self._last.result()
        if self._pool is not None:
            self._pool.shutdown()
        for w in self.writers.values():
            w.close()
        for group, w in self.spills.items():
            w.close()
            path = self.out / f".selected-{group}.arrow"
            with pa.memory_map(str(path)) as f:
                self.selected[group] = [pa.ipc.open_stream(f).read_all()]
            path.unlink()
        out: dict[str, pd.DataFrame] = {}
        for name, parts in self.parts.items():
            if name == "events":
                df = to_pandas(pa.concat_tables(parts))
            else:
                frames = [p.to_pandas() if isinstance(p, pa.Table) else p for p in parts]
                df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
            out[name] = tables.conform(name, df) if name in tables.SCHEMAS else df.reset_index(drop=True)
        errors = dict(self.block_errors)
        selected, self.selected = self.selected, {}
        _release_memory()
        for k, v, err in extract.iter_build(selected, to_pandas):
            if err:
                errors.setdefault(k, err)
            if k in out and len(out[k]):  # a table some file format also fills (configs: logs + live capture)
                v = tables.conform(k, pd.concat([out[k], v], ignore_index=True)) if len(v) else out[k]
            self.rows[k] = len(v)
            if self.out is not None:  # streaming: write it now, so derived tables never pile up in memory
                pq.write_table(_arrow(k, v), self.out / f"{k}.parquet", compression="zstd")
                self.written.add(k)
                out.pop(k, None)
                del v
                _release_memory()
            else:
                out[k] = v
        return out, errors


def _release_memory() -> None:
    """Hand freed memory back to the OS between the big steps of a streaming ingest (glibc keeps
    it otherwise, and the next step's peak lands on top of it)."""
    pa.default_memory_pool().release_unused()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def _arrow(name: str, df: pd.DataFrame) -> pa.Table:
    df = tables.conform(name, df) if name in tables.SCHEMAS else df
    return pa.Table.from_pandas(df, preserve_index=False)


def _run(path, tz, out: Path | None, progress) -> tuple[dict[str, pd.DataFrame], dict]:
    t0 = time.perf_counter()
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"bundle not found: {path}")
    extract.load_all()  # every derived table is declared before anything is conformed
    formats._load_all()
    srcs = discover(root, tz)
    total = sum(s.size for s in srcs)
    bar = _progress(progress, total, root.name)
    sink = _Sink(out)
    inventory = []
    for src in srcs:
        if bar is not None:
            src.meta["on_read"] = bar.update
        t1 = time.perf_counter()
        fmt = formats.detect(head(src), src)
        rec = {"file": src.rel, "host": src.host, "format": fmt.name if fmt else "unknown", "tz": src.tz,
               "bytes": src.size, "lines": pd.NA, "parsed": pd.NA, "unparsed": pd.NA, "rows": 0,
               "error": "", "error_line": pd.NA}
        nul = first_nul(head(src)) if fmt is None else -1
        if nul >= 0:
            rec["error"] = f"{src.rel}: binary content (NUL byte at offset {nul}): listed, not read as lines"
            if bar is not None:
                bar.update(src.size)
        else:
            ctx = Context(src)
            n_unparsed = rows = 0
            try:
                for name, chunk in (fmt.parse if fmt else unknown_lines)(src, ctx):
                    n = sink.add(name, chunk)
                    if name == "unparsed":
                        n_unparsed += n
                    else:
                        rows += n
            except Exception as e:  # noqa: BLE001 - one bad file must not stop the bundle
                ctx.fail(f"{src.rel}: parser {fmt.name} stopped after line {ctx.lines}: {type(e).__name__}: {e}",
                         ctx.lines + 1)
            rec.update(lines=ctx.lines, parsed=ctx.parsed, unparsed=n_unparsed, rows=rows,
                       error=ctx.error, error_line=ctx.error_line if ctx.error_line is not None else pd.NA)
            if ctx.parsed + n_unparsed != ctx.lines and not ctx.error:
                rec["error"] = (f"{src.rel}: line accounting mismatch: {ctx.lines} lines, {ctx.parsed} parsed, "
                                f"{n_unparsed} unparsed")
        rec["seconds"] = round(time.perf_counter() - t1, 4)
        inventory.append(rec)
    if bar is not None:
        bar.close()
    result, build_errors = sink.finish()
    result["files"] = tables.conform("files", pd.DataFrame(inventory))
    files = result["files"]
    summary = {
        "bundle": str(root),
        "files": len(files),
        "bytes": int(files["bytes"].sum()) if len(files) else 0,
        "formats": {k: int(v) for k, v in files["format"].value_counts().items() if v},
        "hosts": sorted(str(h) for h in files["host"].dropna().unique()),
        "rows": {k: int(v) for k, v in sorted(sink.rows.items())},
        "unparsed_lines": int(sink.rows.get("unparsed", 0)),
        "errors": [f"{r.error}" for r in files.itertuples() if r.error and r.format != "unknown"]
                  + [f"building {t}: {e}" for t, e in build_errors.items()],
        "unknown_files": [r.file for r in files.itertuples() if r.format == "unknown"],
        "time_span": _span(result.get("events")),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return result, summary


def _span(ev: pd.DataFrame | None) -> list[str] | None:
    if ev is None or not len(ev):
        return None
    return [ev["ts"].min().isoformat(), ev["ts"].max().isoformat()]


def _progress(progress, total: int, label: str):
    # default: a bar for big bundles on a terminal or in a Jupyter kernel (tqdm.auto picks the widget)
    if progress is None:
        progress = total > 256 * 1024 * 1024 and (sys.stderr.isatty() or "ipykernel" in sys.modules) \
            or (sys.stderr.isatty() and total > 32 * 1024 * 1024)
    if not progress:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=f"ingest {label}", leave=False)


def load_bundle(path: str | os.PathLike, tz: str | dict | None = None, progress: bool | None = None) -> Bundle:
    """Parse every file of a bundle (a folder, or one file) into tables held in memory.

    ``tz`` is the timezone the logs were written in (default: the manifest's, else UTC); a dict
    maps host -> zone. ``progress`` shows a progress bar (default: on a terminal, for big bundles).

    Example:
        >>> b = load_bundle("sample_data/healthy")              # doctest: +SKIP
        >>> b.summary["unparsed_lines"]                          # doctest: +SKIP
        0
    """
    p = Path(path)
    if p.is_dir() and (p / "summary.json").is_file() and (p / "files.parquet").is_file():
        return load(p)
    result, summary = _run(path, tz, None, progress)
    return Bundle(str(path), result, summary)


def ingest(path: str | os.PathLike, out: str | os.PathLike, tz: str | dict | None = None,
           progress: bool | None = None) -> dict:
    """Parse a bundle and write each table as ``<out>/<table>.parquet`` plus ``summary.json``.
    Events and unparsed lines stream to disk block by block, so memory stays bounded.
    Returns the summary; read it all back with :func:`load`.

    Example:
        >>> s = ingest("sample_data/healthy", "/tmp/healthy.kit")   # doctest: +SKIP
        >>> load("/tmp/healthy.kit").events.shape                    # doctest: +SKIP
    """
    out = Path(out)
    src = Path(path).resolve()
    if out.resolve() == src or src in out.resolve().parents:
        raise ValueError("--out must not be inside the bundle (input files are never written to)")
    out.mkdir(parents=True, exist_ok=True)
    result, summary = _run(path, tz, out, progress)
    for name, df in result.items():
        if isinstance(df, pd.DataFrame):
            pq.write_table(_arrow(name, df), out / f"{name}.parquet", compression="zstd")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _declare_all() -> None:
    """Import every module that declares a table (formats and extractors)."""
    extract.load_all()
    formats._load_all()


def load(out: str | os.PathLike) -> Bundle:
    """Read back what :func:`ingest` wrote, without parsing anything again."""
    _declare_all()
    from kitlib.events import to_pandas
    out = Path(out)
    summary = json.loads((out / "summary.json").read_text())
    result = {}
    for p in sorted(out.glob("*.parquet")):
        name = p.stem
        t = pq.read_table(p)
        df = to_pandas(t) if name == "events" else t.to_pandas()
        result[name] = tables.conform(name, df) if name in tables.SCHEMAS else df
    return Bundle(summary.get("bundle", str(out)), result, summary)


def window(bundle: Bundle, start=None, end=None, hosts=None) -> Bundle:
    """The same bundle with every table cut to ``start <= ts < end`` (ISO strings or
    Timestamps, naive means UTC) and to ``hosts`` (a list) where given. Tables without a
    ``ts`` column are kept whole (host-filtered if they have ``host``).

    Example:
        >>> b = window(load_bundle("sample_data/healthy"), "2026-11-23T03:00", None)  # doctest: +SKIP
    """
    if start is None and end is None and not hosts:
        return bundle
    lo = _utc(start) if start is not None else None
    hi = _utc(end) if end is not None else None
    out = {}
    for name, df in bundle.tables.items():
        if not isinstance(df, pd.DataFrame):
            out[name] = df
            continue
        keep = pd.Series(True, index=df.index)
        if "ts" in df.columns and pd.api.types.is_datetime64_any_dtype(df["ts"]) and name != "files":
            if lo is not None:
                keep &= df["ts"] >= lo
            if hi is not None:
                keep &= df["ts"] < hi
        if hosts and "host" in df.columns:
            keep &= df["host"].astype("string").isin([str(h) for h in hosts])
        out[name] = df[keep.fillna(False)].reset_index(drop=True)
    return Bundle(bundle.root, out, dict(bundle.summary, window=[str(start), str(end)], hosts_filter=hosts))


def _utc(t) -> pd.Timestamp:
    ts = pd.Timestamp(t)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
