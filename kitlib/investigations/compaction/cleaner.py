"""The log cleaner's records (log-cleaner.log) -> ``cleaner_runs`` (one row per cleaned log, from
the statistics block) and ``cleaner_events`` (the per-run progress lines and the problems).

The statistics block is one multi-line record (see :mod:`kitlib.formats.logs.log4j`); its numbers
carry thousands separators, and an empty clean prints ``NaN``/``Infinity``. The wording is the
same from 1.0 to 4.1; the logger moved from ``kafka.log.LogCleaner`` to
``org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread`` / ``...Cleaner`` in 4.1.

Example:
    >>> parse_stats("[kafka-log-cleaner-thread-0]: \\n\\tLog cleaner thread 0 cleaned log t-3 (dirty section = [0, 9])")["dirty_end"]
    9
"""

from __future__ import annotations

import re
import weakref
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import arrow_messages, extractor, first_lines, first_rule, group_arrays, quotes

tables.declare(
    "cleaner_runs",
    "One row per log cleaned by the log cleaner (its statistics block), joined "
    "with the run's 'Beginning cleaning' and 'Building offset map' lines.",
    [
        ("ts", "ts", "when the run finished (the statistics block)"),
        ("thread", "int", "cleaner thread id"),
        ("log", "str", "log (partition directory) name, topic-partition"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("dirty_start", "int", "first dirty offset of this run"),
        ("dirty_end", "int", "offset the offset map reached (exclusive): the run cleaned up to here"),
        ("mb_processed", "float", "MiB of log read"),
        ("seconds", "float", "run time"),
        ("mb_per_s", "float", "MiB/s over the whole run"),
        ("mb_indexed", "float", "MiB scanned to build the offset map"),
        ("index_seconds", "float", "offset map phase"),
        ("index_pct", "float", "offset map phase, % of run time"),
        ("buffer_utilization_pct", "float", "dedupe buffer (offset map) utilization; ~90 % = load factor = full"),
        ("mb_cleaned", "float", "MiB copied by the cleaning phase"),
        ("clean_seconds", "float", "cleaning phase"),
        ("start_mb", "float", "size before (MiB)"),
        ("start_messages", "int", "records before"),
        ("end_mb", "float", "size after (MiB)"),
        ("end_messages", "int", "records after"),
        ("size_reduction_pct", "float", "% smaller"),
        ("fewer_messages_pct", "float", "% fewer records"),
        ("segments", "int", "segments in the offset map ('Building offset map ... for N segments')"),
        ("started", "ts", "'Beginning cleaning of log' time"),
        ("duration_s", "float", "started -> statistics block"),
    ],
)
tables.declare(
    "cleaner_events",
    "Log cleaner progress and problem lines, one per record.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "begin, offset_map, offset_map_done, cleaning, segment, swap, uncleanable, error, "
            "delayed, thread, manager, other",
        ),
        ("thread", "int", "cleaner thread id, when the line names one"),
        ("log", "str", "log name (topic-partition), when named"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("segments", "int", "segments (offset map lines)"),
        ("start_offset", "int", "offset range start (offset map lines)"),
        ("end_offset", "int", "offset range end, exclusive (offset map lines)"),
        ("level", "category", "log level"),
        ("message", "str", "the record's text (first line)"),
    ],
)

