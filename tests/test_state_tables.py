"""The state tables of cluster_health (``partition_changes``, ``node_events``) built without Python per
row: the rule each record matches is found by wording groups (:func:`first_rule_by_wording`), and must be the
one trying every rule in order gives (:func:`kitlib.extract.first_rule`) on every broker and controller
line the kit ships with, on lines made to hold two rules' wordings, and whatever the groups; the
builders' time on twice the records stays about twice.
"""

from __future__ import annotations

import gzip
import importlib.util
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kitlib
from kitlib import registry
from kitlib.extract import (
    _literal,
    first_lines,
    first_rule,
    first_rule_by_wording,
    group_arrays,
    literal_keys,
    rule_groups,
)
from kitlib.investigations.cluster_health import state, wording

ROOT = Path(__file__).resolve().parents[1]

# lines that hold the wording of two rules (an earlier rule's beside a later one's), next to lines of
# the later rule alone: a wording group's first line names the later rule, the earlier must still win
MIXED = [
    "[QuorumController id=1] Fencing broker 2 because its session has timed out.",
    "[QuorumController id=1] Fencing broker 2 because its session has timed out. 1 successfully elected as the "
    "controller. Epoch incremented to 4",
    "[QuorumController id=1] The request from broker 3 to unfence has been granted because it has caught up.",
    "[Controller id=3] Resigning; [Controller id=3] Broker failure callback for 2",
    "[Controller id=3] Broker failure callback for 2",
    "[Broker id=1] Follower orders-0 starts at leader epoch 5 from offset 9. Current leader is 2",
    "[Broker id=1] Leader orders-0 starts at leader epoch 5 from offset 9 with high watermark 9 ISR [1,2] addingReplicas "
    "[] removingReplicas []. Previous leader epoch was 4. Current leader is 2",
    "[Partition orders-0 broker=1] ISR updated to 1,2 and version updated to 7",
    "[Partition orders-0 broker=1] ISR updated to 1,2 and version updated to 7 [Partition orders-0 broker=1] "
    "Shrinking ISR from 1,2,3 to 1,2.",
    "Session expired",
    "Error while appending records to orders-5 in dir /data/kafka",
    "Error while appending records to orders-5 in dir /data/kafka Stopping serving logs in dir /data/kafka",
    "[Controller id=2 epoch=3] Changed partition orders-0 from OnlinePartition to OfflinePartition",
    "[Controller id=2 epoch=3] Changed partition orders-0 from OfflinePartition to OnlinePartition with state "
    "LeaderAndIsr(leader=2, leaderEpoch=5, isr=List(2), zkVersion=3)",
    "a line of no rule at all",
]


def _shipped_lines() -> list[str]:
    """The lines of every broker and controller log in the sample bundles and test fixtures."""
    lines: list[str] = []
    for base in (ROOT / "sample_data", ROOT / "tests" / "fixtures"):
        for p in sorted(base.rglob("*.log*")):
            if not p.is_file():
                continue
            data = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
            lines += data.decode("utf-8", "replace").splitlines()
    return lines


@pytest.fixture(scope="module")
def texts() -> pa.Array:
    return first_lines(pa.array(_shipped_lines() + MIXED * 3, pa.large_string()))


@pytest.mark.parametrize("rules", ["partition", "node"])
def test_rule_groups_give_the_first_rule_in_order(texts, rules):
    """Whatever the wording groups (one for all, one per line, or groups cutting across wordings), each
    line gets the first rule it matches; the lines of no rule stay -1."""
    table, keys = (
        (wording.PARTITION_RULES, wording.PARTITION_KEYS)
        if rules == "partition"
        else (
            wording.NODE_RULES,
            wording.NODE_KEYS,
        )
    )
    patterns = [p for _, p in table]
    any_key = "|".join(_literal(k) for ks in keys for k in ks)
    some = texts.filter(pc.match_substring_regex(texts, any_key))  # (per-line groups: the lines a rule may match)
    expected = first_rule(some, patterns)
    assert (expected >= 0).sum() > 50 and len(set(expected[expected >= 0].tolist())) > 5  # (many rules are met)
    rng = np.random.default_rng(3)
    for hint in (np.zeros(len(some), np.int64), rng.integers(0, 4, len(some))):
        assert first_rule_by_wording(some, patterns, keys, hint).tolist() == expected.tolist()
    few = some[-1500:]  # a group per line: its own rule found for each (the mixed lines are last)
    assert first_rule_by_wording(few, patterns, keys, np.arange(len(few))).tolist() == expected[-1500:].tolist()
    whole = first_rule_by_wording(texts, patterns, keys, np.zeros(len(texts), np.int64))
    assert whole.tolist() == first_rule(texts, patterns).tolist()


