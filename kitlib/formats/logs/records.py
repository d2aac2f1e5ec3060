"""A block's records and leftover lines -> the ``events`` table and ``unparsed`` rows: what every
log reader of this package does once it knows which lines start a record.

- which lines make each record and which belong to none (:func:`group_records`);
- the events table of a block (:func:`events_table`, or :func:`from_scan` from the compiled
  scan's columns), with its logger names (:func:`clean_loggers`), levels (:func:`level_codes`)
  and messages with their secrets masked (:func:`redact_messages`);
- the ``unparsed`` rows of the lines that belong to no record (:func:`unparsed_rows`);
- a block's result handed on in file order, its lines counted and the times of a daylight-saving
  change settled (:func:`emit`).

The compiled scan (``_scan.c``, built by setup.py where a C compiler is found) is :data:`SCAN`,
None when it was not built; :data:`NATIVE` False makes every reader take its numpy path (the
tests compare both).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.events import EVENTS_SCHEMA, LEVELS
from kitlib.formats import Context, times, unparsed_frame
from kitlib.formats.logs.blocks import gather
from kitlib.redact import PREFILTER, redact_array, redact_flagged
from kitlib.sources import SourceFile

try:  # the compiled scan (setup.py builds it where a C compiler is found)
    from kitlib.formats.logs import _scan as SCAN
except ImportError:  # pragma: no cover - an install without a compiler parses every block with numpy
    SCAN = None  # type: ignore[assignment]

# whether the readers use the compiled scan when it is built (the tests compare both paths)
NATIVE = True

LEVEL_ALIASES = {
    "WARNING": "WARN",
    "SEVERE": "ERROR",
    "CRITICAL": "FATAL",
    "FINE": "DEBUG",
    "FINER": "TRACE",
    "FINEST": "TRACE",
    "CONFIG": "INFO",
    "NOTICE": "INFO",
}


LOGGER_OK = re.compile(r"^[A-Za-z_$][\w$.\-]*$")


GAPS_KEY = "kitlib.nonexistent_local_times"


UNPARSED_PIECE = 100_000  # unparsed rows handed to the sink at a time


# unparsed lines that are no fault of the file (its error names the first other one): lines
# before its first record, and what a paste adds around records (see containers.unwrap_excerpt)
EXCERPT_FOLLOWS = "follows a prompt, command or fence of a pasted excerpt"
EXPECTED_REASONS = (
    "no record header before this line",
    "a shell prompt or command of a pasted excerpt",
    "only the decoration of a pasted excerpt (line number, prompt, code fence)",
    EXCERPT_FOLLOWS,
)


def group_records(is_h: np.ndarray, is_j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, np.ndarray]:
    """Records of a block from its record first lines ``is_h`` and unreadable lines ``is_j``: a
    record runs from its first line to the line before the next first or unreadable line.
    Returns (first line, last line and lines spanned of each record, the first such line, the
    lines in no record: those before it, the unreadable lines and the lines following them).

    Example:
        >>> h = np.array([False, True, False, False, True]); j = np.array([False, False, False, True, False])
        >>> [x.tolist() if hasattr(x, "tolist") else x for x in group_records(h, j)]
        [[1, 4], [2, 4], [2, 1], 1, [0, 3]]
    """
    nlines = len(is_h)
    anchors = np.flatnonzero(is_h | is_j)
    next_anchor = np.append(anchors[1:], nlines) if len(anchors) else anchors
    a_is_h = is_h[anchors]
    first = anchors[a_is_h]
    last = next_anchor[a_is_h] - 1
    span = (last - first + 1).astype(np.int32)
    lead = int(anchors[0]) if len(anchors) else nlines
    pieces = [np.arange(lead)] + [np.arange(j0, j1) for j0, j1 in zip(anchors[~a_is_h], next_anchor[~a_is_h])]
    return first, last, span, lead, np.concatenate(pieces)


def events_table(columns: list, wall_ms: np.ndarray, tz: str | None) -> pa.Table:
    """The events table of a block: ``columns`` after the time, which is read from ``wall_ms``
    in ``tz``; records at local times that do not exist there are counted in the schema's
    metadata (``emit`` notes them and drops it)."""
    utc, _, gaps = times.localize(wall_ms, tz)
    t = pa.Table.from_arrays([pa.array(utc, pa.timestamp("ms", tz="UTC")), *columns], schema=EVENTS_SCHEMA)
    return t.replace_schema_metadata({GAPS_KEY: str(gaps)}) if gaps else t


def from_scan(scanned: tuple, lines_before: int, src: SourceFile, tz: str | None = None):
    """The events table from the compiled scan's columns (see ``scan`` in ``_scan.c``);
    wall-clock times are read in ``tz`` (default: the file's zone)."""
    nlines, line, span, wall, level, msg_off, msg, logger_index, name_off, name, flagged, unsure = scanned
    nrec = len(line) // 8
    spans = np.frombuffer(span, np.int32)
    message = pa.Array.from_buffers(pa.large_string(), nrec, [None, pa.py_buffer(msg_off), pa.py_buffer(msg)])
    suspects = np.frombuffer(flagged, np.int64)
    if unsure:  # messages with text beyond ASCII: RE2's pre-check decides, as on the numpy path
        idx = np.frombuffer(unsure, np.int64)
        hit = pc.match_substring_regex(message.take(pa.array(idx)), PREFILTER).to_numpy(zero_copy_only=False)
        suspects = np.sort(np.concatenate([suspects, idx[np.asarray(hit, bool)]]))
    message = redact_flagged(message, suspects)
    names = pa.Array.from_buffers(
        pa.large_string(), len(name_off) // 8 - 1, [None, pa.py_buffer(name_off), pa.py_buffer(name)]
    )
    logger = pa.DictionaryArray.from_arrays(pa.array(np.frombuffer(logger_index, np.int32)), names.cast(pa.string()))
    lines = np.frombuffer(line, np.int64)
    t = events_table(
        [
            pa.DictionaryArray.from_arrays(pa.array(np.frombuffer(level, np.int8)), pa.array(LEVELS)),
            logger,
            message,
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.host])),
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.rel])),
            pa.array(lines + lines_before if lines_before else lines),
            pa.array(spans),
        ],
        np.frombuffer(wall, np.int64),
        tz or src.tz,
    )
    return t, no_unparsed(src.rel, src.host), int(spans.sum()), nlines


