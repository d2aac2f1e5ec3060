"""A triage in two processes (``jobs=2``, what ``kitlib triage`` asks for) finds what a triage in
one finds, in the same order, with the same runs; a unit the second process never reported runs in
the first."""

import json
import os

import pytest

import kitlib
from kitlib.findings import lanes, triage

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "sample_data")


def _same(a, b) -> None:
    assert json.dumps([f.to_dict() for f in a.findings]) == json.dumps([f.to_dict() for f in b.findings])
    assert a.runs == b.runs


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
@pytest.mark.parametrize("sample", ["rebalance-storm", "log-dir-failure"])
def test_two_processes_find_the_same(sample, tmp_path):
    root = os.path.join(SAMPLES, sample)
    one = triage(kitlib.load_bundle(root, cache=False))
    assert one.findings
    _same(triage(kitlib.load_bundle(root, cache=False), jobs=2), one)
    out = tmp_path / "kit"  # an ingest output: tables read (and let go) in each process
    kitlib.ingest(root, out, progress=False)
    _same(triage(kitlib.load(out), jobs=2), one)


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
def test_a_unit_the_second_process_lost_runs_in_the_first():
    first = os.getpid()

    def run_unit(i: int) -> int:
        if os.getpid() != first:
            os._exit(3)  # the second process dies on its first unit, reporting nothing
        return i * i

    assert lanes.run_units(range(6), run_unit) == [i * i for i in range(6)]


def test_one_job_runs_in_one_process():
    assert not lanes.usable(1)


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
def test_a_second_process_that_hangs_is_stopped_and_its_units_run_in_the_first():
    import time

    first = os.getpid()

    def run_unit(i: int) -> int:
        if os.getpid() != first:
            time.sleep(600)  # stuck (as a fork can be on a lock another thread held)
        return i + 1

    t0 = time.monotonic()
    assert lanes.run_units(range(5), run_unit, patience=1.0) == [1, 2, 3, 4, 5]
    assert time.monotonic() - t0 < 60


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
def test_many_findings_of_one_detector_have_their_extents_measured_in_two_processes(tmp_path, monkeypatch):
    # the bench's generated broker log (synthetic): 3 MB of it hold 40 groups' rebalance storms,
    # one finding each, whose extents a triage in two processes measures in two
    import sys

    from kitlib import findings

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    from genlog import generate

    (tmp_path / "b" / "broker-1").mkdir(parents=True)
    with open(tmp_path / "b" / "broker-1" / "server.log", "wb") as fh:
        generate(3 << 20, fh)
    kitlib.ingest(tmp_path / "b", tmp_path / "kit", progress=False)
    one = triage(kitlib.load(tmp_path / "kit"))
    storms = [f for f in one.findings if f.detector == "rebalance_storm"]
    assert len(storms) >= findings.EXTENTS_APART
    # every storm rests on lines of its own group: no two extents alike, so a piece measured
    # for the wrong finding, or the pieces put back out of order, would show
    assert len({(e.lines, e.first, e.last) for e in (f.extent for f in storms)}) > 1

    calls = tmp_path / "calls"  # written by whichever process calls (the storms' unit may run in the fork)
    real = lanes.run_units

    def spied(units, run_unit, patience=None):
        with open(calls, "a") as fh:
            fh.write(f"{len(units)}\n")
        return real(units, run_unit, patience)

    monkeypatch.setattr(lanes, "run_units", spied)
    two = triage(kitlib.load(tmp_path / "kit"), jobs=2)
    _same(two, one)
    # the detectors' units, then the storms' extents in their pieces
    said = calls.read_text().split()
    assert len(said) == 2 and said[1] == str(findings.EXTENT_PIECES), said


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
def test_an_ingest_output_gets_its_derived_tables_built_once_before_the_second_process(tmp_path, monkeypatch):
    """On a plain ingest output, whose derived tables the first reader builds, a triage in two
    processes builds them once, in the process that starts it and before any detector runs: the
    two processes had each built them all when their first units asked (twice the work, and the
    memory of both builds at once)."""
    from kitlib import findings
    from kitlib.ingestion import derive

    root = os.path.join(SAMPLES, "rebalance-storm")
    one = triage(kitlib.load_bundle(root, cache=False))
    out = tmp_path / "kit"
    kitlib.ingest(root, out, progress=False)
    said = tmp_path / "said"  # appended to by whichever process builds or runs a detector
    first = os.getpid()
    real_build, real_run = derive.build_all, findings._run

    def build_all(store, *rest):
        with open(said, "a") as fh:
            fh.write(f"build {'first' if os.getpid() == first else 'second'}\n")
        return real_build(store, *rest)

    def run(*a, **k):
        with open(said, "a") as fh:
            fh.write("detector\n")
        return real_run(*a, **k)

    monkeypatch.setattr(derive, "build_all", build_all)
    monkeypatch.setattr(findings, "_run", run)
    _same(triage(kitlib.load(out), jobs=2), one)
    lines = said.read_text().splitlines()
    assert lines[0] == "build first" and lines.count("build first") + lines.count("build second") == 1, lines[:5]
    assert (out / derive.CACHE / "group_events.parquet").exists()


@pytest.mark.skipif(not lanes.usable(2), reason="needs os.fork and two cores")
def test_a_table_with_no_rows_puts_no_detectors_in_one_unit(monkeypatch):
    """Detectors are run in one unit when they name a table in common, but not through a table
    with no rows (nothing is read or shared): the transactions' detector and the cluster's, which
    both read an empty metrics table, run apart; the findings are the same either way."""
    from kitlib import findings

    def without_metrics():  # the bundle as one without any JMX file gives it
        b = kitlib.load_bundle(os.path.join(SAMPLES, "rebalance-storm"), cache=False)
        b.tables["metrics"] = b.table("metrics").iloc[:0]
        return b

    one = triage(without_metrics())
    handed: list[list[int]] = []
    real = lanes.run_units

    def spied(units, run_unit, *a, **k):
        handed.extend(list(u) for u in units)
        return real(units, run_unit, *a, **k)

    monkeypatch.setattr(lanes, "run_units", spied)
    b = without_metrics()
    assert not len(b.table("metrics")) and len(b.table("group_events"))
    _same(triage(b, jobs=2), one)
    names = sorted(findings.DETECTORS)
    units = [{names[i] for i in u} for u in handed]
    txn = next(u for u in units if "transaction_timeouts" in u)
    assert "detect_isr_shrink" not in txn  # joined only through metrics, which is empty here
    storm = next(u for u in units if "rebalance_storm" in u)
    assert "consumer_stalled" in storm  # group_events has rows: still one unit
