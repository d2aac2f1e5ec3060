"""The format registry: every input format declares a detection signature and a parser.

A format module calls :func:`register` with
- ``detect(head: bytes, src) -> bool``: does this file look like the format? ``head`` is the
  first 64 KiB of the (decompressed) content. Detection is by content; the file name may be
  used only as a tie-breaker.
- ``parse(src, ctx) -> iterator of (table name, pyarrow.Table | pandas.DataFrame)``: the rows it
  found, in chunks. It must account for every line of the file: add the lines it turned into
  rows (or consumed as headers/structure) to ``ctx.parsed`` and yield the others as rows of
  the ``unparsed`` table (see :func:`unparsed_frame`), so that
  ``ctx.parsed + unparsed rows == ctx.lines``.

Formats are tried in ``priority`` order (lower first); the first whose ``detect`` says yes wins.

Where the formats live: log files (Kafka's log4j layout, other pattern layouts, JSON logs) in
:mod:`kitlib.formats.logs`; the outputs of Kafka's command-line tools (kafka-topics,
kafka-consumer-groups, kafka-configs, ...) in :mod:`kitlib.formats.cli`; metrics, captures and
traces in modules of this package. Times every format reads are in :mod:`kitlib.formats.times`.

Example:
    >>> from kitlib import formats
    >>> formats.detect(b"[2024-05-22 00:32:03,023] INFO hi (x.Y)\\n").name
    'log4j'
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pandas as pd

from kitlib import registry, tables
from kitlib.redact import LineCarry
from kitlib.sources import SourceError, SourceFile, read_chunks

tables.declare(
    "unparsed",
    "Input lines no parser could turn into a row, kept verbatim (invalid "
    "bytes shown as \\x escapes) so nothing is lost silently.",
    [
        ("file", "category", "path of the source file relative to the bundle root"),
        ("line", "int", "1-based line number"),
        ("host", "category", "host the file came from"),
        ("text", "str", "the line's text"),
        ("reason", "category", "why it was not parsed"),
    ],
)


@dataclass
class Format:
    name: str
    detect: Callable[[bytes, SourceFile], bool]
    parse: Callable
    tables: tuple[str, ...]
    priority: int = 50
    doc: str = ""


FORMATS = registry.FORMATS  # name -> Format, filled by register()


def register(name: str, *, detect, parse, tables: tuple[str, ...], priority: int = 50, doc: str = "") -> Format:
    """Register a format (see the module doc)."""
    f = Format(name, detect, parse, tuple(tables), priority, doc)
    FORMATS[name] = f
    return f


def detect(head: bytes, src: SourceFile | None = None) -> Format | None:
    """The first registered format whose signature matches ``head``; None when unknown."""
    registry.load()
    if src is None:
        src = SourceFile(path=None, rel="", host="")  # type: ignore[arg-type]
    for f in sorted(FORMATS.values(), key=lambda f: (f.priority, f.name)):
        try:
            if f.detect(head, src):
                return f
        except Exception:  # noqa: BLE001 - a detector that fails on odd bytes says no
            continue
    return None


@dataclass
class Context:
    """Per-file bookkeeping a parser fills in."""

    src: SourceFile
    lines: int = 0  # physical lines seen
    parsed: int = 0  # lines that became rows or were consumed as structure
    error: str = ""  # first error (file and line named)
    error_line: int | None = None
    notes: list[str] = field(default_factory=list)

    def fail(self, message: str, line: int | None = None):
        if not self.error:
            self.error, self.error_line = message, line


def unparsed_frame(
    src: SourceFile, lines: list[int], texts: list[str], reason: str | list[str], carry: LineCarry | None = None
) -> pd.DataFrame:
    """Rows for the ``unparsed`` table: the lines' numbers and texts, and why they were not parsed
    (one ``reason`` for all, or one per line). The text passes through secret redaction as lines of
    one file (:func:`kitlib.redact.redact_lines`: a value on the line after its key and a PEM
    key's body lines are masked too; ``carry``, one per file, continues that across the calls of a
    file read in pieces)."""
    import pyarrow as pa

    from kitlib.redact import redact_lines

    text = redact_lines(pa.array(texts, pa.large_string()), lines, carry, src.rel) if texts else []
    return pd.DataFrame(
        {
            "file": src.rel,
            "line": lines,
            "host": src.host,
            "text": pd.array(text, dtype="string") if len(texts) else pd.array([], dtype="string"),
            "reason": reason,
        }
    )


# the time range pandas can hold (datetime64[ns]); a timestamp outside it costs its line
TS_MIN = pd.Timestamp("1678-01-01", tz="UTC")
TS_MAX = pd.Timestamp("2261-12-31", tz="UTC")


def ts_in_range(ts) -> bool:
    """False for a timestamp the tables cannot hold (before 1678 or after 2261).

    Example:
        >>> ts_in_range(pd.Timestamp("2026-01-01", tz="UTC")), ts_in_range(pd.Timestamp("9999-12-31", tz="UTC"))
        (True, False)
    """
    if ts is None or ts is pd.NaT:
        return True
    t = ts if ts.tzinfo is not None else ts.tz_localize("UTC")
    return TS_MIN <= t <= TS_MAX


def decode_line(raw: bytes) -> tuple[str, bool]:
    """Decode one line; returns (text, ok). Invalid UTF-8 and NUL bytes make ok False and the
    text shows the bad bytes as ``\\xNN`` escapes."""
    try:
        t = raw.decode("utf-8")
        return t, "\x00" not in t
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="backslashreplace"), False


def iter_lines(src: SourceFile, ctx: Context) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line without the newline) for every line of the file,
    counting them in ``ctx.lines``. A read error (truncated gzip...) is recorded in ``ctx``
    after the last readable line; the partial last line is still yielded."""
    carry = b""
    n = 0
    try:
        for chunk in read_chunks(src):
            data = carry + chunk
            parts = data.split(b"\n")
            carry = parts.pop()
            for p in parts:
                n += 1
                ctx.lines = n
                yield n, p[:-1] if p.endswith(b"\r") else p
    except SourceError as e:
        ctx.fail(f"{e}; last complete line {n}", n + 1)
    if carry:
        n += 1
        ctx.lines = n
        yield n, carry


