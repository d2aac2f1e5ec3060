"""Kafka Connect offset commits -> the ``commits`` table (one row per commit attempt per task).

Source tasks commit on the ``SourceTaskOffsetCommitter`` thread every ``offset.flush.interval.ms``;
sink tasks commit on their own thread through the consumer. The wording changed over time:

* Kafka 2.0-3.0.0 (source): ``Committing offsets``, ``flushing N outstanding messages for offset
  commit``, then ``Failed to flush, timed out while waiting for producer to flush outstanding N
  messages`` + ``Failed to commit offsets`` or ``Finished commitOffsets successfully in N ms``.
* Kafka 3.0.1+ (source): ``Committing offsets for N acknowledged messages``, at DEBUG ``There are
  currently N pending messages spread across M source partitions ...``, then ``Timed out waiting
  to flush offsets to storage; ...`` / ``Failed to flush offsets to storage`` / ``Failed to commit
  offsets`` or ``Finished offset commitOffsets successfully in N ms``.
* Sink tasks (all versions): ``Committing offsets asynchronously using sequence number N: ...``,
  ``Finished offset commit successfully in N ms ...``, ``Commit of offsets timed out``,
  ``Commit of offsets threw an unexpected exception ...``, ``Offset commit failed, rewinding ...``.

Lines are grouped into attempts per (host, connector, task): a start line opens an attempt, the
outstanding/pending counts and the outcome lines join it, and a line that belongs to an earlier
phase than what the attempt has already seen (a new ``Committing offsets`` after an outcome)
opens the next one. The task comes from Connect's MDC context ``[conn|task-0|offsets]`` or,
in 2.x logs without it, from ``WorkerSourceTask{id=conn-0}`` (split on the last ``-``).

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2021-12-01 21:12:41.232", "2021-12-01 21:12:41.232",
    ...     "2021-12-01 21:12:46.232", "2021-12-01 21:12:46.233"], utc=True),
    ...   "level": ["INFO", "INFO", "ERROR", "ERROR"], "message": [
    ...     "WorkerSourceTask{id=my-connector-0} Committing offsets",
    ...     "WorkerSourceTask{id=my-connector-0} flushing 48437 outstanding messages for offset commit",
    ...     "WorkerSourceTask{id=my-connector-0} Failed to flush, timed out while waiting for producer to flush outstanding 31120 messages",
    ...     "WorkerSourceTask{id=my-connector-0} Failed to commit offsets"],
    ...   "host": "w1", "file": "w1/connect.log", "line": [1, 2, 3, 4]})
    >>> row = build_commits(ev).iloc[0]
    >>> row.connector, int(row.task), int(row.outstanding), int(row.remaining), row.outcome
    ('my-connector', 0, 48437, 31120, 'timeout')
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import arrow_messages, extractor, first_lines, first_rule

tables.declare(
    "commits",
    "Kafka Connect offset-commit attempts: one row per attempt per task, "
    "built from the worker log (Kafka 2.x-4.x wording, source and sink tasks).",
    [
        ("ts", "ts", "time of the attempt's first line (UTC)"),
        ("connector", "category", "connector name"),
        ("task", "int", "task number"),
        ("kind", "category", "'source' or 'sink'"),
        (
            "outstanding",
            "int",
            "messages not yet acknowledged when the commit started: "
            "'flushing N outstanding messages' (2.x) or 'N pending messages' (3.x, DEBUG)",
        ),
        (
            "acknowledged",
            "int",
            "messages whose offsets this commit writes ('Committing offsets for N acknowledged messages', 3.x+)",
        ),
        ("remaining", "int", "messages still outstanding when the flush timed out (2.x)"),
        ("partitions", "int", "source partitions holding pending messages (3.x, DEBUG)"),
        (
            "outcome",
            "category",
            "'success', 'timeout', 'failed', or 'unknown' (no outcome "
            "line and no later attempt of the task in the log)",
        ),
        ("duration_ms", "float", "commit time the log states ('... successfully in N ms')"),
        ("elapsed_ms", "float", "time between the attempt's first and last line"),
        ("nlines", "int", "log records grouped into this attempt"),
        ("message", "str", "the attempt's most telling line (the failure, else the count)"),
    ],
)

LOGGERS = (
    "org.apache.kafka.connect.runtime.WorkerSourceTask",
    "org.apache.kafka.connect.runtime.AbstractWorkerSourceTask",
    "org.apache.kafka.connect.runtime.ExactlyOnceWorkerSourceTask",
    "org.apache.kafka.connect.runtime.SourceTaskOffsetCommitter",
    "org.apache.kafka.connect.runtime.WorkerSinkTask",
)

_CTX = re.compile(r"^\[(?P<conn>[^|\]]+)\|(?:worker|validate|task-(?P<task>\d+))(?:\|\w+)?\] ")
_ID = re.compile(r"(?P<cls>\w*Worker(?:Source|Sink)Task)\{id=(?P<id>[^}]+)-(?P<task>\d+)\}")

START, MEASURE, OUTCOME = 0, 1, 2
# (regex, phase, kind or None, what it sets)
_RULES: list[tuple[re.Pattern, int, str | None, str]] = [
    (re.compile(r"Committing offsets for (?P<n>\d+) acknowledged messages"), START, "source", "acknowledged"),
    (re.compile(r"Committing offsets (?:a?synchronously) using sequence number"), START, "sink", "start"),
    (re.compile(r"Committing offsets\s*$"), START, None, "start"),
    (re.compile(r"flushing (?P<n>\d+) outstanding messages for offset commit"), MEASURE, "source", "outstanding"),
    (
        re.compile(r"There are currently (?P<n>\d+) pending messages spread across (?P<p>\d+) source partitions"),
        MEASURE,
        "source",
        "pending",
    ),
    (re.compile(r"There are currently no pending messages"), MEASURE, "source", "nopending"),
    (
        re.compile(r"Either no records were produced by the task since the last offset commit"),
        MEASURE,
        "source",
        "nopending",
    ),
    (
        # 0.10-3.0 "... outstanding N messages"; 0.9 "... outstanding messages, N left (...)"
        re.compile(
            r"timed out while waiting for producer to flush outstanding (?:messages, )?(?P<n>\d+) (?:messages|left)"
        ),
        OUTCOME,
        "source",
        "timeout_remaining",
    ),
    (
        re.compile(r"Timed out (?:waiting to flush offsets to storage|while waiting for previous offset flush)"),
        OUTCOME,
        "source",
        "timeout",
    ),
    # 0.9-0.11: "Commit of WorkerSinkTask{id=...} offsets timed out"
    (re.compile(r"Commit of (?:\S+ )?offsets timed out"), OUTCOME, "sink", "timeout"),
    (re.compile(r"Finished (?:offset )?commitOffsets successfully in (?P<ms>\d+) ms"), OUTCOME, "source", "success"),
    (re.compile(r"Finished offset commit successfully in (?P<ms>\d+) ms"), OUTCOME, "sink", "success"),
    (
        re.compile(r"Commit of (?:\S+ )?offsets threw an unexpected exception|Offset commit failed"),
        OUTCOME,
        "sink",
        "failed",
    ),
    (
        re.compile(
            r"Failed to flush offsets to storage|Flush of offsets threw an unexpected exception"
            r"|Failed to commit (?:offsets|producer transaction)|Interrupted while (?:flushing messages|waiting for previous offset flush)"
            r"|Flush of offsets interrupted|Exception thrown while calling task\.commit\(\)|Unhandled exception when committing"
        ),
        OUTCOME,
        None,
        "failed",
    ),
]
_PREFILTER = r"[Cc]ommit|[Ff]lush|pending messages|Either no records"
_OUTCOME_RANK = {"success": 0, "failed": 1, "timeout": 2}
# an attempt never spans more than this (offset.flush.timeout.ms is seconds, not minutes)
MAX_ATTEMPT = pd.Timedelta(minutes=5)


def classify(message: str):
    """Which commit step a Connect log message is: (connector, task, kind, phase, what, numbers),
    or None when it is not an offset-commit line.

    Example:
        >>> classify("[orders|task-0|offsets] WorkerSourceTask{id=orders-0} Committing offsets for 12 acknowledged messages")[:5]
        ('orders', 0, 'source', 0, 'acknowledged')
    """
    m = _CTX.match(message)
    body = message[m.end() :] if m else message
    first = body.split("\n", 1)[0]
    for rx, phase, kind, what in _RULES:
        hit = rx.search(first)
        if not hit:
            continue
        idm = _ID.search(first)
        conn = task = None
        if m and m.group("task") is not None:
            conn, task = m.group("conn"), int(m.group("task"))
        elif idm:
            conn, task = idm.group("id"), int(idm.group("task"))
        if conn is None:
            return None
        if kind is None:
            kind = "sink" if idm and "Sink" in idm.group("cls") else "source"
        nums = {k: int(v) for k, v in hit.groupdict().items() if v is not None}
        return conn, task, kind, phase, what, nums
    return None


def classify_many(messages) -> dict:
    """:func:`classify` for a whole column at once with Arrow's regex kernels, as numpy arrays
    (no Python object per row): ``rule`` (index into the rules, -1: not a commit line),
    ``conn`` (code into ``conns``, -1: no connector), ``task`` (-1: none), ``kind`` (0 source,
    1 sink), and ``n``, ``p``, ``ms`` (NaN where the line has no such number).

    Example:
        >>> c = classify_many(["[orders|task-2|offsets] WorkerSourceTask{id=orders-2} Committing offsets for 5 acknowledged messages",
        ...                    "unrelated"])
        >>> c["rule"].tolist(), c["conns"][c["conn"][0]], c["task"].tolist(), c["n"].tolist()[0]
        ([0, -1], 'orders', [2, -1], 5.0)
    """
    arr = pa.array(messages, pa.large_string()) if not isinstance(messages, (pa.Array, pa.ChunkedArray)) else messages
    first = first_lines(arr)
    total = len(first)
    rule = first_rule(first, [rx.pattern for rx, _, _, _ in _RULES])
    out: dict[str, Any] = {
        "rule": rule,
        "conn": np.full(total, -1, np.int32),
        "conns": [],
        "task": np.full(total, -1, np.int64),
        "kind": np.zeros(total, np.int8),
        **{k: np.full(total, np.nan) for k in ("n", "p", "ms")},
    }
    rows = np.flatnonzero(rule >= 0)
    if not len(rows):
        return out
    sub = first if len(rows) == total else first.take(pa.array(rows))  # (often every line is one)
    ctx = pc.extract_regex(sub, _CTX.pattern)

    def field(struct, name):  # "" (group did not take part) and no match both become null
        v = pc.struct_field(struct, name)
        return pc.if_else(pc.and_kleene(pc.is_valid(struct), pc.not_equal(v, "")), v, pa.scalar(None, v.type))

    conn, task = field(ctx, "conn"), field(ctx, "task")
    use_ctx = np.asarray(pc.and_(pc.is_valid(conn), pc.is_valid(task)).to_numpy(zero_copy_only=False), bool)
    fixed = np.array([{"source": 0, "sink": 1, None: -1}[k] for _, _, k, _ in _RULES], np.int8)[rule[rows]]
    sink_id = np.zeros(len(rows), bool)
    # the task's class name only where the MDC context does not name the task, or the rule leaves
    # the kind open (anchored behind a lazy prefix: the leftmost match, in one forward pass)
    need = ~use_ctx | (fixed < 0)
    if need.any():
        ids = pc.extract_regex(sub.filter(pa.array(need)), "^(?s:.*?)(?:" + _ID.pattern + ")")
        other = pa.array(~use_ctx[need])
        if not use_ctx.all():
            conn = pc.replace_with_mask(conn, pa.array(~use_ctx), field(ids, "id").filter(other))
            task = pc.replace_with_mask(task, pa.array(~use_ctx), field(ids, "task").filter(other))
        sink_id[need] = np.asarray(
            pc.fill_null(pc.match_substring(field(ids, "cls"), "Sink"), False).to_numpy(zero_copy_only=False), bool
        )
    enc = pc.dictionary_encode(conn)
    out["conns"] = enc.dictionary.to_pylist()
    out["conn"][rows] = pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False)
    out["task"][rows] = pc.fill_null(pc.cast(task, pa.int64()), -1).to_numpy(zero_copy_only=False)
    out["kind"][rows] = np.where(fixed >= 0, fixed, sink_id.astype(np.int8))
    r_of = rule[rows]
    for i, (rx, _, _, _) in enumerate(_RULES):
        sel = np.flatnonzero(r_of == i)
        if not rx.groupindex or not len(sel):
            continue
        got = _numbers(sub if len(sel) == len(rows) else sub.take(pa.array(sel)), rx.pattern)
        for g, v in got.items():
            out[g][rows[sel]] = pc.cast(v, pa.float64()).to_numpy(zero_copy_only=False)
    return out


_LEAD = re.compile(r"^[A-Za-z ]{8,}")  # a plain phrase a rule's pattern begins with


def _numbers(texts: pa.Array, pattern: str) -> dict[str, pa.Array]:
    """The named groups of ``pattern`` in texts that all match it, as at its leftmost match. A
    pattern beginning with a plain phrase is read after the phrase's first occurrence, anchored
    there (a match begins with the phrase, so the first occurrence that is followed by the rest
    is the leftmost match): a short anchored pass instead of a search; the texts where the rest
    does not follow the first occurrence are searched whole."""
    full = "^(?s:.*?)(?:" + pattern + ")"
    lead = _LEAD.match(pattern)
    if lead is None or "|" in pattern:
        got = pc.extract_regex(texts, full)
        return {g: pc.struct_field(got, g) for g in re.compile(pattern).groupindex}
    cut = len(lead.group(0)) - (pattern[len(lead.group(0)) : len(lead.group(0)) + 1] in ("*", "+", "?", "{"))
    rest = pc.list_element(pc.split_pattern(texts, pattern[:cut], max_splits=1), 1)
    got = pc.extract_regex(rest, "^(?:" + pattern[cut:] + ")")
    out = {g: pc.struct_field(got, g) for g in re.compile(pattern).groupindex}
    missed = pc.invert(pc.is_valid(got))
    if pc.any(missed).as_py():
        whole = pc.extract_regex(texts.filter(missed), full)
        out = {g: pc.replace_with_mask(v, missed, pc.struct_field(whole, g)) for g, v in out.items()}
    return out


def _classify_in_slices(msgs: pa.Array, size: int = 65536) -> dict:
    """:func:`classify_many` slice by slice (its Arrow temporaries stay small however long the
    log), with connector codes made common to all slices."""
    parts = [classify_many(msgs.slice(i, size)) for i in range(0, len(msgs), size)] or [classify_many(msgs)]
    names: dict[str, int] = {}
    for p in parts:
        remap = np.array([names.setdefault(n, len(names)) for n in p["conns"]] + [-1], np.int32)
        p["conn"] = remap[p["conn"]]  # -1 indexes the trailing -1
    out: dict[str, Any] = {
        k: np.concatenate([p[k] for p in parts]) for k in ("rule", "conn", "task", "kind", "n", "p", "ms")
    }
    out["conns"] = list(names)
    return out


def _codes(s: pd.Series) -> tuple[np.ndarray, list]:
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.codes.to_numpy(), list(s.cat.categories)
    codes, uniques = pd.factorize(s)
    return codes, list(uniques)


# per rule: its phase, and what it sets (codes into _WHAT)
_WHAT = (
    "start",
    "acknowledged",
    "outstanding",
    "pending",
    "nopending",
    "timeout_remaining",
    "timeout",
    "success",
    "failed",
)
_PHASE_OF = np.array([phase for _, phase, _, _ in _RULES], np.int8)
_WHAT_OF = np.array([_WHAT.index(what) for _, _, _, what in _RULES], np.int8)
# an outcome's rank (success 0 < failed 1 < timeout 2: the worst one wins), -1 for the other lines
_RANK_OF = np.array(
    [2 if w.startswith("timeout") else _OUTCOME_RANK.get(w, -1) for w in (_RULES[i][3] for i in range(len(_RULES)))],
    np.int8,
)
# columns of the attempts matrix: first row, last row, outstanding, acknowledged, remaining,
# partitions, outcome, duration_ms, nlines, message row (-1 = not known)
FIRST, LAST, OUTS, ACK, REM, PART, OUT, DUR, NL, MSG = range(10)


def _attempts(hosts, conns, tasks, kinds, rules, ts, ns, ps, mss) -> np.ndarray:
    """The commit lines (one entry per line, in record order) grouped into attempts per (host,
    connector, task, kind), as a matrix of one row per attempt (columns FIRST..MSG; rows index
    the lines), in the order the attempts end (the one ending first first; those still open at
    the end of the log last, by their first line).

    An attempt's lines have phases that never go down and at most one measure line (all measure
    lines are of one phase), so a line opens a new attempt exactly when its phase is below the
    previous line's of the same task, or both are measure lines, or the attempt it would join
    began more than MAX_ATTEMPT before it: all decided on whole columns (the last only where an
    attempt runs that long, a loop over those few)."""
    n = len(rules)
    j = np.arange(n)
    by_key = np.lexsort((j, kinds, tasks, conns, hosts))  # each task's lines, in record order
    key = np.stack([hosts[by_key], conns[by_key], tasks[by_key], kinds[by_key]])
    new_key = np.ones(n, bool)
    new_key[1:] = (key[:, 1:] != key[:, :-1]).any(axis=0)
    ph = _PHASE_OF[rules[by_key]]
    prev = np.concatenate([[-1], ph[:-1]])
    split = new_key | (ph < prev) | ((ph == MEASURE) & (prev == MEASURE))
    t = ts[by_key]
    max_ns = MAX_ATTEMPT.value
    # an attempt older than MAX_ATTEMPT takes no more lines: where a task's lines come in time
    # order, a gap that long between two of them always begins a new attempt; then, attempt by
    # attempt, its first line too late for it begins the next one (a few rounds, all attempts at once)
    gap = np.diff(t) > max_ns
    if ((np.diff(t) >= 0) | new_key[1:]).all():
        split[1:] |= gap
    while True:
        starts = np.flatnonzero(split)
        seg = np.cumsum(split) - 1
        late = np.flatnonzero(t - t[starts][seg] > max_ns)
        if not len(late):
            break
        split[late[np.insert(seg[late][1:] != seg[late][:-1], 0, True)]] = True
    aid = np.cumsum(split) - 1  # attempt of each line (in by_key order)
    count = len(starts)
    ends = np.append(starts[1:], n)
    m = np.full((count, 10), -1, np.int64)
    m[:, FIRST] = by_key[starts]
    m[:, LAST] = by_key[ends - 1]
    m[:, NL] = ends - starts
    m[:, MSG] = m[:, FIRST]
    what = _WHAT_OF[rules[by_key]]

    def last(mask: np.ndarray, col: int, values: np.ndarray) -> None:
        """Set ``col`` of each attempt to ``values`` at its last line where ``mask`` holds."""
        at = np.flatnonzero(mask)
        if len(at):
            at = at[np.append(aid[at][1:] != aid[at][:-1], True)]
            m[aid[at], col] = values[at]

    lines = by_key
    last(what == _WHAT.index("acknowledged"), ACK, ns[lines])
    last(what == _WHAT.index("outstanding"), MSG, lines)
    measure = ph == MEASURE
    last(measure, OUTS, np.where(what == _WHAT.index("nopending"), 0, ns[lines]))
    last(what == _WHAT.index("pending"), PART, ps[lines])
    last(what == _WHAT.index("timeout_remaining"), REM, ns[lines])
    rank = _RANK_OF[rules[by_key]]
    outcome = rank >= 0
    last(outcome & (mss[lines] >= 0), DUR, mss[lines])
    at = np.flatnonzero(outcome)
    if len(at):
        np.maximum.at(m[:, OUT], aid[at], rank[at].astype(np.int64))
        worst = at[(rank[at] == m[aid[at], OUT]) & (m[aid[at], OUT] > 0)]  # the lines of the worst outcome
        worst = worst[np.insert(aid[worst][1:] != aid[worst][:-1], 0, True)]  # the first of them
        m[aid[worst], MSG] = lines[worst]
    # attempts end when the next of their task begins; those open at the end of the log come last
    nxt = np.append(starts[1:], n)
    ended_by = np.where((nxt < n) & ~new_key[np.minimum(nxt, n - 1)], by_key[np.minimum(nxt, n - 1)], n + m[:, FIRST])
    return m[np.argsort(ended_by, kind="stable")]


@extractor("commits", loggers=LOGGERS)
def build_commits(events: pd.DataFrame) -> pd.DataFrame:
    """Group offset-commit log records into one row per attempt (see the module doc)."""
    if not len(events):
        return tables.empty("commits")
    # cheap vectorised pre-filter: most task records are not about commits
    col = pa.array(events["message"].astype("string").array, pa.large_string())
    pre = np.flatnonzero(np.asarray(pc.match_substring_regex(col, _PREFILTER).to_numpy(zero_copy_only=False), bool))
    del col
    msgs = arrow_messages(events, pre)
    c = _classify_in_slices(msgs)
    keep = np.flatnonzero((c["rule"] >= 0) & (c["conn"] >= 0))  # rows of msgs that are commit lines
    if not len(keep):
        return tables.empty("commits")
    host_codes, host_names = _codes(events["host"])
    ts = pd.DatetimeIndex(events["ts"]).as_unit("ns").asi8[pre[keep]]
    conns, tasks, kinds = (x[keep] for x in (c["conn"], c["task"], c["kind"]))
    rules = c["rule"][keep]
    ns, ps, mss = (np.where(np.isnan(c[k][keep]), -1, c[k][keep]).astype(np.int64) for k in ("n", "p", "ms"))
    m = _attempts(host_codes[pre[keep]], conns, tasks, kinds, rules, ts, ns, ps, mss)
    first_row, last_row = m[:, FIRST], m[:, LAST]
    at = pre[keep[first_row]]  # row in events of each attempt's first line
    # one ordering, no DataFrame sorts: by time, then host, connector, task, line
    conn_of = conns[first_row]
    task_of, kind_of, host_of = tasks[first_row], kinds[first_row], host_codes[at]
    file_codes, file_names = _codes(events["file"])
    line_of = events["line"].to_numpy(dtype=np.int64, na_value=-1)[at]
    host_rank = np.argsort(np.argsort(np.array(host_names, dtype=object)))[host_of]
    conn_rank = np.argsort(np.argsort(np.array(c["conns"], dtype=object)))[conn_of]
    t0 = ts[first_row]
    # an attempt without an outcome line: the failure lines are ERROR and always logged, so a
    # later attempt of the same task means this one went through; the last one is unknown
    by_task = np.lexsort((line_of, t0, kind_of, task_of, conn_rank, host_rank))
    g = np.stack([host_rank, conn_rank, task_of, kind_of])[:, by_task]
    last = np.ones(len(by_task), bool)
    last[:-1] = (g[:, 1:] != g[:, :-1]).any(axis=0)
    has_later = np.empty(len(by_task), bool)
    has_later[by_task] = ~last
    # codes into _OUTCOMES: no outcome line -> success (a later attempt) or unknown
    outcomes = np.where(m[:, OUT] >= 0, m[:, OUT], np.where(has_later, 0, 3))
    order = np.lexsort((line_of, task_of, conn_rank, host_rank, t0))
    text = pa.chunked_array(
        [
            _first_line_400(msgs.take(pa.array(rows)))
            for rows in np.array_split(keep[m[order, MSG]], max(1, len(order) // 65536))
        ],
        type=msgs.type,
    )

    def opt(col):  # -1 -> NA
        v = m[order, col]
        return pd.arrays.IntegerArray(np.where(v >= 0, v, 0), v < 0)

    dur = m[order, DUR]
    return pd.DataFrame(
        {
            "ts": pd.to_datetime(t0[order].view("M8[ns]"), utc=True),
            "connector": _category(conn_of[order], c["conns"]),
            "task": task_of[order],
            "kind": _category(kind_of[order], ["source", "sink"]),
            "outstanding": opt(OUTS),
            "acknowledged": opt(ACK),
            "remaining": opt(REM),
            "partitions": opt(PART),
            "outcome": _category(outcomes[order], _OUTCOMES),
            "duration_ms": np.where(dur >= 0, dur, np.nan),
            "elapsed_ms": (ts[last_row[order]] - t0[order]) / 1e6,
            "nlines": m[order, NL],
            "message": pd.array(text, dtype=pd.StringDtype("pyarrow")),
            "host": _category(np.where(host_of < 0, len(host_names) - 1, host_of)[order], host_names),
            "file": _category(file_codes[at[order]], file_names),
            "line": line_of[order],
        }
    )


_OUTCOMES = ["success", "failed", "timeout", "unknown"]


def _category(codes: np.ndarray, names) -> pd.Categorical:
    """The values ``names[codes]`` (-1: NA) as the categorical :func:`kitlib.tables.conform`
    makes of them (the values present as string categories, sorted), with no Python string
    made per row.

    Example:
        >>> _category(np.array([1, 0, 1, -1]), ["b", "a", "c"]).tolist()
        ['a', 'b', 'a', <NA>]
    """
    names = np.asarray(list(names), dtype=object)
    used = np.unique(codes[codes >= 0])
    present = names[used]
    order = np.argsort(present, kind="stable")
    remap = np.full(len(names) + 1, -1, np.int64)  # the last entry: -1 stays -1
    remap[used[order]] = np.arange(len(used))
    return pd.Categorical.from_codes(remap[codes], dtype=pd.CategoricalDtype(pd.Index(present[order], dtype="string")))


def _first_line_400(texts: pa.Array) -> pa.Array:
    """:func:`first_line` for an Arrow array."""
    text = first_lines(texts)
    long = pc.greater(pc.utf8_length(text), 400)
    if not pc.any(long).as_py():
        return text
    cut = pc.utf8_slice_codeunits(text, 0, 400)
    return pc.if_else(long, pc.binary_join_element_wise(cut, pa.scalar("…", cut.type), pa.scalar("", cut.type)), text)


def first_line(message) -> str:
    """The first line of a log message (stack traces and maps stay out of the table)."""
    s = str(message).split("\n", 1)[0]
    return s if len(s) <= 400 else s[:400] + "…"
