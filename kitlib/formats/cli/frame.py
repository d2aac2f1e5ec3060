"""The frame every parser of a Kafka command-line tool's output shares (consumer groups, topics,
configs, metadata quorum, log dirs; dump-log uses its collector): snapshot time lines, comment
lines, a collector of rows and unparsed lines, and :class:`ToolOutput`, the line loop around
what a parser says is its own. Registers no format itself.

People save tool output in loops (``while true; do date; kafka-consumer-groups ...; sleep 60;
done >> lag.txt``), so a line holding only a time stamps the rows after it:

Example:
    >>> str(stamp_line("Mon Nov 23 11:35:41 UTC 2026", "UTC"))
    '2026-11-23 11:35:41+00:00'
    >>> str(stamp_line("=== 2026-11-23T11:35:46+01:00 ===", "UTC"))
    '2026-11-23 10:35:46+00:00'
    >>> stamp_line("billing orders 0 100 100 0 - - -", "UTC") is None
    True

A tool that ends its output without a newline (Kafka 3.9's ``kafka-consumer-groups --describe``
when the group has members) has the next ``date`` glued to its last row; and a snapshot saved
one per file (``> cg-$(date +%s).txt``) often has its time only in the file name:

    >>> row, t = glued_stamp("g orders 2 120 130 10 c-1 /127.0.0.1 consumer-1Sun Nov 23 10:42:41 UTC 2026", "UTC")
    >>> row, str(t)
    ('g orders 2 120 130 10 c-1 /127.0.0.1 consumer-1', '2026-11-23 10:42:41+00:00')
    >>> [str(name_stamp(n, "UTC")) for n in ("consumer-groups-describe-20261123T104241Z.txt",
    ...                                       "cg-1763894561.txt", "lag-2026-11-23_10-42-41.txt")]
    ['2026-11-23 10:42:41+00:00', '2025-11-23 10:42:41+00:00', '2026-11-23 10:42:41+00:00']
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from kitlib.formats import Context, text_lines, ts_in_range, unparsed_frame, with_provenance
from kitlib.sources import SourceFile

# `date` (C locale): "Mon Nov 23 11:35:41 UTC 2026"; ISO-8601 with optional zone; epoch seconds/ms
_DATE_CMD = re.compile(
    r"^(?:[A-Z][a-z]{2},? +)?([A-Z][a-z]{2}) +(\d{1,2}),? +(\d{1,2}:\d{2}:\d{2})"
    r"(?: +([A-Za-z][\w+:-]*))? +(\d{4})$"
)
_ISO = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?"
    r"(?: ?(?:Z|[+-]\d{2}:?\d{2}|UTC|GMT))?$"
)
_EPOCH = re.compile(r"^\d{10}(?:\d{3})?$")
_DECOR = " \t=-*#>[]:"
_UTC_NAMES = {"UTC", "GMT", "Z", "UCT"}


def stamp_line(text: str, tz: str) -> pd.Timestamp | None:
    """The UTC time a line holding only a date-time stands for, else None. Zone-less times (and
    zone abbreviations other than UTC/GMT, which are ambiguous) are read in ``tz``."""
    s = text.strip().strip(_DECOR).strip()
    if not s or len(s) > 48 or not s[:1].isalnum():
        return None
    try:
        m = _DATE_CMD.match(s)
        if m:
            mon, day, hms, zone, year = m.groups()
            t = pd.Timestamp(f"{day} {mon} {year} {hms}")
            if zone and (zone.upper() in _UTC_NAMES or re.fullmatch(r"[+-]\d{2}:?\d{2}", zone)):
                off = "+00:00" if zone.upper() in _UTC_NAMES else zone
                return pd.Timestamp(f"{t.isoformat()}{off}").tz_convert("UTC")
            return t.tz_localize(tz or "UTC").tz_convert("UTC")
        if _ISO.match(s):
            t = pd.Timestamp(s.replace(",", ".").replace(" UTC", "Z").replace(" GMT", "Z"))
            return (t.tz_localize(tz or "UTC") if t.tzinfo is None else t).tz_convert("UTC")
        if _EPOCH.match(s):
            return pd.Timestamp(int(s), unit="ms" if len(s) == 13 else "s", tz="UTC")
    except (ValueError, TypeError):
        return None
    return None


# a date glued to the end of a line: `date` (C locale) or ISO-8601 with seconds (`date -u +%FT%TZ`,
# `date -Is`, `date '+%F %T'`); a bare epoch is not taken (a row may well end in digits)
_GLUED = re.compile(
    r"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) +(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} +"
    r"\d{2}:\d{2}:\d{2}(?: +[A-Za-z][\w+:-]*)? +\d{4}"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?)$"
)
_GLUED_TAIL = 48  # longest glued date looked for, so a long line costs no more than a short one


def glued_stamp(text: str, tz: str) -> tuple[str, pd.Timestamp | None]:
    """``(the line without it, time)`` when a date is glued to the end of a line that holds
    something else; else ``(text, None)``."""
    s = text.rstrip()
    if not s[-1:].isalnum():
        return text, None
    tail = s[-_GLUED_TAIL:]
    m = _GLUED.search(tail)
    if m is None or not s[: len(s) - len(tail) + m.start()].strip():
        return text, None
    t = stamp_line(m.group(0), tz)
    return (s[: len(s) - len(tail) + m.start()], t) if t is not None else (text, None)


# a time in a file name: 20261123T104241Z, 2026-11-23_10-42-41, 2026-11-23T10:42:41+00:00,
# 20261123-104241, 2026-11-23 10.42.41 ... (a date and at least hours and minutes); else epoch
# seconds or milliseconds standing alone (10 or 13 digits)
_NAME_DT = re.compile(
    r"(?<!\d)(?P<y>(?:19|2\d)\d{2})(?P<ds>-?)(?P<mo>\d{2})(?P=ds)(?P<d>\d{2})[T_ .-]?"
    r"(?P<h>\d{2})(?P<ts>[:.-]?)(?P<mi>\d{2})(?:(?P=ts)(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?"
    r"(?P<z>Z|[+-]\d{2}:?\d{2}|UTC)?(?!\d)"
)
_NAME_EPOCH = re.compile(r"(?<!\d)(\d{10}|\d{13})(?!\d)")


def name_stamp(name: str, tz: str) -> pd.Timestamp | None:
    """The UTC time a file name holds (see above), else None. A zone-less time is read in ``tz``."""
    base = name.rsplit("/", 1)[-1]
    m = _NAME_DT.search(base)
    try:
        if m:
            g = m.groupdict()
            z = g["z"] or ""
            t = pd.Timestamp(
                f"{g['y']}-{g['mo']}-{g['d']}T{g['h']}:{g['mi']}:{g['s'] or '00'}" + (f".{g['f']}" if g["f"] else "")
            )
            if z in ("Z", "UTC"):
                return t.tz_localize("UTC")
            if z:
                return pd.Timestamp(t.isoformat() + z).tz_convert("UTC")
            local = t.tz_localize(tz or "UTC", ambiguous="NaT", nonexistent="NaT")
            return None if pd.isna(local) else local.tz_convert("UTC")
        e = _NAME_EPOCH.search(base)
        if e:
            t = pd.Timestamp(int(e.group(1)), unit="ms" if len(e.group(1)) == 13 else "s", tz="UTC")
            return t if ts_in_range(t) else None
    except (ValueError, TypeError, OverflowError):
        return None
    return None


def is_comment(text: str) -> bool:
    """A ``#`` comment line (notes people add, the header of a constructed fixture)."""
    return text.lstrip().startswith("#")


