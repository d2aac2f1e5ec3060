"""Kafka's log4j records -> the ``events`` table.

Covers the broker layout ``[%d] %p %m (%c)%n`` (server.log, controller.log, state-change.log,
log-cleaner.log, kafka-request.log, 2.x-4.x) and Connect's ``[%d] %p %X{connector.context}%m
(%c:%L)%n`` (the ``:line`` suffix is dropped from ``logger``; the connector context stays at the
start of ``message``).

A record is a header line plus every following line up to the next header: stack traces,
the log cleaner's statistics block and ``... Config values:`` dumps stay one record whose
``message`` holds the full text. The logger is the last `` (...)`` group of the header line,
or a line of its own `` (logger)`` ending a multi-line message.

How it is fast: the timestamp and level sit at fixed offsets, so a block of 4 MiB (``kitlib.sources.CHUNK``) is checked
with numpy on whole columns of bytes (no regex per line); the message and logger bytes are
cut out of the block with one boolean mask and handed to Arrow without copying per line.
Lines that are not valid UTF-8 or hold NUL bytes go to ``unparsed`` and the file's error
names the first of them.

Example:
    >>> from kitlib.formats.logs import parse_bytes
    >>> ev, un = parse_bytes(b"[2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\\n")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist(), int(ev.loc[0, "line"])
    (['INFO', 'kafka.Foo', 'Hello'], 1)
"""

from __future__ import annotations

import codecs
import os
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from kitlib.events import LEVELS, empty_events
from kitlib.formats import Context, register, times, unparsed_frame
from kitlib.formats.logs import containers, records
from kitlib.formats.logs.blocks import (
    MAX_BLOCK_LINES,
    THREADS,
    _count_lines,
    bad_utf8_lines,
    carry_more,
    gather,
    line_pieces,
    positions,
    trim_end,
    utf8_ok,
    window,
)
from kitlib.formats.logs.dates import epoch_ms, fold_tracker, note_times
from kitlib.formats.logs.records import (
    clean_loggers,
    emit,
    events_table,
    from_scan,
    group_records,
    redact_messages,
    unparsed_rows,
)
from kitlib.sources import CHUNK, CR_PROBE, MAGIC, MAX_LINE, SourceError, SourceFile, open_regular, read_chunks

HEADER = re.compile(rb"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)(?: |$)")


# what container tooling puts before every line (docker compose `kafka-1  | `, an RFC 3339
# stamp from `docker logs -t` / `kubectl logs --timestamps`, CRI `<stamp> stdout F `): see containers.py
WRAPPER = re.compile(containers.PREFIX.pattern + rb"(?=\[)", re.MULTILINE)


def detect(head: bytes, src) -> bool:
    """A log4j file: one of its first 50 lines is a ``[yyyy-mm-dd hh:mm:ss,SSS] LEVEL`` header
    (possibly behind a container prefix such as ``kafka-1  | ``)."""
    return wrapped(head) is not None


def wrapped(head: bytes) -> bool | None:
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
            yield containers.strip(data[:cut])
    if tail:
        yield containers.strip(tail)


