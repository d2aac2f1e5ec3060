"""Redacting the lines of one file held one a value (the ``unparsed`` table), where a record may
spread over several lines: :func:`redact_lines`, with :class:`LineCarry` to continue a file read
in pieces, the masking of PEM private key bodies, and :data:`SECRET_FILES` (files whose every line
is a secret).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.redact.rules import PREFILTER
from kitlib.redact.text import REDACTED, redact_text

# a record may spread over lines (a value on the line after its key, a "value" field before or after
# its "name" field, a JAAS value continued with backslashes, a YAML block scalar): each flagged line
# is redacted together with the lines around it, joined as one text
LINES_BEFORE, LINES_AFTER = 2, 8
# the body of a PEM private key block is masked over at most this many lines
MAX_PEM_LINES = 200
# lines that may begin such a record: a key with nothing after its '=' or ':' (or only a backslash,
# or a YAML block indicator), a name or key field (its value field may come after it, or came
# before it), an XML element left open or a <name> element (its <value> follows)
_OPENS = r"""(?i)(?:[=:][ \t]*(?:\\|[|>][+-]?[0-9]?)?[ \t]*,?$|\\[ \t]*$|\b(?:name|key)\b\\?["']?\s*[:=]|<[^/>]*>[^<]*$|</name>[ \t]*$|[{\[][ \t]*$)"""
_PEM_BEGIN_RE2 = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_PEM_END_RE2 = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
# files whose every line is a secret (after a user name, when the line has one): the JMX agent's
# password file and files named for a password; their comment lines are kept
SECRET_FILES = re.compile(
    r"(?i)(?:^|/)(?:jmxremote\.password|[^/]*[._-](?:password|passwd)|password|passwd)(?:\.txt)?$"
)


@dataclass
class LineCarry:
    """What one call of :func:`redact_lines` leaves to the next call for the same file (the
    unparsed table of a file is built in pieces): its last line number, its last lines as read
    (so that a key at the end of one piece reaches its value at the start of the next), and how
    many lines back a PEM private key block opened that has not ended yet (0: none)."""

    last_line: int = 0
    tail: list = field(default_factory=list)
    pem_open_since: int = 0


def redact_lines(arr: pa.Array, line_numbers=None, carry: LineCarry | None = None, file: str = "") -> pa.Array:
    """Consecutive lines of one file (a string Arrow array, one line a value) with every secret
    masked, records spread over lines included: each line the pre-check flags is redacted joined
    with the :data:`LINES_BEFORE` lines before it and the :data:`LINES_AFTER` lines after it; the
    lines of a PEM private key block, up to its END line, become ``[redacted]``; a file named for
    passwords (:data:`SECRET_FILES`) keeps only the first word of each line. ``carry`` (with
    ``line_numbers``) continues the file from the previous call when its lines follow on.

    Example:
        >>> redact_lines(pa.array(["- name: KAFKA_SSL_KEY_PASSWORD", "  value: s3cr3t", "- name: X"])).to_pylist()
        ['- name: KAFKA_SSL_KEY_PASSWORD', '  value: [redacted]', '- name: X']
    """
    n_own = len(arr)
    ctx: list = []
    since = 0  # lines back from the end of the previous call where an open PEM block began
    if carry is not None and line_numbers is not None and n_own and int(line_numbers[0]) == carry.last_line + 1:
        ctx, since = carry.tail, carry.pem_open_since
    work = pa.concat_arrays([pa.array(ctx, arr.type), arr]) if ctx else arr
    k = len(ctx)
    hit = np.asarray(pc.fill_null(pc.match_substring_regex(work, PREFILTER), False).to_numpy(zero_copy_only=False))
    open_at = len(ctx) - since if since else None  # where in ``work`` an open block began
    body, since_after = _pem_body_mask(work, hit, open_at)
    out_values: dict[int, str] = {i: REDACTED for i in np.flatnonzero(body[k:]).tolist()}
    flagged = np.flatnonzero(hit & ~body)
    if len(flagged):
        # a flagged line that cannot begin a record spread over lines is redacted on its own
        sub = work.take(pa.array(flagged))
        spread = np.asarray(pc.fill_null(pc.match_substring_regex(sub, _OPENS), False).to_numpy(zero_copy_only=False))
        alone = flagged[~spread]
        if len(alone):
            for i, a, b in zip(
                alone.tolist(), (old := sub.filter(pa.array(~spread)).to_pylist()), map(redact_text, old)
            ):
                if a != b and i >= k:
                    out_values[i - k] = b
        flagged = flagged[spread]
    if len(flagged):
        old = work.to_pylist() if len(flagged) * (LINES_BEFORE + LINES_AFTER) > len(work) else None
        for s0, e0 in _segments(flagged, len(work)):
            seg = old[s0:e0] if old is not None else work.slice(s0, e0 - s0).to_pylist()
            seg = [REDACTED if body[s0 + j] else (v or "") for j, v in enumerate(seg)]
            red = redact_text("\n".join(seg)).split("\n")
            if len(red) != len(seg):  # never: the rules keep line breaks; line by line then
                red = [redact_text(v) for v in seg]
            for j, (a, b) in enumerate(zip(seg, red)):
                if a != b and s0 + j >= k:
                    out_values[s0 + j - k] = b
    if file and SECRET_FILES.search(file):
        mine = work.slice(k) if k else work
        masked = pc.replace_substring_regex(mine, r"^([ \t]*[^\s#!][^\s]*)[ \t]+\S.*$", r"\1 " + REDACTED)
        masked = pc.replace_substring_regex(masked, r"^[ \t]*[^\s#!\[][^\s]*[ \t]*$", REDACTED)
        changed = np.asarray(pc.not_equal(masked, mine).to_numpy(zero_copy_only=False))
        for i in np.flatnonzero(changed).tolist():
            out_values.setdefault(i, REDACTED if i in out_values else masked[i].as_py())
            if out_values[i] != REDACTED:
                out_values[i] = masked[i].as_py()
    if carry is not None and line_numbers is not None and n_own:
        carry.last_line = int(line_numbers[-1])
        carry.tail = work.slice(max(0, len(work) - LINES_AFTER)).to_pylist()
        carry.pem_open_since = since_after
    if not out_values:
        return arr
    mask = np.zeros(n_own, bool)
    order = sorted(out_values)
    mask[order] = True
    return pc.replace_with_mask(arr, pa.array(mask), pa.array([out_values[i] for i in order], arr.type))


def _segments(flagged: np.ndarray, n: int) -> list[tuple[int, int]]:
    """The runs of lines to redact together: each flagged line with the lines around it, runs that
    touch merged (numpy; one pair per run)."""
    lo = np.maximum(flagged - LINES_BEFORE, 0)
    hi = np.minimum(flagged + LINES_AFTER + 1, n)
    reach = np.maximum.accumulate(hi)
    new_run = np.ones(len(lo), bool)
    new_run[1:] = lo[1:] > reach[:-1]
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], len(lo)) - 1
    return list(zip(lo[starts].tolist(), reach[ends].tolist()))


