"""What changed in a time window: the log statements new in it, gone from it, or whose rate rose or
fell beyond chance, against a baseline (by default the rest of the bundle), overall and per host.

Each record is counted under its Kafka log statement (``events.template_id``, the catalogue taken
from Kafka's source). Records no statement matches (plugins, applications, other software) are
grouped by their *pattern*: the first line with every token that holds a digit, every path and
every dotted host name masked as ``<*>``, prefixed by the logger; that is computed with RE2 over
the whole message column, so they take part in the same comparison.

The test: under "nothing changed", a template keeps its share of the log, so of its ``n``
records the window holds binomial(n, p), ``p`` the window's share of all records compared (of the
time, when one side has no records). The log-likelihood ratio (G) of the observed split against
that is compared with the chi-square(1) quantile of ``alpha / K`` (Bonferroni over the K templates
tested; ``alpha`` 0.01 by default). Where either side expects fewer than five records, the
chi-square approximation overstates a handful of lines, so there the exact binomial tail must be
under ``alpha / K`` as well (:func:`beyond_chance`). A change is *new* when the baseline holds none of it, *gone*
when the window holds none, else *rose* or *fell*; what rose comes first, then what fell, each
ranked by G.

Lifecycle steps are context, not changes: a node's start-up (from the first line its process logs
to Kafka's "started" line) and shutdown, topics and partitions created, coordinators loading or
unloading their partitions, and what follows those within the step (see :data:`CREATION`,
:data:`FOLLOWS`). Their records are found by DuckDB, kept out of the test and of the search for a
window (``lifecycle=True`` compares them like the others), counted per step and said in words
(``Changes.set_aside``, ``Changes.context``); they still count toward each side's records.

Without a window, :func:`find_window` picks the span (at most half the bundle) where the rate of
WARN and ERROR records, or the count of one template, departs most from the rest (Kulldorff's
scan statistic over 120 time bins).

Example:
    >>> g = g_statistic(np.array([8, 0, 5]), np.array([0, 40, 45]), 0.1)
    >>> [round(float(x), 1) for x in g]
    [36.8, 8.4, 0.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kitlib import registry
from kitlib.bundle import Bundle
from kitlib.formats.logs import matching
from kitlib.formats.logs import statements as st
from kitlib.ingestion.store import host_partitioning, stored_tables
from kitlib.window import utc

ALPHA = 0.01
# a token holding a digit, a path, a dotted host name: the variable parts of a line
MASK = r"[\w.:/@=+-]*[0-9][\w.:/@=+-]*|(?:/[\w.@+-]+)+|\b(?:[A-Za-z][\w-]*\.){2,}[A-Za-z][\w-]*\b"
FIRST_LINE_CHARS = 240
EXAMPLES = 2
VALUE_ROWS = 20000  # records of a changed template whose slot values are read
COLUMNS = ["ts", "level", "logger", "host", "file", "line", "message", "template_id"]

# Kafka's own lifecycle statements (logger and wording, every release's: 0.8's "Started", 0.8.1 to
# 3.x's "[KafkaServer id=N] started", KRaft's "Transition from STARTING to STARTED" and "Kafka
# Server started"). A node's start-up runs from the first line a Kafka process logs (its signal
# handlers, its log4j MBean, "starting"; else the end of its previous shutdown, else its first
# record) to its "started" line; its shutdown from "shutting down" to "shut down completed" (or
# its next start, or its last record).
SERVER_LOGGERS = (
    "kafka.server.KafkaServer", "kafka.server.KafkaRaftServer", "kafka.server.BrokerServer",
    "kafka.server.ControllerServer", "kafka.Kafka",
)  # fmt: skip
BOOT_LOGGERS = ("kafka.utils.Log4jControllerRegistration$", "org.apache.kafka.common.utils.LoggingSignalHandler")
BOOTING = (
    r"(?i)^registered signal handlers|^registered kafka:type=kafka\.log4jcontroller|(^|\] )starting\s*$|"
    r"transition from \w+ to starting\b"
)
STARTED = r"(?i)(^|\] )(kafka server )?started\.?\s*$|transition from \w+ to started\b"
STOPPING = r"(?i)(^|\] )shutting down\b|transition from \w+ to shutting_down\b"
STOPPED = r"(?i)shut ?down complete"
# the statements of a topic or partition being created, and of a group or transaction coordinator
# loading or unloading its partitions (the offsets topic created on a group's first use, moved,
# or released at shutdown): context of the window, not a change of the running cluster
CREATION = (
    r"^(\{any\} ?)?(Replayed TopicRecord|Replayed PartitionRecord for new partition|Creating new partition|"
    r"Created log for partition|No checkpointed highwatermark is found for partition|"
    r"Elected as the (group|transaction) coordinator|Resigned as the (group|transaction) coordinator|"
    r"Scheduling (loading|unloading) of (offsets and group|transaction) metadata|"
    r"Finished (loading|unloading) (offsets and group metadata|transaction metadata|\{)|"
    r"Unloaded transaction metadata|Loading transaction metadata|Completed loading transaction metadata|"
    r"Creating topic|Created topic|CreateTopics result|Sent auto-creation request)"
)
# what follows a lifecycle step: partitions loaded and their leaders and followers starting,
# fetcher threads started, nodes registering, configs and producer id blocks replayed. These are
# set aside only within a step: a node's start-up or shutdown, or a burst of creation statements
# (records at most BURST_GAP apart), each widened by BURST_GAP on both sides
FOLLOWS = (
    r"^(\{any\} ?)?(Log loaded for partition|Loading producer state till offset|"
    r"Truncating partition .* due to local high watermark|Truncating to .* has no effect|Starting$|"
    r"Replayed .* modifying the registration for broker|Replaying ProducerIdsRecord|Replayed ConfigRecord for|"
    r"Added fetcher to broker|Removed fetcher for partitions)"
    r"|\} starts at leader epoch|partition\(s\) to local leaders"
)
BURST_GAP = 5000  # ms
PHASES = {"start-up": "started", "shutdown": "shut down", "creation": "creation"}


def chi2_isf(q: float) -> float:
    """The x with P(chi-square(1) > x) = q (bisection on erfc)."""
    lo, hi = 0.0, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erfc(math.sqrt(mid / 2)) > q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def chi2_sf(x: float) -> float:
    """P(chi-square(1) > x)."""
    return math.erfc(math.sqrt(max(x, 0.0) / 2))


def g_statistic(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """G of window counts ``a`` and baseline counts ``b`` against the share ``p`` of the window."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    n = a + b
    ea, eb = n * p, n * (1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = np.where(a > 0, a * np.log(a / ea), 0.0)
        tb = np.where(b > 0, b * np.log(b / eb), 0.0)
    return np.maximum(2 * (ta + tb), 0.0)


EXACT_BELOW = 5.0  # expected count on either side under which the exact binomial tail decides
EXACT_MAX_N = 4096  # records of one template up to which the exact tail is computed


def exact_tail(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """One-sided exact binomial p-value of window counts ``a`` out of ``a + b`` at window share
    ``p``: P(X >= a) when the window holds more than its share, else P(X <= a). NaN where it is
    not computed (more than :data:`EXACT_MAX_N` records). Vectorised over a log-factorial table.

    >>> [round(float(x), 4) for x in exact_tail(np.array([3, 0]), np.array([1, 10]), 0.05)]
    [0.0005, 0.5987]
    """
    a = np.asarray(a, np.int64)
    n = a + np.asarray(b, np.int64)
    out = np.full(len(a), np.nan)
    ok = np.flatnonzero((n <= EXACT_MAX_N) & (n > 0))
    if not len(ok) or not 0.0 < p < 1.0:
        return out
    top = int(n[ok].max())
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1)))])
    k = np.arange(top + 1)
    for start in range(0, len(ok), 256):  # bounded memory: 256 rows of at most 4,097 terms
        idx = ok[start : start + 256]
        nn, aa = n[idx][:, None], a[idx][:, None]
        valid = k[None, :] <= nn
        kk = np.minimum(k[None, :], nn)
        logpmf = logfact[nn] - logfact[kk] - logfact[nn - kk] + kk * math.log(p) + (nn - kk) * math.log1p(-p)
        pmf = np.where(valid, np.exp(logpmf), 0.0)
        upper = aa > nn * p
        tail = np.where(upper, k[None, :] >= aa, k[None, :] <= aa) & valid
        out[idx] = np.minimum((pmf * tail).sum(axis=1), 1.0)
    return out


