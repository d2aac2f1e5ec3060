"""Charts and tables for the triage notebook: what a bundle holds, WARN/ERROR over time, where to
look next.

Example:
    >>> from kitlib.display import triage as t
    >>> t.inventory(bundle)            # doctest: +SKIP
    >>> t.problems_timeline(bundle)    # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import MAX_CHART_ROWS, bin_time
from kitlib.display.axes import chart_times, count_y, time_x
from kitlib.display.markup import HTML, esc


def inventory(bundle) -> pd.DataFrame:
    """One row per file: host, format, lines, unparsed lines and the first problem met."""
    f = bundle.files
    if not len(f):
        return pd.DataFrame(columns=["file", "host", "format", "lines", "unparsed", "problem"])
    out = f[["file", "host", "format", "lines", "unparsed", "error"]].rename(columns={"error": "problem"})
    out = out.astype({"file": "string", "host": "string", "format": "string"})
    return out.sort_values(["host", "file"]).reset_index(drop=True)


def overview(bundle) -> HTML:
    """Hosts, formats, time span and unparsed lines in a few lines."""
    s = bundle.summary
    span = "no timestamps"
    got = bundle.span()
    if got is not None:
        lo, hi = got
        span = f"{lo:%Y-%m-%d %H:%M:%S} → {hi:%Y-%m-%d %H:%M:%S} UTC ({_dur(hi - lo)})"
    rows = {k: v for k, v in s.rows.items() if v}
    items = [
        ("hosts", ", ".join(s.hosts) or "-"),
        ("files", f"{s.files} ({s.bytes:,} bytes): " + ", ".join(f"{k} {v}" for k, v in s.formats.items())),
        ("time span", span),
        ("rows", ", ".join(f"{k} {v:,}" for k, v in sorted(rows.items()) if k != "unparsed") or "-"),
        ("unparsed lines", f"{s.unparsed_lines:,}"),
    ]
    if s.errors:
        items.append(("file problems", "; ".join(s.errors)))
    html = (
        "<table>"
        + "".join(
            f"<tr><th style='text-align:left'>{esc(k)}</th><td style='text-align:left'>{esc(v)}</td></tr>"
            for k, v in items
        )
        + "</table>"
    )
    return HTML(html, "\n".join(f"{k}: {v}" for k, v in items))


def _dur(td: pd.Timedelta) -> str:
    secs = int(td.total_seconds())
    if secs < 120:
        return f"{secs} s"
    if secs < 7200:
        return f"{secs // 60} min"
    return f"{secs / 3600:.1f} h"


def problems(bundle, top: int = 8) -> pd.DataFrame:
    """WARN and worse per host and logger, counted per time bucket (bucket chosen from the span
    so the chart stays under a few hundred points per series)."""
    bad = bundle.select("events", ["ts", "host", "logger", "level"], level=["WARN", "ERROR", "FATAL"])
    if not len(bad):
        return pd.DataFrame(columns=["bucket", "host", "logger", "level", "count"])
    span = _span_seconds(bundle, bad)
    freq = _bucket(span)
    logger = bad["logger"].astype("string").fillna("").replace("", "(no logger)")
    short = logger.str.rsplit(".", n=1).str[-1]
    keep = short.value_counts().head(top).index
    short = short.where(short.isin(keep), "other")
    g = pd.DataFrame(
        {
            "bucket": bad["ts"].dt.floor(freq),
            "host": bad["host"].astype("string"),
            "logger": short,
            "level": bad["level"].astype("string"),
        }
    )
    return g.groupby(["bucket", "host", "logger", "level"]).size().rename("count").reset_index()


def _span_seconds(bundle, rows: pd.DataFrame) -> float:
    """The bundle's time span in seconds (from its summary, so the events need not be loaded)."""
    ts = bundle.summary.time_span
    if ts:
        return (pd.Timestamp(ts[1]) - pd.Timestamp(ts[0])).total_seconds()
    return (rows["ts"].max() - rows["ts"].min()).total_seconds() if len(rows) else 0.0


