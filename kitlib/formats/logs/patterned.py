"""Logs in a layout other than Kafka's default -> the ``events`` table: each file read with its
layout (:func:`kitlib.formats.logs.inference.choose_layout`: named in ``bundle.yaml``, found in a
layout definition of the bundle, or inferred from the file's first lines).

How it stays fast: a block of whole lines becomes one Arrow string array over the block's own
bytes (no copy); one ``extract_regex`` call finds the record headers and their fields, a second
one (on header lines only) splits the message from what follows it; record grouping, timestamps
and message ranges are numpy on whole columns. Records span header to next header, so stack
traces stay whole. The thread (``%t``) is matched but not kept: the events table has no column
for it. Strimzi's layout goes through the compiled scan (see
:func:`kitlib.formats.logs.layouts.scan_style`).

Example:
    >>> from kitlib.formats.logs import parse_bytes
    >>> ev, un = parse_bytes(b"2024-05-22 00:32:03,023 WARN  [main] kafka.Foo - Hello\\n", "%d{ISO8601} %-5p [%t] %c - %m%n")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist()
    ['WARN', 'kafka.Foo', 'Hello']
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.events import LEVELS, block_events, empty_events, same_value
from kitlib.formats import Context, register, times, unparsed_frame
from kitlib.formats.logs import containers, records
from kitlib.formats.logs.blocks import (
    THREADS,
    carry_more,
    gather,
    head_lines,
    junk_lines,
    line_bounds,
    line_pieces,
    lines_array,
    trim_end,
)
from kitlib.formats.logs.containers import unwrap_block
from kitlib.formats.logs.dates import (
    NO_STAMP,
    fields_to_wall_ms,
    fold_tracker,
    note_times,
    out_of_range_years,
    to_utc_ms,
    zone_offsets_ms,
)
from kitlib.formats.logs.inference import EXCERPT, PLAIN, choose_layout, manifest_layout, wrapped
from kitlib.formats.logs.layouts import (
    Layout,
    PatternError,
    binary_lines,
    compile_pattern,
    head_matches,
    is_kafka_default,
    scan_style,
)
from kitlib.formats.logs.records import (
    EXCERPT_FOLLOWS,
    GAPS_KEY,
    clean_loggers,
    emit,
    from_scan,
    group_records,
    level_codes,
    redact_messages,
    unparsed_rows,
)
from kitlib.sources import SourceError, SourceFile, count_lines, read_chunks
from kitlib.sources import head as source_head


def extract(lines: pa.Array, pattern: str) -> pa.StructArray:
    """``pc.extract_regex`` run on the bytes (RE2's Latin-1 mode: ``.`` and classes are single
    bytes, about twice as fast as UTF-8 mode) with string fields back; lines are valid UTF-8
    here (bad lines are null), so a group never splits a character the pattern spells out."""
    m = pc.extract_regex(lines.view(pa.large_binary()) if pa.types.is_large_string(lines.type) else lines, pattern)
    return m.cast(pa.struct([(f.name, pa.large_string()) for f in m.type]))


def _names(s: pa.StructArray) -> set[str]:
    return {s.type.field(i).name for i in range(s.type.num_fields)}


def parse_block(
    block: bytes, lines_before: int, src: SourceFile, layout: Layout, first: bool = True, wrapped: int = PLAIN
):
    """Parse whole lines with ``layout``: (events Arrow table, unparsed frame, lines in records,
    lines). Same contract as :func:`kitlib.formats.logs.log4j.parse_block`. A block of a layout the
    compiled scan reads (:func:`scan_style`) goes through it when the scan takes the block; the
    code below stays the reference the tests hold the scan to."""
    style = scan_style(layout) if not wrapped and records.NATIVE and records.SCAN is not None else None
    if style is not None:
        scanned = records.SCAN.scan(block, style)
        if scanned is not None:
            return from_scan(scanned, lines_before, src, layout.tz or src.tz)
    cts = None
    marked = None
    if wrapped == EXCERPT:
        block, cts, marked, command = containers.unwrap_excerpt(block, layout.head)
    elif wrapped:
        block, cts = unwrap_block(block)
    a = np.frombuffer(block, np.uint8)
    starts, ends = line_bounds(a, block)
    nlines = len(starts)
    if nlines == 0:
        return empty_events(), unparsed_frame(src, [], [], ""), 0, 0
    eff = ends - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))
    is_j, junk_reason = junk_lines(a, block, starts, ends)
    if marked is not None and marked.any():  # an excerpt's prompts, commands, fences: unparsed, said why
        for i in np.flatnonzero(marked & ~is_j).tolist():
            junk_reason[i] = containers.JUNK_PROMPT if command[i] else containers.JUNK_DECORATION
        is_j |= marked
    lines = lines_array(block, starts, ~is_j)
    m = extract(lines, layout.head_pre)
    is_h = m.is_valid().to_numpy(zero_copy_only=False) & ~is_j
    h0 = np.flatnonzero(is_h)
    pre = m.field("pre").take(pa.array(h0))
    cols = {"pre": pre}
    for part in layout.head_parts:
        got_part = extract(pre, part)
        cols.update({f.name: got_part.field(f.name) for f in got_part.type if f.name != "pre"})
    hm = pa.StructArray.from_arrays(list(cols.values()), list(cols))
    if "level" in cols:  # the loose level word must be a level name
        known = level_codes(cols["level"]) >= 0
        if not known.all():
            is_h[h0[~known]] = False
            hm = hm.filter(pa.array(known))
    if wrapped == EXCERPT and layout.tail and "Y" in cols:
        # a record first line without its date (an excerpt's optional date) must end as the
        # layout ends a line: a level word at a line's start is not enough
        undated = np.asarray(pc.is_null(cols["Y"]).to_numpy(zero_copy_only=False), bool)
        if undated.any():
            ends_ok = np.asarray(
                pc.match_substring_regex(lines.take(pa.array(h0)).view(pa.large_binary()), layout.tail).to_numpy(
                    zero_copy_only=False
                ),
                bool,
            )
            drop = undated & ~ends_ok
            if drop.any():
                is_h[h0[drop]] = False
                hm = hm.filter(pa.array(~drop))
    far, years = out_of_range_years(hm)
    if far.any():  # a header whose year the tables cannot hold costs its record (as in log4j.py)
        bad = np.flatnonzero(is_h)[far]
        is_h[bad], is_j[bad] = False, True
        for i, y in zip(bad.tolist(), years[far].tolist()):
            junk_reason[i] = times.year_reason(y)
        hm = hm.filter(pa.array(~far))

    # --- group lines into records ---------------------------------------------------------
    H, last, span, lead, un_idx = group_records(is_h, is_j)
    un = unparsed_rows(src, a, block, starts, eff, un_idx, is_j, junk_reason, lead, first, lines_before)
    if marked is not None and marked.any() and len(un):
        un = _after_marks(un, un_idx, is_h, is_j, marked)
    nrec = len(H)
    if nrec == 0:
        return empty_events(), un, 0, nlines

    names = _names(hm)  # rows of hm are the record first lines H, in order
    pre_len = pc.binary_length(hm.field("pre")).to_numpy(zero_copy_only=False).astype(np.int64)
    rest_s = starts[H] + pre_len
    hend = trim_end(a, starts[H], eff[H])
    r1s, r1e = rest_s, np.maximum(hend, rest_s)
    # the last non-blank line of each record (CRI joins and pastes leave blank lines behind)
    nonblank = eff > starts
    lastnb = np.maximum.accumulate(np.where(nonblank, np.arange(nlines), -1))[last]
    cont_last = np.maximum(lastnb, H)
    r2s = np.where(cont_last > H, ends[H], 0)
    r2e = np.where(cont_last > H, eff[cont_last], 0)

    got = {k: hm.field(k) for k in ("level", "logger") if k in names}
    if layout.tail:
        # what follows the message: on the header line, or alone on the record's last line
        tm = extract(lines, layout.tail).take(pa.array(H))
        suf_len = pc.fill_null(pc.binary_length(tm.field("suf")), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        line_end = np.append(starts[1:], len(a))[H]
        suf_s = line_end - suf_len
        tail_ok = tm.is_valid().to_numpy(zero_copy_only=False) & (suf_s >= rest_s)
        r1e = np.where(tail_ok, trim_end(a, r1s, np.maximum(suf_s, r1s)), r1e)
        tnames = _names(tm)
        multi = (cont_last > H) & ~tail_ok
        lm_ok = np.zeros(nrec, bool)
        if multi.any():
            lm = extract(lines.take(pa.array(cont_last)), layout.last_tail)
            lm_ok = multi & lm.is_valid().to_numpy(zero_copy_only=False)
            if lm_ok.any():
                prev = np.maximum(cont_last - 1, H)
                r2e = np.where(lm_ok, np.where(prev > H, trim_end(a, starts[prev], eff[prev]), 0), r2e)
                r2s = np.where(lm_ok & (prev == H), 0, r2s)
        for k in ("level", "logger"):
            if k in tnames and k not in got:
                val = pc.if_else(pa.array(tail_ok), tm.field(k), pa.scalar("", pa.large_string()))
                if lm_ok.any():
                    val = pc.if_else(pa.array(lm_ok), lm.field(k), val)
                got[k] = val

    # --- fields -----------------------------------------------------------------------------
    if "logger" in got:
        logger, _ = clean_loggers(pc.cast(pc.fill_null(got["logger"], ""), pa.large_string()))
    else:
        logger = same_value("", nrec)
    lvl = level_codes(got["level"]) if "level" in got else np.full(nrec, -1, np.int8)
    level = pa.DictionaryArray.from_arrays(pa.array(lvl, mask=lvl < 0), pa.array(LEVELS))
    wall, ok = fields_to_wall_ms(hm)
    off = zone_offsets_ms(hm.field("tz")) if "tz" in names else np.full(nrec, NO_STAMP, np.int64)
    gaps: list[int] = []
    ts = to_utc_ms(wall, ok, off, layout.tz or src.tz, gaps)
    if cts is not None:
        c = cts[H]
        use = ~ok & (c != NO_STAMP)
        ts, ok = np.where(use, c, ts), ok | use
    message = redact_messages(gather(a, memoryview(block), [(r1s, r1e), (r2s, r2e)], nrec))
    t = block_events(ts, ok, level, logger, message, src.host, src.rel, lines_before + H + 1, span)
    if sum(gaps):
        t = t.replace_schema_metadata({GAPS_KEY: str(sum(gaps))})
    return t, un, int(span.sum()), nlines


def _after_marks(un, un_idx: np.ndarray, is_h: np.ndarray, is_j: np.ndarray, marked: np.ndarray):
    """Lines that follow an excerpt's prompt, command or fence (and no record) say so, rather
    than that they follow an unreadable line."""
    anchors = np.flatnonzero(is_h | is_j)
    k = np.searchsorted(anchors, un_idx, side="right") - 1
    prev = anchors[np.maximum(k, 0)]
    follows = (k >= 0) & ~is_j[un_idx] & marked[prev] & (prev < un_idx)
    if follows.any():
        reason = (
            un["reason"].cat.add_categories([EXCERPT_FOLLOWS])
            if EXCERPT_FOLLOWS not in un["reason"].cat.categories
            else un["reason"]
        )
        reason[follows] = EXCERPT_FOLLOWS
        un = un.assign(reason=reason)
    return un


def last_header_start(buf: bytes, layout: Layout, wrapped: int, limit: int = 200_000) -> int:
    """Offset of the last record first line in ``buf`` (to cut a block before it; the line must
    end with a newline and not be the first), or -1. Looks at no more than ``limit`` lines from
    the end, a growing window at a time, each window's lines matched at once (RE2)."""
    top = buf.rfind(b"\n") + 1  # end of the whole lines
    size, seen = 64 * 1024, 0
    while top > 0 and seen < limit:
        lo = max(0, top - size)
        if lo > 0:
            lo = buf.rfind(b"\n", 0, lo) + 1
        seg = buf[lo:top]
        a = np.frombuffer(seg, np.uint8)
        starts, _ = line_bounds(a, seg)
        lines = lines_array(seg, starts).view(pa.large_binary())
        if wrapped == EXCERPT:
            lines = pc.replace_substring_regex(lines, containers.EXCERPT_RE2, "", max_replacements=1)
        elif wrapped:
            lines = pc.replace_substring_regex(lines, containers.PREFIX_RE2, "", max_replacements=1)
        hit = np.flatnonzero(
            np.asarray(pc.match_substring_regex(lines, layout.head).to_numpy(zero_copy_only=False), bool)
            & (lo + starts > 0)
        )
        if len(hit):
            return lo + int(starts[hit[-1]])
        seen += len(starts)
        top, size = lo, size * 4
    return -1