@functools.lru_cache(maxsize=8)
def no_unparsed(rel: str, host: str) -> pd.DataFrame:
    """The empty unparsed frame of a block the scan took whole (built once per file: making a
    frame cost a millisecond a block). Nothing changes an empty frame downstream."""
    un = unparsed_frame(SourceFile(Path(rel), rel, host), [], [], "")
    un["reason"] = []
    return un


def unparsed_rows(
    src: SourceFile,
    a: np.ndarray,
    block: bytes | memoryview,
    starts: np.ndarray,
    eff: np.ndarray,
    idx: np.ndarray,
    is_j: np.ndarray,
    junk_reason: dict[int, str],
    lead: int,
    first: bool,
    lines_before: int,
) -> pd.DataFrame:
    """The ``unparsed`` rows of a block's lines ``idx`` (line ``lead`` is its first anchor), built
    on whole columns: texts are Arrow strings cut from the block (only junk lines, NUL bytes or
    invalid UTF-8, are decoded one by one with escapes), reasons and provenance categorical. A
    block of ten million one-byte lines costs tens of bytes a line, not a Python string each;
    :func:`emit` hands the rows on in pieces of :data:`UNPARSED_PIECE`."""
    n = len(idx)
    if not n:
        return no_unparsed(src.rel, src.host).copy()
    junk = is_j[idx]
    clean = idx[~junk]
    parts = [gather(a, memoryview(block), [(starts[clean], eff[clean])], len(clean))]
    order = np.flatnonzero(~junk)
    if junk.any():
        bad = idx[junk]
        texts = [
            bytes(block[s:e]).decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
            for s, e in zip(starts[bad].tolist(), eff[bad].tolist())
        ]
        parts.append(pa.array(texts, pa.large_string()))
        order = np.concatenate([order, np.flatnonzero(junk)])
    text = pa.concat_arrays(parts).take(pa.array(np.argsort(order, kind="stable")))
    text = redact_array(text, lines=True)
    lead_reason = "no record header before this line" if first else "continuation cut off at a block boundary"
    nul = "binary data (NUL bytes)"  # junk lines past the first million NUL lines have no entry
    names = [lead_reason, "follows an unreadable line", *sorted(set(junk_reason.values()) | {nul})]
    codes = np.where(idx < lead, 0, 1).astype(np.int32)
    if junk.any():
        code_of = {r: i for i, r in enumerate(names)}
        codes[junk] = [code_of[junk_reason.get(int(i), nul)] for i in idx[junk].tolist()]
    return pd.DataFrame(
        {
            "file": pd.Categorical.from_codes(np.zeros(n, np.int8), [src.rel]),
            "line": idx.astype(np.int64) + (lines_before + 1),
            "host": pd.Categorical.from_codes(np.zeros(n, np.int8), [src.host]),
            "text": pd.arrays.ArrowExtensionArray(text),
            "reason": pd.Categorical.from_codes(codes, names),
        }
    )


