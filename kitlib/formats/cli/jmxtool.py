"""Kafka's JmxTool CSV (``org.apache.kafka.tools.JmxTool``; ``kafka.tools.JmxTool`` before
3.5) -> the ``metrics`` table.

Header: ``"time","<mbean>:<attribute>",...`` (MBean names hold commas and colons: the attribute
is after the last colon). ``time`` is epoch milliseconds, or whatever ``--date-format`` printed.
Epoch numbers are read in the unit their magnitude says (seconds, milliseconds, microseconds or
nanoseconds; integers or decimals), decided once per file and said in the file's note; a zero,
negative or out-of-range time sends its row to ``unparsed`` with the reason.
Text attributes (RateUnit, EventType) go to ``text``, not forced into numbers. A row with the
wrong number of fields (a dump cut short) goes to ``unparsed`` and is named in the file's error.

Variants accepted: headers without quotes (``time,kafka.server:type=X,name=Y:Count``: columns are
re-joined at each ``<domain>:``), headers commented out with ``#``, the tool's chatter before the
header (``Trying to connect to JMX url: ...``, the 3.5-3.9 ``WARNING: The 'kafka.tools' package is
deprecated ...``), a ``--date-format`` holding commas (the extra leading fields are the time), and
the one-line-per-attribute report formats of ``--report-format tsv|properties|csv`` (2.0+)::

    time<TAB>1795433774962                      time=1795433775290             time,"1795433775625"
    kafka.server:...:Count<TAB>621              kafka.server:...:Count=621     kafka.server:...:Count,"621"

Example:
    >>> detect(b'"time","kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:Count"\\n1795391000000,12\\n', None)
    True
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from kitlib.formats import Context, register, text_lines, times, unparsed_frame, with_provenance
from kitlib.metrics import long_from_wide, with_keys

_CHATTER = (
    "Trying to connect to JMX url",
    "WARNING: The 'kafka.tools' package is deprecated",
    "Could not find all object names",
    "Could not connect to JMX url",
)
_LONG = re.compile(r'^time(?:\t|=|,")')
_LONG_ROW = {
    "\t": re.compile(r"^(?P<key>.+:[^:\t]+)\t(?P<value>.*)$"),
    "=": re.compile(r"^(?P<key>.+:[^:=]+)=(?P<value>.*)$"),
    ",": re.compile(r'^(?P<key>.+:[^:,]+),"(?P<value>.*)"$'),
}
_DOMAIN_START = re.compile(r"^[\w.-]+:")


def _header_text(text: str) -> str | None:
    """The header line without a leading ``#`` comment mark, or None when it is no header."""
    s = text.strip().lstrip("#").strip()
    return s if s.startswith('"time",') or (s.startswith("time,") and ":" in s) else None


def detect(head: bytes, src) -> bool:
    for raw in head.split(b"\n")[:6]:
        s = raw.decode("utf-8", "replace").strip()
        if not s or s.startswith(_CHATTER) or (s.startswith("#") and _header_text(s) is None):
            continue
        return _header_text(s) is not None or bool(_LONG.match(s))
    return False


def _skippable(text: str) -> bool:
    """The tool's chatter, or a ``#`` comment that is not a commented-out header."""
    s = text.strip()
    return s.startswith(_CHATTER) or (s.startswith("#") and _header_text(s) is None)


def _header_fields(text: str) -> list[str]:
    """Columns of a header; unquoted MBean names hold commas, so pieces are re-joined until the
    next one that starts with ``<domain>:``."""
    fields = next(csv.reader(io.StringIO(text)))
    if text.startswith('"'):
        return fields
    cols = [fields[0]]
    for f in fields[1:]:
        if _DOMAIN_START.match(f) or len(cols) == 1:
            cols.append(f)
        else:
            cols[-1] += "," + f
    return cols


@dataclass
class _Clock:
    """How a file's times are read, decided once per file: the unit of epoch numbers (from the
    magnitude of the first chunk's values, see :func:`kitlib.formats.times.epoch_unit`) and
    the daylight-saving changes of formatted local times."""

    tz: str
    unit: str | None = None
    fold: times.FoldTracker | None = None

    def note(self) -> str:
        out = []
        if self.unit is not None:
            out.append(f"time column read as epoch {_UNIT_NAMES[self.unit]} (from the magnitude of its values)")
        if self.fold is not None and self.fold.note():
            out.append(self.fold.note())
        return "; ".join(out)


_UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


