"""Chart axes every notebook shares: one time axis and one count axis.

The time axis reads the same on every chart: a 24-hour clock, as precise as the ticks need
(``14:02``, ``14:02:05``, ``14:02:05.250``), the date on ticks at midnight, the time zone and the
date(s) in the axis title. Times are charted as wall-clock values in the chosen zone on a UTC
scale, so the SVG is the same whatever the time zone of the machine that renders it.

Example:
    >>> import pandas as pd
    >>> ts = pd.Series(pd.to_datetime(["2024-05-22 14:00:00", "2024-05-22 14:09:00"], utc=True))
    >>> time_title(chart_times(ts, "Europe/Berlin"), "Europe/Berlin")
    'time (Europe/Berlin), 2024-05-22'
    >>> str(chart_times(ts, "Europe/Berlin").iloc[0])
    '2024-05-22 16:00:00+00:00'
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

# The label of one tick, from its own value: milliseconds only when the tick is not on a whole
# second, seconds only when not on a whole minute, the date on midnight ticks.
TIME_LABEL = (
    "utcFormat(datum.value, '%L') != '000' ? utcFormat(datum.value, '%H:%M:%S.%L')"
    " : utcFormat(datum.value, '%S') != '00' ? utcFormat(datum.value, '%H:%M:%S')"
    " : utcFormat(datum.value, '%H:%M') != '00:00' ? utcFormat(datum.value, '%H:%M')"
    " : utcFormat(datum.value, '%b %d')"
)


def chart_times(ts: pd.Series, tz: str | None = "UTC") -> pd.Series:
    """Timestamps as wall-clock times in ``tz``, labelled UTC: what :func:`time_x` expects.
    Naive input is taken as UTC."""
    s = pd.to_datetime(pd.Series(ts), utc=True)
    return s.dt.tz_convert(tz or "UTC").dt.tz_localize(None).dt.tz_localize("UTC")


def time_title(times: pd.Series | None, tz: str | None = "UTC", what: str = "time") -> str:
    """``what (zone), date`` or ``what (zone), first date → last date`` from the charted times."""
    title = f"{what} ({tz or 'UTC'})"
    if times is None:
        return title
    t = pd.Series(times).dropna()
    if not len(t):
        return title
    lo, hi = t.min(), t.max()
    return f"{title}, {lo:%Y-%m-%d}" + ("" if lo.date() == hi.date() else f" → {hi:%Y-%m-%d}")


def time_axis(ticks: int = 6, title: str | None = None) -> alt.Axis:
    """The shared time axis (24-hour clock, date on midnight ticks)."""
    kw: dict[str, Any] = {} if title is None else {"title": title}
    return alt.Axis(
        labelExpr=TIME_LABEL, tickCount=ticks, labelOverlap="greedy", labelSeparation=8, labelFlush=True, **kw
    )


def time_x(
    field: str = "ts", times: pd.Series | None = None, tz: str | None = "UTC", what: str = "time", ticks: int = 6, **kw
) -> alt.X:
    """An x encoding for a column made by :func:`chart_times`; ``times`` (that column) puts the
    date(s) in the title.

    Example:
        >>> time_x("ts", tz="UTC").to_dict()["scale"]
        {'type': 'utc'}
    """
    return alt.X(
        f"{field}:T", title=time_title(times, tz, what), scale=alt.Scale(type="utc"), axis=time_axis(ticks), **kw
    )


def time_y(
    field: str = "ts", times: pd.Series | None = None, tz: str | None = "UTC", what: str = "time", ticks: int = 5, **kw
) -> alt.Y:
    """The same as :func:`time_x` on the y channel."""
    return alt.Y(
        f"{field}:T", title=time_title(times, tz, what), scale=alt.Scale(type="utc"), axis=time_axis(ticks), **kw
    )


def count_y(field: str, title: str, **kw) -> alt.Y:
    """A y encoding for counts: whole-number ticks only (never 0.5 records), thousands separated.

    Example:
        >>> count_y("sum(count):Q", "records").to_dict()["axis"]["tickMinStep"]
        1
    """
    return alt.Y(field, title=title, axis=alt.Axis(tickMinStep=1, format=",d"), **kw)


def count_x(field: str, title: str, **kw) -> alt.X:
    """:func:`count_y` on the x channel."""
    return alt.X(field, title=title, axis=alt.Axis(tickMinStep=1, format=",d"), **kw)
