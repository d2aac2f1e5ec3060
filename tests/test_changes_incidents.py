"""``kitlib changes`` against the lab's incidents: with the window each incident's PROVENANCE.md
states, the incident's own log statements (named here from its scenario in lab/scenarios/) rank
in the top ten changes; on the healthy bundles, sliding windows raise few alarms (the rate is
measured and stated below and in bench/README.md); and the throttled reassignment, an incident
no detector covers, is found by ``kitlib changes`` alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib import changes as ch
from kitlib.cli import main
from kitlib.findings import triage

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_data"
WINDOW = re.compile(r"^Incident window \(UTC\): (\S+?)\.\.(\S+?)(?:\s|$)", re.MULTILINE)
TOP = 10

# each incident's own log statements: a piece of the template text of each (catalogue wording, or
# the masked pattern of a line outside the catalogue), from what its scenario makes happen
OWN = {
    "isr-flapping": ["Shrinking ISR from", "ISR updated to"],
    "controller-failover": ["Recorded new {any} controller", "could not be established"],
    "log-dir-failure": ["Error while appending records", "resides in an offline log directory"],
    "auth-failures": ["authentication with {any}"],
    "rebalance-storm": ["Preparing to rebalance group", "Stabilized group"],
    "remote-storage": ["Error occurred while copying log segments", "after failing to copy segment"],
    "connect-offsets": ["Timed out waiting to flush offsets", "Failed to commit offsets"],
    "connect-offsets-2x": ["Failed to flush, timed out", "Failed to commit offsets"],
    "throttled-reassignment": [
        "Updating node {broker_id} with new configuration",
        "Replayed ConfigRecord",
        "Replayed partition assignment change",
        # the lineage's newest wording is KRaft's DynamicConfigPublisher (3.4 to 4.4), whose
        # source names the topic by an expression the catalogue cannot type
        "Updating topic {any} with new configuration",
    ],
}
# incident bundles with no window: what they are about is not a change of their log statements
# a window can show against the rest of the bundle
NO_WINDOW = {
    "transactions": "the rollback and the fencing are one or three lines each: no count that small is beyond chance",
    "quota-throttling": "the throttling lasts the whole client run; the rest of the bundle is the broker's start-up",
    "consumer-stalled": "the stall is in the lag snapshots; the logs say nothing about it by design",
    "gc-pressure": "the pauses are in the GC log, read as GC pauses, not as log statements",
    "request-saturation": "the saturation is in the request log's timings and JMX, not in which statements are logged",
    "compaction": "the cleaner's passes are the whole run",
    "down-conversion": "the conversions are in JMX and the request log's API versions",
    "codecs": "a measurement, not an incident",
    "tiered-storage": "synthetic read traces and tier-state lines over 19 days, not a window",
}
HEALTHY = ["healthy", "healthy-cluster"]
CONFIG_ONLY = ["cluster-config"]  # nothing fails; its risks are configuration, a planted reassignment
# measured with the sliding windows of test_healthy_bundles_alarm_rate (15 a bundle). Comparing
# every record, 16 of the 30 alarmed, each on a lifecycle step (a node's start-up, the offsets topic
# created on a group's first use or unloaded at shutdown); with those steps set aside (the default)
# one does: three segment rolls of the single broker's produce test, against one in the rest
STATED_ALARMS = (1, 30)
STATED_ALARMS_WITH_LIFECYCLE = (16, 30)


def stated_window(name: str) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    got = WINDOW.search((SAMPLES / name / "PROVENANCE.md").read_text())
    return ch.parse_span(f"{got.group(1)}..{got.group(2)}") if got else None


def windowed() -> list[str]:
    return sorted(p.parent.name for p in SAMPLES.glob("*/PROVENANCE.md") if stated_window(p.parent.name))


def rank_of(res: ch.Changes, piece: str) -> int | None:
    """1-based rank of the first change whose template holds ``piece``."""
    for i, t in enumerate(res.overall["template"]):
        if piece in t:
            return i + 1
    return None


def test_the_windows_stated_are_the_ones_tested():
    """Every bundle whose PROVENANCE.md states an incident window has its own statements named
    here (so it is tested), and the bundles said to have none state none."""
    names = {p.parent.name for p in SAMPLES.glob("*/PROVENANCE.md")}
    with_window = set(windowed())
    assert with_window <= set(OWN), f"windows with no statements named: {with_window - set(OWN)}"
    assert set(OWN) <= with_window, f"statements named, no window stated: {set(OWN) - with_window}"
    assert set(NO_WINDOW) | set(HEALTHY) | set(CONFIG_ONLY) <= names - with_window


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OWN))
def test_the_incident_statements_rank_in_the_top_ten(name):
    window = stated_window(name)
    assert window is not None
    res = ch.changes(kitlib.load_bundle(SAMPLES / name, progress=False), window, top=TOP)
    ranks = {piece: rank_of(res, piece) for piece in OWN[name]}
    assert all(r is not None and r <= TOP for r in ranks.values()), ranks
    for piece in OWN[name]:
        row = res.overall.iloc[rank_of(res, piece) - 1]
        assert row["kind"] in ("new", "rose") and row["p"] < ch.ALPHA  # more of it in the window, beyond chance


@pytest.mark.slow
def test_healthy_bundles_alarm_rate():
    """Windows of an eighth of each healthy bundle, sliding by a sixteenth: the share of windows
    in which any statement changes beyond chance (G over the Bonferroni threshold at alpha 0.01)."""
    alarms = tried = with_lifecycle = 0
    for name in HEALTHY:
        b = kitlib.load_bundle(SAMPLES / name, progress=False)
        lo, hi = b.span()
        step = (hi - lo) / 16
        for k in range(15):
            window = (lo + k * step, lo + (k + 2) * step)
            tried += 1
            alarms += bool(len(ch.changes(b, window).overall))
            with_lifecycle += bool(len(ch.changes(b, window, lifecycle=True).overall))
    assert (alarms, tried) == STATED_ALARMS
    assert (with_lifecycle, tried) == STATED_ALARMS_WITH_LIFECYCLE


@pytest.mark.slow
def test_a_start_up_is_context_not_a_change(capsys):
    """The window holding the single broker's start-up: its start-up statements are set aside and
    said as context (the JSON states which records and how many); compared like the others, they
    are the changes."""
    b = kitlib.load_bundle(SAMPLES / "healthy", progress=False)
    lo, hi = b.span()
    window = (lo + (hi - lo) / 16, lo + (hi - lo) * 3 / 16)
    res = ch.changes(b, window)
    assert res.overall.empty
    assert "broker-1 started in the window (06:48:18)" in res.context
    assert res.set_aside["start-up"]["window"] > 0 and res.set_aside["creation"]["baseline"] > 0
    assert not ch.changes(b, window, lifecycle=True).overall.empty
    span = f"{window[0].isoformat()}..{window[1].isoformat()}"
    assert main(["changes", str(SAMPLES / "healthy"), "--window", span, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["lifecycle"]
    assert got["set_aside"] is True and got["records"] == res.set_aside and got["context"] == res.context
    assert main(["changes", str(SAMPLES / "healthy"), "--window", span, "--json", "--include-lifecycle"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lifecycle"]["set_aside"] is False and out["changes"]


@pytest.mark.slow
@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_bundles_found_window_is_not_its_start_up(name):
    """Without a window the one found on a healthy bundle holds no start-up: those records are
    set aside from the search too."""
    res = ch.changes(kitlib.load_bundle(SAMPLES / name, progress=False), None)
    assert res.found_window and res.set_aside["start-up"]["window"] == 0
    assert not any("start" in c for c in res.context)


@pytest.fixture(scope="module")
def reassignment():
    return kitlib.load_bundle(SAMPLES / "throttled-reassignment", progress=False)


@pytest.mark.slow
def test_no_detector_covers_the_throttled_reassignment(reassignment):
    got = triage(reassignment)
    assert got.findings == [] and not got.failed


@pytest.mark.slow
def test_the_throttled_reassignment_is_found_by_its_statements(reassignment):
    res = ch.changes(reassignment, stated_window("throttled-reassignment"), top=TOP)
    top = res.overall
    throttle = top[top["template"].str.startswith("Updating node {broker_id} with new configuration")].iloc[0]
    assert throttle["kind"] == "new" and set(throttle["hosts"]) == {"broker-1", "broker-2", "broker-3"}
    # the throttle rate the operator typed, among the slot values that changed
    assert any("replication.throttled.rate -> 8000" in v["value"] for v in throttle["values"])


@pytest.mark.broker
@pytest.mark.slow
def test_the_throttled_reassignment_scenario_is_found_again(tmp_path):
    """The scenario, shortened, on a fresh three-node cluster: its window again holds the
    throttle configs among the top ten changes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("throttled", ROOT / "lab" / "scenarios" / "throttled_reassignment.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.run(tmp_path / "b", preload_s=4, before_s=15, crawl_s=20, after_s=3, rate=200, work=tmp_path / "w")
    got = WINDOW.search((out / "PROVENANCE.md").read_text())
    assert got
    res = ch.changes(kitlib.load_bundle(out, progress=False), f"{got.group(1)}..{got.group(2)}", top=TOP)
    for piece in ("Updating node {broker_id} with new configuration", "Replayed ConfigRecord"):
        rank = rank_of(res, piece)
        assert rank is not None and rank <= TOP and res.overall.iloc[rank - 1]["kind"] == "new", (piece, rank)


@pytest.mark.slow
def test_the_healthy_clusters_found_window_gets_the_quiet_line():
    """The block of the summary page with no window and no finding: the window found on the
    healthy three-node cluster holds no change beyond chance, so the block is the quiet line, and
    the topic creation in it is said as context."""
    from kitlib.display.changes import QUIET_CLASS, changes_block

    got = changes_block(kitlib.load_bundle(SAMPLES / "healthy-cluster", progress=False))
    assert f"class='{QUIET_CLASS}'" in got.html and "<tr data-kind" not in got.html
    assert "no window was given and no finding has one, so it was found" in got.html
    assert got.text.startswith("What else changed in this window: Nothing else changed beyond chance")
    assert "kit-changes-lifecycle" in got.html and "were created" in got.html