def _pem_body_mask(work: pa.Array, hit: np.ndarray, open_at: int | None) -> tuple[np.ndarray, int]:
    """Which lines lie inside a PEM private key block (after its BEGIN line, before its END line,
    at most :data:`MAX_PEM_LINES` lines), and how many lines back from the end a block still open
    at the end began (0: none). ``open_at``: the index (zero or less) of the BEGIN line of a block
    opened before ``work``'s first line, else None."""
    n = len(work)
    if not hit.any() and open_at is None:
        return np.zeros(n, bool), 0
    idx = np.arange(n)
    begin = np.zeros(n, bool)
    end = np.zeros(n, bool)
    cand = np.flatnonzero(hit)
    if len(cand):
        sub = work.take(pa.array(cand))
        begin[cand] = np.asarray(
            pc.fill_null(pc.match_substring_regex(sub, _PEM_BEGIN_RE2), False).to_numpy(zero_copy_only=False)
        )
    if not begin.any() and open_at is None:
        return np.zeros(n, bool), 0
    end = np.asarray(pc.fill_null(pc.match_substring_regex(work, _PEM_END_RE2), False).to_numpy(zero_copy_only=False))
    opened = begin & ~end  # a BEGIN and END on one line is a whole block: the rules mask it
    none = -(1 << 40)
    first = none if open_at is None else open_at
    last_begin = np.maximum.accumulate(np.where(opened, idx, first))
    last_end = np.maximum.accumulate(np.where(end, idx, none - 1))
    before = np.empty(n, np.int64)  # the last BEGIN strictly before each line
    before[0] = first
    before[1:] = last_begin[:-1]
    inside = (before > last_end) & (idx - before <= MAX_PEM_LINES) & ~opened
    still_open = last_begin[-1] > last_end[-1] and n - last_begin[-1] <= MAX_PEM_LINES
    return inside, int(n - last_begin[-1]) if still_open else 0