@pytest.mark.parametrize("rules", ["partition", "node"])
def test_groups_found_by_the_rule_search_are_those_of_a_capture_pass(texts, rules):
    """The capture groups the grouped rule search extracts on its way (``captures``), completed by
    :func:`rule_groups` for the texts it left to the search in order, are per text those one capture
    pass of the text's rule gives, for every rule and whatever the groups (few, with lines of no key
    and missing texts among them, or one per line); the rules found are the same as without."""
    table = wording.PARTITION_RULES if rules == "partition" else wording.NODE_RULES
    keys = wording.PARTITION_KEYS if rules == "partition" else wording.NODE_KEYS
    patterns = [p for _, p in table]
    some = pa.concat_arrays([pa.array([None, "no rule here"], pa.large_string()), texts])
    expected = first_rule(some, patterns)
    rng = np.random.default_rng(5)
    reused = 0
    for hint in (np.zeros(len(some), np.int64), rng.integers(0, 6, len(some)), np.arange(len(some))):
        captures: dict = {}
        which = first_rule_by_wording(some, patterns, keys, hint, captures)
        assert which.tolist() == expected.tolist()
        for i, pattern in enumerate(patterns):
            sel = np.flatnonzero(which == i)
            if not len(sel):
                assert i not in captures
                continue
            reused += sum(len(r) for r, _ in captures.get(i, []))
            rows, got = rule_groups(some, pattern, sel, captures.get(i))
            assert sorted(rows.tolist()) == sel.tolist()
            want = group_arrays(some.take(pa.array(rows)), pattern)
            assert [g.to_pylist() for g in got] == [g.to_pylist() for g in want], table[i][0]
    assert reused > 0.5 * 3 * (expected >= 0).sum()  # (most rows' groups come from the search's own pass)


def test_every_rule_has_literal_keys_that_its_matches_hold(texts):
    """Each rule has a literal text one of which is in every line it matches (the groups rely on it)."""
    for (kind, pattern), keys in zip(
        wording.PARTITION_RULES + wording.NODE_RULES, wording.PARTITION_KEYS + wording.NODE_KEYS
    ):
        assert keys and all(len(k) >= 3 for k in keys), kind
        matched = texts.filter(pc.match_substring_regex(texts, pattern))
        held = pc.match_substring_regex(matched, "|".join(_literal(k) for k in keys))
        assert pc.all(held).as_py() is not False, (kind, matched.filter(pc.invert(held))[:3])
    assert literal_keys(r"(?:^|\] )(Session expired)\.?$|(Unable to reconnect, session 0x[0-9a-f]+)") == (
        "Session expired",
        "Unable to reconnect, session 0x",
    )
    assert literal_keys(r"(\d+)(?:a|bc)+\d") == ()


def _dense_events(root: Path, records: int):
    path = ROOT / "bench" / "dense_bench.py"
    spec = importlib.util.spec_from_file_location("dense_bench", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    mod.write_bundle(root, records)
    return kitlib.load_bundle(root).table("events")


@pytest.mark.slow  # writes and parses a dense incident at two sizes, then times the builders: seconds
def test_state_builders_time_grows_linearly(tmp_path):
    """The two builders on a dense incident (ISR storm, fencing, controlled shutdowns) of N and 2N
    records: the best of three timings at 2N stays under three times the one at N (linear with noise;
    a walk per row per rule would not be, nor one pass per rule over every record)."""
    registry.load()
    n = 12_000
    small, big = _dense_events(tmp_path / "small", n), _dense_events(tmp_path / "big", 2 * n)
    for build in (state.build_node_events, state.build_partition_changes):
        rows = [len(build(small)), len(build(big))]
        assert rows[0] > n // 10 and rows[1] > 1.8 * rows[0]
        best = [float("inf"), float("inf")]
        for _ in range(3):
            for i, events in enumerate((small, big)):
                t = time.process_time()
                build(events)
                best[i] = min(best[i], time.process_time() - t)
        assert max(best[1], 0.03) < 3 * max(best[0], 0.03), (build.__name__, best)


@pytest.mark.parametrize("width", [3, 40])
def test_isr_differences_are_the_ids_of_one_list_not_in_the_other(width):
    """``removed``/``added`` of an ISR change: per row, the ids of one list missing from the other, in
    its order (null where none), for short ISRs and for lists longer than the matrix path takes."""
    rng = np.random.default_rng(width)
    before, after = [], []
    for _ in range(500):
        b = [int(x) for x in rng.choice(60, rng.integers(0, width + 1), replace=False)]
        a = [x for x in b if rng.random() < 0.6] + [int(x) for x in rng.integers(60, 70, rng.integers(0, 3))]
        before.append(",".join(map(str, b)))
        after.append(",".join(map(str, dict.fromkeys(a))))
    got = state._minus(pa.array(before), pa.array(after)).to_pylist()
    for b, a, g in zip(before, after, got):
        want = [x for x in b.split(",") if x and x not in a.split(",")]
        assert g == (",".join(want) or None)
