"""Log layouts other than Kafka's default -> the ``events`` table, without hand-written regexes.

A layout is a log4j 1.x / reload4j ``ConversionPattern``, a log4j2 ``PatternLayout`` pattern or a
logback ``<pattern>``; :func:`compile_pattern` turns it into a :class:`Layout` (two RE2 regexes:
the header up to the message, and what follows the message). Where the layout comes from, first
match wins:

1. ``bundle.yaml``: ``layouts: {"connect/*.log": "%d{ISO8601} %-5p [%t] %c - %m%n"}`` (glob on the
   path relative to the bundle root -> pattern; ``json`` sends the files to the JSON log parser);
2. a layout definition shipped in the bundle (``log4j.properties``, ``log4j2.xml|yaml|properties``,
   ``logback.xml``): every pattern found is tried on the file's first lines, the best one is used;
3. inference from the file's first lines: timestamp shapes x field orders (:data:`INFER_PATTERNS`).

Kafka's default ``[%d] %p %m (%c)%n`` never comes here: the numpy fast path in ``log4j.py`` has it.

How it stays fast: a block of whole lines becomes one Arrow string array over the block's own
bytes (no copy); one ``extract_regex`` call finds the record headers and their fields, a second
one (on header lines only) splits the message from what follows it; record grouping, timestamps
and message ranges are numpy on whole columns. Records span header to next header, so stack
traces stay whole. The thread (``%t``) is matched but not kept: the events table has no column
for it.

Example:
    >>> lay = compile_pattern("%d{ISO8601} %-5p [%t] %c - %m%n")
    >>> ev, un = parse_bytes(b"2024-05-22 00:32:03,023 WARN  [main] kafka.Foo - Hello\\n", lay)
    >>> ev.loc[0, ["level", "logger", "message"]].tolist()
    ['WARN', 'kafka.Foo', 'Hello']
"""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.events import EVENTS_SCHEMA, LEVELS, empty_events, to_pandas
from kitlib.formats import Context, container, log4j, register, times, unparsed_frame
from kitlib.formats.container import NO_STAMP, line_bounds, lines_array, unwrap_block
from kitlib.formats.log4j import (
    THREADS,
    _clean_loggers,
    _emit,
    _epoch_ms,
    _gather,
    _redact,
    _trim_end,
    _utf8_ok,
)
from kitlib.sources import SourceError, SourceFile, count_lines, read_chunks, regular_files
from kitlib.sources import head as source_head

KAFKA_DEFAULT = "[%d] %p %m (%c)%n"

# ---------------------------------------------------------------------------------------------
# dates
# ---------------------------------------------------------------------------------------------
ANY_ISO = (
    r"(?P<Y>\d{4})-(?P<Mo>\d{2})-(?P<D>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<f>\d{1,9}))?(?P<tz>Z|[+-]\d{2}(?::?\d{2})?)?"
)
ANY_TIME = r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?"
NAMED_DATES = {
    "ISO8601": ANY_ISO,  # log4j 1 / logback: space; log4j2: 'T' -- both accepted
    "DEFAULT": "yyyy-MM-dd HH:mm:ss,SSS",
    "ISO8601_BASIC": "yyyyMMdd'T'HHmmss,SSS",
    "ISO8601_OFFSET_DATE_TIME_HHMM": "yyyy-MM-dd'T'HH:mm:ss,SSSXX",
    "ISO8601_OFFSET_DATE_TIME_HHCMM": "yyyy-MM-dd'T'HH:mm:ss,SSSXXX",
    "ABSOLUTE": "HH:mm:ss,SSS",
    "ABSOLUTE_MICROS": "HH:mm:ss,SSSSSS",
    "DATE": "dd MMM yyyy HH:mm:ss,SSS",
    "COMPACT": "yyyyMMddHHmmssSSS",
    "UNIX_MILLIS": r"(?P<epoch>\d{13})",
    "UNIX": r"(?P<epoch>\d{10})",
    "ANY_ISO": ANY_ISO,
    "ANY_TIME": ANY_TIME,
}
MONTHS = {
    m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
}
_DATE_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.DOTALL)


def date_regex(fmt: str) -> str:
    """RE2 for a ``SimpleDateFormat``/``DateTimeFormatter`` pattern or a named format, with the
    groups Y, Mo (or Mon), D, h, mi, s, f, ampm, tz, epoch that :func:`fields_to_wall_ms` reads.

    Example:
        >>> re.fullmatch(date_regex("yyyy-MM-dd'T'HH:mm:ss.SSSXXX"), "2024-05-22T00:32:03.023+02:00") is not None
        True
    """
    fmt = fmt.strip()
    if fmt in NAMED_DATES:
        fmt = NAMED_DATES[fmt]
        if "(?P<" in fmt:
            return fmt
    out, used = [], set()

    def grp(name, rx):
        if name in used:
            return f"(?:{rx})"
        used.add(name)
        return f"(?P<{name}>{rx})"

    for m in _DATE_TOKEN.finditer(fmt):
        tok = m.group(0)
        if tok.startswith("'"):
            out.append(re.escape(tok[1:-1].replace("''", "'")) if len(tok) > 2 else "'")
            continue
        c, n = tok[0], len(tok)
        if not c.isalpha():
            out.append(re.escape(tok))
        elif c in "yu":
            out.append(grp("Y", r"\d{2}" if n == 2 else r"\d{4}"))
        elif c in "ML":
            out.append(grp("Mo", r"\d{1,2}") if n <= 2 else grp("Mon", r"[A-Za-z]{3,9}"))
        elif c == "d":
            out.append(grp("D", r"\d{1,2}" if n == 1 else r"\d{2}"))
        elif c in "Hkhk":
            out.append(grp("h", r"\d{1,2}" if n == 1 else r"\d{2}"))
        elif c == "m":
            out.append(grp("mi", r"\d{2}"))
        elif c == "s":
            out.append(grp("s", r"\d{2}"))
        elif c in "Sn":
            out.append(grp("f", rf"\d{{{n}}}"))
        elif c == "a":
            out.append(grp("ampm", r"[AaPp][Mm]"))
        elif c in "XxZ":
            out.append(grp("tz", r"Z|[+-]\d{2}(?::?\d{2})?"))
        elif c in "zVO":
            out.append(grp("tz", r"[A-Za-z][A-Za-z0-9/_+-]{0,30}"))
        elif c == "E":
            out.append(r"[A-Za-z]{2,9}")
        else:
            out.append(r"\S+")
    return "".join(out)


