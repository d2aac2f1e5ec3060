"""The derived-table builders that work on whole Arrow columns give what a line-by-line reading
gives: the capture groups and first matching rule against Python's ``re`` on every line of the
sample and fixture logs, ``partition_changes`` and ``cleaner_events`` rows against the modules'
own one-line ``classify``, and the commit attempts against the per-line grouping they replaced."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kitlib.extract import first_match, first_rule, group_arrays, groups_of
from kitlib.investigations.cluster_health import state, wording
from kitlib.investigations.compaction import cleaner
from kitlib.investigations.connect_offsets import commits

ROOT = Path(__file__).resolve().parents[2]


def _log_lines(limit: int = 30) -> list[str]:
    """The first lines of every log under the sample bundles and the test fixtures, as messages
    (the log4j prefix, when there is one, cut off), with lines of each rule's wording mixed in."""
    out = []
    for f in sorted([*(ROOT / "sample_data").rglob("*.log"), *(ROOT / "tests" / "fixtures").rglob("*.log")]):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for _, line in zip(range(limit), fh):
                line = line.rstrip("\n")
                out.append(re.sub(r"^\[[^\]]*\] [A-Z]+ ", "", line))
    return out


LINES = _log_lines()
CRAFTED = [
    "[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 9, endOffset: 12).",
    "[Partition orders-0 broker=1] Expanding ISR from 1,2 to 1,2,3 (under-min-isr)",
    "Partition [orders,24] on broker 1: Shrinking ISR for partition [orders,24] from 1,0,2 to 1",
    "Partition [orders,24] on broker 1: Expanding ISR from 1 to 1,0",
    "[Partition orders-3 broker=2] ISR updated to 2,3 (under-min-isr) and version updated to 7",
    "[Partition orders-3 broker=2] ISR updated to 2, 3  and zkVersion updated to [8]",
    "[Broker id=2] Leader orders-0 with topic id abc starts at leader epoch 5 from offset 9 with ISR [1,2]",
    "[Broker id=2] Follower orders-0 starts at leader epoch 5 from offset 9. Current leader is -1",
    "[Controller id=1 epoch=3] Changed partition orders-0 from OnlinePartition to OfflinePartition",
    "[Controller id=1 epoch=3] Changed partition orders-1 from OfflinePartition to OnlinePartition with state "
    "LeaderAndIsr(leader=2, leaderEpoch=4, isr=List(2, 3), zkVersion=5)",
    "[Broker id=3] Unable to bring up new local leader orders-2 because it resides in an offline log directory",
    "[QuorumController id=1] Setting new leader for topicId 4ZQmXc2lRTq0y2w4tpTf5A, partition 0 to 3 using an "
    "unclean election",
    "[Controller id=1] No broker in ISR is alive for [orders,7]. Elect leader 3 from live brokers 3. There's "
    "potential data loss.",
    "UNCLEAN partition change for orders-1 with topic ID x: replicas: [1] -> [0], isr: [1] -> [0], leader: 1 -> 0",
    "Exiting because log truncation is not allowed for partition orders-4, current leader's latest offset 5 is "
    "less than replica's latest offset 9",
    "[QuorumController id=2] Fencing broker 3 at epoch 10 because its session has timed out.",
    "Cleaner 0: Beginning cleaning of log __consumer_offsets-0.",
    "Cleaner 1: Building offset map for log orders-3 for 31 segments in offset range [0, 412977).",
    "Failed to clean up log for orders-12345 in dir /data/k due to IOException",
    "[kafka-log-cleaner-thread-2]: Unexpected exception thrown when cleaning log Log(dir=/d/x-1). Marking its "
    "partition (x-1) as uncleanable",
    "The last checkpoint dirty offset for partition plain is 5",
    "[orders|task-2|offsets] WorkerSourceTask{id=orders-2} Committing offsets for 5 acknowledged messages",
    "WorkerSinkTask{id=sink-a-7} Committing offsets asynchronously using sequence number 3: {}",
]
PATTERNS = (
    [p for _, p in wording.PARTITION_RULES]
    + [p for _, p in wording.NODE_RULES]
    + [wording.REPORTER, wording.CAUSES]
    + [rx.pattern for _, rx in cleaner._EVENTS]
    + [rx.pattern for rx, _, _, _ in commits._RULES]
    + [commits._ID.pattern]
)


