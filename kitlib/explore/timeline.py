"""The cross-host timeline of explore mode: every record of the bundle counted per host, level
and time bucket (DuckDB over the store or the events in memory), the findings' evidence rows as
marks on top, and an interval brush on the time axis that sets the notebook's window.

The bucket is the shortest of :data:`BUCKETS` that keeps the chart at or under ``max_points``
marks; the chart's title says how many records went into how many marks.

Example:
    >>> bucket_seconds(3600, hosts=3, levels=4, max_points=5000)  # 361 buckets x 12 lanes
    10
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display.axes import chart_times, time_x
from kitlib.display.bins import bin_time
from kitlib.explore.query import run_sql

BUCKETS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600, 12 * 3600, 86400)
LEVEL_ORDER = ["FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
LEVEL_COLORS = ["#5f0f40", "#c92a2a", "#f08c00", "#1c7ed6", "#868e96", "#ced4da"]


def bucket_seconds(span_s: float, hosts: int, levels: int, max_points: int) -> int:
    """The shortest bucket (seconds, from :data:`BUCKETS`) that gives at most ``max_points``
    (bucket, host, level) marks over ``span_s`` seconds."""
    lanes = max(1, hosts) * max(1, levels)
    for b in BUCKETS:
        if (span_s / b + 1) * lanes <= max_points:
            return b
    return BUCKETS[-1] * max(1, int(span_s * lanes / (BUCKETS[-1] * max_points)) + 1)


def counts(bundle, max_points: int) -> tuple[pd.DataFrame, int, int]:
    """Records per (bucket, host, level): the frame, the bucket in seconds and the records counted."""
    where = bundle.where() if bundle.lazy("events") else "true"
    shape = run_sql(
        bundle,
        f"""select epoch_ms(min(ts)) as lo, epoch_ms(max(ts)) as hi, count(distinct host) as hosts,
                   count(distinct level) as levels, count(ts) as n from events where ts is not null and {where}""",
    )
    n = int(shape["n"].iloc[0] or 0)
    if not n:
        return pd.DataFrame(columns=["bucket", "host", "level", "count"]), 1, 0
    span = (float(shape["hi"].iloc[0]) - float(shape["lo"].iloc[0])) / 1000
    b = bucket_seconds(span, int(shape["hosts"].iloc[0]), int(shape["levels"].iloc[0]), max_points)
    ms = b * 1000
    d = run_sql(
        bundle,
        f"""select floor(epoch_ms(ts) / {ms}) * {ms} as bucket, CAST(host AS VARCHAR) as host,
                   CAST(level AS VARCHAR) as level, count(*) as count
            from events where ts is not null and {where} group by all""",
    )
    d["bucket"] = pd.to_datetime(d["bucket"].astype("int64"), unit="ms", utc=True)
    d["count"] = d["count"].astype("int64")
    return d, b, n


def chart(bundle, evidence: pd.DataFrame, tz: str | None = None, max_points: int = 5000) -> alt.LayerChart | None:
    """Records per host, level and bucket as squares (darker for more), the findings' evidence
    rows as black ticks, and an x-interval brush named ``window``; None without timed records."""
    d, b, n = counts(bundle, max_points)
    if not len(d):
        return None
    zone = tz or "UTC"
    d = d.assign(bucket=chart_times(d["bucket"], zone))
    levels = [lv for lv in LEVEL_ORDER if lv in set(d["level"])] + sorted(set(d["level"]) - set(LEVEL_ORDER))
    colors = [LEVEL_COLORS[LEVEL_ORDER.index(lv)] if lv in LEVEL_ORDER else "#495057" for lv in levels]
    size = "1 s" if b == 1 else (f"{b} s" if b < 60 else f"{b // 60} min" if b < 3600 else f"{b / 3600:g} h")
    title = alt.TitleParams(
        "Every record by host and level; black ticks: the findings' evidence",
        subtitle=f"{n:,} records aggregated into {len(d):,} marks ({size} buckets, at most {max_points:,} marks); "
        "drag across the chart to set the window",
    )
    brush = alt.selection_interval(encodings=["x"], name="window")
    base = (
        alt.Chart(d)
        .mark_square(size=40)
        .encode(
            x=time_x("bucket", d["bucket"], zone),
            y=alt.Y("host:N", title=None),
            yOffset=alt.YOffset("level:N", sort=levels),
            color=alt.Color("level:N", sort=levels, scale=alt.Scale(domain=levels, range=colors)),
            opacity=alt.Opacity("count:Q", scale=alt.Scale(type="log", range=[0.35, 1]), legend=None),
            tooltip=[
                alt.Tooltip("bucket:T", title="from", format="%Y-%m-%d %H:%M:%S"),
                "host:N",
                "level:N",
                alt.Tooltip("count:Q", format=","),
            ],
        )
        .add_params(brush)
    )
    layers = [base]
    ev = evidence.dropna(subset=["ts"]) if len(evidence) else evidence
    if len(ev):
        ev = ev.groupby(["host", "ts", "finding"], dropna=False).size().rename("rows").reset_index()
        ev, _ = bin_time(ev, "ts", ["host", "finding"], {"rows": "sum"}, max_points)
        ev = ev.assign(ts=chart_times(ev["ts"], zone), host=ev["host"].astype("string").fillna("(no host)"))
        layers.append(
            alt.Chart(ev)
            .mark_tick(color="black", thickness=2, size=18)
            .encode(
                x=alt.X("ts:T"),
                y=alt.Y("host:N"),
                tooltip=["finding:N", "host:N", alt.Tooltip("ts:T", format="%Y-%m-%d %H:%M:%S.%L"), "rows:Q"],
            )
        )
    return alt.layer(*layers).properties(width=680, height=alt.Step(30), title=title)


def brushed(value, tz: str | None = None) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The UTC (start, end) of a brush's value as the chart sends it (``{field: [ms, ms]}``, wall
    clock of ``tz`` on a UTC scale, see :func:`kitlib.display.axes.chart_times`); None when empty.

    Example:
        >>> brushed({"bucket": [1763899200000, 1763899260000]}, "Europe/Berlin")[0]
        Timestamp('2025-11-23 11:00:00+0000', tz='UTC')
    """
    if not value:
        return None
    got = next(iter(value.values()), None)
    if not got or len(got) != 2:
        return None
    lo, hi = sorted(float(v) for v in got)
    out = []
    for v in (lo, hi):
        wall = pd.Timestamp(int(v), unit="ms")
        out.append(wall.tz_localize(tz or "UTC", ambiguous="NaT", nonexistent="shift_forward").tz_convert("UTC"))
    if pd.isna(out[0]) or pd.isna(out[1]) or out[0] >= out[1]:
        return None
    return out[0], out[1]