def _ints(col, default: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A string column of digits -> (int64 values, present mask); '' and null are absent."""
    col = pc.fill_null(col, "")
    present = pc.greater(pc.utf8_length(col), 0)
    vals = pc.cast(pc.if_else(present, col, pa.scalar(str(default), col.type)), pa.int64())
    return vals.to_numpy(zero_copy_only=False), present.to_numpy(zero_copy_only=False)


def fields_to_wall_ms(m: pa.StructArray, p: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Wall-clock epoch ms from the date groups of an ``extract_regex`` result (prefix ``p``),
    and a mask of rows where a full date and time was present."""
    names = {m.type.field(i).name for i in range(m.type.num_fields)}
    n = len(m)
    if f"{p}epoch" in names:
        v, ok = _ints(m.field(f"{p}epoch"))
        return np.where(v < 10**11, v * 1000, v), ok
    if not {f"{p}D", f"{p}h"} <= names or not ({f"{p}Mo", f"{p}Mon"} & names) or f"{p}Y" not in names:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    y, ok = _ints(m.field(f"{p}Y"))
    y = np.where(_two_digit(m.field(f"{p}Y")), y + 2000, y)  # yy: this century; yyyy as written
    ok &= times.years_ok(y)  # a year the tables cannot hold is no time (see out_of_range_years)
    if f"{p}Mo" in names:
        mo, okm = _ints(m.field(f"{p}Mo"))
    else:
        d = pc.utf8_lower(pc.utf8_slice_codeunits(pc.fill_null(m.field(f"{p}Mon"), ""), 0, 3)).dictionary_encode()
        look = np.array([MONTHS.get(v, 0) for v in d.dictionary.to_pylist()] + [0], np.int64)
        idx = d.indices.to_numpy(zero_copy_only=False)
        mo = look[idx] if len(look) > 1 else np.zeros(n, np.int64)
        okm = mo > 0
    day, okd = _ints(m.field(f"{p}D"))
    hh, okh = _ints(m.field(f"{p}h"))
    mi, _ = _ints(m.field(f"{p}mi")) if f"{p}mi" in names else (np.zeros(n, np.int64), None)
    ss, _ = _ints(m.field(f"{p}s")) if f"{p}s" in names else (np.zeros(n, np.int64), None)
    if f"{p}f" in names:
        f3 = pc.utf8_slice_codeunits(pc.utf8_rpad(pc.fill_null(m.field(f"{p}f"), ""), 3, "0"), 0, 3)
        frac, _ = _ints(f3)
    else:
        frac = np.zeros(n, np.int64)
    if f"{p}ampm" in names:
        pm = pc.equal(pc.utf8_upper(pc.fill_null(m.field(f"{p}ampm"), "")), "PM").to_numpy(zero_copy_only=False)
        hh = np.where(pm & (hh < 12), hh + 12, np.where(~pm & (hh == 12), 0, hh))
    ok = ok & okm & okd & okh & (mo >= 1) & (mo <= 12) & (day >= 1) & (day <= 31) & (hh < 24) & (mi < 60) & (ss < 61)
    valid = m.is_valid().to_numpy(zero_copy_only=False)
    ok &= valid
    mo = np.where(ok, mo, 1)
    day = np.where(ok, day, 1)
    return _epoch_ms(y, mo, day, hh, mi, ss, frac), ok


def _two_digit(col) -> np.ndarray:
    return np.asarray(pc.equal(pc.utf8_length(pc.fill_null(col, "")), 2).to_numpy(zero_copy_only=False), bool)


def out_of_range_years(m: pa.StructArray, p: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(mask, years) of the rows whose date has a year the tables cannot hold (a four-digit
    year is taken as written: 0001 is not 2001)."""
    n = len(m)
    if f"{p}Y" not in {m.type.field(i).name for i in range(m.type.num_fields)}:
        return np.zeros(n, bool), np.zeros(n, np.int64)
    y, present = _ints(m.field(f"{p}Y"))
    y = np.where(_two_digit(m.field(f"{p}Y")), y + 2000, y)
    return present & ~times.years_ok(y), y


def zone_offsets_ms(col) -> np.ndarray:
    """UTC offsets in ms of zone strings ('Z', '+02:00', '+0200', '-05', 'UTC'); ``NO_STAMP``
    where there is none or it is a name other than UTC/GMT (then the file's zone applies)."""
    d = pc.fill_null(col, "").dictionary_encode()
    look = []
    for z in d.dictionary.to_pylist():
        mz = re.fullmatch(r"([+-])(\d{2}):?(\d{2})?", z)
        if z in ("Z", "UTC", "GMT", "Etc/UTC"):
            look.append(0)
        elif mz:
            sign = -1 if mz.group(1) == "-" else 1
            look.append(sign * (int(mz.group(2)) * 60 + int(mz.group(3) or 0)) * 60000)
        else:
            look.append(NO_STAMP)
    table = np.array([*look, NO_STAMP], np.int64)
    return table[d.indices.to_numpy(zero_copy_only=False)] if len(d) else np.zeros(0, np.int64)


def to_utc_ms(wall: np.ndarray, ok: np.ndarray, off: np.ndarray, tz: str, gaps: list[int] | None = None) -> np.ndarray:
    """UTC ms from wall-clock ms: minus the stamp's own offset where it has one, else read in
    the file's zone ``tz`` (see :func:`kitlib.formats.times.localize`; the number of local times
    that do not exist there is appended to ``gaps``)."""
    out = wall - np.where(off == NO_STAMP, 0, off)
    local = ok & (off == NO_STAMP)
    if local.any() and tz not in ("UTC", "Etc/UTC", "utc", "Z", None, ""):
        out[local], _, n_gap = times.localize(wall[local], tz)
        if gaps is not None:
            gaps.append(n_gap)
    return out


# ---------------------------------------------------------------------------------------------
# patterns
# ---------------------------------------------------------------------------------------------
_LEVEL_WORDS = "TRACE|DEBUG|INFO|WARNING|WARN|ERROR|FATAL|SEVERE|FINEST|FINER|FINE|CONFIG|CRITICAL|NOTICE"
LEVEL_RX = "(?:" + _LEVEL_WORDS + "|" + _LEVEL_WORDS.lower() + ")"
LOOSE_LEVEL_RX = "[A-Za-z]{4,8}"
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
LOGGER_RX = r"[A-Za-z_$][\w$.\-]*(?::\d+)?"  # a ':line' suffix is dropped later
_KINDS = {
    "d": "date",
    "date": "date",
    "p": "level",
    "le": "level",
    "level": "level",
    "c": "logger",
    "lo": "logger",
    "logger": "logger",
    "C": "class",
    "class": "class",
    "t": "thread",
    "thread": "thread",
    "tn": "thread",
    "threadName": "thread",
    "m": "msg",
    "msg": "msg",
    "message": "msg",
    "n": "end",
    "X": "mdc",
    "mdc": "mdc",
    "MDC": "mdc",
    "K": "mdc",
    "map": "mdc",
    "MAP": "mdc",
    "ex": "end",
    "exception": "end",
    "throwable": "end",
    "xEx": "end",
    "xException": "end",
    "xThrowable": "end",
    "rEx": "end",
    "rException": "end",
    "rThrowable": "end",
    "wEx": "end",
    "L": r"\d*",
    "line": r"\d*",
    "M": r"\S*",
    "method": r"\S*",
    "F": r"\S*",
    "file": r"\S*",
    "l": r"\S*",
    "location": r"\S*",
    "r": r"\d+",
    "relative": r"\d+",
    "pid": r"\d+",
    "processId": r"\d+",
    "sn": r"\d+",
    "sequenceNumber": r"\d+",
    "T": r"\d+",
    "tid": r"\d+",
    "threadId": r"\d+",
    "tp": r"\d+",
    "threadPriority": r"\d+",
    "u": r"[\w-]+",
    "uuid": r"[\w-]+",
    "hostName": r"\S*",
    "i": r"\d+",
}
_WRAPPERS = {
    "highlight",
    "style",
    "clr",
    "black",
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "white",
    "gray",
    "boldRed",
    "boldGreen",
    "boldYellow",
    "boldBlue",
    "boldMagenta",
    "boldCyan",
    "boldWhite",
    "notEmpty",
    "varsNotEmpty",
    "variablesNotEmpty",
    "equals",
    "maxLen",
    "maxLength",
    "encode",
    "enc",
}
_CONV = re.compile(r"%(?P<mod>-?\d*(?:\.-?\d+)?)(?P<name>[A-Za-z]+)")


class PatternError(ValueError):
    """A layout pattern this module cannot turn into a parser (it says why)."""


@dataclass
class Layout:
    """A compiled layout: ``head`` matches a record's first line up to the message (group ``pre``
    is all of it, so the message starts after it); ``tail`` (or '') finds what the layout writes
    after the message at the end of a line (group ``suf``, with the trailing blanks), and
    ``last_tail`` the same alone on a record's last line (messages with newlines of their own).
    Neither captures the message itself: it is cut from the block by offsets."""

    pattern: str
    head: str
    tail: str = ""
    last_tail: str = ""
    fields: tuple[str, ...] = ()
    tz: str = ""  # zone named in the pattern (%d{...}{Europe/Paris}), else the file's
    head_pre: str = field(default="", repr=False)
    head_parts: list[str] = field(default_factory=list, repr=False)

    def __post_init__(self):
        # Arrow runs a looser level (any word; checked against the level names afterwards):
        # an alternation of level names costs RE2 several times more per line
        self.head_pre, self.head_parts = split_captures(self.head.replace(LEVEL_RX, LOOSE_LEVEL_RX))
        # every expression runs on RE2 (time linear in the line whatever the pattern): one it
        # cannot compile (too big, a repetition over its limit) makes the layout unusable
        try:
            for rx in (self.head, self.tail, self.last_tail, self.head_pre, *self.head_parts):
                if rx:
                    pc.match_substring_regex(pa.array([""], pa.binary()), rx)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise PatternError(f"the pattern cannot be made into a bounded expression ({e})") from None


MAX_PATTERN = 2000  # characters of a layout pattern; a longer one is refused


def head_matches(layout: Layout, lines: pa.Array) -> pa.StructArray:
    """``layout.head`` on each line (RE2): its groups, null where a line does not start a record."""
    return pc.extract_regex(lines, layout.head)


def _binary_lines(lines: list[bytes]) -> pa.Array:
    return pa.array(lines, pa.binary())


def split_captures(head: str, per_regex: int = 4) -> tuple[str, list[str]]:
    """``head`` as one regex capturing only ``pre`` and several capturing at most ``per_regex``
    groups each (RE2 runs its fast one-pass matcher only for few captures: one regex with a
    dozen groups on every line costs several times more than these few on short strings)."""
    names = [n for n in re.findall(r"\(\?P<(\w+)>", head) if n != "pre"]

    def keep(only):
        return re.sub(r"\(\?P<(\w+)>", lambda m: m.group(0) if m.group(1) in only else "(?:", head)

    parts = [keep(set(names[i : i + per_regex])) for i in range(0, len(names), per_regex)]
    return keep({"pre"}), parts


def _braces(s: str, i: int, open_: str = "{", close: str = "}") -> tuple[str, int]:
    """The text inside the bracket pair starting at ``s[i]`` and the index after it."""
    depth, j = 0, i
    while j < len(s):
        if s[j] == open_:
            depth += 1
        elif s[j] == close:
            depth -= 1
            if depth == 0:
                return s[i + 1 : j], j + 1
        j += 1
    raise PatternError(f"unbalanced {open_!r} in pattern at offset {i}")


def _tokens(pattern: str) -> list[tuple[str, str, str, str]]:
    """(kind, modifier, option, literal) tokens; wrappers such as %highlight{...} are inlined."""
    out, i, lit = [], 0, []
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            lit.append({"t": "\t", "n": ""}.get(nxt, nxt))
            i += 2
            continue
        if ch != "%":
            lit.append(ch)
            i += 1
            continue
        if pattern[i : i + 2] == "%%":
            lit.append("%")
            i += 2
            continue
        m = _CONV.match(pattern, i)
        if not m:
            lit.append(ch)
            i += 1
            continue
        if lit:
            out.append(("lit", "", "", "".join(lit)))
            lit = []
        name, mod = m.group("name"), m.group("mod")
        i = m.end()
        if name in _WRAPPERS or (name not in _KINDS and i < len(pattern) and pattern[i] == "("):
            if i < len(pattern) and pattern[i] in "({":
                inner, i = _braces(pattern, i, pattern[i], ")" if pattern[i] == "(" else "}")
                while i < len(pattern) and pattern[i] == "{":
                    _, i = _braces(pattern, i)
                out.extend(_tokens(inner))
            continue
        opts = []
        while i < len(pattern) and pattern[i] == "{":
            opt, i = _braces(pattern, i)
            opts.append(opt)
        out.append((_KINDS.get(name, r".*?"), mod, "\x00".join(opts), ""))
    if lit:
        out.append(("lit", "", "", "".join(lit)))
    return out


def _substitute(pattern: str, props: dict[str, str] | None = None) -> str:
    """Resolve ``${name}``, ``${sys:name}``, ``${env:NAME:-default}`` with ``props`` or the default."""
    props = props or {}

    def one(m):
        body = m.group(1)
        name, _, default = body.partition(":-")
        key = name.split(":", 1)[1] if ":" in name else name
        return props.get(name, props.get(key, default))

    for _ in range(5):
        new = re.sub(r"\$\{([^${}]*)\}", one, pattern)
        if new == pattern:
            break
        pattern = new
    return pattern


def compile_pattern(pattern: str, props: dict[str, str] | None = None) -> Layout:
    """Compile a log4j 1.x/2.x or logback pattern into a :class:`Layout`.

    Raises :class:`PatternError` when the pattern has no message (``%m``) or nothing before it
    to recognise a record's first line by.

    Example:
        >>> compile_pattern("%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n").fields
        ('date', 'thread', 'level', 'logger')
    """
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"the pattern is {len(pattern):,} characters long (at most {MAX_PATTERN:,} are read)")
    pattern = _substitute(pattern, props)
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"the pattern is {len(pattern):,} characters long once its properties are resolved")
    try:
        toks = _tokens(pattern)
    except RecursionError:
        raise PatternError("the pattern nests its conversions too deep") from None
    parts: list[list[str]] = [[], []]
    side, kinds, tz = 0, [], ""
    used: set[str] = set()
    for t, (kind, mod, opt, lit) in enumerate(toks):
        if kind == "end":
            break
        pad_l = r" *" if mod and not mod.startswith("-") and mod[0].isdigit() else ""
        pad_r = r" *" if mod.startswith("-") else ""
        if kind == "lit":
            rx = re.escape(lit).replace(r"\ ", " ")
            rx = re.sub(" +", " +", rx)
        elif kind == "msg":
            if side == 1:
                raise PatternError("the pattern has two message conversions")
            side = 1
            kinds.append("msg")
            continue
        elif kind == "mdc":
            nxt = toks[t + 1][0] if t + 1 < len(toks) else ""
            if nxt == "msg":
                continue  # Connect's %X{connector.context}%m: the context stays in the message
            rx = r".*?"
        elif kind == "date":
            opts = opt.split("\x00") if opt else []
            first = opts[0] if opts else "DEFAULT"
            zone = first.rsplit(",", 1)[-1].strip() if "," in first else ""
            if (
                zone
                and len(set(zone)) > 1
                and re.fullmatch(r"[A-Za-z]+/[\w/+-]+|UTC|GMT|Z|(?:GMT|UTC)[+-][\d:]+", zone)
            ):
                first, tz = first.rsplit(",", 1)[0], zone  # logback %d{pattern, zone}
            if len(opts) > 1 and opts[1]:
                tz = opts[1]
            rx = date_regex(first) if "date" not in used else re.sub(r"\?P<\w+>", "", date_regex(first))
            used.add("date")
            kinds.append("date")
        elif kind in ("level", "logger", "class", "thread"):
            name = "logger" if kind == "class" else kind
            nxt_lit = toks[t + 1][3] if t + 1 < len(toks) and toks[t + 1][0] == "lit" else ""
            bound = nxt_lit[:1] if nxt_lit[:1] in ("]", ")", "|", ">", "}") else ""
            thread_rx = f"[^{re.escape(bound)}\\n]*" if bound else r".*?"
            inner = {"level": LEVEL_RX, "logger": LOGGER_RX, "thread": thread_rx}[name]
            if name in used:
                rx = f"(?:{inner})"
            else:
                rx = f"(?P<{name}>{inner})"
                used.add(name)
                kinds.append(name)
        else:
            rx = f"(?:{kind})"
        nxt_lit = toks[t + 1][3] if t + 1 < len(toks) and toks[t + 1][0] == "lit" else ""
        if nxt_lit.startswith(" "):
            pad_r = ""  # the literal's ' +' takes the padding
        if parts[side] and parts[side][-1].endswith(" +"):
            pad_l = ""
        parts[side].append(pad_l + rx + pad_r)
    if side == 0:
        raise PatternError("the pattern has no message (%m)")
    head = "".join(parts[0])
    if not re.search(r"\(\?P<(?:Y|h|epoch|level)>", head):
        raise PatternError("nothing before the message identifies a record's first line (no date or level)")
    tail = "".join(parts[1]).rstrip()
    full_head = "^(?P<pre>" + head + ")"
    # searched for, not anchored at the line start: RE2's DFA finds the span, captures run on it
    # only; the leftmost span reaching the line end is the last one as the groups exclude
    # spaces and brackets (a bracketed thread is [^]]*)
    suffix = "(?P<suf>" + tail + r"[ \t\r\n]*)$"
    full_tail = suffix if tail.strip() else ""
    last_tail = (r"^[ \t]*" + suffix) if tail.strip() else ""
    return Layout(pattern, full_head, full_tail, last_tail, tuple(k for k in kinds if k != "msg"), tz)


# Strimzi's layout (its Kafka, Connect and MirrorMaker pods), as given or as inferred: the
# compiled scan reads it (style 1 of ``_log4j_scan.scan``) and leaves to parse_block any block it
# cannot read exactly as parse_block would
_STRIMZI = {"%d{ISO8601} %p %m (%c) [%t]%n", "%d{ANY_ISO} %p %m (%c) [%t]%n"}


def scan_style(layout: Layout) -> int | None:
    """The compiled scan's style for ``layout`` (1: Strimzi's), or None when the scan cannot read it.

    Example:
        >>> scan_style(compile_pattern("%d{ISO8601} %p %X{connector.context}%m (%c) [%t]%n")), scan_style(
        ...     compile_pattern("%d{ISO8601} %-5p [%t] %c - %m%n"))
        (1, None)
    """
    p = re.sub(r"\s+", " ", layout.pattern).strip().replace("%X{connector.context}%m", "%m")
    return 1 if p in _STRIMZI or p + "%n" in _STRIMZI else None


def is_kafka_default(pattern: str) -> bool:
    """Does this pattern write what the numpy fast path reads (``[%d] %p %m (%c)%n``)?"""
    p = re.sub(r"\s+", " ", _substitute(pattern)).strip()
    return p in (
        "[%d] %p %m (%c)%n",
        "[%d] %p %m (%c)",
        "[%d{ISO8601}] %p %m (%c)%n",
        "[%d] %p %X{connector.context}%m (%c:%L)%n",
    )


# ---------------------------------------------------------------------------------------------
# inference and layout definitions found in the bundle
# ---------------------------------------------------------------------------------------------
_INFER_DATES = ["[%d{ANY_ISO}] ", "%d{ANY_ISO} ", "%d{ANY_TIME} ", "[%d{ANY_TIME}] ", ""]
_INFER_BODIES = [
    "%p %m (%c) [%t]%n",  # Strimzi's broker layout
    "%p %m (%c)%n",  # Kafka's, behind another date or none (log service exports)
    "%-5p [%t] %c - %m%n",
    "[%t] %-5p %c - %m%n",  # logback's default
    "%-5p %c:%L - %m%n",  # Strimzi operator / many apps: %c{1}:%L
    "%-5p %c - %m%n",
    "%-5p: %c - %m%n",
    "%-5p [%c] (%t) %m%n",  # JBoss / WildFly
    "%-5p [%c] %m%n",
    "[%p] %m (%c)%n",
    "%p [%t] %c: %m%n",
    "%5p %pid --- [%t] %-40.40c : %m%n",  # Spring Boot's console default
    "%-5p %m%n",
]
INFER_PATTERNS = [d + b for d in _INFER_DATES for b in _INFER_BODIES]
_INFER_CACHE: list[Layout] = []
_DEF_CACHE: dict[str, list[Layout]] = {}
_REFUSED: dict[str, list[str]] = {}  # bundle root -> why each refused definition pattern was refused
DEFINITION_NAMES = re.compile(r"(?i)^(?:.*log4j2?.*\.(?:properties|xml|ya?ml|json)|.*logback.*\.xml)$")


def _head_lines(head: bytes, n: int = 200) -> list[bytes]:
    lines = [ln.rstrip(b"\r") for ln in head.split(b"\n")[:n]]
    if len(head.split(b"\n", n)) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1] if len(lines) > 1 else lines
    return lines