NUM = r"[-+]?(?:\d[\d,]*(?:\.\d+)?|NaN|Infinity)"
_S = {
    "head": re.compile(r"Log cleaner thread (\d+) cleaned log (\S+) \(dirty section = \[(\d+), (\d+)\]\)"),
    "proc": re.compile(rf"({NUM}) MB of log processed in ({NUM}) seconds \(({NUM}) MB/sec\)"),
    "index": re.compile(rf"Indexed ({NUM}) MB in ({NUM}) seconds \(({NUM}) Mb/sec, ({NUM})% of total time\)"),
    "buf": re.compile(rf"Buffer utilization: ({NUM})%"),
    "clean": re.compile(rf"Cleaned ({NUM}) MB in ({NUM}) seconds \(({NUM}) Mb/sec, ({NUM})% of total time\)"),
    "start": re.compile(rf"Start size: ({NUM}) MB \(({NUM}) messages\)"),
    "end": re.compile(rf"End size: ({NUM}) MB \(({NUM}) messages\)"),
    "red": re.compile(rf"({NUM})% size reduction \(({NUM})% fewer messages\)"),
}
_EVENTS = [
    ("begin", re.compile(r"Cleaner (\d+): Beginning cleaning of log (\S+?)\.?$")),
    (
        "offset_map",
        re.compile(
            r"Cleaner (\d+): Building offset map for log (\S+) for (\d+) segments in offset range \[(\d+), (\d+)\)"
        ),
    ),
    ("offset_map_done", re.compile(r"Cleaner (\d+): Offset map for log (\S+) complete")),
    ("cleaning", re.compile(r"Cleaner (\d+): Cleaning log (\S+) \(cleaning prior to")),
    ("segment", re.compile(r"Cleaner (\d+): Cleaning (?:segment \d+|LogSegment\(.*?\)) in log (\S+) into")),
    ("swap", re.compile(r"Cleaner (\d+): Swapping in cleaned segment .* in log (?:Log\(dir=\S*/)?([^/\s,)]+)")),
    (
        "uncleanable",
        re.compile(
            r"(?:kafka-log-cleaner-thread-(\d+)\]: )?Unexpected exception thrown when cleaning log .*?"
            r"Marking its partition \((\S+)\) as uncleanable"
        ),
    ),
    ("delayed", re.compile(r"kafka-log-cleaner-thread-(\d+)\]: \s*Cleanable partitions: \d+, Delayed partitions")),
    (
        "error",
        re.compile(
            r"kafka-log-cleaner-thread-(\d+)\][:,] Error due to|Failed to clean up log for (\S+)|"
            r"Failed to access checkpoint file|Stopping cleaning logs in dir"
        ),
    ),
    (
        "manager",
        re.compile(r"Resetting first dirty offset of (\S+)|The last checkpoint dirty offset for partition (\S+)"),
    ),
    (
        "thread",
        re.compile(
            r"kafka-log-cleaner-thread-(\d+)\]: (?:Starting|Stopped|Shutting down|Shutdown completed)|"
            r"Starting the log cleaner|Shutting down the log cleaner"
        ),
    ),
]
_LOGGERS: dict[str, Any] = dict(
    # 3.5+: the Java ShutdownableThread's "Error due to" is logged under the cleaner thread's own class
    loggers=[
        "kafka.log.LogCleaner",
        "kafka.log.LogCleanerManager$",
        "kafka.log.LogCleaner$",
        "kafka.log.LogCleaner$CleanerThread",
    ],
    prefixes=["org.apache.kafka.storage.internals.log.LogCleaner", "org.apache.kafka.storage.internals.log.Cleaner"],
)


def _num(s: str | None) -> float:
    if s is None:
        return np.nan
    s = s.replace(",", "")
    try:
        return float(s)
    except ValueError:
        return np.nan


def split_log(name: str) -> tuple[str, int | None]:
    """'orders-3' -> ('orders', 3): the partition is after the last '-'."""
    topic, _, p = name.rpartition("-")
    return (topic, int(p)) if p.isdigit() and topic else (name, None)


def parse_stats(message: str) -> dict | None:
    """The numbers of one statistics block (None if the message is not one)."""
    m = _S["head"].search(message)
    if not m:
        return None
    topic, part = split_log(m.group(2))
    r = {
        "thread": int(m.group(1)),
        "log": m.group(2),
        "topic": topic,
        "partition": part,
        "dirty_start": int(m.group(3)),
        "dirty_end": int(m.group(4)),
    }
    g = lambda k: _S[k].search(message)
    if x := g("proc"):
        r.update(mb_processed=_num(x.group(1)), seconds=_num(x.group(2)), mb_per_s=_num(x.group(3)))
    if x := g("index"):
        r.update(mb_indexed=_num(x.group(1)), index_seconds=_num(x.group(2)), index_pct=_num(x.group(4)))
    if x := g("buf"):
        r["buffer_utilization_pct"] = _num(x.group(1))
    if x := g("clean"):
        r.update(mb_cleaned=_num(x.group(1)), clean_seconds=_num(x.group(2)))
    if x := g("start"):
        r.update(start_mb=_num(x.group(1)), start_messages=_num(x.group(2)))
    if x := g("end"):
        r.update(end_mb=_num(x.group(1)), end_messages=_num(x.group(2)))
    if x := g("red"):
        r.update(size_reduction_pct=_num(x.group(1)), fewer_messages_pct=_num(x.group(2)))
    return r


