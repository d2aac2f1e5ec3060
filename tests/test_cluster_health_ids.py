"""Node identity and ISR episodes on small hand-made tables: the vote counts behind ``node_ids``
(most named id, lowest on a tie, host digits as a fallback), its answer kept while the bundle's
frames stay the same, and the one-key join of ``isr_episodes`` treating a missing partition as a
value of its own (never joining two topics' departures)."""

from __future__ import annotations

import pandas as pd

from kitlib import registry, tables
from kitlib.bundle import Bundle
from kitlib.investigations.cluster_health import analysis

T0 = pd.Timestamp("2024-05-01 10:00:00", tz="UTC")


def _table(name: str, rows: list[dict]) -> pd.DataFrame:
    registry.load()
    return tables.conform(name, pd.DataFrame(rows), redact=False)


def _bundle(changes: list[dict], events: list[dict], hosts: list[str]) -> Bundle:
    return Bundle(
        root="hand-made",
        tables={
            "partition_changes": _table("partition_changes", changes),
            "node_events": _table("node_events", events),
            "files": _table("files", [{"host": h, "path": f"{h}/server.log"} for h in hosts]),
        },
    )


def _vote(host: str, reporter: int, line: int) -> dict:
    return {"ts": T0, "kind": "isr_updated", "topic": "t", "partition": 0, "reporter": reporter, "host": host,
            "file": f"{host}/server.log", "line": line}  # fmt: skip


def test_node_ids_most_named_lowest_on_tie_host_digits_else() -> None:
    changes = [_vote("broker-1", 7, 1), _vote("broker-1", 1, 2), _vote("node-a", 4, 3), _vote("node-a", 5, 4)]
    events = [
        {"ts": T0, "kind": "fenced", "reporter": 5, "host": "node-a", "file": "node-a/server.log", "line": 9},
        {"ts": T0, "kind": "fenced", "reporter": None, "host": "broker-1", "file": "broker-1/server.log", "line": 8},
    ]
    b = _bundle(changes, events, ["broker-1", "node-a", "broker-9", "zk"])
    # broker-1: 7 and 1 once each (tie: the lowest); node-a: 5 twice over both tables, 4 once;
    # broker-9 names no id (its digits); zk neither
    assert analysis.node_ids(b) == {"broker-1": 1, "node-a": 5, "broker-9": 9}


def test_node_ids_kept_while_the_frames_are_the_same() -> None:
    b = _bundle([_vote("broker-1", 3, 1)], [], ["broker-1"])
    first = analysis.node_ids(b)
    first["broker-1"] = 99  # a caller's change never reaches the kept answer
    assert analysis.node_ids(b) == {"broker-1": 3}
    b.tables["partition_changes"] = _table("partition_changes", [_vote("broker-1", 4, 1)])
    assert analysis.node_ids(b) == {"broker-1": 4}  # a table replaced: computed anew


def _change(kind: str, topic: str, partition, sec: int, line: int, **ids) -> dict:
    return {"ts": T0 + pd.Timedelta(seconds=sec), "kind": kind, "topic": topic, "partition": partition,
            "reporter": 1, "host": "broker-1", "file": "broker-1/server.log", "line": line, **ids}  # fmt: skip


def test_isr_episodes_one_key_keeps_topics_and_missing_partitions_apart() -> None:
    changes = [
        _change("isr_shrink", "t", None, 0, 1, removed="2", isr_after="1,3"),
        _change("isr_shrink", "u", None, 5, 2, removed="2", isr_after="1,3"),
        _change("isr_shrink", "t", 0, 10, 3, removed="2", isr_after="1"),
        _change("isr_updated", "t", 0, 20, 4, isr_after="1,2"),
        _change("isr_shrink", "t", None, 30, 5, removed="2", isr_after="1,3"),
        _change("isr_updated", "u", 0, 40, 6, isr_after="1,2,3"),
    ]
    b = _bundle(changes, [], ["broker-1"])
    ep = analysis.isr_episodes(b).set_index("line")
    at = {line: T0 + pd.Timedelta(seconds=s) for line, s in ((3, 20), (5, 30))}
    # t-0 rejoined at 20 s; (t, no partition) left at 0 s is back by its next departure at 30 s,
    # never by u's departure at 5 s; u's and the last one are not seen back; u-0's rejoin is no
    # rejoin of (u, no partition)
    assert ep.loc[3, "rejoined"] == at[3] and ep.loc[3, "out_s"] == 10.0
    assert pd.isna(ep.loc[1, "rejoined"]) and ep.loc[1, "back_by"] == at[5]
    assert pd.isna(ep.loc[2, "back_by"]) and pd.isna(ep.loc[5, "back_by"])
    assert ep["node"].tolist() == [2, 2, 2, 2]
