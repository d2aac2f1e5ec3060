"""The ingest pipeline: find a bundle's files, detect each one's format, parse it into a sink,
and account for every line (the ``files`` table), whatever happens to any one file."""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

import pandas as pd

from kitlib import formats, registry, tables
from kitlib.extract import BuildError
from kitlib.formats import Context, Format, first_nul, unknown_lines
from kitlib.formats.unreached import account_rest
from kitlib.ingestion.accounting import cut_line_note, not_read_rows
from kitlib.ingestion.sink import Sink
from kitlib.sources import CR_NOTE, SourceFile, close_archives, discover_all, head
from kitlib.summary import BundleSummary

tables.declare(
    "files",
    "One row per file found in the bundle: its detected format and how its "
    "lines were accounted for (lines == parsed + unparsed for every parsed file).",
    [
        ("file", "category", "path relative to the bundle root"),
        ("host", "category", "host the file belongs to"),
        (
            "host_from",
            "category",
            "how the host was found: folder, manifest, file name, file content "
            "(under a folder that names a kind such as jmx/ or logs/), or bundle name",
        ),
        (
            "format",
            "category",
            "detected format, 'empty' (no content: 0 lines), 'unknown' (every line kept in unparsed; binary files "
            "listed only), or 'not read' (a path not read as data: error says why)",
        ),
        ("tz", "str", "timezone its timestamps were read in"),
        ("bytes", "int", "size on disk"),
        ("lines", "int", "physical lines read (decompressed)"),
        ("parsed", "int", "lines that became rows or structure"),
        ("unparsed", "int", "lines kept in the unparsed table"),
        ("rows", "int", "rows produced (all tables)"),
        ("error", "str", "first problem met, naming file and line; empty when clean"),
        (
            "note",
            "str",
            "what the reader assumed to read the file (lines ending with a lone CR, the unit of "
            "epoch times, local times in a daylight-saving change, a layout refused); empty when nothing",
        ),
        ("error_line", "int", "line where that problem is"),
        ("seconds", "float", "time spent parsing the file"),
    ],
    provenance=False,
)


# a streaming ingest with derived tables of at least this many bytes, on a machine with two
# cores or more, builds them in a second process while it parses (below it, starting that
# process costs more than it saves)
PARALLEL_BYTES = 128 * 1024 * 1024


def two_processes(total: int) -> bool:
    """Whether a streaming ingest of ``total`` bytes with derived tables uses a second process:
    ``KITLIB_INGEST_PROCESSES`` 1 or 2 says so, else a bundle of :data:`PARALLEL_BYTES` or more
    on a machine with two cores or more."""
    raw = os.environ.get("KITLIB_INGEST_PROCESSES", "").strip()
    if raw in ("1", "2"):
        return raw == "2"
    # (the second process is handed its socket as an inherited descriptor: POSIX only)
    return total >= PARALLEL_BYTES and cores() >= 2 and os.name == "posix"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def run(
    path, tz, out: Path | None, progress, derive: bool = True, parallel: bool | None = None
) -> tuple[dict[str, pd.DataFrame], BundleSummary]:
    """Discover, detect and parse every file of the bundle at ``path`` into ``Sink(out)``;
    returns the tables held in memory (all of them when ``out`` is None) and the summary.
    ``derive=False`` (streaming only) leaves the tables derived from log records to be built
    on first use from the stored events; the summary lists them in ``deferred``.
    ``parallel`` builds the derived tables of a streaming ingest in a second process while the
    bundle is parsed (:class:`~kitlib.ingestion.sink.DerivingProcess`): the same tables, on two
    cores; by default as :func:`two_processes` says."""
    t0 = time.perf_counter()
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"bundle not found: {path}")
    registry.load()  # every table is declared before anything is conformed
    # the objects of the imported libraries are moved out of the collector's sight: its full
    # passes over them, set off by the parse's short-lived objects, were a few % of an ingest
    gc.freeze()
    srcs, skipped = discover_all(root, tz)
    total = sum(s.size for s in srcs)
    bar = progress_bar(progress, total, root.name)
    if parallel is None:
        parallel = two_processes(total)
    sink = Sink(out, derive, parallel=bool(parallel) and derive and out is not None)
    inventory = FileRows()
    n_files = len(srcs)
    srcs.reverse()  # taken from the end: each file's object (and what its parse noted) goes once it is parsed
    try:
        while srcs:
            src = srcs.pop()
            if bar is not None:
                src.meta["on_read"] = bar.update
                bar.set_postfix_str(f"file {n_files - len(srcs):,}/{n_files:,}", refresh=False)
            fmt = formats.detect(head(src), src)
            inventory.add(parse_file(src, fmt, sink, bar))
    except BaseException:
        sink.abort()
        raise
    finally:
        close_archives()
    for row in not_read_rows(skipped):
        inventory.add(row)
    if bar is not None:
        bar.close()
        if sink.derive and out is not None:  # the next stage, which can take a while on a big bundle
            print("kitlib: building the derived tables", file=getattr(bar, "fp", sys.stderr), flush=True)
    result, build_errors = sink.finish()
    result["files"] = tables.conform("files", inventory.frame())
    summary = summarize(root, result["files"], sink.rows, build_errors, sink.time_span(), t0)
    if not sink.derive:
        summary.deferred = deferred_tables()
    return result, summary


