"""Shared pieces of the parsers for Kafka's command-line tool outputs (consumer groups, topics,
configs, dump-log, metadata quorum, log dirs): snapshot time lines, comment lines, and a small
collector of rows and unparsed lines. Registers no format itself.

People save tool output in loops (``while true; do date; kafka-consumer-groups ...; sleep 60;
done >> lag.txt``), so a line holding only a time stamps the rows after it:

Example:
    >>> str(stamp_line("Mon Nov 23 11:35:41 UTC 2026", "UTC"))
    '2026-11-23 11:35:41+00:00'
    >>> str(stamp_line("=== 2026-11-23T11:35:46+01:00 ===", "UTC"))
    '2026-11-23 10:35:46+00:00'
    >>> stamp_line("billing orders 0 100 100 0 - - -", "UTC") is None
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from kitlib.formats import Context, unparsed_frame, with_provenance

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


def is_comment(text: str) -> bool:
    """A ``#`` comment line (notes people add, the header of a constructed fixture)."""
    return text.lstrip().startswith("#")


@dataclass
class Collector:
    """Rows per table and unparsed lines (with reasons) of one file."""

    src: object
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
        """(table, frame) for every table with rows, then the unparsed lines."""
        for table, rows in self.rows.items():
            yield table, with_provenance(pd.DataFrame(rows), self.src, **constants)
        if self.bad_n:
            un = unparsed_frame(self.src, self.bad_n, self.bad_t, "")
            un["reason"] = self.bad_r
            yield "unparsed", un


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
