"""What changed in a time window: the log statements new in it, gone from it, or whose rate rose or
fell beyond chance, against a baseline (by default the rest of the bundle), overall and per host.

Each record is counted under its *key* (:mod:`kitlib.changes.keys`): its Kafka log statement
(``events.template_id``, the catalogue taken from Kafka's source), or for the records no
statement matches (plugins, applications, other software) their *pattern*, the first line with
the variable tokens masked and prefixed by the logger; DuckDB computes it over the whole message
column, so they take part in the same comparison.

The test (:mod:`kitlib.changes.stats`): a template's window count against binomial(n, p), ``p``
the window's share of all records compared (of the time, when one side has no records), by the
log-likelihood ratio G and the chi-square(1) quantile of ``alpha / K`` (Bonferroni over the K
templates tested; ``alpha`` 0.01 by default), with the exact binomial tail where a side expects
fewer than five records. A change is *new* when the baseline holds none of it, *gone* when the
window holds none, else *rose* or *fell*; what rose comes first, then what fell, each ranked by G.

Lifecycle steps (:mod:`kitlib.changes.lifecycle`) are context, not changes: a node's start-up and
shutdown, topics and partitions created, coordinators loading or unloading their partitions, and
what follows those within the step. Their records are kept out of the test and of the search for
a window (``lifecycle=True`` compares them like the others), counted per step and said in words
(``Changes.set_aside``, ``Changes.context``); they still count toward each side's records.

Without a window, :mod:`kitlib.changes.scan` picks the span (at most half the bundle) where the
rate of WARN and ERROR records, or the count of one template, departs most from the rest
(Kulldorff's scan statistic over 120 time bins).

Example:
    >>> from kitlib.changes.stats import g_statistic
    >>> g = g_statistic(np.array([8, 0, 5]), np.array([0, 40, 45]), 0.1)
    >>> [round(float(x), 1) for x in g]
    [36.8, 8.4, 0.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kitlib import registry
from kitlib.bundle import Bundle
from kitlib.changes.keys import FIRST_LINE_CHARS, MASK, describe, plain, text_of
from kitlib.changes.lifecycle import mark_steps, step_context
from kitlib.changes.scan import find_window_sql
from kitlib.changes.stats import EXACT_BELOW, beyond_chance, chi2_isf, chi2_sf, g_statistic
from kitlib.formats.logs import matching
from kitlib.ingestion.store import duckdb_connection, host_partitioning, stored_tables
from kitlib.window import utc

ALPHA = 0.01
EXAMPLES = 2
VALUE_ROWS = 20000  # records of a changed template whose slot values are read
COLUMNS = ["ts", "level", "logger", "host", "file", "line", "message", "template_id"]


def parse_span(text: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """``START..END`` (ISO times, naive = UTC) as two UTC Timestamps."""
    start, sep, end = text.partition("..")
    if not sep or not start.strip() or not end.strip():
        raise ValueError(f"a window is START..END (ISO times), not {text!r}")
    lo, hi = utc(start.strip()), utc(end.strip())
    if hi <= lo:
        raise ValueError(f"window {text!r} ends before it starts")
    return lo, hi


@dataclass
class Changes:
    """The result: the window and baseline compared, the threshold, and the changes overall
    (``overall``) and per host (``per_host``), each ranked by G."""

    window: tuple[pd.Timestamp, pd.Timestamp]
    baseline: tuple[pd.Timestamp, pd.Timestamp] | None  # None: everything outside the window
    share: float  # the window's share of the time compared
    threshold: float  # G above which a change is beyond chance
    tested: int
    records: tuple[int, int]  # records in the window, in the baseline
    overall: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_host: pd.DataFrame = field(default_factory=pd.DataFrame)
    found_window: bool = False
    found_by: str = ""  # what picked a found window, in words
    lifecycle_included: bool = False  # the lifecycle records compared like the others
    # records of lifecycle steps (set aside unless included): per phase, in the window and baseline
    set_aside: dict = field(default_factory=dict)
    context: list[str] = field(default_factory=list)  # the lifecycle steps in the window, in words

    def to_dict(self) -> dict:
        def rows(df: pd.DataFrame) -> list[dict]:
            out = []
            for r in df.to_dict("records"):
                out.append({k: (v.isoformat() if isinstance(v, pd.Timestamp) else v) for k, v in r.items()})
            return out

        return {
            "window": [t.isoformat() for t in self.window],
            "window_found": self.found_window,
            **({"window_found_by": self.found_by} if self.found_by else {}),
            "baseline": [t.isoformat() for t in self.baseline] if self.baseline else "rest of the bundle",
            "share": self.share,
            "test": f"G (log-likelihood ratio) against binomial(n, share); beyond chance when G > {self.threshold:.2f} "
            f"(alpha {ALPHA} / {self.tested} templates), and the exact binomial tail under alpha / K too "
            f"where a side expects fewer than {EXACT_BELOW:g} records",
            "records": {"window": self.records[0], "baseline": self.records[1]},
            "lifecycle": {
                "set_aside": not self.lifecycle_included,
                "how": "each node's start-up (its first record, or the end of its last shutdown, to Kafka's "
                "'started' line) and shutdown ('shutting down' to 'shut down completed'), and the statements "
                "of topics and partitions created and of coordinators loading or unloading their partitions",
                "records": self.set_aside,
                "context": self.context,
            },
            "changes": rows(self.overall),
            "per_host": rows(self.per_host),
        }


def _records(bundle: Bundle, loggers: list[str] | None = None) -> pa.Table:
    """The events of a bundle held in memory as an Arrow table, ``ts`` in ms."""
    df = bundle.select("events", COLUMNS)
    if "template_id" not in df.columns:
        df["template_id"] = pd.Series(pd.NA, index=df.index, dtype="string")
    t = pa.Table.from_pandas(df[COLUMNS], preserve_index=False).combine_chunks()
    return t.set_column(0, "ts", t.column("ts").cast(pa.timestamp("ms", tz="UTC")))


def _logger_filter(loggers: list[str] | None) -> str:
    """A ``where`` clause keeping the records of ``loggers`` (a name also keeps the loggers under
    it: ``kafka.log`` keeps ``kafka.log.LogCleaner``, and ``kafka.log.LogCleaner`` keeps its inner
    class ``kafka.log.LogCleaner$CleanerThread``); ``true`` without a list."""
    if loggers is None:
        return "true"
    names = [str(x).strip() for x in loggers if str(x).strip()]
    if not names:
        return "false"
    quoted = [n.replace("'", "''") for n in names]
    exact = ", ".join(f"'{n}'" for n in quoted)
    under = " or ".join(f"starts_with(cast(logger as varchar), '{n}{sep}')" for n in quoted for sep in ".$")
    return f"(cast(logger as varchar) in ({exact}) or {under})"


# what one comparison's DuckDB may hold, spilling the rest: on a 1 GB log it took 1.5 GB
# unbounded; the triage notebook's kernel then peaks at 872 MB with 256 MB (1,191 MB with 512 MB),
# for about the same CPU time
DUCKDB_MEMORY = "256MB"


def _connect(bundle: Bundle, loggers: list[str] | None = None, lifecycle: bool = False):
    """A DuckDB connection with the view ``ev``: one row per record of the bundle (its window, and
    its ``loggers`` where given) with ``t`` (ms since the epoch), level, logger, host, file, line,
    message, ``ord`` (the record's place in the bundle) and ``key`` (see :func:`kitlib.changes.keys.keys`). On an
    ingest output (or a big bundle, which is ingested once into the kit's cache) the Parquet files
    are read by DuckDB: only the columns a question needs, counted where they lie; the messages
    are read for the records without a template and for the few rows shown. DuckDB holds at most
    :data:`DUCKDB_MEMORY` and spills the rest to a folder of its own under the system's temporary
    folder (removed with the connection), so a report's kernels never hold a big log's columns."""
    import shutil
    import tempfile
    import weakref

    spill = tempfile.mkdtemp(prefix="kitlib-changes-")
    con = duckdb_connection(memory_limit=DUCKDB_MEMORY, temp_directory=spill)
    weakref.finalize(con, shutil.rmtree, spill, True)
    con.execute("set preserve_insertion_order = false")
    if bundle.lazy("events"):
        assert bundle.store is not None
        path = stored_tables(bundle.store)["events"]
        files = [path] if path.is_file() else sorted(path.rglob("*.parquet"))
        hive = not path.is_file() and host_partitioning(path) is not None
        names = set(pq.read_schema(files[0]).names) if files else set()
        con.register("files", pa.table({"filename": [str(f) for f in files], "fno": list(range(len(files)))}))
        listed = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
        hive_opts = (
            ", hive_partitioning = true, hive_types = {'host': VARCHAR}" if hive else ", hive_partitioning = false"
        )
        tid = "template_id" if "template_id" in names else "cast(null as varchar)"
        con.execute(
            f"create temp view src as select epoch_ms(ts) as t, level, logger, host, file, line, message, "
            f"{tid} as template_id, fno * 1099511627776 + file_row_number as ord "
            f"from read_parquet({listed}, filename = true, file_row_number = true{hive_opts}) "
            f"join files using (filename) where {bundle.where()}"
        )
    else:
        t = _records(bundle)
        ts = t.column("ts").cast(pa.int64())
        mem = t.drop_columns(["ts"]).append_column("t", ts).append_column("ord", pa.array(np.arange(len(t))))
        con.register("mem", mem)
        con.execute("create temp view src as select * from mem")
    masked = f"regexp_replace(regexp_replace(substr(message, 1, {FIRST_LINE_CHARS}), '\\n[\\s\\S]*', ''), '{MASK}', '<*>', 'g')"
    cols = (
        "t, cast(level as varchar) as level, cast(logger as varchar) as logger, coalesce(cast(host as varchar), '') "
        "as host, cast(file as varchar) as file, line, message, ord"
    )
    keep = _logger_filter(loggers)
    # the records of a lifecycle step, set aside (kept as context) unless ``lifecycle``
    life = mark_steps(con, keep)
    h = "coalesce(cast(host as varchar), '')"
    # found once (a few per cent of the records at most), then left out of the views by an anti-join
    con.execute(
        f"create temp table lev as select t, {h} as host, ord, cast(logger as varchar) as logger, "
        f"coalesce((select first(p.phase) from phases p where t between p.lo and p.hi), 'creation') "
        f"as phase from src where t > 0 and {keep} and {life}"
    )
    if not lifecycle:
        keep = f"{keep} and ord not in (select ord from lev)"
    # two views, so that a question about the records with a template never reads their messages
    con.execute(
        f"create temp view evt as select {cols}, 't:' || cast(template_id as varchar) as key from src "
        f"where template_id is not null and {keep}"
    )
    con.execute(
        f"create temp view evp as select {cols}, 'p:' || coalesce(cast(logger as varchar), '') || ' ' || {masked} "
        f"as key from src where template_id is null and {keep}"
    )
    con.execute("create temp view ev as select * from evt union all select * from evp")
    return con


def changes(
    bundle: Bundle,
    window: tuple | str | None = None,
    baseline: tuple | str | None = None,
    alpha: float = ALPHA,
    top: int = 20,
    loggers: list[str] | None = None,
    investigation: str | None = None,
    lifecycle: bool = False,
) -> Changes:
    """The log statements (and patterns) that changed in ``window`` against ``baseline`` (default:
    every record outside the window), overall and per host; see the module's description.
    ``loggers`` keeps only the records of those loggers and the loggers under them (an
    investigation's own, e.g. ``["kafka.log.LogCleaner"]``): the comparison is then among them;
    ``investigation`` takes the loggers that investigation declares (``Investigation.loggers``).

    The records are counted by DuckDB (per key, host and side), so only the counts, and the
    example lines and slot values of the changes shown, come back to Python.

    The records of lifecycle steps (a node starting or stopping, topics and partitions created,
    coordinators loading or unloading the offsets topic) are kept out of the test and of the
    window search and reported as context (``set_aside``, ``context``); ``lifecycle=True``
    compares them like the others."""
    if investigation is not None:
        loggers = [*(loggers or []), *registry.investigation(investigation).loggers]
    con = _connect(bundle, loggers, lifecycle)
    found, found_by = window is None, ""
    if isinstance(window, str):
        window = parse_span(window)
    if isinstance(baseline, str):
        baseline = parse_span(baseline)
    got = con.execute("select min(t), max(t), count(*) from ev where t > 0").fetchone()
    assert got is not None
    if window is None:
        if got[2] < 2:
            raise ValueError("too few timed records to find a window")
        w0, w1, found_by = find_window_sql(con, int(got[0]), int(got[1]) + 1)
        window = (w0, w1)
    ws, we = utc(window[0]), utc(window[1])
    ms = lambda x: int(x.value // 1_000_000)
    lo, hi = (int(got[0]), int(got[1]) + 1) if got[2] else (0, 1)

    def clip(x: int) -> int:
        return max(lo, min(hi, x))

    in_w = f"(t >= {ms(ws)} and t < {ms(we)})"
    tw = clip(ms(we)) - clip(ms(ws))
    if baseline is not None:
        bs, be = utc(baseline[0]), utc(baseline[1])
        in_b = f"(t >= {ms(bs)} and t < {ms(be)} and not {in_w})"
        overlap = max(0, min(clip(ms(be)), clip(ms(we))) - max(clip(ms(bs)), clip(ms(ws))))
        tb = clip(ms(be)) - clip(ms(bs)) - overlap
    else:
        in_b = f"(not {in_w})"
        tb = (hi - lo) - tw
    tw, tb = max(tw, 1), max(tb, 1)
    # records per key, host and side, in the order each key and host first appears
    cnt = con.execute(
        f"select key, host, {in_w} as w, count(*) as n, min(ord) as o from ev "
        f"where t > 0 and ({in_w} or {in_b}) group by all"
    ).df()
    side = cnt["w"].to_numpy(bool)
    n_w, n_b = int(cnt["n"][side].sum()), int(cnt["n"][~side].sum())
    # the window's share of the records compared: a template's count in the window is tested
    # against its share of the log (its rate relative to all records), so a window that is
    # busier or quieter as a whole does not make every template change
    # the records set aside as lifecycle are not tested, but they are part of how busy each side
    # is: a bundle that is mostly start-up leaves too few others for a share of its own
    set_aside, context = step_context(con, (ms(ws), ms(we)), in_w, in_b, lifecycle)
    l_w = 0 if lifecycle else sum(v["window"] for v in set_aside.values())
    l_b = 0 if lifecycle else sum(v["baseline"] for v in set_aside.values())
    both = bool(n_w + l_w and n_b + l_b)  # records on both sides (an empty window is no evidence)
    share = (n_w + l_w) / (n_w + n_b + l_w + l_b) if both else tw / (tw + tb)
    names = cnt.groupby("key", sort=False)["o"].min().sort_values(kind="stable").index.tolist()
    hnames = cnt.groupby("host", sort=False)["o"].min().sort_values(kind="stable").index.tolist()
    code = pd.Index(names).get_indexer(cnt["key"]).astype(np.int64)
    hcode = pd.Index(hnames).get_indexer(cnt["host"]).astype(np.int64)
    nrec = cnt["n"].to_numpy(np.int64)
    k, nh = len(names), len(hnames)
    a = np.bincount(code[side], weights=nrec[side], minlength=k).astype(np.int64)
    b = np.bincount(code[~side], weights=nrec[~side], minlength=k).astype(np.int64)
    g = g_statistic(a, b, share)
    tested = int(((a + b) > 0).sum())
    crit = chi2_isf(alpha / max(tested, 1))
    ah = (
        np.bincount(code[side] * nh + hcode[side], weights=nrec[side], minlength=k * nh).astype(np.int64).reshape(k, nh)
    )
    bh = (
        np.bincount(code[~side] * nh + hcode[~side], weights=nrec[~side], minlength=k * nh)
        .astype(np.int64)
        .reshape(k, nh)
    )
    gh = g_statistic(ah, bh, share)
    tested_h = int(((ah + bh) > 0).sum())
    crit_h = chi2_isf(alpha / max(tested_h, 1))
    result = Changes((ws, we), (utc(baseline[0]), utc(baseline[1])) if baseline else None, share, crit, tested,
                     (n_w, n_b), found_window=found)  # fmt: skip
    result.found_by = found_by
    result.lifecycle_included = lifecycle
    result.set_aside, result.context = set_aside, context
    # with no record on one side there is no mix to compare (an empty window is no evidence)
    sig = np.flatnonzero(beyond_chance(a, b, share, g, crit, alpha / max(tested, 1))) if both else np.zeros(0, np.int64)
    rising = a[sig] > (a[sig] + b[sig]) * share
    sig = sig[np.lexsort((-g[sig], ~rising))][:top]  # what rose first, then what fell; each by G
    result.overall = _rows(con, in_w, in_b, names, sig, a, b, g, ah, bh, hnames, share)
    hit_h = beyond_chance(ah, bh, share, gh, crit_h, alpha / max(tested_h, 1))
    hk, hh = np.nonzero(hit_h) if both else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    order = np.argsort(-gh[hk, hh], kind="stable")[: top * 2]
    result.per_host = pd.DataFrame(
        {
            "host": [hnames[h] for h in hh[order]],
            "key": [names[x] for x in hk[order]],
            "kind": [_kind(ah[x, h], bh[x, h], share) for x, h in zip(hk[order], hh[order])],
            "window": ah[hk[order], hh[order]],
            "baseline": bh[hk[order], hh[order]],
            "g": np.round(gh[hk[order], hh[order]], 1),
        }
    )
    result.per_host.insert(2, "template", [describe(x) for x in result.per_host["key"]])
    return result


def _kind(a: int, b: int, share: float) -> str:
    if b == 0:
        return "new"
    if a == 0:
        return "gone"
    return "rose" if a > (a + b) * share else "fell"


def _mode(counts: pd.Series) -> str:
    """The most frequent value (the smallest of the most frequent), as pandas' ``mode`` picks it."""
    counts = counts[counts.index.notna()]
    if not len(counts):
        return ""
    return str(min(counts.index[counts.to_numpy() == counts.max()]))


def _rows(con, in_w: str, in_b: str, names, sig, a, b, g, ah, bh, hnames, share) -> pd.DataFrame:
    cols = [
        "kind", "template", "template_id", "logger", "level", "window", "baseline", "g", "p", "hosts",
        "first", "last", "examples", "values", "releases",
    ]  # fmt: skip
    if len(sig) == 0:
        return pd.DataFrame(columns=cols)
    kinds = {int(c): _kind(int(a[c]), int(b[c]), share) for c in sig}
    # each change is shown from the side that holds it: the window, the baseline for what is gone
    con.register(
        "wanted", pd.DataFrame({"key": [names[c] for c in sig], "gone": [kinds[int(c)] == "gone" for c in sig]})
    )
    side = f"t > 0 and (case when gone then {in_b} else {in_w} end)"
    # the records of the changes: of the templates, and of the patterns only when one changed
    rel = "(select * from evt" + (" union all select * from evp)" if any(names[c][:2] == "p:" for c in sig) else ")")
    agg = con.execute(
        f"select key, logger, level, count(*) as n, min(t) as lo, max(t) as hi from {rel} join wanted using (key) "
        f"where {side} group by all"
    ).df()
    # the first records of each change picked by (time, place) alone, then their lines read by place:
    # a window function over the messages of a change with millions of records does not fit DuckDB's bound
    ex = con.sql(
        f"with firsts as (select key as fk, unnest(min({{'t': t, 'o': ord}}, {EXAMPLES})) as f "
        f"from {rel} join wanted using (key) where {side} group by key) "
        f"select key, file, line, message from {rel} r join firsts on r.ord = firsts.f.o and r.key = firsts.fk "
        f"order by key, firsts.f.t, firsts.f.o"
    ).to_arrow_table()
    ex_text = pc.utf8_slice_codeunits(
        pc.replace_substring_regex(plain(ex.column("message")), r"\n[\s\S]*", ""), 0, 200
    ).to_pylist()
    ex_key = plain(ex.column("key")).to_pylist()
    ex_file, ex_line = ex.column("file").to_pylist(), ex.column("line").to_pylist()
    # the slot values: the first records of each changed template, on both sides
    vals = con.sql(
        f"with firsts as (select unnest(min(ord, {VALUE_ROWS})) as fo from evt join wanted using (key) "
        f"where t > 0 and ({in_w} or {in_b}) and starts_with(key, 't:') group by key) "
        f"select key, logger, message, {in_w} as w from evt join firsts on evt.ord = firsts.fo order by key, ord"
    ).to_arrow_table()
    vkey = np.asarray(plain(vals.column("key")).to_pylist(), dtype=object)
    out = []
    for c in sig:
        kind = kinds[int(c)]
        key = names[c]
        mine = agg[agg["key"] == key]
        tid = key[2:] if key.startswith("t:") else ""
        text = text_of(tid)
        counts = ah[c] if kind != "gone" else bh[c]
        hosts = {hnames[h]: int(counts[h]) for h in np.argsort(-counts, kind="stable") if counts[h]}
        examples = [f"{f}:{ln}: {x}" for kk, f, ln, x in zip(ex_key, ex_file, ex_line, ex_text) if kk == key]
        rows = np.flatnonzero(vkey == key)
        out.append(
            {
                "kind": kind,
                "template": text.template if text else key[2:],
                "template_id": tid,
                "logger": _mode(mine.groupby("logger", dropna=False)["n"].sum()),
                "level": _mode(mine.groupby("level", dropna=False)["n"].sum()),
                "window": int(a[c]),
                "baseline": int(b[c]),
                "g": round(float(g[c]), 1),
                "p": float(chi2_sf(float(g[c]))),
                "hosts": hosts,
                "first": pd.Timestamp(int(mine["lo"].min()), unit="ms", tz="UTC") if len(mine) else None,
                "last": pd.Timestamp(int(mine["hi"].max()), unit="ms", tz="UTC") if len(mine) else None,
                "examples": examples,
                "values": _changed_values(vals.take(pa.array(rows)), share) if tid and len(rows) else [],
                "releases": f"{text.first}..{text.last}" if text else "",
            }
        )
    return pd.DataFrame(out, columns=cols)


def _changed_values(t: pa.Table, share: float):
    """The slot values of one template's records ``t`` (logger, message, ``w``: in the window)
    whose window count departs most from what the baseline predicts: up to three (slot, value,
    window count, baseline count)."""
    vals = matching.values(plain(t.column("logger")), plain(t.column("message")))
    if vals.null_count == len(vals):
        return []
    lens = pc.list_value_length(vals).fill_null(0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(vals)
    slot = np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)
    w = np.repeat(t.column("w").to_numpy(zero_copy_only=False).astype(bool), lens)
    df = pd.DataFrame({"slot": slot, "value": flat.to_pandas(), "w": w})
    grp = df.groupby(["slot", "value"], sort=False)["w"].agg(["sum", "count"])
    grp["baseline"] = grp["count"] - grp["sum"]
    ratio = share / (1 - share) if share < 1 else 1.0
    grp["score"] = (grp["sum"] - grp["baseline"] * ratio).abs()
    top = grp.sort_values("score", ascending=False).head(3)
    return [
        {"slot": int(s), "value": str(v)[:80], "window": int(r["sum"]), "baseline": int(r["baseline"])}
        for (s, v), r in top.iterrows()
    ]


def changes_text(res: Changes, rows: int = 15) -> str:
    """The changes as text for a terminal."""
    base = f"{res.baseline[0]}..{res.baseline[1]}" if res.baseline else "the rest of the bundle"
    how = f" (found: {res.found_by})" if res.found_window else ""
    lines = [
        f"window {res.window[0]}..{res.window[1]}{how}; baseline {base}",
        f"records: {res.records[0]:,} in the window, {res.records[1]:,} in the baseline (the window's share "
        f"{res.share:.3f}); beyond chance: G > {res.threshold:.1f} (alpha {ALPHA} over {res.tested} templates)",
    ]
    if res.context:
        lines.append("lifecycle steps (context, not changes): " + "; ".join(res.context))
    if not len(res.overall):
        lines.append("no template changed beyond chance")
        return "\n".join(lines)
    for r in res.overall.head(rows).itertuples():
        hosts = ", ".join(f"{h} ({n})" for h, n in list(r.hosts.items())[:4])
        lines.append("")
        lines.append(f"{r.kind.upper():5} {r.template}")
        lines.append(
            f"      {r.logger} {r.level}; window {r.window}, baseline {r.baseline}; G {r.g}; hosts {hosts}; "
            f"{r.first}..{r.last}" + (f"; releases {r.releases}" if r.releases else "")
        )
        for v in r.values:
            lines.append(
                f"      slot {v['slot']} = {v['value']}: {v['window']} in the window, {v['baseline']} in the baseline"
            )
        for e in r.examples:
            lines.append(f"      {e}")
    return "\n".join(lines)