class FileRows:
    """The ``files`` table built a column at a time: a bundle of 100,000 small files holds a list
    of values per column, not a dict per file."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {c.name: [] for c in tables.SCHEMAS["files"].columns}
        self.n = 0

    def add(self, row: dict) -> None:
        for c, values in self.columns.items():
            values.append(row.get(c))
        self.n += 1

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns, index=pd.RangeIndex(self.n))


def deferred_tables() -> list[str]:
    """The tables an ingest without ``derive`` leaves to be built on first use: every table an
    extractor derives from log records."""
    from kitlib.extract import EXTRACTORS

    registry.load()
    return sorted(EXTRACTORS)


def parse_file(src: SourceFile, fmt: Format | None, sink: Sink, bar=None) -> dict:
    """Parse one file (or one part of a split file) into ``sink``; returns its ``files`` row.
    Whatever goes wrong costs this file only, and is named in the row's ``error``."""
    t1 = time.perf_counter()
    rec = {
        "file": src.rel,
        "host": src.host,
        "host_from": src.meta.get("host_from", ""),
        "format": fmt.name if fmt else "unknown",
        "tz": src.tz,
        "bytes": src.size,
        "lines": pd.NA,
        "parsed": pd.NA,
        "unparsed": pd.NA,
        "rows": 0,
        "error": "",
        "error_line": pd.NA,
        "note": "",
    }
    first = head(src) if fmt is None else b""
    nul = first_nul(first) if fmt is None else -1
    if fmt is None and not first and not _has_content(src):
        rec.update(format="empty", lines=0, parsed=0, unparsed=0)
    elif nul >= 0:
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
            ctx.fail(
                f"{src.rel}: parser {rec['format']} stopped after line {src.first_line - 1 + ctx.lines}: "
                f"{type(e).__name__}: {e}",
                src.first_line + ctx.lines,
            )
            if src.end is None:  # the lines it had not reached are kept in unparsed with the reason
                try:
                    for name, chunk in account_rest(src, ctx, e):
                        n_unparsed += sink.add(name, chunk)
                except Exception as e2:  # noqa: BLE001 - it cannot even be read again: say so
                    ctx.fail(f"{src.rel}: cannot be read again to keep its remaining lines: {type(e2).__name__}: {e2}")
        note = cut_line_note(src)
        if note and not ctx.error:
            ctx.fail(note, src.meta["cut_lines"][0][0])
        rec.update(
            lines=ctx.lines,
            parsed=ctx.parsed,
            unparsed=n_unparsed,
            rows=rows,
            error=ctx.error,
            note="; ".join(([CR_NOTE] if src.meta.get("cr_lines") else []) + ctx.notes),
            error_line=ctx.error_line if ctx.error_line is not None else pd.NA,
        )
        if ctx.parsed + n_unparsed != ctx.lines and not ctx.error:
            rec["error"] = (
                f"{src.rel}: line accounting mismatch: {ctx.lines} lines, {ctx.parsed} parsed, {n_unparsed} unparsed"
            )
    rec["seconds"] = round(time.perf_counter() - t1, 4)
    return rec


def _has_content(src: SourceFile) -> bool:
    """Whether the file holds anything (its first content byte could be read); a file that cannot
    be read counts as holding something, so the parser meets the error and names it."""
    from kitlib.sources import SourceError, read_chunks

    chunks = read_chunks(src, chunk=64 * 1024)
    try:
        return any(chunks)
    except SourceError:
        return True
    finally:
        chunks.close()  # type: ignore[attr-defined]  # a generator: closing it closes the file


def summarize(
    root: Path,
    files: pd.DataFrame,
    rows: dict[str, int],
    build_errors: list[BuildError],
    time_span: list[str] | None,
    t0: float,
) -> BundleSummary:
    """The bundle summary from the ``files`` table, rows per table and the failed builders."""
    return BundleSummary(
        bundle=str(root),
        files=int((files["format"] != "not read").sum()),
        bytes=int(files["bytes"].sum()) if len(files) else 0,
        formats={str(k): int(v) for k, v in files["format"].value_counts().items() if v and k != "not read"},
        hosts=sorted(str(h) for h in files["host"].dropna().unique() if str(h)),
        rows={k: int(v) for k, v in sorted(rows.items())},
        unparsed_lines=int(rows.get("unparsed", 0)),
        errors=[str(r.error) for r in files.itertuples() if r.error and r.format not in ("unknown", "not read")]
        + [f"building {e.table}: {e.message}" for e in build_errors],
        unknown_files=[str(r.file) for r in files.itertuples() if r.format == "unknown"],
        not_read=[str(r.error).replace(": not read: ", ": ", 1) for r in files.itertuples() if r.format == "not read"],
        time_span=time_span,
        seconds=round(time.perf_counter() - t0, 3),
    )


def progress_bar(progress, total: int, label: str, doing: str = "ingest"):
    """A tqdm bar of ``total`` bytes labelled ``doing label``, or None when none is shown:
    ``progress`` says so, else the default below (the ingest's, and the first build of an ingest
    output's derived tables)."""
    # default: a bar for big bundles on a terminal or in a Jupyter kernel (tqdm.auto picks the widget),
    # never under CI (CI set in the environment, as CI services do)
    if progress is None:
        progress = (
            total > 256 * 1024 * 1024
            and (sys.stderr.isatty() or "ipykernel" in sys.modules)
            or (sys.stderr.isatty() and total > 32 * 1024 * 1024)
        ) and os.environ.get("CI", "").strip().lower() in ("", "0", "false")
    if not progress:
        return None
    from tqdm.auto import tqdm

    from kitlib.terminal import visible

    # the bar draws with '\r' itself: it writes to the real stderr, not the CLI's escaping wrapper,
    # and its label (a folder name) is made visible first
    stream = getattr(sys.stderr, "stream", sys.stderr)
    return tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=f"{doing} {visible(label)}",
        leave=False,
        file=stream,
    )