def score(layout: Layout, lines: list[bytes]) -> tuple[int, int]:
    """(record first lines matched, fields found on them) for these (unwrapped) lines; RE2 on
    all the lines at once."""
    if not lines:
        return 0, 0
    arr = _binary_lines(lines)
    m = head_matches(layout, arr)
    ok = m.is_valid().to_numpy(zero_copy_only=False)
    heads = int(ok.sum())
    if not heads:
        return 0, 0
    found = np.zeros(len(lines), np.int64)
    for i in range(m.type.num_fields):
        if m.type.field(i).name == "pre":
            continue
        length = pc.fill_null(pc.binary_length(m.field(i)), 0).to_numpy(zero_copy_only=False)
        found += length > 0
    if layout.tail:
        t = pc.extract_regex(arr, layout.tail)
        suf = pc.binary_length(t.field("suf")).to_numpy(zero_copy_only=False)
        pre = pc.fill_null(pc.binary_length(m.field("pre")), 0).to_numpy(zero_copy_only=False)
        line_len = pc.binary_length(arr).to_numpy(zero_copy_only=False)
        t_ok = t.is_valid().to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            tail_after = t_ok & (line_len - np.nan_to_num(suf, nan=0).astype(np.int64) >= pre)
        found += np.where(tail_after, len([f for f in layout.fields if f in ("logger", "thread")]) + 1, 0)
    return heads, int(found[ok].sum())