def beyond_chance(a: np.ndarray, b: np.ndarray, p: float, g: np.ndarray, crit: float, q: float) -> np.ndarray:
    """G over its chi-square threshold, and, where a side expects fewer than
    :data:`EXACT_BELOW` records (the chi-square approximation is loose there and overstates a
    handful of lines), the exact binomial tail under ``q`` too."""
    hit = g > crit
    n = a + b
    small = hit & (np.minimum(n * p, n * (1 - p)) < EXACT_BELOW) & (n <= EXACT_MAX_N)
    if small.any():
        flat = np.flatnonzero(small.ravel())
        tail = exact_tail(np.ravel(a)[flat], np.ravel(b)[flat], p)
        keep = hit.ravel().copy()
        keep[flat] = tail < q
        hit = keep.reshape(hit.shape)
    return hit


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


_IDS: dict[str, list[str]] = {}


def statement_ids(pattern: str) -> list[str]:
    """The lineage ids of the catalogue's statements (any release's wording) matching ``pattern``
    (:data:`CREATION`, :data:`FOLLOWS`)."""
    if pattern not in _IDS:
        import re

        cat = st.load()
        fam = matching.lineage(cat)
        rx = re.compile(pattern)
        _IDS[pattern] = sorted({fam[s.id] for s in cat.statements if rx.search(s.typed())})
    return _IDS[pattern]


