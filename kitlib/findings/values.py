"""A finding's values as JSON holds them (:func:`plain`) and as a reader sees them
(:func:`value_text`): the numbers, times and evidence rows of :class:`kitlib.findings.Finding`."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pandas as pd


def plain(v):
    """A finding's value as JSON holds it: None for anything missing (None, NaN, NaT, pd.NA) or
    infinite, ISO-8601 text for times, Python numbers for numpy ones (ints of any size), lists and
    dicts element by element, ``str`` for anything else. ``json.dumps`` takes every result, and
    with ``allow_nan=False``.

    Example:
        >>> [plain(x) for x in (pd.NaT, float("nan"), float("inf"), np.int64(7), pd.Timestamp(0, tz="UTC"))]
        [None, None, None, 7, '1970-01-01T00:00:00+00:00']
    """
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (pd.Timestamp, pd.Timedelta, np.datetime64, np.timedelta64, dt.date, dt.timedelta)):
        if pd.isna(v):
            return None
        try:
            if isinstance(v, np.datetime64):
                v = pd.Timestamp(v)
            elif isinstance(v, (np.timedelta64, dt.timedelta)):
                v = pd.Timedelta(v)
        except (ValueError, OverflowError):  # beyond what pandas holds (year 9999): as numpy prints it
            return str(v)
        return v.isoformat()
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):  # after the times: numpy's timedelta64 is an integer type
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index)):
        return [plain(x) for x in (sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v))]
    return str(v)


def value_text(v) -> str:
    """A finding's value as a reader sees it (terminal, notebook, report): 'unknown' when missing,
    '∞' for infinity, numbers with thousands separators, times to the second in UTC.

    Example:
        >>> [value_text(x) for x in (pd.NaT, None, 1234567, float("-inf"), pd.Timestamp("2026-11-23 10:42:41.5Z"))]
        ['unknown', 'unknown', '1,234,567', '−∞', '2026-11-23 10:42:41 UTC']
    """
    from kitlib.values import number

    if isinstance(v, (float, np.floating)) and math.isinf(v):
        return number(float(v))
    p = plain(v)
    if p is None:
        return "unknown"
    if isinstance(p, (bool, int, float)):
        return number(p)
    if isinstance(v, (pd.Timestamp, np.datetime64, dt.datetime)) and isinstance(p, str):
        try:
            t = pd.Timestamp(p)
        except (ValueError, OverflowError):
            return p
        return f"{t.tz_convert('UTC'):%Y-%m-%d %H:%M:%S} UTC" if t.tzinfo else f"{t:%Y-%m-%d %H:%M:%S}"
    if isinstance(p, list):
        return ", ".join(value_text(x) for x in p)
    return str(p)