def best_layout(candidates: list[Layout], head: bytes, min_share: float = 0.1) -> tuple[Layout | None, bool]:
    """The candidate that finds the most fields (on record first lines) in ``head``, and
    whether it reads the lines with their container prefixes stripped. None when none finds
    any, or fewer than ``min_share`` of the non-blank lines start a record."""
    raw = [ln for ln in _head_lines(head) if ln.strip()]
    if not raw:
        return None, False
    variants = [(False, raw)]
    strong = False
    if container.has_prefix(raw):
        stripped = [container.PREFIX.sub(b"", ln, count=1) for ln in raw]
        variants.append((True, stripped))
        strong = _surely_wrapped(raw, stripped)
    best: tuple[Layout | None, bool] = (None, False)
    best_key = (0, 0, 0, 0, 0)
    for i, lay in enumerate(candidates):
        for wrapped, lines in variants:
            h, f = score(lay, lines)
            key = (int(wrapped and strong), f + h, h, -i, -int(wrapped))
            if h and key > best_key:
                best, best_key = (lay, wrapped), key
    # stack-trace-heavy logs have few record first lines: 3 are enough whatever the share
    if best[0] is None or best_key[2] < min(3, max(1, min_share * len(raw))):
        return None, False
    return best


_CONTINUATION = re.compile(rb"^(?:\s|at |Caused by:|\.\.\. \d+ more|[\w$.]+(?:Exception|Error)\b)")
_UNAMBIGUOUS = re.compile(rb"^(?:[\w.-]+ +\| ?|\S+ (?:stdout|stderr) [FP] |\d{4}-\d\d-\d\dT[\d:]+\.\d{6,9})")