def _lifecycle(con, keep: str) -> str:
    """Tables ``phases`` (host, phase, lo, hi: each node's start-up and shutdown, from the server
    loggers' own lines) and ``marks`` (host, t, kind S/D/E) on the connection; returns the ``where``
    condition of a record of ``src`` set aside as lifecycle (in a phase of its host, or a creation
    statement)."""
    servers = ", ".join(f"'{x}'" for x in (*SERVER_LOGGERS, *BOOT_LOGGERS))
    h = "coalesce(cast(host as varchar), '')"
    con.execute(
        f"create temp table marks as select * from (select {h} as host, t, case "
        f"when regexp_matches(message, '{STOPPED}') then 'E' when regexp_matches(message, '{STOPPING}') then 'D' "
        f"when regexp_matches(message, '{STARTED}') then 'S' when regexp_matches(message, '{BOOTING}') then 'B' "
        f"end as kind from src "
        f"where cast(logger as varchar) in ({servers}) and t > 0 and {keep}) where kind is not null"
    )
    con.execute(
        f"create temp table hspan as select {h} as host, min(t) as lo, max(t) as hi from src where t > 0 group by all"
    )
    con.execute(
        "create temp table phases as "
        # a start-up ends at a "started" line and begins at the first boot line after the node's
        # previous lifecycle line (its host's first record when there is none before)
        "select host, 'start-up' as phase, lo, max(hi) as hi from (select x.host, x.hi, case when x.prev is null "
        "then h.lo else coalesce((select min(e.t) from marks e where e.host = x.host and e.kind = 'B' "
        "and e.t > x.prev and e.t <= x.hi), x.hi) end as lo from (select s.host, s.t as hi, (select max(e.t) "
        "from marks e where e.host = s.host and e.kind in ('S', 'D', 'E') and e.t < s.t) as prev from marks s "
        "where s.kind = 'S') x join hspan h using (host)) group by all "
        "union all select host, 'shutdown', min(lo), hi from (select d.host, d.t as lo, coalesce("
        "(select min(e.t) from marks e where e.host = d.host and e.kind in ('E', 'S') and e.t > d.t), h.hi) as hi "
        "from marks d join hspan h using (host) where d.kind = 'D') group by all"
    )
    ids = ", ".join(f"'{x}'" for x in statement_ids(CREATION)) or "''"
    follows = ", ".join(f"'{x}'" for x in statement_ids(FOLLOWS)) or "''"
    con.execute(
        f"create temp table steps as select min(t) - {BURST_GAP} as lo, max(t) + {BURST_GAP} as hi from ("
        f"select t, sum(cast(t - gap > {BURST_GAP} as int)) over (order by t) as g from (select t, "
        f"lag(t, 1, t) over (order by t) as gap from src where t > 0 and cast(template_id as varchar) in ({ids}) "
        f"and {keep})) group by g "
        f"union all select lo - {BURST_GAP}, hi + {BURST_GAP} from phases"
    )
    return (
        f"coalesce(cast(template_id as varchar) in ({ids}) or exists (select 1 from phases p where p.host = {h} "
        f"and t between p.lo and p.hi) or (cast(template_id as varchar) in ({follows}) and exists (select 1 from "
        f"steps s where t between s.lo and s.hi)), false)"
    )


