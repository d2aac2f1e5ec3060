"""Time bins that keep a chart's data under :data:`MAX_CHART_ROWS` rows.

A chart's frame that already fits is drawn as it is; a bigger one is aggregated per series
into equal time steps (a round step: 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3,
6, 12 h, days), the step chosen from the time span and the number of series so the result
fits. The step comes back with the frame so the chart can say what one point stands for.

Example:
    >>> import pandas as pd
    >>> df = pd.DataFrame({"ts": pd.date_range("2024-01-01", periods=10_000, freq="s", tz="UTC"),
    ...                    "host": ["a", "b"] * 5_000, "records": 1})
    >>> out, step = bin_time(df, "ts", ["host"], {"records": "sum"}, limit=500)
    >>> len(out) <= 500, int(out["records"].sum()), step_text(step)
    (True, 10000, '1-minute')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

MAX_CHART_ROWS = 5000

_STEPS_S = (
    [1, 2, 5, 10, 15, 30]
    + [60 * m for m in (1, 2, 5, 10, 15, 30)]
    + [3600 * h for h in (1, 2, 3, 6, 12)]
    + [86400 * d for d in (1, 2, 7, 14, 28)]
)


def _round_step(seconds: float) -> int:
    """The smallest round step of at least ``seconds`` (whole days beyond four weeks)."""
    for s in _STEPS_S:
        if s >= seconds:
            return s
    return int(np.ceil(seconds / 86400)) * 86400


def bin_time(
    df: pd.DataFrame,
    time: str,
    keys: Sequence[str],
    agg: Mapping[str, str],
    limit: int = MAX_CHART_ROWS,
    count: str | None = None,
    other: str = "(other)",
) -> tuple[pd.DataFrame, pd.Timedelta | None]:
    """``df`` unchanged with step None when it has at most ``limit`` rows; otherwise one row per
    (time bucket, ``keys``) with each column of ``agg`` aggregated by its function ("sum",
    "max", "min", "mean", "last", "first", ...), plus ``count`` (when given) holding the number
    of input rows in the bucket, and the bucket width. ``time`` holds the bucket's start. Rows
    without a time are left out of the binned frame. With more series (``keys``) than ``limit``,
    the ``limit - 1`` with the most rows are kept and the others become one series whose keys
    read ``other`` (one bucket each then; a chart is better off cutting its series down first).

    Example:
        >>> df = pd.DataFrame({"ts": pd.to_datetime([0, 1, 2], unit="s"), "k": "x", "v": [1, 5, 2]})
        >>> bin_time(df, "ts", ["k"], {"v": "max"})[1] is None
        True
        >>> bin_time(df, "ts", ["k"], {"v": "max"}, limit=2)[0][["k", "v"]].values.tolist()
        [['x', 5]]
    """
    if len(df) <= limit:
        return df, None
    keys = list(keys)
    d = df[df[time].notna()]
    series = 1
    if keys:
        gid = d.groupby(keys, observed=True, dropna=False, sort=False).ngroup().to_numpy()
        series = max(int(gid.max()) + 1 if len(gid) else 1, 1)
        if series > limit:  # fold the smallest series into one
            sizes = np.bincount(gid, minlength=series)
            kept = np.zeros(series, dtype=bool)
            kept[np.argsort(-sizes, kind="stable")[: max(limit - 1, 0)]] = True
            rest = ~kept[gid]
            d = d.assign(**{k: d[k].astype("object").where(~rest, other) for k in keys})
            series = int(kept.sum()) + 1
    per_series = limit // series
    ts = d[time]
    utc = ts if ts.dt.tz is None else ts.dt.tz_convert("UTC")
    ns = utc.dt.as_unit("ns").astype("int64").to_numpy()
    lo, hi = (int(ns.min()), int(ns.max())) if len(ns) else (0, 0)
    span_s = (hi - lo) / 1e9
    if per_series >= 3:
        # buckets aligned on the epoch: at most span/step + 2 of them per series
        step_s = _round_step(max(span_s / (per_series - 2), 1))
        step_ns = step_s * 1_000_000_000
        start = (ns // step_ns) * step_ns
    else:  # one bucket per series, starting at the first time
        step_s = max(int(np.ceil(span_s)), 1)
        start = np.full(len(ns), lo, dtype="int64")
    bucket = pd.DatetimeIndex(pd.to_datetime(start, unit="ns", utc=True)).as_unit(ts.dt.unit)
    if ts.dt.tz is None:
        bucket = bucket.tz_localize(None)
    else:
        bucket = bucket.tz_convert(ts.dt.tz)
    g = d.assign(**{time: pd.Series(bucket, index=d.index)})
    named = {col: (col, how) for col, how in agg.items()}
    if count is not None:
        named[count] = (time, "size")
    out = g.groupby([time, *keys], observed=True, dropna=False, sort=True).agg(**named).reset_index()
    return out, pd.Timedelta(seconds=step_s)


def step_text(step: pd.Timedelta | None) -> str:
    """A bucket width in words for a chart's title: "30-second", "5-minute", "2-hour", "1-day";
    "" for None (the data was not binned).

    Example:
        >>> step_text(pd.Timedelta(minutes=5)), step_text(None)
        ('5-minute', '')
    """
    if step is None:
        return ""
    s = int(step.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= size and s % size == 0:
            return f"{s // size}-{unit}"
    return f"{s}-second"