def classify(message: str) -> dict:
    """Kind and fields of a non-statistics cleaner line."""
    first = message.split("\n", 1)[0]
    for kind, rx in _EVENTS:
        m = rx.search(first)
        if not m:
            continue
        r: dict[str, Any] = {"kind": kind}
        gs = [x for x in m.groups() if x is not None]
        if kind == "offset_map":
            r.update(
                thread=int(m.group(1)),
                log=m.group(2),
                segments=int(m.group(3)),
                start_offset=int(m.group(4)),
                end_offset=int(m.group(5)),
            )
        elif gs:
            if gs[0].isdigit():
                r["thread"] = int(gs[0])
                gs = gs[1:]
            if gs:
                r["log"] = gs[0]
        if r.get("log"):
            r["topic"], r["partition"] = split_log(r["log"])
        return r
    return {"kind": "other"}


def _thread_and_log(kind: str, groups: list[list], n: int) -> tuple[list, list]:
    """Thread id and log name per row from a rule's capture groups (as :func:`classify` reads them)."""
    threads: list[Any] = [None] * n
    logs: list[Any] = [None] * n
    for j, row in enumerate(zip(*groups) if groups else [()] * n):
        gs = [g for g in row if g is not None]
        if gs and gs[0].isdigit():
            threads[j] = int(gs[0])
            gs = gs[1:]
        if gs:
            logs[j] = gs[0]
    return threads, logs


SLICE = 65536  # rows classified at a time: Arrow's temporaries stay small however long the log


# what build_events read of the records it was given, for build_runs given the same records next
# (the two share a selection): (a weak reference to those records, the slice size, one parse per
# slice), see _events_slice
_READ: list = []


@extractor("cleaner_events", **_LOGGERS)
def build_events(events: pd.DataFrame) -> pd.DataFrame:
    parses: list = []
    if len(events) > SLICE:
        out = pd.concat(
            [_events_slice(events.iloc[i : i + SLICE], parses) for i in range(0, len(events), SLICE)],
            ignore_index=True,
        )
    else:
        out = _events_slice(events, parses)
    _READ[:] = [weakref.ref(events), SLICE, parses]
    return out


def _events_slice(events: pd.DataFrame, parses: list) -> pd.DataFrame:
    """:func:`build_events` of at most :data:`SLICE` records; what it read of them onto ``parses``:
    the rows not in a statistics block, the first rule (of :data:`_EVENTS`) each row's first line
    matches, and the groups the 'Beginning cleaning' and 'Building offset map' rules captured."""
    if not len(events):
        parses.append(None)
        return tables.empty("cleaner_events")
    msgs = arrow_messages(events)
    rows = np.flatnonzero(
        ~np.asarray(pc.match_substring_regex(msgs, _S["head"].pattern).to_numpy(zero_copy_only=False), bool)
    )
    first = first_lines(msgs.take(pa.array(rows)))
    which = first_rule(first, [rx.pattern for _, rx in _EVENTS])
    n = len(rows)
    kind = np.array([k for k, _ in _EVENTS] + ["other"], dtype=object)[np.where(which < 0, len(_EVENTS), which)]
    ints = {c: np.zeros(n, np.int64) for c in ("thread", "segments", "start_offset", "end_offset")}
    known = {c: np.zeros(n, bool) for c in ints}
    at, logs = [], []  # rows and their log names, rule by rule
    caps: dict[int, list[pa.Array]] = {}
    parses.append((rows, which, caps))
    for i, (k, rx) in enumerate(_EVENTS):
        sel = np.flatnonzero(which == i)
        if not len(sel):
            continue
        gs = caps[i] = group_arrays(first.take(pa.array(sel)), rx.pattern)
        if not gs:
            continue
        if k == "offset_map":
            for c, g in zip(("thread", "segments", "start_offset", "end_offset"), (gs[0], gs[2], gs[3], gs[4])):
                _put(ints[c], known[c], sel, g)
            log = gs[1]
        else:
            thread, log = _thread_and_log_arrays(gs)
            _put(ints["thread"], known["thread"], sel, thread)
        at.append(sel)
        logs.append(log)
    log_col = _scatter(n, at, logs)
    topic, part = _split_logs(log_col)
    ev = events[["ts", "level", "host", "file", "line"]].iloc[rows].reset_index(drop=True)

    def opt(c: str) -> pd.arrays.IntegerArray:
        return pd.arrays.IntegerArray(ints[c], ~known[c])

    return pd.DataFrame(
        {
            "ts": ev["ts"],
            "kind": kind,
            "thread": opt("thread"),
            "log": pd.array(log_col, dtype=pd.StringDtype("pyarrow")),
            "segments": opt("segments"),
            "start_offset": opt("start_offset"),
            "end_offset": opt("end_offset"),
            "topic": pd.array(topic, dtype=pd.StringDtype("pyarrow")),
            "partition": pd.arrays.IntegerArray(*part),
            "level": ev["level"].astype("string"),
            "message": pd.array(quotes(first), dtype=pd.StringDtype("pyarrow")),
            "host": ev["host"].astype("string"),
            "file": ev["file"].astype("string"),
            "line": ev["line"],
        }
    )


