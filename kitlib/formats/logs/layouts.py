"""Log4j pattern layouts: a log4j 1.x / reload4j ``ConversionPattern``, a log4j2 ``PatternLayout``
pattern or a logback ``<pattern>`` compiled into a :class:`Layout`, the regexes that find a
record's first line and its fields, without hand-written regexes.

:func:`compile_pattern` turns a pattern into two RE2 regexes: the header up to the message, and
what follows the message. Which layout a file is written in is :mod:`kitlib.formats.logs.inference`'s
question; reading a file with it is :mod:`kitlib.formats.logs.patterned`'s. Kafka's default
``[%d] %p %m (%c)%n`` has its own fast path (:mod:`kitlib.formats.logs.log4j`).

Example:
    >>> lay = compile_pattern("%d{ISO8601} %-5p [%t] %c - %m%n")
    >>> lay.fields
    ('date', 'level', 'thread', 'logger')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from kitlib.formats.logs.dates import date_regex

KAFKA_DEFAULT = "[%d] %p %m (%c)%n"


_LEVEL_WORDS = "TRACE|DEBUG|INFO|WARNING|WARN|ERROR|FATAL|SEVERE|FINEST|FINER|FINE|CONFIG|CRITICAL|NOTICE"


LEVEL_RX = "(?:" + _LEVEL_WORDS + "|" + _LEVEL_WORDS.lower() + ")"


LOOSE_LEVEL_RX = "[A-Za-z]{4,8}"


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


def binary_lines(lines: list[bytes]) -> pa.Array:
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


def substitute(pattern: str, props: dict[str, str] | None = None) -> str:
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


def compile_pattern(pattern: str, props: dict[str, str] | None = None, optional_date: bool = False) -> Layout:
    """Compile a log4j 1.x/2.x or logback pattern into a :class:`Layout`.

    Raises :class:`PatternError` when the pattern has no message (``%m``) or nothing before it
    to recognise a record's first line by. ``optional_date``: a line without the leading date
    (and the literal around it) still starts a record when the level is there (pasted
    excerpts often lose the date column).

    Example:
        >>> compile_pattern("%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n").fields
        ('date', 'thread', 'level', 'logger')
    """
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"the pattern is {len(pattern):,} characters long (at most {MAX_PATTERN:,} are read)")
    pattern = substitute(pattern, props)
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"the pattern is {len(pattern):,} characters long once its properties are resolved")
    try:
        toks = _tokens(pattern)
    except RecursionError:
        raise PatternError("the pattern nests its conversions too deep") from None
    parts: list[list[str]] = [[], []]
    side, kinds, tz = 0, [], ""
    used: set[str] = set()
    date_end = -1  # parts[0] up to here is the leading date and its literals
    for t, (kind, mod, opt, lit) in enumerate(toks):
        if date_end == -2 and kind != "lit":
            date_end = len(parts[0])
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
            if not kinds and date_end == -1:
                date_end = -2  # the date leads: its end is fixed at the next conversion
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
    if optional_date and date_end > 0 and "level" in kinds:
        head = "(?:" + "".join(parts[0][:date_end]) + ")?" + "".join(parts[0][date_end:])
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
# compiled scan reads it (style 1 of ``_scan.scan``) and leaves to ``patterned.parse_block`` any
# block it cannot read exactly as that would
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
    p = re.sub(r"\s+", " ", substitute(pattern)).strip()
    return p in (
        "[%d] %p %m (%c)%n",
        "[%d] %p %m (%c)",
        "[%d{ISO8601}] %p %m (%c)%n",
        "[%d] %p %X{connector.context}%m (%c:%L)%n",
    )