def _parse_time(values: list[str], clock: _Clock) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(UTC times, ok, why not) of a chunk's time fields. Numbers are epoch times in the file's
    unit; zero, negative or out of range they are no time (not ok, with the reason). Other
    text is a ``--date-format`` date, read in the file's zone (NaT when it cannot be read)."""
    s = pd.Series(values, dtype="string").str.strip().str.strip('"')
    num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    numeric = s.str.fullmatch(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?").fillna(False).to_numpy(dtype=bool)
    ms = np.zeros(len(s), np.int64)
    ok = np.ones(len(s), bool)
    why = np.full(len(s), "", object)
    if numeric.any():
        if clock.unit is None:
            clock.unit = times.epoch_unit(num[numeric])
        ms_n, ok_n = times.epoch_to_ms(num[numeric], clock.unit)
        ms[numeric], ok[numeric] = ms_n, ok_n
        bad = np.flatnonzero(numeric)[~ok_n]
        why[bad] = [times.epoch_reason(v, clock.unit) for v in num[bad]]
    ts = pd.Series(pd.to_datetime(ms, unit="ms", utc=True)).where(pd.Series(numeric & ok))
    text = ~numeric
    if text.any():
        ts[text] = _dates(s[text], clock).to_numpy()
    return ts.astype("datetime64[ns, UTC]"), ok, why


def _dates(s: pd.Series, clock: _Clock) -> pd.Series:
    """``--date-format`` dates -> UTC (zone-less ones read in the file's zone, the repeated
    hour of a daylight-saving change resolved from the order of the rows)."""
    t = pd.to_datetime(s, errors="coerce", format="mixed")
    if not isinstance(t.dtype, pd.DatetimeTZDtype) and not pd.api.types.is_datetime64_any_dtype(t.dtype):
        t = pd.to_datetime(t, errors="coerce", utc=True)  # mixed offsets: object dtype
    if t.dt.tz is not None:
        return t.dt.tz_convert("UTC").reset_index(drop=True)
    t = t.reset_index(drop=True)
    have = t.notna().to_numpy()
    wall = t[have].to_numpy(dtype="datetime64[ms]").astype(np.int64)
    utc, _, gaps = times.localize(wall, clock.tz)
    if clock.fold is None:
        clock.fold = times.FoldTracker(clock.tz)
    clock.fold.gaps += gaps
    shift = clock.fold.resolve(utc)
    if shift is not None:
        utc = utc + shift
    out = pd.Series(pd.NaT, index=t.index, dtype="datetime64[ns, UTC]")
    out[have] = pd.to_datetime(utc, unit="ms", utc=True)
    return out


def parse(src, ctx: Context):
    lines = text_lines(src, ctx)
    pending = []
    for n, text, ok in lines:
        if ok and _skippable(text):
            ctx.parsed += 1
            continue
        pending.append((n, text, ok))
        break
    stream = itertools.chain(pending, lines)
    clock = _Clock(src.tz)
    if pending and pending[0][2] and _LONG.match(pending[0][1].strip()):
        yield from _parse_long(src, ctx, stream, clock)
    else:
        yield from _parse_wide(src, ctx, stream, clock)
    if clock.note():
        ctx.notes.append(clock.note())


def _parse_long(src, ctx: Context, stream, clock: _Clock):
    """``--report-format tsv|properties|csv``: a ``time`` line, then one line per attribute."""
    ts_text, sep = None, None
    stamps, keys, values, where = [], [], [], []
    bad_n, bad_t = [], []
    for n, text, ok in stream:
        s = text.strip()
        if ok and (s.startswith(_CHATTER) or s.startswith("#")):
            ctx.parsed += 1
            continue
        m = _LONG.match(s) if ok else None
        if m:
            sep = s[4]
            ts_text = s[5:].strip('"') if sep == "," else s[5:]
            ctx.parsed += 1
            continue
        row = _LONG_ROW[sep].match(s) if ok and sep else None
        if row is None or ts_text is None:
            bad_n.append(n)
            bad_t.append(text)
            continue
        stamps.append(ts_text)
        keys.append(row.group("key"))
        values.append(row.group("value"))
        where.append(n)
        ctx.parsed += 1
    if keys:
        ts, ok, why = _parse_time(stamps, clock)
        if not ok.all():  # a time that is no time costs its rows
            for i in np.flatnonzero(~ok).tolist():
                bad_n.append(where[i])
                bad_t.append(f"time {stamps[i]}: {keys[i]}={values[i]}")
                ctx.parsed -= 1
            bad_r = ["not a JmxTool report line"] * (len(bad_n) - int((~ok).sum())) + list(why[~ok])
            keys, values, where = ([v for v, good in zip(col, ok) if good] for col in (keys, values, where))
            ts = ts[ok].reset_index(drop=True)
        else:
            bad_r = ["not a JmxTool report line"] * len(bad_n)
    else:
        bad_r = ["not a JmxTool report line"] * len(bad_n)
    if keys:
        beans, attrs = zip(*(k.rpartition(":")[::2] for k in keys))
        raw = pd.Series(values, dtype="string")
        num = pd.to_numeric(raw, errors="coerce")
        df = pd.DataFrame(
            {
                "ts": ts.to_numpy(),
                "mbean": beans,
                "attribute": attrs,
                "value": num.astype("float64"),
                "text": raw.where(num.isna() & (raw != "")),
                "line": where,
            }
        )
        yield "metrics", with_provenance(with_keys(df), src, source="jmxtool")
    if bad_n:
        order = np.argsort(np.array(bad_n), kind="stable")
        ctx.fail(f"{src.rel} line {bad_n[order[0]]}: {bad_r[order[0]]}", bad_n[order[0]])
        un = unparsed_frame(src, [bad_n[i] for i in order], [bad_t[i] for i in order], "")
        un["reason"] = [bad_r[i] for i in order]
        yield "unparsed", un


def _parse_wide(src, ctx: Context, stream, clock: _Clock):
    header = None
    rows, row_lines, row_text = [], [], []
    bad_n, bad_t, bad_r = [], [], []
    for n, text, ok in stream:
        if ok and _skippable(text):
            ctx.parsed += 1
            continue
        head_text = _header_text(text) if ok else None
        if head_text is not None:  # the first header, or JmxTool restarted into the same file
            header = _header_fields(head_text)
            ctx.parsed += 1
            continue
        try:
            fields = next(csv.reader(io.StringIO(text))) if ok else None
        except csv.Error:
            fields = None
        if header is None:
            fields = None
        if fields and header and len(fields) > len(header) and not fields[0].isdigit():
            extra = len(fields) - len(header)  # a --date-format with commas ("HH:mm:ss,SSS")
            fields = [",".join(fields[: extra + 1])] + fields[extra + 1 :]
        if fields is None or header is None or len(fields) != len(header):
            why = (
                "not valid UTF-8"
                if not ok
                else (
                    f"{len(fields)} fields where the header has {len(header)}"
                    if fields and header
                    else "not a JmxTool CSV row"
                )
            )
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append(why)
            ctx.fail(f"{src.rel} line {n}: {why}", n)
            continue
        rows.append(fields)
        row_lines.append(n)
        row_text.append(text)
        ctx.parsed += 1
        if len(rows) >= 20000 and header:
            yield from _frame(header, rows, row_lines, row_text, src, ctx, clock)
            rows, row_lines, row_text = [], [], []
    if rows and header:
        yield from _frame(header, rows, row_lines, row_text, src, ctx, clock)
    if bad_n:
        un = unparsed_frame(src, bad_n, bad_t, "")
        un["reason"] = bad_r
        yield "unparsed", un


def _frame(header: list[str], rows: list[list[str]], lines: list[int], texts: list[str], src, ctx: Context, clock):
    """The metrics rows of a chunk of CSV rows; a row whose time is no time goes to unparsed."""
    arr = np.array(rows, dtype=object)
    ts, ok, why = _parse_time(list(arr[:, 0]), clock)
    where = np.array(lines)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        ctx.parsed -= len(bad)
        ctx.fail(f"{src.rel} line {int(where[bad[0]])}: {why[bad[0]]}", int(where[bad[0]]))
        un = unparsed_frame(src, where[bad].tolist(), [texts[i] for i in bad.tolist()], "")
        un["reason"] = why[bad]
        yield "unparsed", un
        arr, ts, where = arr[ok], ts[ok].reset_index(drop=True), where[ok]
    if len(arr):
        wide = pd.DataFrame(arr[:, 1:], columns=header[1:])
        df = long_from_wide(ts, wide, header[1:], where)
        yield "metrics", with_provenance(df, src, source="jmxtool")


register(
    "jmxtool",
    detect=detect,
    parse=parse,
    tables=("metrics",),
    priority=30,
    doc="Kafka JmxTool output: CSV (quoted or not, any --date-format) and the tsv/properties/csv report formats",
)
