"""Twice the rows cost about twice the time: the detectors and models that once walked their rows
(a mask per row, or a Python object per timestamp) on a dense incident.

The input is synthetic: three brokers' server.log in Kafka 3.9's wording, written by
bench/dense_bench.py (ISR shrinks and rejoins, group rebalances, fencing and unfencing, controlled
shutdowns, transaction rollbacks, failed authentications), parsed by the kit like any bundle, at
N and 2N records. Each detector runs once to build the tables it reads, then is timed alone three
times at each size; the best of three at 2N must stay under three times the best at N (linear
with noise; a quadratic walk gives about four). Timings under ``FLOOR`` seconds count as
``FLOOR``: below that the clock measures the interpreter, not the work.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

import kitlib
from kitlib import registry
from kitlib.findings import DETECTORS
from kitlib.investigations.cluster_health import analysis, causes

pytestmark = pytest.mark.slow

N = 16_000  # records at the smaller size (synthetic)
FLOOR = 0.03
MAX_RATIO = 3.0
DETECTORS_TIMED = [
    "detect_isr_shrink",
    "detect_broker_fenced",
    "rebalance_storm",
    "transaction_timeouts",
    "auth_failures",
]


def _dense_bench():
    path = Path(__file__).resolve().parents[1] / "bench" / "dense_bench.py"
    spec = importlib.util.spec_from_file_location("dense_bench", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    registry.load()
    write = _dense_bench().write_bundle
    out = {}
    for n in (N, 2 * N):
        root = tmp_path_factory.mktemp(f"dense-{n}")
        write(root, n)
        out[n] = kitlib.load_bundle(root)
    return out


def _best_pair(small_fn, big_fn, repeats: int = 5) -> tuple[float, float]:
    """The best of ``repeats`` timings of each, taken in turn (small, big, small, ...) so that
    load from other processes falls on both sizes alike."""
    small_fn(), big_fn()  # builds and caches the tables they read
    best = [float("inf"), float("inf")]
    for _ in range(repeats):
        for i, fn in enumerate((small_fn, big_fn)):
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return max(best[0], FLOOR), max(best[1], FLOOR)


def test_dense_input_holds_the_storm(bundles):
    """The synthetic log is what the timings claim: thousands of ISR shrinks, fencings, unfencings,
    controlled shutdowns and rebalances, twice as many at 2N."""
    small, big = bundles[N], bundles[2 * N]
    for b, n in ((small, N), (big, 2 * N)):
        ne = b.table("node_events")["kind"].astype(str).value_counts()
        assert min(ne["fenced"], ne["unfenced"], ne["controlled_shutdown"]) > n // 20
        assert len(analysis.shrink_rows(b)) > n // 20
        assert (b.table("group_events")["kind"].astype(str) == "prepare_rebalance").sum() > n // 20
    assert 1.8 < len(big.table("partition_changes")) / len(small.table("partition_changes")) < 2.2
    # the fencings really are tied to their unfencings and shutdown windows (not an empty path)
    found = DETECTORS["detect_broker_fenced"].fn(big)
    assert found and all(f.numbers["max_seconds_fenced"] is not None for f in found)
    e = big.table("node_events")
    e = e.assign(about=analysis.node_col(e, analysis.node_ids(big)))
    assert 0 < causes.in_shutdown(big, e).sum() < len(e)


@pytest.mark.parametrize("name", DETECTORS_TIMED)
def test_detector_time_grows_linearly(bundles, name):
    fn = DETECTORS[name].fn
    small, big = _best_pair(lambda: fn(bundles[N]), lambda: fn(bundles[2 * N]))
    assert big / small < MAX_RATIO, f"{name}: {small:.3f} s at {N:,} records, {big:.3f} s at {2 * N:,}"


@pytest.mark.parametrize("model", ["isr_episodes", "in_shutdown"])
def test_model_time_grows_linearly(bundles, model):
    def run(b):
        if model == "isr_episodes":
            return analysis.isr_episodes(b)
        e = b.table("node_events")
        return causes.in_shutdown(b, e.assign(about=analysis.node_col(e, analysis.node_ids(b))))

    small, big = _best_pair(lambda: run(bundles[N]), lambda: run(bundles[2 * N]))
    assert big / small < MAX_RATIO, f"{model}: {small:.3f} s at {N:,} records, {big:.3f} s at {2 * N:,}"


def test_the_builder_bench_builds_what_the_first_reader_builds(tmp_path):
    """bench/dense_bench.py --builders times the blockwise groups on an ingest output's events: the
    records it picks are every stored record, and the rows each group's batches build are the rows
    the output's first reader derives for that group's tables (so its per-record costs are those
    of the work a first triage does)."""
    from kitlib import extract
    from kitlib.ingestion.store import ingest

    bench = _dense_bench()
    root, out = tmp_path / "dense", tmp_path / "dense.out"
    bench.write_bundle(root, N)
    ingest(root, out)
    timed = bench.time_builders(out)
    assert timed["picking the records"]["records"] == N // 3 * 3
    b = kitlib.load(out)
    groups = extract.groups()
    wanted = {g for t, g in groups.items() if extract.EXTRACTORS[t].blockwise and b.rows(t)}
    assert wanted == {"partition_changes", "group_events", "auth_failures", "txn_events"}
    assert wanted <= set(timed)
    for group in wanted:
        derived = sum(b.rows(t) for t, g in groups.items() if g == group)
        assert timed[group]["rows"] == derived, group
        assert timed[group]["records"] >= derived // 2 and timed[group]["cpu"] > 0


def test_the_storms_findings_rest_on_every_line_they_count(bundles):
    """On the storm, a finding's extent is the rows its numbers count, not its eight evidence rows:
    the fencings, ISR departures and rollbacks each finding states are said where they come from
    (``counted_from``, recounted here with pandas), and the triage's extent holds every one of them
    (it was 8 lines for 355,975 fencings on the 1 GB dense incident)."""
    b = bundles[2 * N]
    keys = {"broker-fenced": "events", "isr-shrink": "shrinks", "transaction-timeouts": "timeout_rollbacks"}
    found = [f for f in kitlib.triage(b).findings if f.id in keys]
    assert {f.id for f in found} == set(keys)
    for f in found:
        key = keys[f.id]
        assert key in f.counted_from, f"{f.id}: {key} = {f.numbers[key]} says no rows it counts"
        for k, (table, query) in f.counted_from.items():
            assert len(b.table(table).query(query, engine="python")) == f.numbers[k], (f.id, k, query)
        assert f.rests_on().lines >= f.numbers[key] > 20