def emit(result, lines_before: int, src: SourceFile, ctx: Context):
    """A block's result, in file order: line numbers made the file's, lines counted, and times
    of the repeated hour of a daylight-saving change moved to its second pass where the order
    of the lines says so (see :class:`kitlib.formats.times.FoldTracker`)."""
    ev, un, nrec_lines, nlines = result
    tracker = src.meta.get("fold")
    if tracker is not None and ev.num_rows:
        meta = ev.schema.metadata or {}
        if GAPS_KEY.encode() in meta:
            tracker.gaps += int(meta[GAPS_KEY.encode()])
            ev = ev.replace_schema_metadata(None)
        ts = ev.column(0)
        if tracker.tz in times.UTC_NAMES:  # no repeated hour (resolve would say None): not read
            shift = None
        elif ts.null_count == 0:
            shift = tracker.resolve(ts.cast(pa.int64()).to_numpy())
        else:  # records without a date keep their null
            ms = pc.fill_null(ts.cast(pa.int64()), 0).to_numpy()
            valid = ts.is_valid().to_numpy(zero_copy_only=False)
            part = tracker.resolve(ms[valid])
            shift = None
            if part is not None:
                shift = np.zeros(len(ms), np.int64)
                shift[valid] = part
        if shift is not None:
            moved = pc.add(ts.cast(pa.int64()), pa.array(shift)).cast(pa.timestamp("ms", tz="UTC"))
            ev = ev.set_column(0, ev.schema.field(0), moved)
    if lines_before:  # the block was parsed with its lines counted from its own start
        if ev.num_rows:
            i = ev.schema.get_field_index("line")
            ev = ev.set_column(i, ev.schema.field(i), pc.add(ev.column(i), pa.scalar(lines_before, pa.int64())))
        if len(un):
            un["line"] = un["line"] + lines_before
    ctx.lines += nlines
    ctx.parsed += nrec_lines
    if len(un):
        bad = un[~un["reason"].isin(EXPECTED_REASONS)]
        if len(bad):
            ctx.fail(f"{src.rel} line {int(bad['line'].iloc[0])}: {bad['reason'].iloc[0]}", int(bad["line"].iloc[0]))
        for i in range(0, len(un), UNPARSED_PIECE):
            yield "unparsed", un.iloc[i : i + UNPARSED_PIECE] if len(un) > UNPARSED_PIECE else un
    if ev.num_rows:
        yield "events", ev


def clean_loggers(arr: pa.LargeStringArray) -> tuple[pa.DictionaryArray, np.ndarray]:
    """Dictionary-encode logger names, dropping Connect's ':line' suffix. Returns the array and
    a mask of records whose '(...)' was not a logger name (those get an empty logger)."""
    d = arr.dictionary_encode()
    vals = d.dictionary.to_pylist()
    idx = d.indices.to_numpy(zero_copy_only=False)
    clean, bad_val = [], []
    for v in vals:
        c = re.sub(r":\d+$", "", v)
        okv = v == "" or bool(LOGGER_OK.match(c))
        bad_val.append(not okv)
        clean.append(c if okv else "")
    uniq: dict[str, int] = {}
    remap = np.array([uniq.setdefault(c, len(uniq)) for c in clean], np.int32)
    new_idx = remap[idx] if len(idx) else idx.astype(np.int32)
    bad = np.array(bad_val, bool)[idx] if len(idx) else np.zeros(0, bool)
    out = pa.DictionaryArray.from_arrays(pa.array(new_idx, pa.int32()), pa.array(list(uniq), pa.string()))
    return out, bad


def level_codes(col) -> np.ndarray:
    """Level strings -> index into LEVELS (-1 when absent)."""
    d = pc.utf8_upper(pc.fill_null(col, "")).dictionary_encode()
    look = np.array(
        [
            LEVELS.index(LEVEL_ALIASES.get(v, v)) if LEVEL_ALIASES.get(v, v) in LEVELS else -1
            for v in d.dictionary.to_pylist()
        ]
        + [-1],
        np.int8,
    )
    return look[d.indices.to_numpy(zero_copy_only=False)] if len(d) else np.zeros(0, np.int8)


def redact_messages(message: pa.LargeStringArray) -> pa.LargeStringArray:
    """Secrets never reach the events table: the block's messages pass :func:`kitlib.redact.redact_array`
    here, on the parser's worker thread (the sink skips this column, see ``REDACTED_BY_PARSER``)."""
    return redact_array(message)
