"""Kafka's JmxTool CSV (``org.apache.kafka.tools.JmxTool``; ``kafka.tools.JmxTool`` before
3.5) -> the ``metrics`` table.

Header: ``"time","<mbean>:<attribute>",...`` (MBean names hold commas and colons: the attribute
is after the last colon). ``time`` is epoch milliseconds, or whatever ``--date-format`` printed.
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

import numpy as np
import pandas as pd

from kitlib.formats import TS_MAX, TS_MIN, Context, register, text_lines, unparsed_frame, with_provenance
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


# epoch milliseconds the tables can hold (1678..2261)
_MS_MIN, _MS_MAX = TS_MIN.value // 1_000_000, TS_MAX.value // 1_000_000


def _bad_time(value: str) -> str:
    """Why a row's time cannot be stored (an epoch-ms value out of range), or ''."""
    v = value.strip()
    if v.lstrip("-").isdigit() and not _MS_MIN <= int(v) <= _MS_MAX:
        return f"time {v} is out of range (epoch ms for 1678-2261)"
    return ""


def _parse_time(values: list[str], tz: str) -> pd.Series:
    s = pd.Series(values, dtype="string")
    if s.str.fullmatch(r"\d{10,14}").all():
        ms = s.astype("int64")
        return pd.to_datetime(ms, unit="ms", utc=True)
    t = pd.to_datetime(s, errors="coerce", format="mixed")
    if not isinstance(t.dtype, pd.DatetimeTZDtype) and not pd.api.types.is_datetime64_any_dtype(t.dtype):
        t = pd.to_datetime(t, errors="coerce", utc=True)  # mixed offsets: object dtype
    if t.dt.tz is None:
        t = t.dt.tz_localize(tz or "UTC", ambiguous="NaT", nonexistent="shift_forward")
    return t.dt.tz_convert("UTC")


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
    if pending and pending[0][2] and _LONG.match(pending[0][1].strip()):
        yield from _parse_long(src, ctx, stream)
    else:
        yield from _parse_wide(src, ctx, stream)


def _parse_long(src, ctx: Context, stream):
    """``--report-format tsv|properties|csv``: a ``time`` line, then one line per attribute."""
    ts_text, sep = None, None
    times, keys, values, where = [], [], [], []
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
        times.append(ts_text)
        keys.append(row.group("key"))
        values.append(row.group("value"))
        where.append(n)
        ctx.parsed += 1
    if keys:
        ts = _parse_time(times, src.tz)
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
        ctx.fail(f"{src.rel} line {bad_n[0]}: not a JmxTool report line", bad_n[0])
        yield "unparsed", unparsed_frame(src, bad_n, bad_t, "not a JmxTool report line")


def _parse_wide(src, ctx: Context, stream):
    header = None
    rows, row_lines = [], []
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
        why = _bad_time(fields[0])
        if why:
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append(why)
            ctx.fail(f"{src.rel} line {n}: {why}", n)
            continue
        rows.append(fields)
        row_lines.append(n)
        ctx.parsed += 1
        if len(rows) >= 20000 and header:
            yield "metrics", _frame(header, rows, row_lines, src)
            rows, row_lines = [], []
    if rows and header:
        yield "metrics", _frame(header, rows, row_lines, src)
    if bad_n:
        un = unparsed_frame(src, bad_n, bad_t, "")
        un["reason"] = bad_r
        yield "unparsed", un


def _frame(header: list[str], rows: list[list[str]], lines: list[int], src) -> pd.DataFrame:
    arr = np.array(rows, dtype=object)
    ts = _parse_time(list(arr[:, 0]), src.tz)
    wide = pd.DataFrame(arr[:, 1:], columns=header[1:])
    df = long_from_wide(ts, wide, header[1:], np.array(lines))
    return with_provenance(df, src, source="jmxtool")


register(
    "jmxtool",
    detect=detect,
    parse=parse,
    tables=("metrics",),
    priority=30,
    doc="Kafka JmxTool output: CSV (quoted or not, any --date-format) and the tsv/properties/csv report formats",
)