def _surely_wrapped(raw: list[bytes], stripped: list[bytes]) -> bool:
    """Is a leading RFC 3339 stamp a container's and not the layout's own date? Yes when a
    compose or CRI prefix or a micro/nanosecond stamp is there, or when continuation lines
    (stack frames, exceptions) carry the stamp too."""
    if any(_UNAMBIGUOUS.match(ln) for ln in raw):
        return True
    return any(r != s and _CONTINUATION.match(s) for r, s in zip(raw, stripped))


def wrapped(layout: Layout, head: bytes) -> bool:
    """Does ``layout`` read this file's lines better with container prefixes stripped?"""
    return best_layout([layout], head, 0.0)[1]


def inferred_layouts() -> list[Layout]:
    if not _INFER_CACHE:
        _INFER_CACHE.extend(compile_pattern(p) for p in INFER_PATTERNS)
    return _INFER_CACHE


_XML_LAYOUT = re.compile(r"(?is)PatternLayout\b[^>]*?\bpattern\s*=\s*\"([^\"]*)\"")
_XML_PATTERN = re.compile(r"(?is)pattern>([^<]*)")
_XML_PROPERTY = re.compile(r"(?is)property\s+name=\"([^\"]+)\"(?:\s+value=\"([^\"]*)\"|\s*>([^<]*))")


