"""Kafka's log4j records -> the ``events`` table.

Covers the broker layout ``[%d] %p %m (%c)%n`` (server.log, controller.log, state-change.log,
log-cleaner.log, kafka-request.log, 2.x-4.x) and Connect's ``[%d] %p %X{connector.context}%m
(%c:%L)%n`` (the ``:line`` suffix is dropped from ``logger``; the connector context stays at the
start of ``message``).

A record is a header line plus every following line up to the next header: stack traces,
the log cleaner's statistics block and ``... Config values:`` dumps stay one record whose
``message`` holds the full text. The logger is the last `` (...)`` group of the header line,
or a line of its own `` (logger)`` ending a multi-line message.

How it is fast: the timestamp and level sit at fixed offsets, so a block of 6 MiB (``kitlib.sources.CHUNK``) is checked
with numpy on whole columns of bytes (no regex per line); the message and logger bytes are
cut out of the block with one boolean mask and handed to Arrow without copying per line.
Lines that are not valid UTF-8 or hold NUL bytes go to ``unparsed`` and the file's error
names the first of them.

Example:
    >>> from kitlib.formats.log4j import parse_bytes
    >>> ev, un = parse_bytes(b"[2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\\n")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist(), int(ev.loc[0, "line"])
    (['INFO', 'kafka.Foo', 'Hello'], 1)
"""

from __future__ import annotations

import functools
import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.events import EVENTS_SCHEMA, LEVELS, empty_events, to_pandas
from kitlib.formats import Context, container, register, times, unparsed_frame
from kitlib.redact import PREFILTER, redact_array, redact_flagged
from kitlib.sources import SourceError, SourceFile, count_lines, read_chunks

try:  # the compiled scan (setup.py builds it where a C compiler is found)
    from kitlib.formats import _log4j_scan
except ImportError:  # pragma: no cover - an install without a compiler parses every block with numpy
    _log4j_scan = None  # type: ignore[assignment]

