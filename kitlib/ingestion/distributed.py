"""Ingest on a Dask cluster: files (and parts of big files) are parsed in parallel, then each
host's derived tables are finished in one task per host.

The work, in three steps:

1. **Plan** (on the client): discover the files and detect their formats as a single-process
   ingest does. A plain (uncompressed) log4j file bigger than ``split_bytes`` is cut into parts,
   each starting exactly at a record header, so a stack trace is never split; the line number each
   part starts on is counted (``bytes.count`` over the file, grep's speed) so every row keeps its
   exact line. Compressed files cannot be entered in the middle and stay whole.
2. **Parse** (one task per file or part): the same :func:`~kitlib.ingestion.pipeline.parse_file`
   into a streaming :class:`~kitlib.ingestion.sink.Sink` in a work folder of its own: events and
   unparsed lines go to Parquet, the records the table extractors want are spilled to Arrow
   files, and the ``files`` accounting row comes back.
3. **Finish** (one task per host, no shuffle): the host's derived tables are built from the
   records its parse tasks set aside (spills), and all of the host's tables are written as
   ``<out>/<table>/host=<host>/part-*.parquet``. With ``derive=False`` the derived tables are
   left to be built on first use from the events (:mod:`kitlib.ingestion.derive`).

The client then writes the ``files`` table and ``summary.json``, the same as a single-process
ingest: parts of one file are added back into one row. Workers read the bundle and write the
output by path, so they must see both at the same paths (one machine, or a shared filesystem).

Example:
    >>> from kitlib.ingestion.distributed import ingest_on_dask          # doctest: +SKIP
    >>> ingest_on_dask("incident/", "incident.kit", workers=2)         # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kitlib import formats, registry, tables
from kitlib.events import to_pandas
from kitlib.extract import BuildError, iter_build
from kitlib.ingestion.accounting import not_read_rows
from kitlib.ingestion.guard import check_replaceable, fresh_output
from kitlib.ingestion.pipeline import deferred_tables, parse_file, summarize
from kitlib.ingestion.sink import Sink, table_options, to_arrow
from kitlib.sources import SourceFile, check_output, count_lines, discover_all, head
from kitlib.summary import BundleSummary

SPLIT_BYTES = 256 * 1024 * 1024  # a plain log bigger than this is parsed in parts
STREAMED = Sink.STREAMED
_HEADER = re.compile(rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(?: |$)")


@dataclass(frozen=True)
class Unit:
    """One task's worth of parsing: a whole file, or a part of one (``src.end`` set)."""

    index: int  # the file's place in discovery order
    part: int  # 0 for a whole file, else 0, 1, ... for its parts
    src: SourceFile
    fmt: str  # detected format name, "" when unknown


@dataclass
class UnitResult:
    index: int
    part: int
    host: str
    row: dict  # its `files` accounting
    folder: str  # where its output is
    rows: dict[str, int] = field(default_factory=dict)  # rows per table it produced
    spills: dict[str, str] = field(default_factory=dict)  # selection group -> spill file
    errors: list[BuildError] = field(default_factory=list)  # blockwise builders that failed
    span: tuple[int | None, int | None] = (None, None)  # first/last record (ms)