def _local_dates(layout: Layout, head: bytes) -> bool:
    """Does the layout write local wall-clock dates (a date, and no zone on the first record
    line of ``head``)? Only those can fall in the repeated hour of a daylight-saving change."""
    if "(?P<Y>" not in layout.head:
        return False
    if "(?P<tz>" not in layout.head:
        return True
    lines = head_lines(head, 50)
    m = head_matches(layout, binary_lines(lines)) if lines else None
    if m is None or not m.is_valid().to_numpy(zero_copy_only=False).any():
        return True
    zone = m.field("tz").filter(m.is_valid())[0]
    return not zone.is_valid or not zone.as_py()


def parse(
    src: SourceFile, ctx: Context, block_size: int | None = None, threads: int = THREADS, layout: Layout | None = None
):
    """Stream a file as (table, chunk) pairs with its layout (see :func:`choose_layout`)."""
    head = source_head(src)
    layout = layout or choose_layout(head, src)
    if layout is None:
        from kitlib.formats import unknown_lines

        yield from unknown_lines(src, ctx)
        return
    is_wrapped = EXCERPT if src.meta.get("excerpt") else wrapped(layout, head)
    if is_wrapped == EXCERPT:
        layout = excerpt_layout(layout)
    if src.meta.get("layout_note"):
        ctx.notes.append(src.meta["layout_note"])
    if _local_dates(layout, head):
        fold_tracker(src, layout.tz or src.tz)
    else:
        src.meta.pop("fold", None)
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    pending: deque = deque()

    def submit(block, lines_before, first):
        args = (block, lines_before, src, layout, first, is_wrapped)
        if pool is None:
            pending.append((None, parse_block(*args)))
        else:
            pending.append((pool.submit(parse_block, *args), None))

    def drain(keep: int):
        while len(pending) > keep:
            fut, res = pending.popleft()
            yield from emit(fut.result() if fut is not None else res, 0, src, ctx)  # lines already counted

    carry, lines_before, first = b"", 0, True

    def feed(block, first):
        nonlocal lines_before
        for piece, piece_first in line_pieces(block, first):
            piece = bytes(piece)
            submit(piece, lines_before, piece_first)
            lines_before += count_lines(piece) + (0 if piece.endswith(b"\n") else 1)
            yield from drain(threads)

    try:
        try:
            for chunk in read_chunks(src, block_size) if block_size else read_chunks(src):
                buf = carry + chunk if carry else chunk
                cut = last_header_start(buf, layout, is_wrapped)
                forced = False
                if cut <= 0:
                    if carry_more(buf):
                        carry = buf
                        continue
                    cut, forced = buf.rfind(b"\n") + 1, True
                block, carry = buf[:cut], buf[cut:]
                yield from feed(block, first)
                first = forced
        except SourceError as e:
            if carry:
                yield from feed(carry, first)
                carry = b""
            ctx.fail(f"{e}; content up to line {lines_before} was read", lines_before + 1)
        if carry:
            submit(carry, lines_before, first)
        yield from drain(0)
        note_times(src, ctx)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_EXCERPT_LAYOUTS: dict[str, Layout] = {}