HEADER = re.compile(rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(?: |$)")
MAX_CARRY = 128 * 1024 * 1024
THREADS = min(2, os.cpu_count() or 1)
_LOGGER_OK = re.compile(r"^[A-Za-z_$][\w$.\-]*$")

# what container tooling puts before every line (docker compose `kafka-1  | `, an RFC 3339
# stamp from `docker logs -t` / `kubectl logs --timestamps`, CRI `<stamp> stdout F `): see container.py
WRAPPER = re.compile(container.PREFIX.pattern + rb"(?=\[)", re.MULTILINE)


def detect(head: bytes, src) -> bool:
    """A log4j file: one of its first 50 lines is a ``[yyyy-mm-dd hh:mm:ss,SSS] LEVEL`` header
    (possibly behind a container prefix such as ``kafka-1  | ``)."""
    return _wrapped(head) is not None


def _wrapped(head: bytes) -> bool | None:
    """None: not log4j; False: plain log4j; True: every line carries a container prefix."""
    plain = wrapped = 0
    for ln in head.split(b"\n", 50)[:50]:
        if HEADER.match(ln):
            plain += 1
            continue
        m = WRAPPER.match(ln)
        if m and m.end() > 0 and HEADER.match(ln, m.end()):
            wrapped += 1
    if not plain and not wrapped:
        return None
    return wrapped > plain


def _unwrap(chunks):
    """Strip container prefixes from whole lines (line numbers are unchanged)."""
    tail = b""
    for chunk in chunks:
        data = tail + chunk
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        if cut:
            yield container.strip(data[:cut])
    if tail:
        yield container.strip(tail)


def parse(src: SourceFile, ctx: Context, block_size: int | None = None, threads: int = THREADS):
    """Stream a file as (table, chunk) pairs: 'events' as Arrow tables, 'unparsed' as frames.

    Blocks are cut just before a record header and parsed on ``threads`` threads (numpy and
    Arrow release the GIL); at most ``threads + 1`` blocks are in flight, so memory stays
    bounded whatever the file size. Results come out in file order. A block is parsed with line
    numbers counted from its own start; the lines of the blocks before it are added as it comes
    out (so the reading thread never counts lines)."""
    # the threads are started for a file's second block: a small file (most files of a bundle of
    # many) is parsed inline, without starting and joining threads for it
    pool: ThreadPoolExecutor | None = None
    pending: deque = deque()
    lines_before = (
        src.first_line - 1
    )  # lines of the blocks already emitted (a part of a split file starts further down)

    def submit(block, first):
        nonlocal pool
        if pool is None and threads > 1 and pending:
            pool = ThreadPoolExecutor(threads)
        if pool is None:
            pending.append((None, parse_block(block, 0, src, first)))
        else:
            pending.append((pool.submit(parse_block, block, 0, src, first), None))

    def drain(keep: int):
        nonlocal lines_before
        while len(pending) > keep:
            fut, res = pending.popleft()
            result = fut.result() if fut is not None else res
            yield from _emit(result, lines_before, src, ctx)
            lines_before += result[3]

    def feed(block, first):
        for piece, piece_first in line_pieces(block, first):
            submit(piece, piece_first)
            # the block before this one is taken out before the next is read: the threads stay
            # busy (reading a block is quick) with one block fewer held
            yield from drain(threads - 1)

    carry = b""
    first = True
    fold_tracker(src)
    chunks = read_chunks(src, block_size) if block_size else read_chunks(src)
    from kitlib.sources import head as _head

    if _wrapped(_head(src)):
        chunks = _unwrap(chunks)
    try:
        try:
            for chunk in chunks:
                buf = carry + chunk if carry else chunk
                cut = _last_header_start(buf)
                forced = False
                if cut <= 0:
                    if carry_more(buf):
                        carry = buf
                        continue
                    cut, forced = buf.rfind(b"\n") + 1, True
                block, carry = memoryview(buf)[:cut], buf[cut:]  # the block is a view: not copied
                yield from feed(block, first)
                first = forced  # after a forced cut the next block's leading lines are orphans
        except SourceError as e:
            if carry:
                yield from feed(carry, first)
                carry = b""
            yield from drain(0)
            ctx.fail(f"{e}; content up to line {lines_before} was read", lines_before + 1)
        if carry:
            yield from feed(carry, first)
        yield from drain(0)
        note_times(src, ctx)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


# lines of one parsed block: the parse holds a few dozen bytes of numpy arrays per line, so a
# block of tiny lines (a 6 MiB chunk holds 3 million one-byte lines) is parsed in pieces
MAX_BLOCK_LINES = 1 << 18


def carry_more(buf: bytes) -> bool:
    """May a buffer without a record header yet be carried into the next chunk (a record's
    continuation lines are kept together up to :data:`MAX_CARRY` bytes and
    :data:`MAX_BLOCK_LINES` lines)? A buffer without a newline must be."""
    if buf.rfind(b"\n") < 0:
        return True
    return len(buf) < MAX_CARRY and (len(buf) < MAX_BLOCK_LINES or count_lines(buf) < MAX_BLOCK_LINES)


def line_pieces(block, first: bool):
    """``block`` (whole lines) in pieces of at most :data:`MAX_BLOCK_LINES` lines, cut after a
    newline, each with its ``first`` flag (a piece after a cut starts with orphan lines). The
    newlines are counted a few MiB at a time (no array of every newline's offset)."""
    if len(block) <= MAX_BLOCK_LINES or count_lines(block) <= MAX_BLOCK_LINES:
        yield block, first
        return
    a = np.frombuffer(block, np.uint8)
    step, seen, prev = 4 << 20, 0, 0
    for w in range(0, len(a), step):
        nl = np.flatnonzero(a[w : w + step] == 10)
        while seen + len(nl) >= MAX_BLOCK_LINES:
            k = MAX_BLOCK_LINES - seen - 1
            cut = w + int(nl[k]) + 1
            yield block[prev:cut], first if prev == 0 else False
            prev, nl, seen = cut, nl[k + 1 :], 0
        seen += len(nl)
    if prev < len(block):
        yield block[prev:], first if prev == 0 else False


def _last_header_start(buf: bytes) -> int:
    """Offset of the last line in ``buf`` that is a record header (so a block can end just
    before it), or -1. A line starting with '[' that is not a full header does not count."""
    end = len(buf)
    while True:
        p = buf.rfind(b"\n[", 0, end)
        if p < 0:
            return -1
        if HEADER.match(buf, p + 1, p + 1 + 40):
            return p + 1
        end = p


def _emit(result, lines_before: int, src: SourceFile, ctx: Context):
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
        if ts.null_count == 0:
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
        bad = un[un["reason"] != "no record header before this line"]
        if len(bad):
            ctx.fail(f"{src.rel} line {int(bad['line'].iloc[0])}: {bad['reason'].iloc[0]}", int(bad["line"].iloc[0]))
        for i in range(0, len(un), UNPARSED_PIECE):
            yield "unparsed", un.iloc[i : i + UNPARSED_PIECE] if len(un) > UNPARSED_PIECE else un
    if ev.num_rows:
        yield "events", ev


def parse_block(block: bytes | memoryview, lines_before: int, src: SourceFile, first: bool = True):
    """Parse one block of whole lines (bytes, or a view of the reader's buffer, so that it is not
    copied). Returns (events Arrow table, unparsed frame, lines in records, lines in block).

    The compiled scan (``_log4j_scan.c``) takes the common block: valid UTF-8, no NUL byte, a
    record header on its first line, years the tables hold, ASCII logger names. Every other block, and every block when the
    scan was not built (or ``native=False`` in tests), takes the numpy path below, the reference
    the scan is tested against."""
    if NATIVE and _log4j_scan is not None:
        scanned = _log4j_scan.scan(block)
        if scanned is not None:
            return _from_scan(scanned, lines_before, src)
    return _parse_block_numpy(block, lines_before, src, first)


# whether parse_block uses the compiled scan when it is built (the tests compare both paths)
NATIVE = True


def _from_scan(scanned: tuple, lines_before: int, src: SourceFile, tz: str | None = None):
    """The events table from the compiled scan's columns (see ``scan`` in ``_log4j_scan.c``);
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
    t = _events_table(
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
    return t, _no_unparsed(src.rel, src.host), int(spans.sum()), nlines


@functools.lru_cache(maxsize=8)
def _no_unparsed(rel: str, host: str) -> pd.DataFrame:
    """The empty unparsed frame of a block the scan took whole (built once per file: making a
    frame cost a millisecond a block). Nothing changes an empty frame downstream."""
    un = unparsed_frame(SourceFile(Path(rel), rel, host), [], [], "")
    un["reason"] = []
    return un


def _parse_block_numpy(block: bytes | memoryview, lines_before: int, src: SourceFile, first: bool = True):
    block = memoryview(block)
    a = np.frombuffer(block, dtype=np.uint8)
    n = len(a)
    if n == 0:
        return empty_events(), unparsed_frame(src, [], [], ""), 0, 0
    nl = _positions(a, 10)
    starts = np.empty(len(nl) + 1, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    ends = np.empty(len(nl) + 1, np.int64)
    ends[:-1] = nl
    ends[-1] = n
    if a[-1] == 10:
        starts, ends = starts[:-1], ends[:-1]
    nlines = len(starts)
    eff = ends - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))  # drop '\r'

    # --- header check on fixed offsets -------------------------------------------------
    lens = eff - starts
    cand = np.flatnonzero(lens >= 30)
    s = starts[cand]
    M = _window(a, s, 32)
    M[np.arange(32)[None, :] >= lens[cand][:, None]] = 0  # bytes past the line end
    ok = np.ones(len(cand), bool)
    for k, ch in (
        (0, b"["),
        (5, b"-"),
        (8, b"-"),
        (11, b" "),
        (14, b":"),
        (17, b":"),
        (20, b","),
        (24, b"]"),
        (25, b" "),
    ):
        ok &= M[:, k] == ch[0]
    dpos = [1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 22, 23]
    D = M[:, dpos].astype(np.int32) - 48
    ok &= ((D >= 0) & (D <= 9)).all(axis=1)
    # level: bytes 24..31 as one little-endian uint64 compared with "] LEVEL " patterns
    W = np.ascontiguousarray(M[:, 24:32]).view(np.uint64).ravel()
    lvl = np.full(len(cand), -1, np.int8)
    lvl_len = np.zeros(len(cand), np.int64)
    for i, w in enumerate(LEVELS):
        for tail in (b" ", b"\0"):
            pat = (b"] " + w.encode() + tail)[:8]
            mask = (1 << (8 * len(pat))) - 1
            val = int.from_bytes(pat, "little")
            m = (W & np.uint64(mask)) == np.uint64(val)
            lvl[m] = i
            lvl_len[m] = len(w)
    ok &= lvl >= 0
    year = D[:, 0] * 1000 + D[:, 1] * 100 + D[:, 2] * 10 + D[:, 3]
    mon = D[:, 4] * 10 + D[:, 5]
    day = D[:, 6] * 10 + D[:, 7]
    hh = D[:, 8] * 10 + D[:, 9]
    mi = D[:, 10] * 10 + D[:, 11]
    ss = D[:, 12] * 10 + D[:, 13]
    ms = D[:, 14] * 100 + D[:, 15] * 10 + D[:, 16]
    ok &= (mon >= 1) & (mon <= 12) & (day >= 1) & (day <= 31) & (hh < 24) & (mi < 60) & (ss < 61)
    # a year the tables cannot hold (datetime64[ns]: 1678..2261) costs its record, not the file
    far = ok & ((year < 1678) | (year > 2261))
    ok &= ~far
    is_h = np.zeros(nlines, bool)
    is_h[cand[ok]] = True

    # --- junk lines: NUL bytes or invalid UTF-8, or a header whose year is out of range -----
    is_j = np.zeros(nlines, bool)
    junk_reason = {}
    if far.any():
        for i, y in zip(cand[far].tolist(), year[far].tolist()):
            is_j[i] = True
            junk_reason[i] = times.year_reason(y)
    zeros = _positions(a, 0) if a.min() == 0 else ()
    if len(zeros):
        zl = np.unique(np.searchsorted(starts, zeros, side="right") - 1)
        is_j[zl] = True
        for i in zl[:1000000]:
            junk_reason[int(i)] = "binary data (NUL bytes)"
    if not _utf8_ok(a, block):
        for i in bad_utf8_lines(block, starts, ends).tolist():
            if not is_j[i]:
                is_j[i] = True
                junk_reason[i] = "invalid UTF-8"
    is_h &= ~is_j

    # --- group lines into records --------------------------------------------------------
    anchors = np.flatnonzero(is_h | is_j)
    next_anchor = np.empty(len(anchors), np.int64)
    next_anchor[:-1] = anchors[1:]
    if len(anchors):
        next_anchor[-1] = nlines
    a_is_h = is_h[anchors]
    H = anchors[a_is_h]
    last = next_anchor[a_is_h] - 1
    span = (last - H + 1).astype(np.int32)

    # unparsed: lines before the first anchor + junk lines + lines following junk
    pieces: list[np.ndarray] = []
    lead = anchors[0] if len(anchors) else nlines
    pieces.append(np.arange(lead))
    for j0, j1 in zip(anchors[~a_is_h], next_anchor[~a_is_h]):
        pieces.append(np.arange(j0, j1))
    un_idx = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
    un = unparsed_rows(src, a, block, starts, eff, un_idx, is_j, junk_reason, lead, first, lines_before)

    nrec = len(H)
    if nrec == 0:
        return empty_events(), un, 0, nlines

    # --- timestamps ----------------------------------------------------------------------
    pos = np.searchsorted(cand, H)
    wall_ms = _epoch_ms(year[pos], mon[pos], day[pos], hh[pos], mi[pos], ss[pos], ms[pos])

    # --- message / logger ranges ---------------------------------------------------------
    msg_start = starts[H] + 26 + lvl_len[pos] + 1
    hend = _trim_end(a, starts[H], eff[H])  # header line end without trailing blanks
    msg_start = np.minimum(msg_start, hend)
    parens = _positions(a, 40)
    if len(parens):
        k = np.searchsorted(parens, hend - 1, side="left") - 1  # type: ignore[assignment]  # an array, k was a scalar above
        po = np.where(k >= 0, parens[np.maximum(k, 0)], -1)
    else:
        po = np.full(nrec, -1, np.int64)
    hdr_logger = (
        (a[np.maximum(hend - 1, 0)] == 41) & (po >= msg_start) & ((po == msg_start) | (a[np.maximum(po - 1, 0)] == 32))
    )

    multi = span > 1
    Ls = starts[last]
    Le = _trim_end(a, Ls, eff[last])
    tail_logger = (
        multi
        & (Le - Ls >= 4)
        & (a[np.minimum(Ls, n - 1)] == 32)
        & (a[np.minimum(Ls + 1, n - 1)] == 40)
        & (a[np.maximum(Le - 1, 0)] == 41)
    )

    r1s = msg_start.copy()
    r1e = hend.copy()
    r2s = np.zeros(nrec, np.int64)
    r2e = np.zeros(nrec, np.int64)
    ls = np.zeros(nrec, np.int64)
    le = np.zeros(nrec, np.int64)
    # header logger: message stops before " (", continuation (if any) follows after a newline
    hl = hdr_logger & ~tail_logger
    r1e[hl] = np.maximum(po[hl] - 1, msg_start[hl])
    ls[hl], le[hl] = po[hl] + 1, hend[hl] - 1
    m2 = multi & ~tail_logger
    r2s[m2], r2e[m2] = ends[H][m2], eff[last][m2]
    # logger on its own last line: message runs to the end of the line before it
    tl = tail_logger
    prev_end = eff[np.maximum(last - 1, 0)]
    r1e[tl] = np.maximum(
        _trim_end(a, starts[np.maximum(last - 1, 0)][tl], prev_end[tl]) if tl.any() else prev_end[tl], r1s[tl]
    )
    ls[tl], le[tl] = Ls[tl] + 2, Le[tl] - 1

    logger = _gather(a, block, [(ls, le)], nrec)
    logger, bad = _clean_loggers(logger)
    if bad.any():  # a '(...)' that is not a logger name: keep it in the message
        r1e[bad] = np.where(tail_logger[bad], r1e[bad], hend[bad])
        if tail_logger[bad].any():
            tb = bad & tail_logger
            r1e[tb] = eff[last][tb]
    message = _redact(_gather(a, block, [(r1s, r1e), (r2s, r2e)], nrec))
    lines = lines_before + H + 1
    host = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.host]))
    file = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.rel]))
    level = pa.DictionaryArray.from_arrays(pa.array(lvl[pos]), pa.array(LEVELS))
    t = _events_table(
        [level, logger, message, host, file, pa.array(lines.astype(np.int64)), pa.array(span)], wall_ms, src.tz
    )
    return t, un, int(span.sum()), nlines


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
    :func:`_emit` hands the rows on in pieces of :data:`UNPARSED_PIECE`."""
    n = len(idx)
    if not n:
        return _no_unparsed(src.rel, src.host).copy()
    junk = is_j[idx]
    clean = idx[~junk]
    parts = [_gather(a, memoryview(block), [(starts[clean], eff[clean])], len(clean))]
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


UNPARSED_PIECE = 100_000  # unparsed rows handed to the sink at a time


def _redact(message: pa.LargeStringArray) -> pa.LargeStringArray:
    """Secrets never reach the events table: the block's messages pass :func:`kitlib.redact.redact_array`
    here, on the parser's worker thread (the sink skips this column, see ``REDACTED_BY_PARSER``)."""
    return redact_array(message)


def _positions(a: np.ndarray, byte: int, step: int = 256 * 1024) -> np.ndarray:
    """Offsets of ``byte`` in ``a``, found a slice at a time (the comparison's mask stays small:
    a whole block's mask cost as much memory as the block, on every parse thread)."""
    found = [np.flatnonzero(a[i : i + step] == byte) + i for i in range(0, len(a), step)]
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def bad_utf8_lines(block: bytes | memoryview, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The lines of ``block`` that are not valid UTF-8: the block is decoded from each bad
    line's end to the next error (a step per bad line, not per line).

    Example:
        >>> b = b"ok\\n\\xff\\nok\\n\\xe2\\x82\\n"
        >>> bad_utf8_lines(b, np.array([0, 3, 5, 8]), np.array([2, 4, 7, 10])).tolist()
        [1, 3]
    """
    view = memoryview(block)
    out: list[int] = []
    pos = 0
    while pos < len(view):
        try:
            str(view[pos:], "utf-8")
            break
        except UnicodeDecodeError as e:
            k = int(np.searchsorted(starts, pos + e.start, side="right")) - 1
            out.append(k)
            pos = int(ends[k]) + 1
    return np.array(out, np.int64)


def _utf8_ok(a: np.ndarray, block: memoryview) -> bool:
    if not len(a) or a.max() < 128:
        return True
    try:
        str(block, "utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _trim_end(a: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Line ends with trailing spaces/tabs removed (slow path only for lines that have them)."""
    e = e.copy()
    last = a[np.maximum(e - 1, 0)]
    todo = np.flatnonzero(((last == 32) | (last == 9)) & (e > s))
    for i in todo.tolist():
        j = e[i]
        while j > s[i] and a[j - 1] in (32, 9):
            j -= 1
        e[i] = j
    return e


def _gather(
    a: np.ndarray, block: memoryview, ranges: list[tuple[np.ndarray, np.ndarray]], nrec: int
) -> pa.LargeStringArray:
    """Per record, the bytes of ``block`` in its ranges [s, e) concatenated, as one string.

    Built as an Arrow string_view array pointing into ``block`` (no per-line copies); the
    rare records made of two ranges (a message around a logger, then a stack trace) are
    joined in Python into a second buffer. The result is cast to large_string (one C++ copy)."""
    s1, e1 = ranges[0][0], np.maximum(ranges[0][1], ranges[0][0])
    lens = e1 - s1
    starts = s1.copy()
    bufidx = np.zeros(nrec, np.int32)
    extra = b""
    if len(ranges) > 1:
        s2, e2 = ranges[1][0], np.maximum(ranges[1][1], ranges[1][0])
        two = np.flatnonzero(e2 > s2)
        if len(two):
            pieces, off = [], 0
            for i in two.tolist():
                piece = bytes(block[s1[i] : e1[i]]) + bytes(block[s2[i] : e2[i]])
                pieces.append(piece)
                starts[i], lens[i], bufidx[i] = off, len(piece), 1
                off += len(piece)
            extra = b"".join(pieces)
    views = np.zeros((nrec, 16), np.uint8)
    v32 = views.view(np.int32).reshape(nrec, 4)
    v32[:, 0] = lens
    inline = lens <= 12
    src = np.frombuffer(extra, np.uint8) if extra else a
    # prefix / inline bytes (from the block, or from the extra buffer for joined records)
    pre = _window(a, np.where(bufidx == 0, starts, 0), 12)
    if extra:
        j = np.flatnonzero(bufidx == 1)
        pre[j] = _window(src, starts[j], 12)
    keep = np.arange(12)[None, :] < lens[:, None]
    views[:, 4:16] = np.where(keep, pre, 0)
    big = ~inline
    v32[big, 2] = bufidx[big]
    v32[big, 3] = starts[big]
    bufs = [None, pa.py_buffer(views), pa.py_buffer(block)] + ([pa.py_buffer(extra)] if extra else [])
    arr = pa.Array.from_buffers(pa.string_view(), nrec, bufs)
    return arr.cast(pa.large_string())


def _window(a: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes from each start (zero past the end of ``a``), as an (n, width) array."""
    n = len(a)
    if not len(starts):
        return np.zeros((0, width), np.uint8)
    s = np.minimum(starts, n)
    if int(s.max()) + width > n:  # a window runs past the end: read it from a zero-padded copy
        a = np.concatenate([a, np.zeros(width, np.uint8)])
    # rows of a strided view: gathers n x width bytes, with no (n, width) index matrix built
    return np.lib.stride_tricks.sliding_window_view(a, width)[s]


def _clean_loggers(arr: pa.LargeStringArray) -> tuple[pa.DictionaryArray, np.ndarray]:
    """Dictionary-encode logger names, dropping Connect's ':line' suffix. Returns the array and
    a mask of records whose '(...)' was not a logger name (those get an empty logger)."""
    d = arr.dictionary_encode()
    vals = d.dictionary.to_pylist()
    idx = d.indices.to_numpy(zero_copy_only=False)
    clean, bad_val = [], []
    for v in vals:
        c = re.sub(r":\d+$", "", v)
        okv = v == "" or bool(_LOGGER_OK.match(c))
        bad_val.append(not okv)
        clean.append(c if okv else "")
    uniq: dict[str, int] = {}
    remap = np.array([uniq.setdefault(c, len(uniq)) for c in clean], np.int32)
    new_idx = remap[idx] if len(idx) else idx.astype(np.int32)
    bad = np.array(bad_val, bool)[idx] if len(idx) else np.zeros(0, bool)
    out = pa.DictionaryArray.from_arrays(pa.array(new_idx, pa.int32()), pa.array(list(uniq), pa.string()))
    return out, bad


def _epoch_ms(y, m, d, hh, mi, ss, ms):
    y = y.astype(np.int64) - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (m.astype(np.int64) + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return (((days * 24 + hh) * 60 + mi) * 60 + ss) * 1000 + ms


def _to_utc(wall_ms: np.ndarray, tz: str | None) -> np.ndarray:
    """UTC ms of wall-clock ms read in ``tz`` (see :func:`kitlib.formats.times.localize`: the
    repeated hour as its first pass, which :func:`_emit` corrects from the lines' order)."""
    return times.localize(wall_ms, tz)[0]


def _events_table(columns: list, wall_ms: np.ndarray, tz: str | None) -> pa.Table:
    """The events table of a block: ``columns`` after the time, which is read from ``wall_ms``
    in ``tz``; records at local times that do not exist there are counted in the schema's
    metadata (``_emit`` notes them and drops it)."""
    utc, _, gaps = times.localize(wall_ms, tz)
    t = pa.Table.from_arrays([pa.array(utc, pa.timestamp("ms", tz="UTC")), *columns], schema=EVENTS_SCHEMA)
    return t.replace_schema_metadata({GAPS_KEY: str(gaps)}) if gaps else t


GAPS_KEY = "kitlib.nonexistent_local_times"


def fold_tracker(src: SourceFile, tz: str | None = None) -> times.FoldTracker:
    """The file's record of its daylight-saving changes (made fresh when a parse starts)."""
    tracker = times.FoldTracker(tz or src.tz)
    src.meta["fold"] = tracker
    return tracker


def note_times(src: SourceFile, ctx: Context) -> None:
    """Say in the file's note what was assumed about its local times."""
    tracker = src.meta.get("fold")
    note = tracker.note() if tracker is not None else ""
    if note:
        ctx.notes.append(note)


def parse_bytes(data: bytes, host: str = "test", rel: str = "test.log", tz: str = "UTC"):
    """Parse log4j text held in memory; returns (events frame, unparsed frame). For tests and
    quick looks; bundles go through :func:`kitlib.load_bundle`."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        src = SourceFile(p, rel, host, tz)
        ctx = Context(src)
        evs: list[pa.Table] = []
        uns: list[pd.DataFrame] = []
        for name, chunk in parse(src, ctx):
            (evs if name == "events" else uns).append(chunk)
    ev = to_pandas(pa.concat_tables(evs)) if evs else to_pandas(empty_events())
    un = pd.concat(uns, ignore_index=True) if uns else unparsed_frame(src, [], [], "")
    return ev, un


register(
    "log4j",
    detect=detect,
    parse=parse,
    tables=("events", "unparsed"),
    priority=10,
    doc="Kafka broker/Connect log4j records: server.log, controller.log, state-change.log, "
    "log-cleaner.log, kafka-request.log, connect.log",
)