def patterns_in_definition(text: str, name: str) -> list[str]:
    """Layout patterns declared in a log4j/log4j2/logback configuration file's text, with
    ``${...}`` properties of the same file resolved.

    Example:
        >>> patterns_in_definition("log4j.appender.A.layout.ConversionPattern=%d %p %c - %m%n", "log4j.properties")
        ['%d %p %c - %m%n']
    """
    props: dict[str, str] = {}
    found: list[str] = []
    low = name.lower()
    if low.endswith(".properties"):
        kv = {}
        for ln in text.splitlines():
            ln = ln.strip()
            m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", ln)
            if m and ln[0] not in "#!":
                kv[m.group(1)] = m.group(2).strip()
        for k, v in kv.items():
            if k.startswith("property."):
                props[k[len("property.") :]] = v
        found = [v for k, v in kv.items() if re.search(r"(?i)\.(?:ConversionPattern|layout\.pattern)$", k)]
    elif low.endswith((".yaml", ".yml", ".json")):
        try:
            import yaml

            doc = yaml.safe_load(text)
        except Exception:  # noqa: BLE001 - a broken definition is just not used
            return []

        def walk(o):
            if isinstance(o, dict):
                for k, v in o.items():
                    if str(k).lower() == "pattern" and isinstance(v, str):
                        found.append(v)
                    if str(k).lower() == "property":
                        for p in v if isinstance(v, list) else [v]:
                            if isinstance(p, dict) and "name" in p:
                                props[str(p["name"])] = str(p.get("value", ""))
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)

        walk(doc)
    else:  # XML: log4j2 <PatternLayout pattern=".."/> or <Pattern>..</Pattern>, logback <pattern>
        import html

        # one pass over the tags (the text split at '<'; each piece is a tag and the text after
        # it), each matched from its start: time linear in the file whatever it holds
        for piece in text.split("<"):
            if m := _XML_LAYOUT.match(piece):
                found.append(html.unescape(m.group(1)))
            elif m := _XML_PATTERN.match(piece):
                found.append(html.unescape(m.group(1)).strip())
            elif m := _XML_PROPERTY.match(piece):
                value = m.group(2) if m.group(2) is not None else m.group(3) or ""
                props[m.group(1)] = html.unescape(value)
    return [_substitute(p, props) for p in found if p.strip()]


def bundle_root(src: SourceFile) -> Path | None:
    if src.path is None or not src.rel:
        return None
    depth = len(src.rel.split("/"))
    p = Path(src.path)
    return p.parents[depth - 1] if depth - 1 < len(p.parents) else None


def defined_layouts(root: Path | None) -> list[Layout]:
    """Layouts compiled from every layout definition under the bundle ``root`` (cached), minus
    Kafka's default (the fast path has it) and patterns this module cannot use."""
    if root is None:
        return []
    key = str(root)
    if key not in _DEF_CACHE:
        out, seen = [], set()
        refused = _REFUSED.setdefault(key, [])
        files = (
            [  # the bundle's own walk: any depth (rglob recursed, and a deep bundle lost its layouts)
                f for f in regular_files(root) if DEFINITION_NAMES.match(f.name) and f.stat().st_size < 1_000_000
            ]
            if root.is_dir()
            else []
        )
        for f in sorted(files):
            try:
                pats = patterns_in_definition(f.read_text(encoding="utf-8", errors="replace"), f.name)
            except OSError:
                continue
            for p in pats:
                if p in seen or is_kafka_default(p):
                    continue
                seen.add(p)
                try:
                    out.append(compile_pattern(p))
                except PatternError as e:
                    rel = f.relative_to(root).as_posix()
                    refused.append(f"a layout pattern of {rel} was refused ({e})")
        _DEF_CACHE[key] = out
    return _DEF_CACHE[key]


