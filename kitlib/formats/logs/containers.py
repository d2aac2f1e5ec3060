"""Prefixes that container tooling writes before every line of a process's output.

Recognised, alone or combined, in this order:
- ``docker compose`` service prefix: ``kafka-1  | `` (name, spaces, bar, one space);
- a stamp: RFC 3339 with up to nanoseconds (``docker logs -t``, ``kubectl logs --timestamps``,
  a log service's export), then one space;
- CRI (containerd / CRI-O files under /var/log/pods): stamp, ``stdout``/``stderr``, ``F`` (full
  line) or ``P`` (partial: the runtime cut a long line; the rest follows on the next line).

A stamp is only taken for a prefix when the layout matches more lines without it (a layout
whose own dates are RFC 3339 keeps them; see :func:`kitlib.formats.logs.inference.wrapped`).

:func:`unwrap_block` removes the prefixes from a block of whole lines with numpy (line count and
numbering unchanged) and returns each line's stamp, so a record whose own layout has no
timestamp can still get one. CRI partial lines are joined to the line that completes them; the
completing line's slot becomes an empty line so later line numbers stay right.

Example:
    >>> blk, ts = unwrap_block(b"kafka-1  | 2024-05-22T00:32:03.023456789Z INFO hi\\n")
    >>> blk, int(ts[0])
    (b'INFO hi\\n', 1716337923023)
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.formats.logs.blocks import line_bounds, lines_array
from kitlib.formats.logs.dates import NO_STAMP, fields_to_wall_ms, zone_offsets_ms

# one home for the prefix grammar; the bytes form (Python re) is used by the log4j fast path
# and for detection, the RE2 form (named groups) on Arrow string columns
_STAMP = (
    r"(?P<cY>\d{4})-(?P<cMo>\d{2})-(?P<cD>\d{2})T(?P<ch>\d{2}):(?P<cmi>\d{2}):(?P<cs>\d{2})"
    r"(?:\.(?P<cf>\d{1,9}))?(?P<ctz>Z|[+-]\d{2}:?\d{2})?"
)


_SERVICE = r"[\w.-]+ +\| ?"


_CRI = r" (?:stdout|stderr) (?P<cflag>[FP])"


PREFIX_RE2 = rf"^(?P<cpre>(?:{_SERVICE})?(?:{_STAMP}(?:{_CRI})? )?)"


PREFIX = re.compile(
    rb"^(?:"
    + _SERVICE.encode()
    + rb")?(?:"
    + re.sub(r"\?P<\w+>", "", _STAMP).encode()
    + rb"(?: (?:stdout|stderr) [FP])? )?",
    re.MULTILINE,
)


CRI_LINE = re.compile(
    rb"^(?:" + _SERVICE.encode() + rb")?\d{4}-\d{2}-\d{2}T[\d:.]+(?:Z|[+-][\d:]+) (?:stdout|stderr) [FP] ", re.MULTILINE
)


def strip(text: bytes) -> bytes:
    """Remove the container prefix of every line (Python ``re`` over the whole text, C speed).

    Example:
        >>> strip(b"kafka-1  | [2024-05-22 00:32:03,023] INFO x (a.B)\\n")
        b'[2024-05-22 00:32:03,023] INFO x (a.B)\\n'
    """
    return PREFIX.sub(b"", join_partials(text) if b" P " in text else text)


def has_prefix(lines: list[bytes]) -> bool:
    """Do most of these (non-blank) lines carry a container prefix?"""
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return False
    hit = sum(1 for ln in lines if (m := PREFIX.match(ln)) is not None and m.end() > 0)
    return hit * 2 > len(lines)


def join_partials(block: bytes) -> bytes:
    """Join CRI partial (``P``) lines to the line that completes them; the completing line's
    slot is left empty so the line count does not change. Only lines with a ``P`` flag are
    touched (Python per such line: the runtime writes them only for lines over 16 KiB)."""
    if not CRI_LINE.search(block):
        return block
    lines = block.split(b"\n")
    i, changed = 0, False
    while i < len(lines) - 1:
        m = CRI_LINE.match(lines[i])
        if m and lines[i][m.end() - 2 : m.end() - 1] == b"P":
            j = i + 1
            parts = [lines[i][m.end() :]]
            while j < len(lines):
                mj = CRI_LINE.match(lines[j])
                if not mj:
                    break
                parts.append(lines[j][mj.end() :])
                final = lines[j][mj.end() - 2 : mj.end() - 1] == b"F"
                lines[j] = b""
                j += 1
                if final:
                    break
            lines[i] = lines[i][: m.end() - 2] + b"F " + b"".join(parts)
            changed = True
            i = j
            continue
        i += 1
    return b"\n".join(lines) if changed else block


def unwrap_block(block: bytes, valid: np.ndarray | None = None) -> tuple[bytes, np.ndarray | None]:
    """``block`` (whole lines) without container prefixes, and each line's container stamp in
    ms since the epoch, UTC (``NO_STAMP`` where none); the stamps are None when no line had a
    prefix. A stamp without a zone is read as UTC."""
    block = join_partials(block)
    a = np.frombuffer(block, np.uint8)
    starts, _ = line_bounds(a, block)
    if not len(starts):
        return block, None
    m = pc.extract_regex(lines_array(block, starts, valid), PREFIX_RE2)
    plen = pc.fill_null(pc.binary_length(m.field("cpre")), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if not plen.any():
        return block, None
    stamps = stamp_ms(m, "c")
    # drop the prefix bytes: +1 where a prefix starts, -1 where it ends, keep where the sum is 0
    has = plen > 0
    delta = np.zeros(len(a) + 1, np.int32)
    delta[starts[has]] += 1
    delta[(starts + plen)[has]] -= 1
    keep = np.cumsum(delta[:-1]) == 0
    return a[keep].tobytes(), stamps


def stamp_ms(m: pa.StructArray, p: str = "") -> np.ndarray:
    """Epoch ms (UTC) from the date/time groups ``{p}Y, {p}Mo, {p}D, {p}h, {p}mi, {p}s, {p}f,
    {p}tz`` of an ``extract_regex`` result; ``NO_STAMP`` where they are missing. Zone-less
    stamps are taken as UTC (see :func:`kitlib.formats.logs.dates.to_utc_ms` for local zones)."""
    wall, ok = fields_to_wall_ms(m, p)
    names = {m.type.field(i).name for i in range(m.type.num_fields)}
    off = zone_offsets_ms(m.field(f"{p}tz")) if f"{p}tz" in names else np.zeros(len(m), np.int64)
    off = np.where(off == NO_STAMP, 0, off)
    return np.where(ok, wall - off, NO_STAMP)
