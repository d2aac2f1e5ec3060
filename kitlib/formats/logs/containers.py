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


# --- pasted excerpts --------------------------------------------------------------------------
# What a ticket, a chat thread or a terminal copy puts before a log line, besides a container's
# prefix: indentation, a line number (`  12: `, `12 | `, `cat -n`'s tab), a shell prompt (`$ `,
# `# `, `> `, `user@host:~$ ` also glued to the line, `[user@host dir]$ `, `bash-5.1$ `), a log
# search's own time column (Kibana's `Mar 5, 2021 @ 14:22:10.123`, an ISO @timestamp followed by
# a tab or a comma). Read only in a file the inference finds written that way (see
# :func:`kitlib.formats.logs.inference.best_layout`), never in an ordinary log.
_NUM = r"\d{1,6}(?::[ \t]|\t| ?\|[ \t]?)"  # with the one blank that follows it


_KUBECTL_PREFIX = r"\[pod/[\w.-]+/[\w.-]+\] "  # kubectl logs --prefix


_PROMPT = (
    r"[\w.-]+@[\w.-]+(?::[^\s$#]*)?[$#]"  # user@host:~$ (may be glued to the line)
    r"|\[[\w.-]+@[\w.-]+[^\]\n]*\][$#]"  # [user@host dir]$
    r"|(?:ba|z|k)?sh(?:-[\d.]+)?[$#]"  # bash-5.1$, sh-4.4#
    r"|PS [A-Za-z]:[^>\n]*>"  # PowerShell
    r"|[$#%]"  # a bare prompt: must be followed by a blank
)


_SEARCH_STAMP = (
    r"[A-Z][a-z]{2} \d{1,2}, \d{4} @ \d{2}:\d{2}:\d{2}(?:\.\d{1,9})?[ \t]"  # Kibana Discover
    r"|\"?\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\"?(?:\t|, ?)"
)


# (ind) indentation, then either (num) a line number, a quote marker or kubectl's pod prefix, or
# (prompt) a prompt, (ws) blanks, (srch) a
# log search's time column; then the container prefix (cpre, groups c*)
EXCERPT_RE2 = (
    r"^(?P<ind>[ \t]*)(?:(?P<num>"
    + _NUM
    + r"|> ?|"
    + _KUBECTL_PREFIX
    + r")|(?P<prompt>"
    + _PROMPT
    + r"))?(?P<ws>[ \t]*)"
    r"(?P<srch>" + _SEARCH_STAMP + r")?"
    r"(?P<cpre>(?:" + _SERVICE + r")?(?:" + _STAMP + r"(?:" + _CRI + r")? )?)"
)


EXCERPT = re.compile(re.sub(r"\?P<\w+>", "", EXCERPT_RE2).encode())


# a record's start behind a decoration: a date (ISO, yy/MM/dd, bracketed) or a level word
_LOOKS_LIKE_RECORD = re.compile(
    rb"(?:\[?\d{2,4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:\d{2}|\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b)"
)


_FENCE = r"^[ \t]*(?:```|~~~)[\w+-]*[ \t\r\n]*$"


def strip_excerpt(line: bytes) -> bytes:
    """One line without the decoration of a pasted excerpt (used on a file's first lines only).

    Example:
        >>> strip_excerpt(b"  12: [2024-05-22 00:32:03,023] INFO hi (a.B)")
        b'[2024-05-22 00:32:03,023] INFO hi (a.B)'
        >>> strip_excerpt(b"user@host:~$ [2024-05-22 00:32:03,023] INFO hi (a.B)")
        b'[2024-05-22 00:32:03,023] INFO hi (a.B)'
    """
    m = EXCERPT.match(line)
    return line[m.end() :] if m else line


_EXCERPT_NAMED = re.compile(EXCERPT_RE2.encode())


def decorated(lines: list[bytes]) -> bool:
    """Does any of these lines start a record behind an excerpt's decoration (a record that
    reading the line as it is would not find)? A container's prefix alone is no excerpt: the
    readers strip it themselves."""
    for ln in lines:
        m = _EXCERPT_NAMED.match(ln)
        if m and m.start("cpre") > 0 and _LOOKS_LIKE_RECORD.match(ln, m.end()):
            return True
    return False


_MARK_LINE = re.compile(
    rb"^[ \t]*(?:(?:```|~~~)[\w+-]*[ \t\r]*$|(?:"
    + _PROMPT.encode()
    + rb")(?:[ \t]|\r?$)|\d{1,6}(?::[ \t]|\t| ?\|)[ \t\r]*$)"
)


def marked_lines(lines: list[bytes], last: bytes = b"") -> bool:
    """Does any of these lines hold only what a paste adds (a code fence, a prompt and its
    command, a bare line number), or does the file's ``last`` line end with a prompt glued to it?"""
    if last and re.search(_TRAILING_PROMPT.replace(r"(?P<tp>", "(").encode(), last):
        return True
    return any(_MARK_LINE.match(ln) for ln in lines)