def _connect(bundle: Bundle, loggers: list[str] | None = None, lifecycle: bool = False):
    """A DuckDB connection with the view ``ev``: one row per record of the bundle (its window, and
    its ``loggers`` where given) with ``t`` (ms since the epoch), level, logger, host, file, line,
    message, ``ord`` (the record's place in the bundle) and ``key`` (see :func:`keys`). On an
    ingest output (or a big bundle, which is ingested once into the kit's cache) the Parquet files
    are read by DuckDB: only the columns a question needs, counted where they lie; the messages
    are read for the records without a template and for the few rows shown."""
    import duckdb

    con = duckdb.connect()
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
    life = _lifecycle(con, keep)
    h = "coalesce(cast(host as varchar), '')"
    # found once (a few per cent of the records at most), then left out of the views by an anti-join
    con.execute(
        f"create temp table lev as select t, {h} as host, ord, cast(logger as varchar) as logger, "
        f"coalesce((select first(p.phase) from phases p where p.host = {h} and t between p.lo and p.hi), 'creation') "
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


def _plain(col) -> pa.Array:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.cast(pa.string()) if not pa.types.is_string(col.type) else col


def keys(t: pa.Table) -> pa.Array:
    """Each record's key: ``t:<template id>`` or ``p:<logger> <masked first line>`` (the first line
    is cut and masked only for the records without a template)."""
    tid = _plain(t.column("template_id"))
    out = pc.binary_join_element_wise("t", tid, ":")
    none = np.asarray(pc.is_null(tid).to_numpy(zero_copy_only=False), bool)
    if not none.any():
        return out
    rows = pa.array(np.flatnonzero(none))
    msg = pc.utf8_slice_codeunits(_plain(t.column("message")).take(rows), 0, FIRST_LINE_CHARS)
    first = pc.replace_substring_regex(msg, r"\n[\s\S]*", "")
    masked = pc.replace_substring_regex(first, MASK, "<*>")
    logger = pc.fill_null(_plain(t.column("logger")).take(rows), "")
    pattern = pc.binary_join_element_wise(logger, masked, " ")
    pattern = pc.binary_join_element_wise("p", pattern, ":")
    # scatter the patterns into the rows without a template
    pos = np.arange(len(tid))
    pos[none] = len(tid) + np.arange(int(none.sum()))
    return pa.concat_arrays([out.cast(pa.string()), pattern.cast(pa.string())]).take(pa.array(pos))


def _scan(counts: np.ndarray, expect_share: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Kulldorff's Poisson log-likelihood ratio of each span ``[i, j)`` of bins, per row of
    ``counts`` (rows: series; columns: bins), against each bin's expected share of a row's total;
    spans where the series is below its expectation score -1."""
    cum = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    ecum = np.r_[0.0, np.cumsum(expect_share)]
    total = cum[:, -1:]
    inside = cum[:, j] - cum[:, i]
    expect = total * (ecum[j] - ecum[i])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.where(inside > 0, inside * np.log(inside / expect), 0.0) + np.where(
            total - inside > 0, (total - inside) * np.log((total - inside) / (total - expect)), 0.0
        )
    return np.where(inside > expect, np.nan_to_num(llr), -1.0)


def find_window(t: pa.Table, bins: int = 120, codes: np.ndarray | None = None) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The span (whole time bins, at most half of them) where the rate of WARN/ERROR records, or
    the count of one template against its share of all records (``codes``: each record's
    template), departs most from the rest (Kulldorff's scan statistic, the larger of the two)."""
    allts = t.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
    timed = allts > 0
    if timed.sum() < 2:
        raise ValueError("too few timed records to find a window")
    ts = allts[timed]
    lo, hi = int(ts.min()), int(ts.max()) + 1
    width = max((hi - lo) / bins, 1.0)
    b = np.minimum(((ts - lo) / width).astype(np.int64), bins - 1)
    level = _plain(t.column("level"))
    bad = pc.is_in(level, value_set=pa.array(["WARN", "ERROR", "FATAL"])).to_numpy(zero_copy_only=False)[timed]
    alln = np.bincount(b, minlength=bins).astype(float)
    mat = None
    if codes is not None:
        c = codes[timed]
        used, c = np.unique(c, return_inverse=True)
        n = np.bincount(c)
        some = np.flatnonzero(n >= 3)[:2000]  # templates seen at least three times
        if len(some):
            pick = np.isin(c, some)
            row = np.searchsorted(some, c[pick])
            mat = np.bincount(row * bins + b[pick], minlength=len(some) * bins).reshape(len(some), bins)
    return _pick_span(lo, width, alln, np.bincount(b[bad], minlength=bins).astype(float), mat)


def _pick_span(lo: int, width: float, alln: np.ndarray, badn: np.ndarray, mat: np.ndarray | None, why=None):
    """The span of :func:`find_window` from the counts per time bin: of all records (``alln``), of
    the WARN/ERROR ones (``badn``) and of each template considered (rows of ``mat``). ``why``, a
    list, gets what picked it: -1 for the WARN/ERROR rate, else the row of ``mat``."""
    bins = len(alln)
    i, j = np.triu_indices(bins + 1, 1)
    keep = (j - i) <= bins // 2
    i, j = i[keep], j[keep]
    best = _scan(badn[None, :], np.full(bins, 1.0 / bins), i, j)[0]
    bad_best, per_row = best, None
    if mat is not None and len(mat):
        per_row = _scan(mat.astype(float), alln / alln.sum(), i, j)
        best = np.maximum(best, per_row.max(axis=0))
    k = int(np.argmax(best))
    if why is not None:
        why.append(-1 if per_row is None or bad_best[k] >= per_row[:, k].max() else int(np.argmax(per_row[:, k])))

    def ms(x: float) -> pd.Timestamp:
        return pd.Timestamp(int(x), unit="ms", tz="UTC")

    return ms(lo + i[k] * width), ms(lo + j[k] * width)


def _find_window_sql(con, lo: int, hi: int, bins: int = 120) -> tuple[pd.Timestamp, pd.Timestamp, str]:
    """:func:`find_window` on the view ``ev`` of :func:`_connect`: the records counted per key and
    time bin by DuckDB (the templates considered are those of :func:`find_window`, in the order
    they first appear); with what picked the span, in words."""
    width = max((hi - lo) / bins, 1.0)
    per = con.execute(
        f"select key, case when t > 0 then least(cast(floor((t - {lo}) / ?::double) as bigint), {bins - 1}) end as b, "
        "count(*) as n, count(*) filter (where level in ('WARN', 'ERROR', 'FATAL')) as bad, min(ord) as o "
        "from ev group by all",
        [width],
    ).df()
    first = per.groupby("key", sort=False)["o"].min()
    timed = per[per["b"].notna()]
    tb = timed["b"].to_numpy(np.int64)
    alln = np.bincount(tb, weights=timed["n"].to_numpy(float), minlength=bins)
    badn = np.bincount(tb, weights=timed["bad"].to_numpy(float), minlength=bins)
    seen = timed.groupby("key", sort=False)["n"].sum()
    seen = seen[first[seen.index].sort_values(kind="stable").index]  # the order keys first appear
    some = seen.index[seen.to_numpy() >= 3][:2000]  # templates seen at least three times
    mat = None
    if len(some):
        pick = timed[timed["key"].isin(some)]
        row = pd.Index(some).get_indexer(pick["key"])
        mat = np.bincount(
            row * bins + pick["b"].to_numpy(np.int64), weights=pick["n"].to_numpy(float), minlength=len(some) * bins
        ).reshape(len(some), bins)
    why: list[int] = []
    span = _pick_span(lo, width, alln, badn, mat, why)
    if why[0] < 0:
        reason = "the rate of WARN and ERROR records departs most from the rest there"
    else:
        reason = f"the count of `{_describe(str(some[why[0]]))}` departs most from its share of the log there"
    return span[0], span[1], reason + f" (scan statistic over {bins} time bins, spans up to half the bundle)"


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
        w0, w1, found_by = _find_window_sql(con, int(got[0]), int(got[1]) + 1)
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
    set_aside, context = _context(con, (ms(ws), ms(we)), in_w, in_b, lifecycle)
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
    result.per_host.insert(2, "template", [_describe(x) for x in result.per_host["key"]])
    return result


def _context(con, span: tuple[int, int], in_w: str, in_b: str, included: bool) -> tuple[dict, list[str]]:
    """The lifecycle records per phase in the window and the baseline, and the steps in the window
    in words ("broker-1 started in the window", "the offsets topic was created or loaded")."""
    got = con.execute(
        f"select phase, {in_w} as w, count(*) as n from lev where {in_w} or {in_b} group by all"
    ).fetchall()
    counts: dict = {}
    for phase, w, n in got:
        counts.setdefault(phase, {"window": 0, "baseline": 0})["window" if w else "baseline"] += int(n)
    words: list[str] = []
    fmt = lambda t: pd.Timestamp(int(t), unit="ms", tz="UTC").strftime("%H:%M:%S")
    for host, kind, t in con.execute(
        f"select host, kind, min(t) from marks where {in_w} and kind in ('S', 'E') group by all order by 3, 1"
    ).fetchall():
        words.append(f"{host or 'the node'} {'started' if kind == 'S' else 'shut down'} in the window ({fmt(t)})")
    for host, phase in con.execute(
        f"select host, phase from phases p where p.lo < {span[1]} and p.hi >= {span[0]} group by all order by 1"
    ).fetchall():
        said = f"{host or 'the node'} {'started' if phase == 'start-up' else 'shut down'} in the window"
        if not any(w.startswith(said) for w in words):
            words.append(f"{host or 'the node'} was {'starting' if phase == 'start-up' else 'shutting down'} "
                         "in the window")  # fmt: skip
    # the coordinators' loggers tell the offsets topic and the transaction state topic from the rest
    offsets = "regexp_matches(logger, 'Group(MetadataManager|Coordinator)|coordinator\\.group')"
    txn = "regexp_matches(logger, 'Transaction(StateManager|Coordinator)|coordinator\\.transaction')"
    row = con.execute(
        f"select count(*), count(distinct host), bool_or({offsets}), bool_or({txn}), "
        f"count(*) filter (where not {offsets} and not {txn}) from lev where phase = 'creation' and {in_w}"
    ).fetchall()[0]
    if row and row[0]:
        n, hosts, offsets, txn, other = row
        if offsets:
            words.append("the offsets topic (__consumer_offsets) was created, loaded or unloaded by its coordinators")
        if txn:
            words.append("the transaction state topic was created, loaded or unloaded by its coordinators")
        if other:
            words.append(
                f"topics or partitions were created or moved ({other:,} record{'s' * (other != 1)} on "
                f"{hosts} host{'s' * (hosts != 1)})"
            )
    if counts and not included:
        n_w = sum(v["window"] for v in counts.values())
        n_b = sum(v["baseline"] for v in counts.values())
        words.append(f"{n_w:,} records of these steps in the window and {n_b:,} in the baseline were set aside")
    return counts, words


def _kind(a: int, b: int, share: float) -> str:
    if b == 0:
        return "new"
    if a == 0:
        return "gone"
    return "rose" if a > (a + b) * share else "fell"


@dataclass(frozen=True)
class _Text:
    template: str
    logger: str
    level: str
    first: str
    last: str


def _catalogue_text() -> dict[str, _Text]:
    """Lineage id -> the newest wording of it (typed), its logger, level and the releases spanned.
    A wording read from Kafka's source comes before one read only from class files, whose slots
    are typed by the words around them alone (``{any}`` where the source says ``{topic}``)."""
    cat = st.load()
    fam = matching.lineage(cat)
    pos = {r: i for i, r in enumerate(cat.releases)}
    out: dict[str, tuple[tuple[bool, int], _Text]] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for s in cat.statements:
        if not s.releases:
            continue
        f = fam[s.id]
        first[f] = min(first.get(f, 1 << 30), pos[s.first])
        last[f] = max(last.get(f, -1), pos[s.last])
        rank = (s.from_source, pos[s.last])
        if f not in out or rank > out[f][0]:
            out[f] = (rank, _Text(s.typed(), s.logger, s.level, s.first, s.last))
    return {
        f: _Text(v.template, v.logger, v.level, cat.releases[first[f]], cat.releases[last[f]])
        for f, (_, v) in out.items()
    }


_TEXT: dict[str, _Text] = {}


def _describe(key: str) -> str:
    if key.startswith("t:"):
        if not _TEXT:
            _TEXT.update(_catalogue_text())
        tid = key[2:]
        got = _TEXT.get(tid)
        return got.template if got else tid
    return key[2:]


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
    ex = con.sql(
        f"select key, file, line, message from (select key, file, line, message, t, ord, "
        f"row_number() over (partition by key order by t, ord) as r from {rel} join wanted using (key) where {side}) "
        f"where r <= {EXAMPLES} order by key, r"
    ).to_arrow_table()
    ex_text = pc.utf8_slice_codeunits(
        pc.replace_substring_regex(_plain(ex.column("message")), r"\n[\s\S]*", ""), 0, 200
    ).to_pylist()
    ex_key = _plain(ex.column("key")).to_pylist()
    ex_file, ex_line = ex.column("file").to_pylist(), ex.column("line").to_pylist()
    # the slot values: the first records of each changed template, on both sides
    vals = con.sql(
        f"select key, logger, message, {in_w} as w from (select key, logger, message, t, ord, "
        f"row_number() over (partition by key order by ord) as r from evt join wanted using (key) "
        f"where t > 0 and ({in_w} or {in_b}) and starts_with(key, 't:')) where r <= {VALUE_ROWS} order by key, ord"
    ).to_arrow_table()
    vkey = np.asarray(_plain(vals.column("key")).to_pylist(), dtype=object)
    if not _TEXT:
        _TEXT.update(_catalogue_text())
    out = []
    for c in sig:
        kind = kinds[int(c)]
        key = names[c]
        mine = agg[agg["key"] == key]
        tid = key[2:] if key.startswith("t:") else ""
        text = _TEXT.get(tid)
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
    vals = matching.values(_plain(t.column("logger")), _plain(t.column("message")))
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