def _bucket(span_s: float) -> str:
    for sec, f in ((600, "10s"), (3600, "1min"), (6 * 3600, "5min"), (2 * 86400, "30min"), (14 * 86400, "3h")):
        if span_s <= sec:
            return f
    return "1D"


def problems_timeline(bundle, tz: str = "UTC") -> alt.Chart | HTML:
    """Stacked bars of WARN/ERROR records over time, one row per host, coloured by logger."""
    d = problems(bundle)
    if not len(d):
        return HTML("<p>No WARN, ERROR or FATAL records in this bundle.</p>", "No WARN/ERROR records.")
    d, binned = bin_time(d, "bucket", ["host", "logger", "level"], {"count": "sum"})
    step = binned if binned is not None else d["bucket"].drop_duplicates().sort_values().diff().min()
    records = int(d["count"].sum())
    note = f"{records:,} records counted in {len(d):,} bar segments" + (
        f" ({_dur(step)} buckets; a chart carries at most {MAX_CHART_ROWS:,} rows)" if pd.notna(step) else ""
    )
    d = d.assign(bucket=chart_times(d["bucket"], tz))
    return (
        alt.Chart(d, name="triage_problems_timeline")
        .mark_bar()
        .encode(
            x=time_x("bucket", d["bucket"], tz),
            y=count_y("sum(count):Q", "records"),
            color=alt.Color("logger:N", title="logger"),
            row=alt.Row("host:N", title=None),
            tooltip=["host:N", "logger:N", "level:N", "sum(count):Q"],
        )
        .properties(
            width=640,
            height=90,
            title=alt.TitleParams("WARN / ERROR / FATAL records by host and logger", subtitle=note),
        )
    )


def unparsed_summary(bundle) -> pd.DataFrame:
    """Unparsed lines counted per file and reason, with the first line number of each."""
    u = bundle.unparsed
    if not len(u):
        return pd.DataFrame(columns=["file", "reason", "lines", "first_line"])
    g = u.groupby(["file", "reason"], observed=True).agg(lines=("line", "size"), first_line=("line", "min"))
    return g.reset_index().astype({"file": "string", "reason": "string"})


def next_steps(findings, bundle=None, tz=None) -> HTML:
    """Which investigation notebook to open next, from the findings (most severe first), with the
    question each investigation answers (from its declaration). With ``bundle`` (the notebook's
    bundle, or a mapping of its parameters) each link states that bundle and window and gives the
    parameters that open the notebook on them (:func:`kitlib.display.links.open_next`)."""
    from kitlib import registry
    from kitlib.display.links import open_next, view_params

    seen: dict[str, list[str]] = {}
    for f in findings:
        if f.investigation:
            seen.setdefault(f.investigation, []).append(f.id)
    if not seen:
        return HTML(
            "<p>No investigation notebook is indicated: nothing was found. The investigation "
            "notebooks can still be opened on this bundle to look around.</p>",
            "No investigation notebook indicated.",
        )
    invs = {name: registry.investigation(name) for name in seen}
    params = view_params(bundle, tz)
    links = {name: open_next(inv.notebook, inv.notebook, params) for name, inv in invs.items()}
    items = "".join(
        f"<li>{links[name].html}: {esc(inv.question)} (findings: {esc(', '.join(seen[name]))})</li>"
        for name, inv in invs.items()
    )
    return HTML(
        f"<p>Open next:</p><ul>{items}</ul>",
        "\n".join(f"{inv.notebook}: {', '.join(seen[name])}" for name, inv in invs.items()),
    )


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# what varies between repeats of one message, masked in this order (RE2, the same in Arrow and
# DuckDB): member ids (<client-id>-<uuid>), other UUIDs, the values of *Id= / *_id: fields,
# long hex runs (hashes, trace ids), then every number
SHAPE_CHARS = 1000  # messages are grouped by the shape of their first line's first this many characters
SHAPE_MASKS = (
    (r"[^\s\[\](){}<>,;:='\"]*-" + _UUID, "<member>"),
    (_UUID, "<uuid>"),
    (
        r"(?i)\b((?:member|instance|topic|session|trace|span|correlation|request|producer)[_ ]?id[=:] ?)[^\s,;)\]}]+",
        r"\1<id>",
    ),
    (r"\b[0-9a-fA-F]{16,}\b", "<hex>"),
    (r"[0-9]+", "N"),
)