def _lengths(m: pa.StructArray, name: str) -> np.ndarray:
    return pc.fill_null(pc.binary_length(m.field(name)), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def _drop_prefixes(
    a: np.ndarray, starts: np.ndarray, plen: np.ndarray, cend: np.ndarray | None = None, slen: np.ndarray | None = None
) -> bytes:
    """The bytes of ``a`` without the first ``plen`` bytes of each line, and the ``slen`` bytes
    before ``cend`` (a line's end before its newline) when given (numpy mask)."""
    delta = np.zeros(len(a) + 1, np.int32)
    has = plen > 0
    delta[starts[has]] += 1
    delta[(starts + plen)[has]] -= 1
    if cend is not None and slen is not None:
        tail = slen > 0
        delta[(cend - slen)[tail]] += 1
        delta[cend[tail]] -= 1
    return a[np.cumsum(delta[:-1]) == 0].tobytes()


# a prompt glued to the end of a record's last line (a file printed without its last newline)
_TRAILING_PROMPT = r"[)\]](?P<tp>(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?[$#]|\[[\w.-]+@[\w.-]+[^\]\n]*\][$#]|(?:ba|z|k)?sh-[\d.]+[$#])[ \t]*)\r?\n?$"


JUNK_PROMPT = "a shell prompt or command of a pasted excerpt"  # as in records.EXPECTED_REASONS
JUNK_DECORATION = "only the decoration of a pasted excerpt (line number, prompt, code fence)"


def unwrap_excerpt(block: bytes, head_rx: str) -> tuple[bytes, np.ndarray | None, np.ndarray, np.ndarray]:
    """``block`` (whole lines) without the decorations of a pasted excerpt, as
    :func:`unwrap_block` does for container prefixes; ``head_rx`` (RE2) tells which lines start a
    record once stripped. A record's first line loses all its decoration; any other line loses
    its line number and the indentation the records share, so a stack frame keeps its own; a
    line holding nothing but decoration, and a prompt before anything but a record (a command),
    are left whole and marked. Returns (block, container stamps or None, marked lines, which
    of them are prompts)."""
    block = join_partials(block)
    a = np.frombuffer(block, np.uint8)
    starts, ends = line_bounds(a, block)
    n = len(starts)
    if not n:
        return block, None, np.zeros(0, bool), np.zeros(0, bool)
    lines = lines_array(block, starts).view(pa.large_binary())
    m = pc.extract_regex(lines, EXCERPT_RE2)
    ind, num, prompt = _lengths(m, "ind"), _lengths(m, "num"), _lengths(m, "prompt")
    ws, srch, cpre = _lengths(m, "ws"), _lengths(m, "srch"), _lengths(m, "cpre")
    full = ind + num + prompt + ws + srch + cpre
    # a bare prompt ('$', '#', '%') counts only when a blank follows it
    bare = (prompt == 1) & (ws == 0)
    full = np.where(bare, ind, full)
    prompt = np.where(bare, 0, prompt)
    stripped = lines_array(_drop_prefixes(a, starts, full), starts - np.append(0, np.cumsum(full)[:-1]))
    is_h = np.asarray(
        pc.match_substring_regex(stripped.view(pa.large_binary()), head_rx).to_numpy(zero_copy_only=False), bool
    )
    line_len = ends - starts - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))
    only_decor = ((full >= line_len) & (num + prompt > 0)) | (bare & (ind + 1 >= line_len))
    fence = np.asarray(pc.match_substring_regex(lines, _FENCE).to_numpy(zero_copy_only=False), bool)
    command = (prompt > 0) & ~is_h & ~only_decor
    marked = only_decor | fence | command
    common = int(ind[is_h].min()) if is_h.any() else 0
    # other lines: a line number (with its one blank), else the shared indentation (and a
    # container prefix right after it)
    rest = np.where(num > 0, ind + num, np.minimum(ind, common))
    rest = np.where(((num > 0) | (ind <= common)) & (ws == 0), rest + srch + cpre, rest)
    plen = np.where(is_h, full, np.where(marked, 0, rest))
    glued = _lengths(pc.extract_regex(lines, _TRAILING_PROMPT), "tp")
    out = _drop_prefixes(a, starts, plen, starts + line_len, np.where(marked, 0, glued))
    stamps = None
    took = is_h & (cpre > 0)
    if took.any():
        names = [f.name for f in m.type if f.name.startswith("c") and f.name != "cpre"]
        cm = pa.StructArray.from_arrays([m.field(k).cast(pa.large_string()) for k in names], names)
        st = stamp_ms(cm, "c")
        stamps = np.where(took, st, NO_STAMP)
    return out, stamps, marked, command
