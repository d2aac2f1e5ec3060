"""Kafka's JmxTool CSV (``org.apache.kafka.tools.JmxTool``; ``kafka.tools.JmxTool`` before
3.5) -> the ``metrics`` table.

Header: ``"time","<mbean>:<attribute>",...`` (MBean names hold commas and colons: the attribute
is after the last colon). ``time`` is epoch milliseconds, or whatever ``--date-format`` printed.
Text attributes (RateUnit, EventType) go to ``text``, not forced into numbers. A row with the
wrong number of fields (a dump cut short) goes to ``unparsed`` and is named in the file's error.

Example:
    >>> detect(b'"time","kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:Count"\\n1795391000000,12\\n', None)
    True
"""
from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd

from kitlib.formats import TS_MAX, TS_MIN, Context, register, text_lines, unparsed_frame, with_provenance
from kitlib.metrics import long_from_wide


def detect(head: bytes, src) -> bool:
    first = head.split(b"\n", 1)[0].strip()
    return first.startswith(b'"time",') or (first.startswith(b"time,") and b":" in first)


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
    header = None
    rows, row_lines = [], []
    bad_n, bad_t, bad_r = [], [], []
    for n, text, ok in text_lines(src, ctx):
        try:
            fields = next(csv.reader(io.StringIO(text))) if ok else None
        except csv.Error:
            fields = None
        if header is None:
            if fields and fields[0] == "time":
                header = fields
                ctx.parsed += 1
                continue
            fields = None
        if fields is None or len(fields) != len(header) or fields[0] == "time":
            if fields and fields[0] == "time":  # a second header: JmxTool restarted into the same file
                header = fields
                ctx.parsed += 1
                continue
            why = "not valid UTF-8" if not ok else (
                f"{len(fields)} fields where the header has {len(header)}" if fields and header else "not a JmxTool CSV row")
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
        if len(rows) >= 20000:
            yield "metrics", _frame(header, rows, row_lines, src)
            rows, row_lines = [], []
    if rows:
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


register("jmxtool", detect=detect, parse=parse, tables=("metrics",), priority=30,
         doc="Kafka JmxTool CSV dumps")