def parse(src: SourceFile, ctx: Context, block_size: int | None = None, threads: int = THREADS):
    """Stream a file as (table, chunk) pairs: 'events' as Arrow tables, 'unparsed' as frames.

    Blocks are cut just before a record header and parsed on ``threads`` threads (numpy and
    Arrow release the GIL); at most ``threads + 1`` blocks are in flight, so memory stays
    bounded whatever the file size. Results come out in file order. A block is parsed with line
    numbers counted from its own start; the lines of the blocks before it are added as it comes
    out (so the reading thread never counts lines).

    The reader's count of each chunk's newlines (made where it checks line lengths) stands for the
    block's, so a block is not counted again; a block that joins the last record of one chunk to
    the next chunk is joined on the parse thread (``bytes.join`` copies without the GIL), not on
    the reading thread."""
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
            pool = ThreadPoolExecutor(threads, thread_name_prefix="kitlib-parse")
        if pool is None:
            pending.append((None, _parse_piece(block, src, first)))
        else:
            pending.append((pool.submit(_parse_piece, block, src, first), None))

    def drain(keep: int):
        nonlocal lines_before
        while len(pending) > keep:
            fut, res = pending.popleft()
            result = fut.result() if fut is not None else res
            yield from emit(result, lines_before, src, ctx)
            lines_before += result[3]

    def feed(block, first, at_most=None):
        for piece, piece_first in line_pieces(block, first, at_most):
            submit(piece, piece_first)
            # the block before this one is taken out before the next is read: the threads stay
            # busy (reading a block is quick) with one block fewer held
            yield from drain(threads - 1)

    carry = b""
    first = True
    fold_tracker(src)
    counted: list = [None, 0]  # the chunk the reader counted last, and its newlines

    def count(chunk) -> int:
        n = _count_lines(chunk)
        counted[0], counted[1] = chunk, n
        return n

    from kitlib.sources import head as _head

    wrap = wrapped(_head(src))
    # a file the reading layer would pass on unchanged is read here, each chunk into a buffer of
    # its own behind the carry: the block is a view of it, not a join of carry and chunk
    plain = None if wrap else _plain_file(src)
    chunks = read_chunks(src, block_size or CHUNK, count=count) if plain is None else iter(())
    if wrap:
        chunks = _unwrap(chunks)
    try:
        try:
            if plain is not None:
                size = block_size or CHUNK
                want = min(size, 1024 * 1024)  # the reading layer's reads: 1 MiB first, then whole chunks
                while (filled := _fill(plain, carry, want, src)) is not None:
                    want = size
                    cut = _last_header(filled)
                    forced = False
                    if cut <= 0:
                        whole = filled.tobytes()
                        if carry_more(whole):
                            carry = whole
                            continue
                        cut, forced = whole.rfind(b"\n") + 1, True
                    carry = filled[cut:].tobytes()
                    yield from feed(filled[:cut], first)
                    first = forced
            for chunk in chunks:
                n_chunk = counted[1] if counted[0] is chunk else None  # None: changed since counted
                counted[0] = None
                cut = last_header_start(chunk) if n_chunk is not None else -1
                # the block ends in this chunk: its lines are the chunk's and the carry's
                if n_chunk is not None and cut > 0:
                    at_most = n_chunk + (_count_lines(carry) if carry else 0)
                    if at_most <= MAX_BLOCK_LINES:
                        # the carry and the chunk are joined on the parse thread
                        piece = [carry, chunk, len(carry) + cut] if carry else memoryview(chunk)[:cut]
                        carry = chunk[cut:]
                        yield from feed(piece, first, at_most)
                        first = False
                        continue
                buf = carry + chunk if carry else chunk
                cut = last_header_start(buf)
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
        if plain is not None:
            plain.close()


def _plain_file(src: SourceFile):
    """``src`` opened for :func:`_fill` when :func:`~kitlib.sources.read_chunks` would pass its
    bytes on unchanged, else None: a whole regular file on disk (not a zip member, not a part of a
    split file) whose first bytes are no codec's and no byte-order mark, whose lines end with LF
    (not the lone-CR files), and with no line the reading layer would cut: a newline within
    64 KiB of every ``MAX_LINE / 2`` bytes keeps every line under ``MAX_LINE``."""
    if src.path is None or src.member or src.gz or src.start or src.end is not None:
        return None
    try:
        fh = open_regular(src.path)
    except OSError:  # the reading layer meets it and says it
        return None
    try:
        fd = fh.fileno()
        probe = os.pread(fd, CR_PROBE, 0)
        ok = (
            bool(probe)
            and not probe.startswith((*MAGIC, b"\xff\xfe", b"\xfe\xff", codecs.BOM_UTF8))
            and (b"\r" not in probe or b"\n" in probe)
        )
        size, at = os.fstat(fd).st_size, 0
        while ok and at < size:
            w = os.pread(fd, 64 * 1024, at)
            ok = b"\n" in w or at + len(w) >= size
            at += MAX_LINE // 2
    except OSError:
        ok = False
    if not ok:
        fh.close()
        return None
    return fh


def _fill(fh, carry: bytes, want: int, src: SourceFile) -> memoryview | None:
    """The carry followed by up to ``want`` bytes read from ``fh``, in a fresh buffer (not zeroed
    first); None at the end of the file."""
    k = len(carry)
    arr = np.empty(k + want, np.uint8)
    arr[:k] = np.frombuffer(carry, np.uint8)
    try:
        got = fh.readinto(arr.data[k:])
    except OSError as e:
        raise SourceError(src.rel, f"read failed: {e.strerror or e}") from None
    if not got:
        return None
    on_read = src.meta.get("on_read")
    if on_read is not None:
        on_read(got)
    return arr.data[: k + got]


def _last_header(buf: memoryview) -> int:
    """:func:`last_header_start` of a buffer without ``rfind``: searched in copies of its tail,
    64 KiB first and twice as long each time no header is found."""
    n, w = len(buf), 64 * 1024
    while True:
        lo = max(0, n - w)
        cut = last_header_start(buf[lo:].tobytes())
        if cut > 0 or lo == 0:
            return lo + cut if cut > 0 else cut
        w *= 2