def _put(values: np.ndarray, known: np.ndarray, rows: np.ndarray, digits: pa.Array) -> None:
    """Write a column of digit strings (null: not known) into ``values`` at ``rows``."""
    ok = np.asarray(pc.is_valid(digits).to_numpy(zero_copy_only=False), bool)
    values[rows[ok]] = np.asarray(pc.cast(digits.filter(pa.array(ok)), pa.int64()).to_numpy(zero_copy_only=False))
    known[rows[ok]] = True


def _thread_and_log_arrays(groups: list[pa.Array]) -> tuple[pa.Array, pa.Array]:
    """:func:`_thread_and_log` over whole columns: of the groups that took part, the first is the
    thread when it is all digits, and the log is the next one (else the first)."""
    n = len(groups[0])
    valid = np.stack([np.asarray(pc.is_valid(g).to_numpy(zero_copy_only=False), bool) for g in groups])
    first_at = np.where(valid.any(axis=0), valid.argmax(axis=0), len(groups))
    lead = pc.coalesce(*groups)
    is_thread = pc.fill_null(pc.utf8_is_digit(lead), False)
    null = pa.nulls(n, lead.type)
    after = [pc.if_else(pa.array(first_at < i), g, null) for i, g in enumerate(groups)]
    log = pc.if_else(is_thread, pc.coalesce(*after), lead)
    return pc.if_else(is_thread, lead, null), log


def _scatter(n: int, rows: list[np.ndarray], parts: list[pa.Array]) -> pa.Array:
    """One column of ``n`` strings from pieces ``parts`` that go at ``rows`` (null elsewhere)."""
    if not parts:
        return pa.nulls(n, pa.string())
    values = pa.concat_arrays([p.cast(pa.large_string()) for p in parts] + [pa.nulls(1, pa.large_string())])
    where = np.full(n, len(values) - 1, np.int64)
    where[np.concatenate(rows)] = np.arange(len(values) - 1)
    return values.take(pa.array(where))


def _split_logs(logs: pa.Array) -> tuple[pa.Array, tuple[np.ndarray, np.ndarray]]:
    """:func:`split_log` over a column: topic (the name itself when it does not end in -<digits>),
    and the partition as (values, missing) for an IntegerArray."""
    got = pc.extract_regex(logs, r"^(?P<t>.+)-(?P<p>\d+)$")
    hit = pc.is_valid(got)
    topic = pc.if_else(hit, pc.struct_field(got, "t"), logs)
    p = pc.struct_field(got, "p")
    missing = ~np.asarray(pc.fill_null(hit, False).to_numpy(zero_copy_only=False), bool)
    values = np.zeros(len(logs), np.int64)
    values[~missing] = np.asarray(
        pc.cast(p.filter(pc.fill_null(hit, False)), pa.int64()).to_numpy(zero_copy_only=False)
    )
    return topic, (values, missing)


