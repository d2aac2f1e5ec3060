"""Cutting a log file's bytes into blocks of whole lines, and reading a block's lines as columns.

A reader takes a file a chunk at a time and cuts it into blocks of whole lines, just before a
record's first line where it can (:func:`carry_more`, :func:`line_pieces`); the blocks are parsed
on :data:`THREADS` threads. Inside a block, lines are numpy arrays of offsets
(:func:`line_bounds`) and Arrow strings over the block's own bytes (:func:`lines_array`,
:func:`gather`: no copy per line); the lines no reader may take (NUL bytes, invalid UTF-8) are
found once for the whole block (:func:`junk_lines`).

Example:
    >>> starts, ends = line_bounds(np.frombuffer(b"ab\\ncd\\n", np.uint8), b"ab\\ncd\\n")
    >>> starts.tolist(), ends.tolist()
    ([0, 3], [2, 5])
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from kitlib.sources import count_lines

try:  # the compiled scan's newline count: no copy of a block that is a view, memchr's pace
    from kitlib.formats.logs._scan import count_newlines as _count_lines
except ImportError:  # pragma: no cover - an install without a compiler
    _count_lines = count_lines  # type: ignore[assignment]

THREADS = min(2, os.cpu_count() or 1)


MAX_CARRY = 128 * 1024 * 1024


# lines of one parsed block: the parse holds a few dozen bytes of numpy arrays per line, so a
# block of tiny lines (a 6 MiB chunk holds 3 million one-byte lines) is parsed in pieces
MAX_BLOCK_LINES = 1 << 18


def carry_more(buf: bytes) -> bool:
    """May a buffer without a record header yet be carried into the next chunk (a record's
    continuation lines are kept together up to :data:`MAX_CARRY` bytes and
    :data:`MAX_BLOCK_LINES` lines)? A buffer without a newline must be."""
    if buf.rfind(b"\n") < 0:
        return True
    return len(buf) < MAX_CARRY and (len(buf) < MAX_BLOCK_LINES or _count_lines(buf) < MAX_BLOCK_LINES)


def line_pieces(block, first: bool, at_most: int | None = None):
    """``block`` (whole lines) in pieces of at most :data:`MAX_BLOCK_LINES` lines, cut after a
    newline, each with its ``first`` flag (a piece after a cut starts with orphan lines). The
    newlines are counted a few MiB at a time (no array of every newline's offset). ``at_most``:
    a bound on the block's newlines already known (the reader counted them), so that a block
    under the limit is not counted again."""
    if at_most is not None and at_most <= MAX_BLOCK_LINES:
        yield block, first
        return
    if len(block) <= MAX_BLOCK_LINES or _count_lines(block) <= MAX_BLOCK_LINES:
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


def line_bounds(a: np.ndarray, block: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (the newline's offset, or the block's end) of every line of ``block``."""
    nl = np.flatnonzero(a == 10)
    starts = np.empty(len(nl) + 1, np.int64)
    starts[0] = 0
    starts[1:] = nl + 1
    ends = np.empty(len(nl) + 1, np.int64)
    ends[:-1] = nl
    ends[-1] = len(a)
    if block.endswith(b"\n") or not block:
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def lines_array(block: bytes, starts: np.ndarray, valid: np.ndarray | None = None) -> pa.LargeStringArray:
    """The lines of ``block`` as an Arrow string array over the block's own buffer (no copy);
    each value keeps its newline. ``valid`` False makes a line null (bad bytes)."""
    offsets = np.append(starts, len(block)).astype(np.int64)
    vbuf = None
    null_count = 0
    if valid is not None and not valid.all():
        vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = int((~valid).sum())
    return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(block), vbuf, null_count)


def head_lines(head: bytes, n: int = 200) -> list[bytes]:
    lines = [ln.rstrip(b"\r") for ln in head.split(b"\n")[:n]]
    if len(head.split(b"\n", n)) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1] if len(lines) > 1 else lines
    return lines


def positions(a: np.ndarray, byte: int, step: int = 256 * 1024) -> np.ndarray:
    """Offsets of ``byte`` in ``a``, found a slice at a time (the comparison's mask stays small:
    a whole block's mask cost as much memory as the block, on every parse thread)."""
    found = [np.flatnonzero(a[i : i + step] == byte) + i for i in range(0, len(a), step)]
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def trim_end(a: np.ndarray, s: np.ndarray, e: np.ndarray) -> np.ndarray:
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


def gather(
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
    pre = window(a, np.where(bufidx == 0, starts, 0), 12)
    if extra:
        j = np.flatnonzero(bufidx == 1)
        pre[j] = window(src, starts[j], 12)
    keep = np.arange(12)[None, :] < lens[:, None]
    views[:, 4:16] = np.where(keep, pre, 0)
    big = ~inline
    v32[big, 2] = bufidx[big]
    v32[big, 3] = starts[big]
    bufs = [None, pa.py_buffer(views), pa.py_buffer(block)] + ([pa.py_buffer(extra)] if extra else [])
    arr = pa.Array.from_buffers(pa.string_view(), nrec, bufs)
    return arr.cast(pa.large_string())


def window(a: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes from each start (zero past the end of ``a``), as an (n, width) array."""
    n = len(a)
    if not len(starts):
        return np.zeros((0, width), np.uint8)
    s = np.minimum(starts, n)
    if int(s.max()) + width > n:  # a window runs past the end: read it from a zero-padded copy
        a = np.concatenate([a, np.zeros(width, np.uint8)])
    # rows of a strided view: gathers n x width bytes, with no (n, width) index matrix built
    return np.lib.stride_tricks.sliding_window_view(a, width)[s]


def utf8_ok(a: np.ndarray, block: memoryview) -> bool:
    if not len(a) or a.max() < 128:
        return True
    try:
        str(block, "utf-8")
        return True
    except UnicodeDecodeError:
        return False


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


def junk_lines(a: np.ndarray, block: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Lines with NUL bytes or invalid UTF-8, and why."""
    nlines = len(starts)
    is_j = np.zeros(nlines, bool)
    reason: dict[int, str] = {}
    zeros = np.flatnonzero(a == 0)
    if len(zeros):
        for i in np.unique(np.searchsorted(starts, zeros, side="right") - 1).tolist():
            is_j[i] = True
            reason[i] = "binary data (NUL bytes)"
    if not utf8_ok(a, memoryview(block)):
        for i in bad_utf8_lines(block, starts, ends).tolist():
            if not is_j[i]:
                is_j[i] = True
                reason[i] = "invalid UTF-8"
    return is_j, reason
