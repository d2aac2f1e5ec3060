"""Tables as readers want them: no index column, thousands separators, units on the numbers
(bytes as kB/MB/GB, %, ms, s, MB/s), times without nanosecond noise, and an empty table as one
line saying what data would fill it and how to collect it.

Missing values (NaN, NaT, None) show as blanks. The columns a reader finds a row by come first,
in this order: host, time (``ts``, ``time``), file:line (``where``, ``file``, ``line``) and the
message (``message``, ``text``); the rest keep their order. Text is left-aligned and wraps; an
empty table says why it is empty.

Units come from the column name unless given (``*_bytes``/``size_*`` bytes, ``*_pct`` %,
``*_ms`` ms, ``*_s`` seconds, ``mb_per_s``/``*_mb_per_s`` MB/s, ``mb_*``/``*_mb`` MB).

Example:
    >>> import pandas as pd
    >>> t = table(pd.DataFrame({"log": ["t-0"], "size_bytes": [698423835], "reduction_pct": [-99.394814]}))
    >>> print(t)
    log size_bytes reduction_pct
    t-0   698.4 MB        -99.4 %
    >>> print(table(pd.DataFrame(), empty=missing("cleaner runs", "Collect log-cleaner.log.")))
    No cleaner runs in this bundle. Collect log-cleaner.log.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from kitlib.display.markup import HTML, esc
from kitlib.values import number, size

EMPTY_CLASS = "kit-empty"  # the report collapses sections whose outputs are all of this class


def missing(what: str, collect: str = "") -> HTML:
    """One line for a section with no data: what is missing and how to collect it."""
    text = f"No {what} in this bundle." + (f" {collect}" if collect else "")
    return HTML(f"<p class='{EMPTY_CLASS}'>{esc(text)}</p>", text)


def unit_of(column: str) -> str:
    """The unit a column's name implies ('' when none).

    Example:
        >>> [unit_of(c) for c in ("size_before", "mean_buffer_pct", "conversion_ms", "drain_s", "mb_per_s")]
        ['bytes', '%', 'ms', 's', 'MB/s']
    """
    c = column.lower()
    if c.endswith("bytes") or c.startswith("size_") or c == "size":
        return "bytes"
    if c.endswith("_pct") or c.endswith("percentage") or c == "pct":
        return "%"
    if c.endswith("mb_per_s"):
        return "MB/s"
    if c.endswith("_ms"):
        return "ms"
    if c.endswith("_s") and not c.endswith("_per_s"):
        return "s"
    if c.startswith("mb_") or c.endswith("_mb"):
        return "MB"
    return ""


def cell(v, unit: str = "") -> str:
    """One value as text, with its unit."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, pd.Timestamp):
        return v.strftime("%Y-%m-%d %H:%M:%S") + (f".{v.microsecond // 1000:03d}" if v.microsecond else "")
    if isinstance(v, pd.Timedelta):
        return str(v)
    if isinstance(v, (list, tuple, set)):
        return ", ".join(map(str, v))
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if unit == "bytes":
            return size(v)
        return number(v) + (f" {unit}" if unit else "")
    if isinstance(v, bool):
        return number(v)
    return str(v)


KEY_COLUMNS = ("host", "ts", "time", "where", "file", "line", "message", "text")  # first, in this order
TEXT_CELL = "text-align:left;white-space:pre-wrap;overflow-wrap:anywhere;vertical-align:top"
NUM_CELL = "text-align:right;white-space:nowrap;vertical-align:top"


def key_first(columns: list) -> list:
    """``columns`` with the ones a reader finds a row by (:data:`KEY_COLUMNS`) first.

    Example:
        >>> key_first(["level", "count", "message", "ts", "host"])
        ['host', 'ts', 'message', 'level', 'count']
    """
    names = [str(c) for c in columns]
    first = [columns[names.index(k)] for k in KEY_COLUMNS if k in names]
    return first + [c for c in columns if c not in first]


class Table(HTML):
    """A formatted table: HTML without the index, and the same cells as aligned text."""

    def __init__(self, columns: list[str], rows: list[list[str]], numeric: list[bool]):
        self.columns, self.rows = columns, rows

        def attrs(n: bool) -> str:
            return f" class=kit-num style='{NUM_CELL}'" if n else f" style='{TEXT_CELL}'"

        head = "".join(f"<th{attrs(n)}>{esc(c)}</th>" for c, n in zip(columns, numeric))
        body = "".join(
            "<tr>" + "".join(f"<td{attrs(n)}>{esc(v)}</td>" for v, n in zip(r, numeric)) + "</tr>" for r in rows
        )
        html_text = f"<table class='kit-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]

        def line(vals):
            return " ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(vals, widths, numeric)).rstrip()

        super().__init__(html_text, "\n".join([line(columns)] + [line(r) for r in rows]))

    def __str__(self):
        return self.text


def table(
    df: pd.DataFrame,
    units: dict[str, str | Callable] | None = None,
    empty: HTML | str | None = None,
    index: bool = False,
    max_rows: int = 60,
) -> HTML:
    """``df`` formatted for reading (see the module doc). ``units`` maps a column to a unit
    ('bytes', '%', 'ms', 's', 'MB', 'MB/s', '' for none) or to a function of the value;
    ``index=True`` keeps the index as leading columns; ``empty`` is what an empty frame shows
    (a :func:`missing` line, or text saying why; by default the table's columns are named, so an
    empty table never reads as a bare "0 rows")."""
    if df is None or not len(df):
        if isinstance(empty, HTML):
            return empty
        cols = [] if df is None else [str(c) for c in key_first(list(df.columns))]
        what = f" with {', '.join(cols[:4])}{', ...' if len(cols) > 4 else ''}" if cols else ""
        text = empty or f"No rows{what}: the bundle (in the window shown) holds no such records."
        return HTML(f"<p class='{EMPTY_CLASS}'>{esc(text)}</p>", text)
    d = df.reset_index() if index else df
    d = d[key_first(list(d.columns))]
    if isinstance(d.columns, pd.MultiIndex):
        d = d.copy()
        d.columns = [" ".join(str(p) for p in c if str(p)) for c in d.columns]
    d = d.head(max_rows)
    units = units or {}
    columns = [str(c) for c in d.columns]
    numeric, formatted = [], []
    for name, col in zip(columns, d.columns):
        s = d[col]
        u = units.get(name, unit_of(name))
        if callable(u):
            vals = ["" if pd.isna(v) else str(u(v)) for v in s]
        elif isinstance(s.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(s):
            vals = [cell(v) for v in s]
            zone = getattr(s.dt, "tz", None)
            if zone is not None:
                columns[columns.index(name)] = f"{name} ({zone})"
        else:
            vals = [cell(v, u) for v in s.tolist()]
        numeric.append(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s))
        formatted.append(vals)
    rows = [list(r) for r in zip(*formatted)]
    t = Table(columns, rows, numeric)
    if len(df) > max_rows:
        note = f"first {max_rows:,} of {len(df):,} rows"
        return HTML(t.html + f"<p class='kit-note'>{esc(note)}</p>", t.text + f"\n({note})")
    return t
