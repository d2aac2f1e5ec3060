"""The integer keys the cluster-health models join and count on, against pandas' own grouping:
``int_keys`` (the ISR episodes' (topic, partition, broker) key) equal where every column is equal,
a missing value a value of its own, also for ranges too wide to count from the smallest value and
for keys that must be numbered anew to stay within 62 bits; the isr-shrink finding's partitions
per broker counted on those keys as ``groupby(["topic", "partition"]).size()`` counts them; and
``stalls`` reading no fencing when no host has a sampling gap."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib import registry, tables
from kitlib.bundle import Bundle
from kitlib.investigations.cluster_health import stalls
from kitlib.investigations.cluster_health.analysis import int_keys, joined_by_place, place_codes

T0 = pd.Timestamp("2024-05-01 10:00:00", tz="UTC")


def _groups(frame: pd.DataFrame) -> np.ndarray:
    """Group numbers of the rows of ``frame`` by all its columns, a missing value a value of its own."""
    return frame.astype("string").fillna("<missing>").groupby(list(frame.columns), sort=False).ngroup().to_numpy()


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Do two labelings split the rows into the same groups?"""
    pairs = pd.DataFrame({"a": a, "b": b}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


def _random_parts(rng, n1: int, n2: int, spans: list[int]) -> tuple[list[tuple], pd.DataFrame]:
    parts, cols = [], {}
    for j, span in enumerate(spans):
        base = int(rng.integers(-(2**40), 2**40))
        v = base + rng.integers(0, span, n1 + n2, dtype=np.int64) * max(1, span // 7)
        na = rng.random(n1 + n2) < 0.1
        parts.append(((v[:n1], na[:n1]), (v[n1:], na[n1:])))
        cols[f"c{j}"] = pd.array(np.where(na, 0, v), dtype="Int64").copy()
        cols[f"c{j}"][na] = pd.NA
    return parts, pd.DataFrame(cols)


def test_int_keys_equal_where_every_column_is_equal() -> None:
    rng = np.random.default_rng(7)
    # narrow ranges; a range wider than 2**30 (ranks instead); widths whose product passes 2**62
    for spans in ([5, 3, 4], [2**33, 6], [2**20, 2**20, 2**20, 2**20]):
        parts, frame = _random_parts(rng, 3000, 1000, spans)
        (k1, m1), (k2, m2) = int_keys(*parts)
        assert _same_partition(np.concatenate([k1, k2]), _groups(frame))
        assert (np.concatenate([m1, m2]) == frame.isna().any(axis=1).to_numpy()).all()


def test_int_keys_of_an_empty_set_and_of_a_column_never_there() -> None:
    v = np.array([4, 4, 9], np.int64)
    (k1, m1), (k2, m2) = int_keys(
        ((v, np.zeros(3, bool)), (v[:0], np.zeros(0, bool))), ((v, np.ones(3, bool)), (v[:0], np.zeros(0, bool)))
    )
    assert len(k2) == len(m2) == 0
    assert k1[0] == k1[1] != k1[2] and m1.all()


def test_partitions_per_broker_counted_as_groupby_sizes() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    topic = pd.array(rng.choice(["orders", "payments", "a,b", "ünï", ""], n), dtype="string")
    topic[rng.random(n) < 0.05] = pd.NA
    part = pd.array(rng.integers(0, 40, n), dtype="Int64")
    part[rng.random(n) < 0.05] = pd.NA
    rows = pd.DataFrame({"topic": topic, "partition": part, "node": rng.integers(1, 4, n)})
    place, placed = place_codes(rows)
    for node, grp in rows.groupby("node"):
        want = grp.groupby(["topic", "partition"]).size().to_numpy()
        pos = np.flatnonzero(rows["node"].to_numpy() == node)
        got = np.unique(place[pos][placed[pos]], return_counts=True)[1]
        assert sorted(got.tolist()) == sorted(want.tolist())


def _table(name: str, rows: list[dict]) -> pd.DataFrame:
    registry.load()
    return tables.conform(name, pd.DataFrame(rows), redact=False)


def test_no_stall_without_a_sampling_gap_whatever_the_fencings() -> None:
    events = [
        {"ts": T0 + pd.Timedelta(seconds=s), "kind": k, "node": 2, "host": "broker-1", "file": "b1.log", "line": i}
        for i, (s, k) in enumerate([(0, "fenced"), (20, "unfenced"), (40, "fenced")])
    ] + [  # node 1's host has samples without a gap: its fencing is no stall
        {
            "ts": T0 + pd.Timedelta(seconds=10),
            "kind": "fenced",
            "node": 1,
            "host": "broker-1",
            "file": "b1.log",
            "line": 9,
        }
    ]
    metrics = [
        {"ts": T0 + pd.Timedelta(seconds=s), "host": "broker-2", "file": "jmx.csv", "line": i, "name": "x",
         "attribute": "Value", "value": 1.0}
        for i, s in enumerate(range(0, 60))
    ] + [
        {"ts": T0 + pd.Timedelta(seconds=s), "host": "broker-1", "file": "jmx1.csv", "line": s, "name": "x",
         "attribute": "Value", "value": 1.0}
        for s in range(0, 60)
    ]  # fmt: skip
    ids = {"broker-1": 1, "broker-2": 2}
    b = Bundle(root="hand-made", tables={"node_events": _table("node_events", events)})
    assert stalls.stalls(b, ids) == []  # no metrics at all
    b = Bundle(root="hand-made", tables={"node_events": _table("node_events", events),
                                         "metrics": _table("metrics", metrics)})  # fmt: skip
    assert stalls.stalls(b, ids) == []  # samples every second: no gap
    gapped = [m for m in metrics if m["file"] != "jmx.csv" or not 5 <= m["line"] <= 30]
    b = Bundle(root="hand-made", tables={"node_events": _table("node_events", events),
                                         "metrics": _table("metrics", gapped)})  # fmt: skip
    got = stalls.stalls(b, ids)
    # the gap (4 s to 31 s) of node 2's host merged with both its fencings that overlap it: from 9 s
    # before the first (0 s) to the second (40 s, never unfenced); node 1's fencing is not a stall
    assert [(s.node, s.start, s.end, s.how) for s in got] == [
        (2, T0 - pd.Timedelta(seconds=9), T0 + pd.Timedelta(seconds=40), "fenced and no JMX answer")
    ]


def test_episodes_joined_to_departures_as_the_merge_joins_them() -> None:
    rng = np.random.default_rng(11)
    n = 600
    files = np.array(["b1/server.log", "b2/server.log", "b3/state-change.log"], dtype=object)
    line = pd.array(rng.integers(1, 60, n), dtype="Int64")
    line[rng.random(n) < 0.05] = pd.NA
    ep = pd.DataFrame({"node": rng.integers(1, 4, n), "file": files[rng.integers(0, 3, n)], "line": line})
    for rest_files in (files, files[:2]):  # one file's departures all explained: none of its episodes kept
        m = 400
        rline = pd.array(rng.integers(1, 60, m), dtype="Int64")
        rline[rng.random(m) < 0.05] = pd.NA
        rest = pd.DataFrame(
            {"file": pd.Categorical(rest_files[rng.integers(0, len(rest_files), m)]), "line": rline, "x": 1}
        )  # departures named twice or more (a line that removed several brokers) repeat their episodes
        want = ep.merge(rest[["file", "line"]].astype({"file": str}), on=["file", "line"])
        pd.testing.assert_frame_equal(joined_by_place(ep, rest), want, check_exact=True)