@dataclass
class Collector:
    """Rows per table and unparsed lines (with reasons) of one file."""

    src: SourceFile
    ctx: Context
    rows: dict[str, list[dict]] = field(default_factory=dict)
    bad_n: list[int] = field(default_factory=list)
    bad_t: list[str] = field(default_factory=list)
    bad_r: list[str] = field(default_factory=list)

    def add(self, table: str, line: int, **row) -> None:
        row["line"] = line
        self.rows.setdefault(table, []).append(row)

    def structure(self) -> None:
        """The current line was consumed (a header, a note, a time line)."""
        self.ctx.parsed += 1

    def bad(self, line: int, text: str, reason: str) -> None:
        self.bad_n.append(line)
        self.bad_t.append(text)
        self.bad_r.append(reason)

    def frames(self, **constants):
        """(table, frame) for every table with rows, then the unparsed lines; the file's error
        names the first unparsed line."""
        if self.bad_n:
            self.ctx.fail(f"{self.src.rel} line {self.bad_n[0]}: {self.bad_r[0]}", self.bad_n[0])
        for table, rows in self.rows.items():
            yield table, with_provenance(pd.DataFrame(rows), self.src, **constants)
        if self.bad_n:
            yield "unparsed", unparsed_frame(self.src, self.bad_n, self.bad_t, self.bad_r)


class ToolOutput:
    """A parse of one file of a tool's output, line by line. The frame takes the lines every
    tool's output may hold: undecodable bytes (unparsed), ``#`` comments and the tool's banner
    lines (:meth:`banner`), and time lines, which set :attr:`snap` for the rows after them
    (:meth:`time`). A subclass says what is its own: :meth:`line` for every other line, and
    :meth:`end` for what it holds when the file ends. Its rows and unparsed lines go to
    :attr:`out`.

    Example:
        >>> class Words(ToolOutput):
        ...     def line(self, n, text):
        ...         self.out.add("words", n, snapshot_ts=self.snap, word=text.strip())
        ...         self.out.structure()
    """

    def __init__(self, src: SourceFile, ctx: Context) -> None:
        self.src, self.ctx = src, ctx
        self.out = Collector(src, ctx)
        self.snap: pd.Timestamp | None = None

    @classmethod
    def parse(cls, src: SourceFile, ctx: Context):
        """The format's ``parse``: (table, frame) pairs of the file's rows and unparsed lines."""
        return cls(src, ctx).run()

    def run(self):
        out = self.out
        for n, text, ok in text_lines(self.src, self.ctx):
            if not ok:
                out.bad(n, text, "not valid UTF-8")
                continue
            if is_comment(text) or self.banner(text):
                out.structure()
                continue
            t = stamp_line(text, self.src.tz)
            if t is not None:
                self.time(t)
                out.structure()
                continue
            self.line(n, text)
        self.end()
        yield from out.frames()

    def banner(self, text: str) -> bool:
        """Is this line one the tool prints around its output (taken as structure)?"""
        return False

    def time(self, t: pd.Timestamp) -> None:
        """A time line: the rows after it are of the snapshot taken then."""
        self.snap = t

    def line(self, n: int, text: str) -> None:
        """Any other line (number ``n``): a row, structure, or unparsed with a reason."""
        raise NotImplementedError

    def end(self) -> None:
        """The file ended (rows still held are added here)."""


def head_lines(head: bytes, n: int = 60) -> list[str]:
    """The first ``n`` non-blank lines of a file's head, decoded leniently."""
    out = []
    for raw in head.split(b"\n"):
        if raw.strip():
            out.append(raw.decode("utf-8", "replace").rstrip("\r"))
            if len(out) >= n:
                break
    return out


def to_int(s: str | None):
    """An int from a tool's text (``-`` and ``-1`` style placeholders kept as given), else None."""
    if s is None:
        return None
    s = s.strip()
    try:
        return int(s)
    except ValueError:
        return None
