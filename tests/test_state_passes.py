"""The regex passes of the state tables (:mod:`kitlib.investigations.cluster_health.passes`): both tables'
rules found in one search by wording groups must be, set by set, those trying every rule in order gives, with
captures equal to one capture pass of each line's rule, on every broker and controller line the kit ships
with and on lines holding both tables' wordings; a capture pass tried at the line's start first gives what
the search gives; and both builders sharing one batch's passes build what each builds alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_state_tables import MIXED, _shipped_lines

from kitlib import registry
from kitlib.extract import _captures, _literal, first_lines, first_rule, group_arrays, rule_groups
from kitlib.investigations.cluster_health import passes, state, wording

# lines of one table's wording that hold the other's too (a wording group of the first must still check
# the second's rules on them)
CROSS = [
    "[QuorumController id=1] Fencing broker 2 because its session has timed out.",
    "[QuorumController id=1] Fencing broker 2 because its session has timed out. [Partition orders-0 broker=1] "
    "Shrinking ISR from 1,2,3 to 1,2.",
    "[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 9, endOffset: 12).",
    "[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. java.lang.OutOfMemoryError: Java heap space",
    "[Partition orders-0 broker=1] ISR updated to 1,2 and version updated to 7",
    "[Partition orders-0 broker=1] ISR updated to 1,2 and version updated to 7 [Partition orders-0 broker=1] "
    "Expanding ISR from 1,2 to 1,2,3 Session expired",
    "[QuorumController id=1] Unfenced broker 3 has requested and been granted a controlled shutdown.",
    "[QuorumController id=1] Unfenced broker 3 has requested and been granted a controlled shutdown. "
    "[QuorumController id=1] The request from broker 3 to unfence has been granted because it has caught up.",
    "kafka-request-handler-3: [QuorumController id=1] Fencing broker 4 because its session has timed out.",
]

SETS = [
    ([p for _, p in wording.PARTITION_RULES], wording.PARTITION_KEYS),
    ([p for _, p in wording.NODE_RULES], wording.NODE_KEYS),
]


@pytest.fixture(scope="module")
def texts() -> pa.Array:
    lines = [None, "no rule here"] + _shipped_lines() + (MIXED + CROSS) * 3
    return first_lines(pa.array(lines, pa.large_string()))


@pytest.mark.slow  # every shipped line, both rule sets, four groupings: about two seconds
def test_both_tables_rules_found_at_once_are_those_in_order_with_their_captures(texts):
    """Whatever the groups (one for all, a few cutting across wordings, groups of one wording with lines of
    the other table's wording among them, one per line), each line gets per set of rules the first it
    matches, and the captures handed on, completed by :func:`rule_groups`, are one capture pass's."""
    expected = [first_rule(texts, patterns) for patterns, _ in SETS]
    assert all((e >= 0).sum() > 50 for e in expected)
    rng = np.random.default_rng(11)
    cross = np.r_[
        np.zeros(len(texts) - 3 * len(MIXED + CROSS), np.int64), np.tile(np.arange(len(MIXED + CROSS)) % 3, 3)
    ]
    reused = 0
    for hint in (np.zeros(len(texts), np.int64), rng.integers(0, 6, len(texts)), cross, np.arange(len(texts)) % 300):
        got = passes.rules_of_sets(texts, hint, SETS)
        for (patterns, _), want, (which, found) in zip(SETS, expected, got):
            assert which.tolist() == want.tolist()
            for i, pattern in enumerate(patterns):
                sel = np.flatnonzero(which == i)
                if not len(sel):
                    assert i not in found
                    continue
                reused += sum(len(r) for r, _ in found.get(i, []))
                rows, groups = rule_groups(texts, pattern, sel, found.get(i))
                assert sorted(rows.tolist()) == sel.tolist()
                whole = group_arrays(texts.take(pa.array(rows)), pattern)
                assert [g.to_pylist() for g in groups] == [g.to_pylist() for g in whole], pattern
    assert reused > 0.5 * 4 * sum((e >= 0).sum() for e in expected)


def test_a_capture_pass_tried_at_the_start_first_is_the_search(texts):
    """For every rule, the extraction tried where the line starts, then searched on the lines it missed,
    equals the search's on every line (those matching later in the line, or twice, among them)."""
    some = pa.concat_arrays([texts, pa.array(["x " + t for t in CROSS + MIXED], pa.large_string())])
    for patterns, keys in SETS:
        for pattern, ks in zip(patterns, keys):  # (the lines holding the rule's key, and a few others)
            held = pc.or_(
                pc.match_substring_regex(some, "|".join(_literal(k) for k in ks)),
                pa.array(np.random.default_rng(4).random(len(some)) < 0.01),
            )
            lines = some.filter(held.fill_null(False))
            assert passes.captures(lines, pattern, True).to_pylist() == _captures(lines, pattern).to_pylist()


@pytest.mark.slow  # both builders twice on every shipped line: about two seconds
def test_builders_sharing_a_batch_build_what_each_builds_alone(texts):
    """``partition_changes`` and ``node_events`` built in turn from one frame (the passes made once) equal
    each built from its own copy of the frame (the passes made anew)."""
    registry.load()
    lines = [t for t in texts.to_pylist()[2:] if t] + CROSS
    n = len(lines)
    events = pd.DataFrame(
        {
            "ts": pd.date_range("2024-05-01", periods=n, freq="s", tz="UTC"),
            "level": pd.Categorical(["INFO"] * n),
            "logger": pd.Categorical(np.where(np.arange(n) % 2, "kafka.cluster.Partition", "state.change.logger")),
            "message": pd.array(lines, dtype="string"),
            "host": pd.Categorical(["broker-1"] * n),
            "file": pd.Categorical(["server.log"] * n),
            "line": np.arange(n, dtype=np.int64) + 1,
            "template_id": pd.Categorical(np.where(np.arange(n) % 7 == 0, None, "t" + (np.arange(n) % 5).astype(str))),
        }
    )
    together = [state.build_partition_changes(events), state.build_node_events(events)]
    alone = [state.build_partition_changes(events.copy()), state.build_node_events(events.copy())]
    for a, b in zip(together, alone):
        assert len(a) > 50
        pd.testing.assert_frame_equal(a, b)


def test_topic_and_partition_split_as_the_regex_reads_them():
    """A partition's name split at its last '-' where digits follow gives what ``^(.*)-(\\d+)$`` captures,
    for names of many dashes, of none, ending in a dash or non-ASCII digits, empty or missing."""
    rng = np.random.default_rng(2)
    alphabet = list("ab-1٣é_.") + ["-0", "-12"]
    names = ["".join(rng.choice(alphabet, rng.integers(0, 7))) for _ in range(3000)]
    names += ["orders-24", "a-1-", "-5", "-", "a--1", "t-0123", None, ""]
    tp = pa.array(names, pa.string())
    want = pc.extract_regex(tp, r"^(?P<t>.*)-(?P<p>\d+)$")
    topic, part = state._topic_partition(tp)
    assert topic.to_pylist() == pc.struct_field(want, "t").to_pylist()
    assert part.to_pylist() == pc.struct_field(want, "p").to_pylist()
    assert pc.is_valid(part).to_numpy(zero_copy_only=False).sum() > 500