def _parse_piece(block, src: SourceFile, first: bool):
    """:func:`parse_block` of a block, or of ``[carry, chunk, end]``: the first ``end`` bytes of
    the two joined here (on a parse thread; the list is emptied, so the chunk goes with the join)."""
    if isinstance(block, list):
        carry, chunk, end = block
        block.clear()
        block = memoryview(b"".join((carry, chunk)))[:end]
        del carry, chunk
    return parse_block(block, 0, src, first)


def last_header_start(buf: bytes) -> int:
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


def parse_block(block: bytes | memoryview, lines_before: int, src: SourceFile, first: bool = True):
    """Parse one block of whole lines (bytes, or a view of the reader's buffer, so that it is not
    copied). Returns (events Arrow table, unparsed frame, lines in records, lines in block).

    The compiled scan (``_scan.c``, :data:`kitlib.formats.logs.records.SCAN`) takes the common block: valid UTF-8, no NUL byte, a
    record header on its first line, years the tables hold, ASCII logger names. Every other block, and every block when the
    scan was not built (or ``native=False`` in tests), takes the numpy path below, the reference
    the scan is tested against."""
    if records.NATIVE and records.SCAN is not None:
        scanned = records.SCAN.scan(block)
        if scanned is not None:
            return from_scan(scanned, lines_before, src)
    return parse_block_numpy(block, lines_before, src, first)


def parse_block_numpy(block: bytes | memoryview, lines_before: int, src: SourceFile, first: bool = True):
    block = memoryview(block)
    a = np.frombuffer(block, dtype=np.uint8)
    n = len(a)
    if n == 0:
        return empty_events(), unparsed_frame(src, [], [], ""), 0, 0
    nl = positions(a, 10)
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
    M = window(a, s, 32)
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
    zeros = positions(a, 0) if a.min() == 0 else ()
    if len(zeros):
        zl = np.unique(np.searchsorted(starts, zeros, side="right") - 1)
        is_j[zl] = True
        for i in zl[:1000000]:
            junk_reason[int(i)] = "binary data (NUL bytes)"
    if not utf8_ok(a, block):
        for i in bad_utf8_lines(block, starts, ends).tolist():
            if not is_j[i]:
                is_j[i] = True
                junk_reason[i] = "invalid UTF-8"
    is_h &= ~is_j

    # --- group lines into records; unparsed: lines before the first record, junk lines and the
    # lines following them -------------------------------------------------------------------
    H, last, span, lead, un_idx = group_records(is_h, is_j)
    un = unparsed_rows(src, a, block, starts, eff, un_idx, is_j, junk_reason, lead, first, lines_before)

    nrec = len(H)
    if nrec == 0:
        return empty_events(), un, 0, nlines

    # --- timestamps ----------------------------------------------------------------------
    pos = np.searchsorted(cand, H)
    wall_ms = epoch_ms(year[pos], mon[pos], day[pos], hh[pos], mi[pos], ss[pos], ms[pos])

    # --- message / logger ranges ---------------------------------------------------------
    msg_start = starts[H] + 26 + lvl_len[pos] + 1
    hend = trim_end(a, starts[H], eff[H])  # header line end without trailing blanks
    msg_start = np.minimum(msg_start, hend)
    parens = positions(a, 40)
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
    Le = trim_end(a, Ls, eff[last])
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
        trim_end(a, starts[np.maximum(last - 1, 0)][tl], prev_end[tl]) if tl.any() else prev_end[tl], r1s[tl]
    )
    ls[tl], le[tl] = Ls[tl] + 2, Le[tl] - 1

    logger = gather(a, block, [(ls, le)], nrec)
    logger, bad = clean_loggers(logger)
    if bad.any():  # a '(...)' that is not a logger name: keep it in the message
        r1e[bad] = np.where(tail_logger[bad], r1e[bad], hend[bad])
        if tail_logger[bad].any():
            tb = bad & tail_logger
            r1e[tb] = eff[last][tb]
    message = redact_messages(gather(a, block, [(r1s, r1e), (r2s, r2e)], nrec))
    lines = lines_before + H + 1
    host = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.host]))
    file = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.rel]))
    level = pa.DictionaryArray.from_arrays(pa.array(lvl[pos]), pa.array(LEVELS))
    t = events_table(
        [level, logger, message, host, file, pa.array(lines.astype(np.int64)), pa.array(span)], wall_ms, src.tz
    )
    return t, un, int(span.sum()), nlines


register(
    "log4j",
    detect=detect,
    parse=parse,
    tables=("events", "unparsed"),
    priority=10,
    doc="Kafka broker/Connect log4j records: server.log, controller.log, state-change.log, "
    "log-cleaner.log, kafka-request.log, connect.log",
)