def manifest_layout(src: SourceFile) -> str | None:
    """The layout ``bundle.yaml`` forces on this file (a pattern or ``json``), if any."""
    return src.meta.get("layout")


def choose_layout(head: bytes, src: SourceFile) -> Layout | None:
    """The layout of a file: forced by the manifest, else the best definition found in the
    bundle, else inferred from ``head``. None when nothing fits (or the file is JSON)."""
    if "layout_chosen" in src.meta:
        return src.meta["layout_chosen"]
    forced = manifest_layout(src)
    lay = None
    if forced and forced.strip().lower() != "json":
        lay = compile_pattern(forced)
    elif not forced:
        first_line = container.PREFIX.sub(b"", head.lstrip().split(b"\n", 1)[0], count=1)
        if not first_line.startswith(b"{"):
            root = bundle_root(src)
            lay = best_layout(defined_layouts(root), head, 0.2)[0]
            how = "another pattern of the bundle's definitions was used"
            if lay is None:
                lay = best_layout(inferred_layouts(), head)[0]
                how = "the layout was inferred from the lines"
            refused = _REFUSED.get(str(root), [])
            if lay is not None and refused:
                src.meta["layout_note"] = "; ".join(refused[:3]) + ": " + how
    src.meta["layout_chosen"] = lay
    return lay