def message_shape(first_lines: pd.Series) -> pd.Series:
    """Messages with what varies between repeats masked (:data:`SHAPE_MASKS`), for grouping; one
    RE2 pass per mask over the whole column (Arrow), the same masks DuckDB applies on an ingest
    output.

    Example:
        >>> message_shape(pd.Series(["Member app-1-0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10 in group g has failed",
        ...                          "topicId=AbCdEfGhIjKlMnOpQrStUv, 12 ms"])).tolist()
        ['Member <member> in group g has failed', 'topicId=<id>, N ms']
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(first_lines.astype("string").astype(object).where(first_lines.notna(), None), pa.large_string())
    for pattern, repl in SHAPE_MASKS:
        arr = pc.replace_substring_regex(arr, pattern=pattern, replacement=repl)
    return pd.Series(arr.to_pandas(), index=first_lines.index, dtype="string")


def _shape_sql(column: str) -> str:
    """:func:`message_shape` as a DuckDB expression over ``column``."""
    expr = column
    for pattern, repl in SHAPE_MASKS:
        q = pattern.replace("'", "''")
        expr = f"regexp_replace({expr}, '{q}', '{repl}', 'g')"
    return expr


def top_messages(bundle, levels=("WARN", "ERROR", "FATAL"), top: int = 15) -> pd.DataFrame:
    """The most frequent WARN/ERROR messages (first line, with member ids, UUIDs, ids, hex runs
    and numbers masked so repeats group together: :func:`message_shape`), with how often, on
    which hosts, and where the first one is (file:line). On an ingest output DuckDB does the
    grouping over the Parquet files."""
    if bundle.lazy("events"):
        return bundle.sql(f"""
            with b as (select level, logger, host, file || ':' || cast(line as varchar) as loc, ts,
                              substr(split_part(message, chr(10), 1), 1, 200) as first_line,
                              substr(split_part(message, chr(10), 1), 1, {SHAPE_CHARS}) as long_line
                       from events where {bundle.where(level=list(levels))})
            select level, logger, arg_min(first_line, (ts, loc)) as message, count(*) as count,
                   string_agg(distinct host, ', ' order by host) as hosts, arg_min(loc, (ts, loc)) as first
            from b group by level, logger, {_shape_sql("long_line")}
            order by count desc, first limit {int(top)}""").astype({"count": "int64"})
    bad = bundle.select("events", ["ts", "level", "logger", "message", "host", "file", "line"], level=list(levels))
    if not len(bad):
        return pd.DataFrame(columns=["level", "logger", "message", "count", "hosts", "first"])
    whole_line = bad["message"].astype("string").str.split("\n", n=1).str[0]
    first_line = whole_line.str.slice(0, 200)
    shape = message_shape(whole_line.str.slice(0, SHAPE_CHARS))  # an id cut in two would not be masked
    d = pd.DataFrame(
        {
            "level": bad["level"].astype("string"),
            "logger": bad["logger"].astype("string"),
            "shape": shape,
            "message": first_line,
            "host": bad["host"].astype("string"),
            "where": bad["file"].astype("string") + ":" + bad["line"].astype("string"),
            "ts": bad["ts"],
        }
    )
    d = d.sort_values(["ts", "where"])
    g = d.groupby(["level", "logger", "shape"], sort=False).agg(
        message=("message", "first"),
        count=("message", "size"),
        hosts=("host", lambda s: ", ".join(sorted(set(s)))),
        first=("where", "first"),
    )
    g = g.reset_index().drop(columns="shape").sort_values(["count", "first"], ascending=[False, True]).head(top)
    return g.reset_index(drop=True)