@pytest.mark.slow
def test_capture_groups_and_first_rule_agree_with_a_line_by_line_search():
    texts = LINES + CRAFTED
    arr = pa.array(texts, pa.large_string())
    hits = 0
    for p in PATTERNS:
        rx = re.compile(p)
        if not rx.groups:
            continue
        want = [[g or None for g in m.groups()] if (m := rx.search(t)) else None for t in texts]
        got = group_arrays(arr, p)
        assert [list(col) for col in zip(*(g.to_pylist() for g in got))] == [
            w if w is not None else [None] * rx.groups for w in want
        ], p
        assert [g.to_pylist() for g in got] == groups_of(arr, p)
        hits += sum(w is not None for w in want)
    assert hits > 100  # the lines exercise the rules
    rules = [p for _, p in wording.PARTITION_RULES + wording.NODE_RULES]
    assert first_rule(arr, rules).tolist() == first_match(arr, rules).tolist()
    assert (first_rule(arr, rules) >= 0).sum() >= 20


def _events(messages: list[str]) -> pd.DataFrame:
    n = len(messages)
    return pd.DataFrame(
        {
            "ts": pd.date_range("2026-11-23", periods=n, freq="s", tz="UTC"),
            "level": pd.Series(["INFO"] * n, dtype="category"),
            "logger": "kafka.cluster.Partition",
            "message": messages,
            "host": pd.Series(["b1"] * n, dtype="category"),
            "file": pd.Series(["b1/server.log"] * n, dtype="category"),
            "line": pd.array(np.arange(1, n + 1), dtype="Int64"),
        }
    )


@pytest.mark.slow
def test_partition_changes_rows_are_what_each_line_classifies_as():
    msgs = [m for m in LINES + CRAFTED if wording.classify(m)["kind"] in {k for k, _ in wording.PARTITION_RULES}]
    msgs = msgs + [m + "\n\tat a stack frame" for m in msgs[:5]] + ["unrelated line"]
    df = state.build_partition_changes(_events(msgs))
    assert len(df) == len(msgs) - 1 and len(set(df["kind"])) >= 7
    cols = ["kind", "topic", "partition", "leader", "epoch", "isr_before", "isr_after", "removed", "added"]
    for row, m in zip(df.itertuples(), msgs):
        want = wording.classify(m)
        for c in cols:
            v = getattr(row, c)
            assert (None if pd.isna(v) else v) == want.get(c), (m, c)
        if "reporter" in want:
            assert row.reporter == want["reporter"], m
        assert row.message == m.split("\n")[0][:500]


def test_cleaner_events_are_what_each_line_classifies_as():
    msgs = [m for m in LINES + CRAFTED if cleaner.classify(m)["kind"] != "other"]
    msgs = msgs + ["Cleaner 0: nothing known", "x"]
    df = cleaner.build_events(_events(msgs))
    assert len(df) == len(msgs) and len(set(df["kind"])) >= 5
    for row, m in zip(df.itertuples(), msgs):
        want = cleaner.classify(m)
        for c in ("kind", "thread", "log", "topic", "partition", "segments", "start_offset", "end_offset"):
            v = getattr(row, c)
            assert (None if pd.isna(v) else v) == want.get(c), (m, c)