# ---------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------
def _junk(a: np.ndarray, block: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Lines with NUL bytes or invalid UTF-8, and why."""
    nlines = len(starts)
    is_j = np.zeros(nlines, bool)
    reason: dict[int, str] = {}
    zeros = np.flatnonzero(a == 0)
    if len(zeros):
        for i in np.unique(np.searchsorted(starts, zeros, side="right") - 1).tolist():
            is_j[i] = True
            reason[i] = "binary data (NUL bytes)"
    if not _utf8_ok(a, memoryview(block)):
        for i in log4j.bad_utf8_lines(block, starts, ends).tolist():
            if not is_j[i]:
                is_j[i] = True
                reason[i] = "invalid UTF-8"
    return is_j, reason


def _level_codes(col) -> np.ndarray:
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


def extract(lines: pa.Array, pattern: str) -> pa.StructArray:
    """``pc.extract_regex`` run on the bytes (RE2's Latin-1 mode: ``.`` and classes are single
    bytes, about twice as fast as UTF-8 mode) with string fields back; lines are valid UTF-8
    here (bad lines are null), so a group never splits a character the pattern spells out."""
    m = pc.extract_regex(lines.view(pa.large_binary()) if pa.types.is_large_string(lines.type) else lines, pattern)
    return m.cast(pa.struct([(f.name, pa.large_string()) for f in m.type]))


def _names(s: pa.StructArray) -> set[str]:
    return {s.type.field(i).name for i in range(s.type.num_fields)}


def parse_block(
    block: bytes, lines_before: int, src: SourceFile, layout: Layout, first: bool = True, wrapped: bool = False
):
    """Parse whole lines with ``layout``: (events Arrow table, unparsed frame, lines in records,
    lines). Same contract as :func:`kitlib.formats.log4j.parse_block`. A block of a layout the
    compiled scan reads (:func:`scan_style`) goes through it when the scan takes the block; the
    code below stays the reference the tests hold the scan to."""
    style = scan_style(layout) if not wrapped and log4j.NATIVE and log4j._log4j_scan is not None else None
    if style is not None:
        scanned = log4j._log4j_scan.scan(block, style)
        if scanned is not None:
            return log4j._from_scan(scanned, lines_before, src, layout.tz or src.tz)
    cts = None
    if wrapped:
        block, cts = unwrap_block(block)
    a = np.frombuffer(block, np.uint8)
    starts, ends = line_bounds(a, block)
    nlines = len(starts)
    if nlines == 0:
        return empty_events(), unparsed_frame(src, [], [], ""), 0, 0
    eff = ends - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))
    is_j, junk_reason = _junk(a, block, starts, ends)
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
        known = _level_codes(cols["level"]) >= 0
        if not known.all():
            is_h[h0[~known]] = False
            hm = hm.filter(pa.array(known))
    far, years = out_of_range_years(hm)
    if far.any():  # a header whose year the tables cannot hold costs its record (as in log4j.py)
        bad = np.flatnonzero(is_h)[far]
        is_h[bad], is_j[bad] = False, True
        for i, y in zip(bad.tolist(), years[far].tolist()):
            junk_reason[i] = times.year_reason(y)
        hm = hm.filter(pa.array(~far))

    # --- group lines into records (as log4j.py does) -----------------------------------
    anchors = np.flatnonzero(is_h | is_j)
    next_anchor = np.append(anchors[1:], nlines) if len(anchors) else anchors
    a_is_h = is_h[anchors]
    H = anchors[a_is_h]
    last = next_anchor[a_is_h] - 1
    lead = anchors[0] if len(anchors) else nlines
    un_idx = [np.arange(lead)] + [np.arange(j0, j1) for j0, j1 in zip(anchors[~a_is_h], next_anchor[~a_is_h])]
    un = log4j.unparsed_rows(
        src, a, block, starts, eff, np.concatenate(un_idx), is_j, junk_reason, lead, first, lines_before
    )
    nrec = len(H)
    if nrec == 0:
        return empty_events(), un, 0, nlines
    span = (last - H + 1).astype(np.int32)

    names = _names(hm)  # rows of hm are the record first lines H, in order
    pre_len = pc.binary_length(hm.field("pre")).to_numpy(zero_copy_only=False).astype(np.int64)
    rest_s = starts[H] + pre_len
    hend = _trim_end(a, starts[H], eff[H])
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
        r1e = np.where(tail_ok, _trim_end(a, r1s, np.maximum(suf_s, r1s)), r1e)
        tnames = _names(tm)
        multi = (cont_last > H) & ~tail_ok
        lm_ok = np.zeros(nrec, bool)
        if multi.any():
            lm = extract(lines.take(pa.array(cont_last)), layout.last_tail)
            lm_ok = multi & lm.is_valid().to_numpy(zero_copy_only=False)
            if lm_ok.any():
                prev = np.maximum(cont_last - 1, H)
                r2e = np.where(lm_ok, np.where(prev > H, _trim_end(a, starts[prev], eff[prev]), 0), r2e)
                r2s = np.where(lm_ok & (prev == H), 0, r2s)
        for k in ("level", "logger"):
            if k in tnames and k not in got:
                val = pc.if_else(pa.array(tail_ok), tm.field(k), pa.scalar("", pa.large_string()))
                if lm_ok.any():
                    val = pc.if_else(pa.array(lm_ok), lm.field(k), val)
                got[k] = val

    # --- fields -----------------------------------------------------------------------------
    if "logger" in got:
        logger, _ = _clean_loggers(pc.cast(pc.fill_null(got["logger"], ""), pa.large_string()))
    else:
        logger = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([""]))
    lvl = _level_codes(got["level"]) if "level" in got else np.full(nrec, -1, np.int8)
    level = pa.DictionaryArray.from_arrays(pa.array(lvl, mask=lvl < 0), pa.array(LEVELS))
    wall, ok = fields_to_wall_ms(hm)
    off = zone_offsets_ms(hm.field("tz")) if "tz" in names else np.full(nrec, NO_STAMP, np.int64)
    gaps: list[int] = []
    ts = to_utc_ms(wall, ok, off, layout.tz or src.tz, gaps)
    if cts is not None:
        c = cts[H]
        use = ~ok & (c != NO_STAMP)
        ts, ok = np.where(use, c, ts), ok | use
    message = _redact(_gather(a, memoryview(block), [(r1s, r1e), (r2s, r2e)], nrec))
    host = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.host]))
    file = pa.DictionaryArray.from_arrays(pa.array(np.zeros(nrec, np.int32)), pa.array([src.rel]))
    t = pa.Table.from_arrays(
        [
            pa.array(ts, pa.timestamp("ms", tz="UTC"), mask=~ok),
            level,
            logger,
            message,
            host,
            file,
            pa.array((lines_before + H + 1).astype(np.int64)),
            pa.array(span),
        ],
        schema=EVENTS_SCHEMA,
    )
    if sum(gaps):
        t = t.replace_schema_metadata({log4j.GAPS_KEY: str(sum(gaps))})
    return t, un, int(span.sum()), nlines


def _last_header_start(buf: bytes, layout: Layout, wrapped: bool, limit: int = 200_000) -> int:
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
        if wrapped:
            lines = pc.replace_substring_regex(lines, container.PREFIX_RE2, "", max_replacements=1)
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
    lines = _head_lines(head, 50)
    m = head_matches(layout, _binary_lines(lines)) if lines else None
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
    is_wrapped = wrapped(layout, head)
    if src.meta.get("layout_note"):
        ctx.notes.append(src.meta["layout_note"])
    if _local_dates(layout, head):
        log4j.fold_tracker(src, layout.tz or src.tz)
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
            yield from _emit(fut.result() if fut is not None else res, 0, src, ctx)  # lines already counted

    carry, lines_before, first = b"", 0, True

    def feed(block, first):
        nonlocal lines_before
        for piece, piece_first in log4j.line_pieces(block, first):
            piece = bytes(piece)
            submit(piece, lines_before, piece_first)
            lines_before += count_lines(piece) + (0 if piece.endswith(b"\n") else 1)
            yield from drain(threads)

    try:
        try:
            for chunk in read_chunks(src, block_size) if block_size else read_chunks(src):
                buf = carry + chunk if carry else chunk
                cut = _last_header_start(buf, layout, is_wrapped)
                forced = False
                if cut <= 0:
                    if log4j.carry_more(buf):
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
        log4j.note_times(src, ctx)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def parse_bytes(
    data: bytes,
    layout: Layout | str | None = None,
    host: str = "test",
    rel: str = "test.log",
    tz: str = "UTC",
    threads: int = THREADS,
    block_size: int | None = None,
):
    """Parse text held in memory with ``layout`` (a :class:`Layout`, a pattern, or None to
    infer it); returns (events frame, unparsed frame). For tests and quick looks."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        src = SourceFile(p, rel, host, tz)
        lay = compile_pattern(layout) if isinstance(layout, str) else layout
        ctx = Context(src)
        evs: list[pa.Table] = []
        uns: list[pd.DataFrame] = []
        for name, chunk in parse(src, ctx, block_size=block_size, threads=threads, layout=lay):
            (evs if name == "events" else uns).append(chunk)
    ev = to_pandas(pa.concat_tables(evs)) if evs else to_pandas(empty_events())
    un = pd.concat(uns, ignore_index=True) if uns else unparsed_frame(src, [], [], "")
    return ev, un


# ---------------------------------------------------------------------------------------------
# registration
# ---------------------------------------------------------------------------------------------
def detect_forced(head: bytes, src: SourceFile) -> bool:
    """``bundle.yaml`` names a layout for this file that the fast path does not read."""
    forced = manifest_layout(src)
    return forced is not None and forced.strip().lower() != "json" and not is_kafka_default(forced)


def detect(head: bytes, src: SourceFile) -> bool:
    """A log whose layout a bundle definition or inference recognises."""
    return choose_layout(head, src) is not None


def layout_for(src: SourceFile, patterns: dict[str, str]) -> str | None:
    """The pattern of the first glob in ``patterns`` matching the file's relative path."""
    for glob, pat in patterns.items():
        if fnmatch.fnmatch(src.rel, glob):
            return str(pat)
    return None


register(
    "log-layout-manifest",
    detect=detect_forced,
    parse=parse,
    tables=("events", "unparsed"),
    priority=5,
    doc="logs whose layout bundle.yaml names (layouts: {glob: pattern})",
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