def _pair_runs(
    hosts: np.ndarray, logs: np.ndarray, segments: np.ndarray, at: np.ndarray, run_logs: list
) -> tuple[list, list]:
    """For each statistics block (rows ``at``, of logs ``run_logs``): the row of the last
    'Beginning cleaning' line of its host and log since that log's previous statistics block
    (-1: none), and the segments of the last 'Building offset map' line likewise (None). That
    line is the block's predecessor among its host and log's lines of the two kinds, found by
    sorting them all at once."""
    lines = np.flatnonzero(logs != None)  # noqa: E711 - elementwise on an object array
    names = np.concatenate([logs[lines], np.asarray(run_logs, dtype=object)])
    codes, _ = pd.factorize(pd.Series(names, dtype=object))
    rows = np.concatenate([lines, at])
    host = hosts[rows]
    kind = np.concatenate([np.where(segments[lines] < 0, 0, 1), np.full(len(at), 2)])  # begin, map, stats
    started = np.full(len(at), -1, np.int64)
    mapped: list = [None] * len(at)
    for which in (0, 1):
        pick = np.flatnonzero(kind != 1 - which)
        order = pick[np.lexsort((rows[pick], codes[pick], host[pick]))]
        prev = np.concatenate([[-1], order[:-1]])
        is_stats = kind[order] == 2
        p = prev[is_stats]
        ok = (p >= 0) & (kind[np.maximum(p, 0)] == which)
        ok &= (host[np.maximum(p, 0)] == host[order[is_stats]]) & (codes[np.maximum(p, 0)] == codes[order[is_stats]])
        slot = order[is_stats] - len(lines)  # index of the block among ``at``
        if which == 0:
            started[slot[ok]] = rows[p[ok]]
        else:
            for k, q in zip(slot[ok].tolist(), p[ok].tolist()):
                mapped[k] = int(segments[rows[q]])
    return started.tolist(), mapped


@extractor("cleaner_runs", **_LOGGERS)
def build_runs(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("cleaner_runs")
    msgs = arrow_messages(events)
    n = len(msgs)
    stats = np.zeros(n, bool)
    logs = np.full(n, None, object)  # the log a 'Beginning cleaning' / 'Building offset map' line names
    segments = np.full(n, -1, np.int64)  # -1: a 'Beginning cleaning' line; >= 0: an offset map line
    # build_events read these records, in slices of the same size
    read = _READ[2] if _READ and _READ[0]() is events and _READ[1] == SLICE else None
    _READ.clear()
    for i in range(0, n, SLICE):
        part = msgs.slice(i, SLICE)
        if read is not None:  # the same rows and groups as read below, from build_events' reading
            rows, which, caps = read[i // SLICE]
            st = np.ones(len(part), bool)
            st[rows] = False
            w = np.full(len(part), -1, np.int64)
            w[rows] = np.where(which < 2, which, -1)
        else:
            st = np.asarray(pc.match_substring_regex(part, _S["head"].pattern).to_numpy(zero_copy_only=False), bool)
            first = first_lines(part)
            w = first_rule(first, [_EVENTS[0][1].pattern, _EVENTS[1][1].pattern])  # begin, offset_map
            w[st] = -1
        for k in (0, 1):
            at = np.flatnonzero(w == k)
            if len(at):
                g = caps[k] if read is not None else group_arrays(first.take(pa.array(at)), _EVENTS[k][1].pattern)
                logs[at + i] = np.asarray(g[1].to_numpy(zero_copy_only=False), dtype=object)
                if k == 1:
                    segments[at + i] = np.asarray(pc.cast(g[2], pa.int64()).to_numpy(zero_copy_only=False))
        stats[i : i + len(st)] = st
    hosts, _ = pd.factorize(events["host"])
    rows, at_stats = [], []
    for j in np.flatnonzero(stats).tolist():  # one statistics block per run
        run = parse_stats(msgs[j].as_py())
        if run is not None:
            run["row"] = j
            rows.append(run)
            at_stats.append(j)
    if not rows:
        return tables.empty("cleaner_runs")
    started, mapped_segs = _pair_runs(hosts, logs, segments, np.asarray(at_stats, np.int64), [r["log"] for r in rows])
    df = pd.DataFrame(rows)
    at = df.pop("row").to_numpy()
    ts = events["ts"].reset_index(drop=True)
    begin_at = np.asarray(started)
    df["started"] = (
        ts.iloc[np.where(begin_at >= 0, begin_at, 0)].where(begin_at >= 0).to_numpy()
        if (begin_at >= 0).any()
        else pd.NaT
    )
    df["started"] = pd.to_datetime(df["started"], utc=True)
    df["segments"] = mapped_segs
    df["ts"] = ts.iloc[at].to_numpy()
    df["duration_s"] = (df["ts"] - df["started"]).dt.total_seconds()
    for c in ("host", "file", "line"):
        df[c] = events[c].iloc[at].to_numpy()
    return df
