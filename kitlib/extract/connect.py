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

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor

tables.declare("commits", "Kafka Connect offset-commit attempts: one row per attempt per task, "
               "built from the worker log (Kafka 2.x-4.x wording, source and sink tasks).", [
                   ("ts", "ts", "time of the attempt's first line (UTC)"),
                   ("connector", "category", "connector name"),
                   ("task", "int", "task number"),
                   ("kind", "category", "'source' or 'sink'"),
                   ("outstanding", "int", "messages not yet acknowledged when the commit started: "
                    "'flushing N outstanding messages' (2.x) or 'N pending messages' (3.x, DEBUG)"),
                   ("acknowledged", "int", "messages whose offsets this commit writes "
                    "('Committing offsets for N acknowledged messages', 3.x+)"),
                   ("remaining", "int", "messages still outstanding when the flush timed out (2.x)"),
                   ("partitions", "int", "source partitions holding pending messages (3.x, DEBUG)"),
                   ("outcome", "category", "'success', 'timeout', 'failed', or 'unknown' (no outcome "
                    "line and no later attempt of the task in the log)"),
                   ("duration_ms", "float", "commit time the log states ('... successfully in N ms')"),
                   ("elapsed_ms", "float", "time between the attempt's first and last line"),
                   ("nlines", "int", "log records grouped into this attempt"),
                   ("message", "str", "the attempt's most telling line (the failure, else the count)"),
               ])

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
    (re.compile(r"There are currently (?P<n>\d+) pending messages spread across (?P<p>\d+) source partitions"),
     MEASURE, "source", "pending"),
    (re.compile(r"There are currently no pending messages"), MEASURE, "source", "nopending"),
    (re.compile(r"Either no records were produced by the task since the last offset commit"), MEASURE, "source", "nopending"),
    (re.compile(r"timed out while waiting for producer to flush outstanding (?P<n>\d+) messages"),
     OUTCOME, "source", "timeout_remaining"),
    (re.compile(r"Timed out (?:waiting to flush offsets to storage|while waiting for previous offset flush)"),
     OUTCOME, "source", "timeout"),
    (re.compile(r"Commit of offsets timed out"), OUTCOME, "sink", "timeout"),
    (re.compile(r"Finished (?:offset )?commitOffsets successfully in (?P<ms>\d+) ms"), OUTCOME, "source", "success"),
    (re.compile(r"Finished offset commit successfully in (?P<ms>\d+) ms"), OUTCOME, "sink", "success"),
    (re.compile(r"Commit of offsets threw an unexpected exception|Offset commit failed"), OUTCOME, "sink", "failed"),
    (re.compile(r"Failed to flush offsets to storage|Flush of offsets threw an unexpected exception"
                r"|Failed to commit (?:offsets|producer transaction)|Interrupted while (?:flushing messages|waiting for previous offset flush)"
                r"|Flush of offsets interrupted|Exception thrown while calling task\.commit\(\)|Unhandled exception when committing"),
     OUTCOME, None, "failed"),
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
    body = message[m.end():] if m else message
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


@extractor("commits", loggers=LOGGERS)
def build_commits(events: pd.DataFrame) -> pd.DataFrame:
    """Group offset-commit log records into one row per attempt (see the module doc)."""
    rows: list[dict] = []
    open_: dict[tuple, dict] = {}

    def close(key):
        a = open_.pop(key, None)
        if a is not None:
            rows.append(a)

    if len(events):  # cheap vectorised pre-filter: most task records are not about commits
        events = events[events["message"].astype("string").str.contains(_PREFILTER, regex=True, na=False)]
    for r in events.itertuples(index=False):
        c = classify(str(r.message))
        if c is None:
            continue
        conn, task, kind, phase, what, nums = c
        key = (r.host, conn, task, kind)
        a = open_.get(key)
        if a is not None and (phase < a["_phase"] or (phase == MEASURE and a["_measured"])
                              or (r.ts - a["ts"]) > MAX_ATTEMPT):
            close(key)
            a = None
        if a is None:
            a = {"ts": r.ts, "connector": conn, "task": task, "kind": kind, "outstanding": None,
                 "acknowledged": None, "remaining": None, "partitions": None, "outcome": None,
                 "duration_ms": None, "elapsed_ms": 0.0, "nlines": 0, "message": first_line(r.message),
                 "host": r.host, "file": r.file, "line": r.line, "_phase": START, "_measured": False,
                 "_last": r.ts}
            open_[key] = a
        a["_phase"] = max(a["_phase"], phase)
        a["nlines"] += 1
        a["_last"] = r.ts
        a["elapsed_ms"] = (r.ts - a["ts"]).total_seconds() * 1000.0
        if what == "acknowledged":
            a["acknowledged"] = nums["n"]
        elif what == "outstanding":
            a["outstanding"], a["_measured"] = nums["n"], True
            a["message"] = first_line(r.message)
        elif what == "pending":
            a["outstanding"], a["partitions"], a["_measured"] = nums["n"], nums["p"], True
        elif what == "nopending":
            a["outstanding"], a["_measured"] = 0, True
        elif what in ("timeout_remaining", "timeout", "failed", "success"):
            outcome = "timeout" if what.startswith("timeout") else what
            if what == "timeout_remaining":
                a["remaining"] = nums["n"]
            if "ms" in nums:
                a["duration_ms"] = float(nums["ms"])
            if a["outcome"] is None or _OUTCOME_RANK[outcome] > _OUTCOME_RANK[a["outcome"]]:
                a["outcome"] = outcome
                if outcome != "success":
                    a["message"] = first_line(r.message)
    for key in list(open_):
        close(key)
    if not rows:
        return tables.empty("commits")
    df = pd.DataFrame(rows).drop(columns=["_phase", "_measured", "_last"])
    df = df.sort_values(["host", "connector", "task", "ts", "line"], kind="stable").reset_index(drop=True)
    # an attempt without an outcome line: the failure lines are ERROR and always logged, so a
    # later attempt of the same task means this one went through; the last one is unknown
    later = df.groupby(["host", "connector", "task", "kind"], observed=True).cumcount(ascending=False) > 0
    df["outcome"] = df["outcome"].where(df["outcome"].notna(), later.map({True: "success", False: "unknown"}))
    return df.sort_values(["ts", "host", "connector", "task"], kind="stable").reset_index(drop=True)


def first_line(message) -> str:
    """The first line of a log message (stack traces and maps stay out of the table)."""
    s = str(message).split("\n", 1)[0]
    return s if len(s) <= 400 else s[:400] + "…"
