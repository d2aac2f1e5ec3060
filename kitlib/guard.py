"""The promises an ingest keeps whatever the bundle holds, as small pieces the pipeline calls:

- :func:`fresh_output`: tables are written into a new temporary folder next to the output,
  which replaces the output only when the ingest is complete (no stale tables from a previous
  bundle, no partial Parquet after a failure); an existing output that is not the kit's own is
  never replaced.
- :func:`account_rest`: when a parser stops on an exception, the lines it had not reached are
  kept in ``unparsed`` with the reason, so the file's lines still add up.
- :func:`not_read_rows` / :func:`cut_line_note`: what the kit did not read, and lines it cut, as
  rows and notes of the ``files`` table.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "kit"
    >>> with fresh_output(out) as tmp:
    ...     _ = (tmp / "summary.json").write_text("{}")
    >>> sorted(p.name for p in out.iterdir())
    ['summary.json']
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# what an output folder of the kit may hold (anything else means it is not ours to replace)
_OURS = (".parquet", ".arrow", ".json")


def is_kit_output(folder: Path) -> bool:
    """True for an empty folder or one holding only what an ingest writes (Parquet tables,
    summary.json)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return False
    for e in entries:
        if e.name.endswith(_OURS) or e.name.startswith("."):
            continue
        if e.is_dir(follow_symlinks=False) and is_kit_output(Path(e.path)):  # a table stored as a dataset by host
            continue
        return False
    return True


@contextlib.contextmanager
def fresh_output(out: str | os.PathLike) -> Iterator[Path]:
    """Yield a new empty folder beside ``out``; when the block ends without an exception it
    becomes ``out`` (a previous ``out`` is removed only then), otherwise it is removed and
    ``out`` is left as it was. Refuses (ValueError) to replace an ``out`` that exists and holds
    other files than the kit's output."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    if out.is_dir() and not is_kit_output(out):
        raise ValueError(
            f"--out {out} holds files that are not kit output (Parquet tables, summary.json): "
            f"refusing to replace it; choose a new or empty folder"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def account_rest(src, ctx, error: BaseException, reason_prefix: str = "not read: the parser stopped"):
    """After a parser stopped on ``error``: (table, frame) pairs for the lines it had not
    reached (``ctx.lines`` + 1 onwards), kept in ``unparsed`` with the reason; ``ctx.lines`` is
    then the file's full line count. Reads the file again with bounded memory."""
    from kitlib.formats import Context, decode_line, iter_lines, unparsed_frame

    done = ctx.lines
    probe = Context(src)
    reason = f"{reason_prefix} ({type(error).__name__})"
    ns, ts = [], []
    for n, raw in iter_lines(src, probe):
        if n <= done:
            continue
        ns.append(n)
        ts.append(decode_line(raw)[0][:4096])
        if len(ns) >= 100_000:
            yield "unparsed", unparsed_frame(src, ns, ts, reason)
            ns, ts = [], []
    if ns:
        yield "unparsed", unparsed_frame(src, ns, ts, reason)
    ctx.lines = max(ctx.lines, probe.lines)


def not_read_rows(skipped) -> list[dict]:
    """``files`` table rows for paths the kit did not read (see :func:`kitlib.sources.discover_all`)."""
    return [
        {
            "file": s.rel,
            "host": "",
            "format": "not read",
            "tz": "",
            "bytes": None,
            "lines": None,
            "parsed": None,
            "unparsed": None,
            "rows": 0,
            "error": f"{s.rel}: not read: {s.reason}",
            "error_line": None,
        }
        for s in skipped
    ]


def cut_line_note(src) -> str:
    """What the file's error says about lines longer than :data:`kitlib.sources.MAX_LINE` (kept
    cut to that length, the rest counted), or ''."""
    cuts = src.meta.get("cut_lines") or []
    if not cuts:
        return ""
    from kitlib.sources import MAX_LINE

    line, dropped = cuts[0]
    more = f" ({len(cuts)} such lines)" if len(cuts) > 1 else ""
    return (
        f"{src.rel} line {line}: longer than {MAX_LINE // (1024 * 1024)} MiB: its first "
        f"{MAX_LINE // (1024 * 1024)} MiB kept, {dropped:,} bytes after that not stored{more}"
    )