def record_starts(path: Path, size: int, parts: int, window: int = 1 << 20) -> list[tuple[int, int]]:
    """Cut points for ``parts`` parts of a plain log4j file: (byte offset, line number) of the
    first record header at or after each even share of the file, with the line numbers counted.

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.log"
        >>> rec = b"[2024-05-22 00:00:00,000] INFO x (k)\\n\\tat a.B(C.java:1)\\n"
        >>> _ = p.write_bytes(rec * 4)
        >>> record_starts(p, p.stat().st_size, 2)
        [(0, 1), (110, 5)]
    """
    cuts = [(0, 1)]
    with open(path, "rb") as fh:
        for k in range(1, parts):
            target = max(size * k // parts, cuts[-1][0] + 1)
            fh.seek(max(target - 1, 0))
            buf = fh.read(window)
            pos = -1
            at = 0
            while True:
                nl = buf.find(b"\n", at)
                if nl < 0 or nl + 1 >= len(buf):
                    break
                if _HEADER.match(buf, nl + 1, nl + 41):
                    pos = max(target - 1, 0) + nl + 1
                    break
                at = nl + 1
            if pos <= cuts[-1][0] or pos >= size:
                continue
            cuts.append((pos, 0))
    # line numbers: count newlines up to each cut, in big chunks
    out = [cuts[0]]
    with open(path, "rb") as fh:
        done, lines = 0, 1
        for pos, _ in cuts[1:]:
            while done < pos:
                b = fh.read(min(16 << 20, pos - done))
                lines += count_lines(b)
                done += len(b)
            out.append((pos, lines))
    return out


def plan(root: Path, tz, split_bytes: int = SPLIT_BYTES) -> tuple[list[Unit], list]:
    """The units of work for a bundle (every file, big plain log4j files in parts), and the
    paths not read with why (as a single-process ingest lists them)."""
    registry.load()
    units = []
    srcs, skipped = discover_all(root, tz)
    for i, src in enumerate(srcs):
        fmt = formats.detect(head(src), src)
        name = fmt.name if fmt else ""
        splittable = (
            split_bytes > 0
            and name == "log4j"
            and not src.gz
            and src.size > split_bytes
            and head(src)[:2] != b"\x1f\x8b"
        )
        if not splittable:
            units.append(Unit(i, 0, src, name))
            continue
        cuts = record_starts(src.path, src.size, -(-src.size // split_bytes))
        for p, (start, line) in enumerate(cuts):
            end = cuts[p + 1][0] if p + 1 < len(cuts) else src.size
            units.append(
                Unit(
                    i,
                    p,
                    replace(
                        src,
                        start=start,
                        end=end,
                        first_line=line,
                        meta={k: v for k, v in src.meta.items() if k != "on_read"},
                    ),
                    name,
                )
            )
    return units, skipped


def parse_unit(unit: Unit, work: str, derive: bool = False) -> UnitResult:
    """Parse one unit into ``work/<index>-<part>/`` (runs on a worker); with ``derive`` the
    records the table extractors want are set aside for the host's finishing task."""
    registry.load()
    folder = Path(work) / f"{unit.index:06d}-{unit.part:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    fmt = formats.FORMATS.get(unit.fmt) if unit.fmt else None
    sink = Sink(folder, derive, partition_key="host")
    row = parse_file(unit.src, fmt, sink)
    spills = sink.close_streams()
    for name, parts in sink.parts.items():  # tables other formats fill (metrics, configs, ...): small
        df = pd.concat([p.to_pandas() if isinstance(p, pa.Table) else p for p in parts], ignore_index=True)
        at = to_arrow(name, df).drop_columns(["host"]) if "host" in df.columns else to_arrow(name, df)
        pq.write_table(at, folder / f"{name}.parquet", **table_options(at.schema))
    return UnitResult(
        unit.index,
        unit.part,
        unit.src.host,
        row,
        str(folder),
        dict(sink.rows),
        {g: str(p) for g, p in spills.items()},
        list(sink.block_errors.values()),
        (sink.first_ts, sink.last_ts),
    )


def finish_host(
    host: str, results: list[UnitResult], out: str, derive: bool = False
) -> tuple[dict[str, int], list[BuildError]]:
    """Write every table of one host from its units' output (runs on a worker); with ``derive``
    the host's derived tables are built here from the records its units set aside, else they are
    left to be built on first use (:mod:`kitlib.ingestion.derive`)."""
    registry.load()
    out_dir = Path(out)
    results = sorted(results, key=lambda r: (r.index, r.part))
    rows: dict[str, int] = {}
    selected: dict[str, list[pa.Table]] = {}
    format_filled: dict[str, list[Path]] = {}
    for r in results:
        folder = Path(r.folder)
        for p in sorted(folder.glob("*.parquet")):
            name = p.stem
            if name in STREAMED:
                dest = _part_path(out_dir, name, host, f"{r.index:06d}-{r.part:04d}")
                shutil.move(str(p), dest)
                rows[name] = rows.get(name, 0) + pq.ParquetFile(dest).metadata.num_rows
            else:
                format_filled.setdefault(name, []).append(p)
        for group, spill in r.spills.items():
            with pa.memory_map(spill) as f:
                selected.setdefault(group, []).append(pa.ipc.open_stream(f).read_all())
    errors: list[BuildError] = [e for r in results for e in r.errors]
    for name, df, err in iter_build(selected, to_pandas) if derive else iter(()):
        if err is not None:
            errors.append(err)
        extra = [_with_host(pq.read_table(p).to_pandas(), host) for p in format_filled.pop(name, [])]
        if extra:
            df = tables.conform(name, pd.concat([*extra, df], ignore_index=True))
        _write(out_dir, name, host, df, rows)
    for name, paths in format_filled.items():
        df = pd.concat([_with_host(pq.read_table(p).to_pandas(), host) for p in paths], ignore_index=True)
        _write(out_dir, name, host, tables.conform(name, df) if name in tables.SCHEMAS else df, rows)
    for r in results:
        shutil.rmtree(r.folder, ignore_errors=True)
    return rows, errors


def _part_path(out: Path, table: str, host: str, part: str) -> Path:
    """``<out>/<table>/host=<host>/part-<part>.parquet``: the host URL-escaped in the folder name
    (``broker 1`` -> ``host=broker%201``), which pyarrow, DuckDB and pandas decode back to it."""
    d = out / table / f"host={quote(host, safe='')}"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"part-{part}.parquet"


def _with_host(df: pd.DataFrame, host: str) -> pd.DataFrame:
    """A table a unit wrote without its host (the partition key) given it back."""
    if "host" not in df.columns:
        df.insert(0, "host", host)
    return df


def _write(out: Path, name: str, host: str, df: pd.DataFrame, rows: dict[str, int]) -> None:
    """One host's rows of table ``name`` into its partition; the host is the partition key, not a
    column of the file (a dictionary column there and a string key disagree for pyarrow)."""
    rows[name] = rows.get(name, 0) + len(df)
    if len(df):
        at = to_arrow(name, df)
        if "host" in at.column_names:
            at = at.drop_columns(["host"])
        pq.write_table(at, _part_path(out, name, host, "0"), **table_options(at.schema))


def files_table(results: list[UnitResult], not_read: list[dict] | None = None) -> pd.DataFrame:
    """The ``files`` table: one row per file, its parts' accounting added up, then the paths
    not read."""
    by_file: dict[int, dict] = {}
    for r in sorted(results, key=lambda r: (r.index, r.part)):
        row = by_file.get(r.index)
        if row is None:
            by_file[r.index] = dict(r.row)
            continue
        for k in ("lines", "parsed", "unparsed", "rows", "seconds"):
            if not pd.isna(r.row[k]):
                row[k] = (0 if pd.isna(row[k]) else row[k]) + r.row[k]
        if r.row["error"] and not row["error"]:
            row["error"], row["error_line"] = r.row["error"], r.row["error_line"]
        if r.row.get("note") and r.row["note"] not in (row.get("note") or ""):
            row["note"] = "; ".join(n for n in (row.get("note"), r.row["note"]) if n)
    return tables.conform("files", pd.DataFrame([by_file[i] for i in sorted(by_file)] + (not_read or [])))


def ingest_on_dask(
    path,
    out,
    tz=None,
    workers: int | None = None,
    scheduler: str | None = None,
    split_bytes: int = SPLIT_BYTES,
    progress: bool | None = None,
    log=print,
    derive: bool = True,
) -> BundleSummary:
    """Ingest a bundle on Dask: a local cluster of ``workers`` processes on 127.0.0.1, or the
    existing cluster at ``scheduler`` (``tcp://host:port``). The output is one Parquet dataset
    per table, partitioned by host, plus ``files`` and ``summary.json``; it holds the same rows
    and accounting as a single-process ingest. The derived tables are built on the workers, one
    task per host (a fleet's are too many to build on first use in one notebook); ``derive=False``
    leaves them to be built on first use instead. Returns the summary."""
    t0 = time.perf_counter()
    root, out = Path(path), Path(out)
    if not root.exists():
        raise FileNotFoundError(f"bundle not found: {path}")
    check_output(root, out)  # before anything is written or removed
    check_replaceable(out)  # an output the kit did not write is refused before the bundle is read
    units, skipped = plan(root, tz, split_bytes)
    with fresh_output(out, "kitlib ingest on Dask") as dest:  # replaces ``out`` only when all below succeeded
        summary = _run_on_dask(root, dest.resolve(), units, skipped, workers, scheduler, progress, log, t0, derive)
    return summary


def _run_on_dask(
    root: Path,
    dest: Path,
    units: list[Unit],
    skipped: list,
    workers: int | None,
    scheduler: str | None,
    progress: bool | None,
    log,
    t0: float,
    derive: bool,
) -> BundleSummary:
    from distributed import Client, LocalCluster, as_completed

    work = dest / ".work"
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(
            n_workers=workers or 2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
        )
        client = Client(cluster)
    try:
        if client.dashboard_link:
            log(f"Dask dashboard: {client.dashboard_link}")
        total = sum((u.src.end if u.src.end is not None else u.src.size) - u.src.start for u in units)
        bar = _bar(progress, total, root.name)
        futures = client.map(parse_unit, units, work=str(work), derive=derive, pure=False)
        size_of = {
            f.key: (u.src.end if u.src.end is not None else u.src.size) - u.src.start for f, u in zip(futures, units)
        }
        results: list[UnitResult] = []
        for fut in as_completed(futures):
            results.append(fut.result())
            if bar is not None:
                bar.update(size_of[fut.key])
        if bar is not None:
            bar.close()
        by_host: dict[str, list[UnitResult]] = {}
        for r in results:
            by_host.setdefault(r.host, []).append(r)
        finished = client.gather(
            client.map(finish_host, list(by_host), list(by_host.values()), out=str(dest), derive=derive, pure=False)
        )
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    shutil.rmtree(work, ignore_errors=True)
    rows: dict[str, int] = {}
    errors: dict[str, BuildError] = {}
    for host_rows, host_errors in finished:
        for k, v in host_rows.items():
            rows[k] = rows.get(k, 0) + v
        for e in host_errors:
            errors.setdefault(e.table, e)
    files = files_table(results, not_read_rows(skipped))
    at = to_arrow("files", files)
    pq.write_table(at, dest / "files.parquet", **table_options(at.schema))
    lo = [r.span[0] for r in results if r.span[0] is not None]
    hi = [r.span[1] for r in results if r.span[1] is not None]
    span = (
        [pd.Timestamp(min(lo), unit="ms", tz="UTC").isoformat(), pd.Timestamp(max(hi), unit="ms", tz="UTC").isoformat()]
        if lo
        else None
    )
    summary = summarize(root, files, rows, list(errors.values()), span, t0)
    if not derive:
        summary.deferred = deferred_tables()
    (dest / "summary.json").write_text(json.dumps(summary.to_dict(), indent=2, default=str) + "\n")
    return summary


def _bar(progress, total: int, label: str):
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=f"ingest {label} on dask", leave=False)