def text_lines(src: SourceFile, ctx: Context) -> Iterator[tuple[int, str, bool]]:
    """(line number, decoded text, ok) for every non-blank line (see :func:`decode_line`); blank
    lines count as parsed. For formats that read a file line by line."""
    for n, raw in iter_lines(src, ctx):
        text, ok = decode_line(raw)
        if not text.strip():
            ctx.parsed += 1
            continue
        yield n, text, ok


def first_nul(head: bytes) -> int:
    """Offset of the first NUL byte in ``head`` (a sign of binary content), or -1.

    Example:
        >>> first_nul(b"ab\\x00c"), first_nul(b"text\\n")
        (2, -1)
    """
    return head.find(b"\x00")


def unknown_lines(src: SourceFile, ctx: Context, chunk_rows: int = 100_000):
    """The ``parse`` used for text files no format recognises: every line goes to ``unparsed``
    (reason ``unknown format``), so nothing in the bundle is dropped without a trace."""
    ns, ts = [], []
    carry = LineCarry()  # a record (a key and its value, a PEM key) may cross a chunk boundary
    for n, raw in iter_lines(src, ctx):
        ns.append(n)
        ts.append(decode_line(raw)[0])
        if len(ns) >= chunk_rows:
            yield "unparsed", unparsed_frame(src, ns, ts, "unknown format", carry)
            ns, ts = [], []
    if ns:
        yield "unparsed", unparsed_frame(src, ns, ts, "unknown format", carry)


def with_provenance(df: pd.DataFrame, src: SourceFile, **columns) -> pd.DataFrame:
    """Set ``file`` (and ``host`` unless rows carry their own) on a parser's rows, plus any
    constant ``columns`` (e.g. ``source="jmxtool"``)."""
    for k, v in columns.items():
        df[k] = v
    if "host" not in df.columns:
        df["host"] = src.host
    df["file"] = src.rel
    return df