def _attempts_line_by_line(hosts, conns, tasks, kinds, rules, ts, ns, ps, mss) -> np.ndarray:
    """The per-line grouping the builder used before (one open attempt per task, in a dict)."""
    first_, last_, outs, ack, rem, part, out, dur, nl, msg, ph, meas = range(12)
    done: list[list] = []
    open_: dict[tuple, list] = {}
    for j, t in enumerate(ts.tolist()):
        _, phase, _, what = commits._RULES[rules[j]]
        key = (hosts[j], conns[j], tasks[j], kinds[j])
        a = open_.get(key)
        if a is not None and (
            phase < a[ph] or (phase == commits.MEASURE and a[meas]) or t - ts[a[first_]] > commits.MAX_ATTEMPT.value
        ):
            done.append(open_.pop(key))
            a = None
        if a is None:
            a = open_[key] = [j, j, -1, -1, -1, -1, -1, -1, 0, j, commits.START, False]
        a[ph] = max(a[ph], phase)
        a[nl] += 1
        a[last_] = j
        if what == "acknowledged":
            a[ack] = ns[j]
        elif what == "outstanding":
            a[outs], a[meas], a[msg] = ns[j], True, j
        elif what == "pending":
            a[outs], a[part], a[meas] = ns[j], ps[j], True
        elif what == "nopending":
            a[outs], a[meas] = 0, True
        elif what != "start":
            rank = 2 if what.startswith("timeout") else commits._OUTCOME_RANK[what]
            if what == "timeout_remaining":
                a[rem] = ns[j]
            if mss[j] >= 0:
                a[dur] = mss[j]
            if rank > a[out]:
                a[out] = rank
                if rank:
                    a[msg] = j
    done.extend(open_.values())
    return np.array([a[:10] for a in done], dtype=np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_commit_attempts_match_the_line_by_line_grouping(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    tasks = rng.integers(0, 6, n)
    rules = rng.integers(0, len(commits._RULES), n)
    # mostly seconds apart, sometimes minutes (attempts older than five minutes are closed);
    # with a seed of two, out of order here and there
    step = np.where(rng.random(n) < 0.05, rng.integers(60, 900, n), rng.integers(0, 5, n)) * 1_000_000_000
    ts = np.cumsum(step)
    if seed % 3 == 2:
        ts = ts - np.where(rng.random(n) < 0.1, rng.integers(0, 400, n) * 1_000_000_000, 0)
    hosts, conns, kinds = tasks % 2, tasks % 3, (tasks % 2).astype(np.int8)
    ns, ps, mss = (np.where(rng.random(n) < 0.3, -1, rng.integers(0, 1000, n)) for _ in range(3))
    args = (hosts, conns, tasks, kinds, rules, ts, ns, ps, mss)
    want = _attempts_line_by_line(*args)
    assert len(want) > 300
    assert np.array_equal(commits._attempts(*args), want)


def test_commit_numbers_read_after_the_phrase_are_those_of_the_leftmost_match():
    lines = [
        "[c|task-1|offsets] WorkerSourceTask{id=c-1} Committing offsets for 12 acknowledged messages",
        "Committing offsets for later, then Committing offsets for 7 acknowledged messages",
        "flushing 48437 outstanding messages for offset commit",
        "flushing now; flushing 3 outstanding messages for offset commit",
        "There are currently 5 pending messages spread across 2 source partitions whose offsets will not be committed",
        "Failed to flush, timed out while waiting for producer to flush outstanding 31120 messages",
        "timed out while waiting for producer to flush outstanding messages, 9 left (x)",
        "WorkerSinkTask{id=s-0} Finished offset commit successfully in 5 ms for sequence number 2: {}",
        "Finished commitOffsets successfully in 14 ms",
        "Finished offset commitOffsets successfully in 0 ms",
    ]
    checked = 0
    for rx, _, _, _ in commits._RULES:
        if not rx.groupindex:
            continue
        texts = [t for t in lines if rx.search(t)]
        got = commits._numbers(pa.array(texts, pa.large_string()), rx.pattern)
        for g in rx.groupindex:
            assert got[g].to_pylist() == [rx.search(t).group(g) for t in texts], (rx.pattern, g)
            checked += len(texts)
    assert checked >= 10


def _stats_block(thread: int, log: str) -> str:
    return (
        f"[kafka-log-cleaner-thread-{thread}]: \n\tLog cleaner thread {thread} cleaned log {log} (dirty section = "
        "[0, 412977])\n\t1,212.4 MB of log processed in 3.9 seconds (54.5 MB/sec).\n\tIndexed 212.4 MB in 2.0 "
        "seconds (106.2 Mb/sec, 51.3% of total time)\n\tBuffer utilization: 90.0%\n\tStart size: 212.4 MB "
        "(1,412,977 messages)\n\tEnd size: 118.0 MB (229,410 messages)\n\t44.4% size reduction (44.4% fewer messages)"
    )


def test_cleaner_runs_pair_each_block_with_its_own_begin_and_offset_map():
    rng = np.random.default_rng(7)
    msgs, hosts = [], []
    for _ in range(600):
        log, host, what = f"orders-{rng.integers(0, 4)}", f"b{rng.integers(1, 3)}", rng.integers(0, 3)
        if what == 0:
            msgs.append(f"Cleaner 0: Beginning cleaning of log {log}")
        elif what == 1:
            msgs.append(
                f"Cleaner 0: Building offset map for log {log} for {rng.integers(1, 50)} segments in offset "
                "range [0, 10)."
            )
        else:
            msgs.append(_stats_block(0, log))
        hosts.append(host)
    ev = _events(msgs)
    ev["host"] = pd.Series(hosts, dtype="category")
    df = cleaner.build_runs(ev)
    # the same pairing read line by line: the last begin / offset map of the host and log since its last block
    begun: dict = {}
    mapped: dict = {}
    started, segments = [], []
    for j, (m, h) in enumerate(zip(msgs, hosts)):
        if m.startswith("[kafka"):
            key = (h, cleaner.parse_stats(m)["log"])
            started.append(ev["ts"][begun.pop(key)] if key in begun else pd.NaT)
            segments.append(mapped.pop(key, None))
        else:
            log = re.search(r"log (\S+?)(?: for|$)", m).group(1)
            if "Beginning" in m:
                begun[(h, log)] = j
            else:
                mapped[(h, log)] = int(re.search(r"for (\d+) segments", m).group(1))
    assert len(df) == len(started) > 100
    assert df["started"].isna().sum() > 10 and df["segments"].isna().sum() > 10
    assert [None if pd.isna(x) else x for x in df["started"]] == [None if pd.isna(x) else x for x in started]
    assert [None if pd.isna(x) else int(x) for x in df["segments"]] == segments