MAX_EXCERPT = 1 << 20  # bytes: a file read as a paste only for its fences and prompts is no bigger


def excerpt_layout(layout: Layout) -> Layout:
    """``layout`` as a pasted excerpt is read: its leading date may be missing (such a line
    still starts a record, with no time, when its level is there and it ends as the layout
    ends a line)."""
    if layout.pattern not in _EXCERPT_LAYOUTS:
        try:
            lay = compile_pattern(layout.pattern, optional_date=True)
            lay.tz = layout.tz
        except PatternError:
            lay = layout
        _EXCERPT_LAYOUTS[layout.pattern] = lay
    return _EXCERPT_LAYOUTS[layout.pattern]


def detect_excerpt(head: bytes, src: SourceFile) -> bool:
    """A pasted excerpt: records behind indentation, prompts, line numbers or a shipper's
    column, which reading the lines as they are would miss (ahead of Kafka's fast path, which
    would take the undecorated lines and fold the decorated ones into them)."""
    if manifest_layout(src) is not None:
        return False
    lines = head_lines(head)
    if containers.decorated(lines):
        lay = choose_layout(head, src)
        return lay is not None and wrapped(lay, head) == EXCERPT
    # undecorated records among a paste's own lines (fences, prompts and commands): a small file
    # only (an ordinary log may hold such a line in a message; it keeps Kafka's fast path)
    last = head.rstrip(b"\r\n").rsplit(b"\n", 1)[-1] if 0 < src.size <= len(head) else b""
    if src.size <= MAX_EXCERPT and containers.marked_lines(lines, last) and choose_layout(head, src) is not None:
        src.meta["excerpt"] = True
        return True
    return False


def detect_forced(head: bytes, src: SourceFile) -> bool:
    """``bundle.yaml`` names a layout for this file that the fast path does not read."""
    forced = manifest_layout(src)
    return forced is not None and forced.strip().lower() != "json" and not is_kafka_default(forced)


def detect(head: bytes, src: SourceFile) -> bool:
    """A log whose layout a bundle definition or inference recognises."""
    return choose_layout(head, src) is not None


register(
    "log-layout-manifest",
    detect=detect_forced,
    parse=parse,
    tables=("events", "unparsed"),
    priority=5,
    doc="logs whose layout bundle.yaml names (layouts: {glob: pattern})",
)
register(
    "log-excerpt",
    detect=detect_excerpt,
    parse=parse,
    tables=("events", "unparsed"),
    priority=8,
    doc="pasted log excerpts (tickets, chat threads, terminal copies): indentation, shell prompts, "
    "line numbers and a log shipper's column set aside; lines that lost their date keep their place",
)
register(
    "log-layout",
    detect=detect,
    parse=parse,
    tables=("events", "unparsed"),
    priority=60,
    doc="logs in other log4j/log4j2/logback layouts: from a definition in the bundle or inferred "
    "(ISO-8601 dates, zones, thread and logger positions, no date at all)",
)
