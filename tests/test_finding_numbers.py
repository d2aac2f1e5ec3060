"""Every number a finding states comes from rows of the bundle, the same rows its evidence cites.

Generic checks, for every detector on every sample bundle: each evidence row is a real row of
one of the bundle's tables (file and line); each count a finding says where it comes from
(``counted_from``: a table and a pandas query) is recounted here from that table, and when it
is not zero some of the rows it counts are among the evidence. Findings that state counts must
say where they come from (``MUST_COUNT``). Specific checks recount what the generic one cannot
reach from the raw ``events`` (the client lines of a rebalance storm, the ISR shrinks of a
stalled broker), so a detector that reads the wrong rows, or none, fails here.
"""

from __future__ import annotations

import re
from functools import cache

import pandas as pd
import pytest
from samples import NAMES, sample

import kitlib
from kitlib import registry, tables

# every sample bundle triaged and recounted (about 25 CPU-s): in make test, not the fast lane
pytestmark = pytest.mark.slow


# finding id -> the number keys that must say which rows they count (when the finding states them)
MUST_COUNT = {
    "rebalance-storm": (
        "rebalances",
        "members_failed",
        "members_left",
        "poll_timeouts_in_client_logs",
        "commit_failures_in_client_logs",
    ),
    "broker-fenced": ("isr_shrinks", "events"),
    "isr-shrink": ("isr_shrinks", "shrinks"),
    "transaction-timeouts": ("timeout_rollbacks",),
}


@cache
def triaged(name: str) -> list:
    return kitlib.triage(sample(name)).findings


@cache
def provenance(name: str) -> frozenset[tuple[str, int]]:
    """(file, line) of every row of every table the bundle has."""
    registry.load()
    b = sample(name)
    rows: set[tuple[str, int]] = set()
    for t in sorted(tables.SCHEMAS):
        df = b.table(t)
        if len(df) and {"file", "line"} <= set(df.columns):
            ok = df["line"].notna()
            rows |= set(zip(df.loc[ok, "file"].astype(str), df.loc[ok, "line"].astype(int)))
    return frozenset(rows)


def recount(bundle, table: str, query: str) -> pd.DataFrame:
    return bundle.table(table).query(query, engine="python")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_evidence_rows_are_rows_of_the_bundle(name):
    real = provenance(name)
    for f in triaged(name):
        cited = [(e["file"], e["line"]) for e in f.evidence if e.get("file") and e.get("line") is not None]
        missing = [c for c in cited if c not in real]
        assert not missing, f"{f.id}: evidence cites rows no table holds: {missing[:5]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_stated_counts_are_recounted_from_their_rows(name):
    b = sample(name)
    for f in triaged(name):
        for key in MUST_COUNT.get(f.id, ()):
            if key in f.numbers:
                assert key in f.counted_from, f"{f.id}: {key} = {f.numbers[key]} says no rows it counts"
        cited = {(e["file"], e["line"]) for e in f.evidence}
        for key, (table, query) in f.counted_from.items():
            rows = recount(b, table, query)
            assert len(rows) == f.numbers[key], f"{f.id}: {key} = {f.numbers[key]} but {table} has {len(rows)} rows"
            if len(rows):
                counted = set(zip(rows["file"].astype(str), rows["line"].astype(int)))
                assert counted & cited, f"{f.id}: no evidence row among the {len(rows)} rows {key} counts"


def test_the_samples_exercise_the_recount():
    """The generic check above has something to check: findings with counts on the samples."""
    seen = {(f.id, k) for n in NAMES for f in triaged(n) for k in f.counted_from}
    assert {("rebalance-storm", "poll_timeouts_in_client_logs"), ("broker-fenced", "isr_shrinks")} <= seen


# --- specific recounts from the raw events ---

POLL_TIMEOUT = re.compile(r"(?i)consumer poll timeout has expired|Heartbeat poll expired")
COMMIT_FAILED = re.compile(r"CommitFailed(?:Error|Exception)|Offset commit failed")


def _client_lines(bundle, pattern: re.Pattern, files: list[str]) -> int:
    ev = bundle.events
    mine = ev[ev["file"].astype(str).isin(files)]
    first = mine["message"].astype(str).str.split("\n", n=1).str[0]
    return int(first.str.contains(pattern).sum())


def test_rebalance_storm_client_counts_match_the_client_logs():
    b = sample("rebalance-storm")
    f = next(f for f in triaged("rebalance-storm") if f.id == "rebalance-storm")
    clients = sorted({str(x) for x in b.events["file"].unique() if str(x).startswith("clients/order-enricher")})
    assert f.numbers["poll_timeouts_in_client_logs"] == _client_lines(b, POLL_TIMEOUT, clients) == 26
    assert f.numbers["commit_failures_in_client_logs"] == _client_lines(b, COMMIT_FAILED, clients) == 0


def kafka_python_storm(root) -> kitlib.Bundle:
    """A rebalance storm of kafka-python 2.0 consumers that log at WARNING only, in Python's
    common ``%(asctime)s - %(name)s - %(levelname)s - %(message)s`` layout (synthetic client logs,
    wording from kafka-python 2.0.2: kafka/coordinator/base.py, kafka/errors.py), over the real
    coordinator log of the rebalance-storm sample. No client line names the group."""
    import shutil

    from samples import SAMPLE_DATA

    shutil.copytree(SAMPLE_DATA / "rebalance-storm" / "broker-1", root / "broker-1")
    (root / "clients").mkdir()
    (root / "bundle.yaml").write_text('tz: UTC\nlayouts:\n  "clients/*.log": "%d - %c - %p - %m%n"\n')
    t0 = pd.Timestamp("2026-11-23 12:40:41")
    for c in (1, 2):
        lines = []
        for i in range(13):
            t = t0 + pd.Timedelta(seconds=c + 8 * i)
            stamp = lambda x: x.strftime("%Y-%m-%d %H:%M:%S,") + f"{x.microsecond // 1000:03d}"
            lines.append(f"{stamp(t)} - kafka.coordinator - WARNING - Heartbeat poll expired, leaving group")
            lines += [
                f"{stamp(t + pd.Timedelta(seconds=1))} - order_enricher - ERROR - commit failed, batch will be "
                "redelivered: CommitFailedError: Commit cannot be completed since the group has already",
                "            rebalanced and assigned the partitions to another member.",
                "            This means that the time between subsequent calls to poll()",
            ]
        (root / "clients" / f"enricher-{c}.log").write_text("\n".join(lines) + "\n")
    return kitlib.load_bundle(root)


def test_kafka_python_client_counts_are_not_zero(tmp_path):
    """The issue's class: poll timeouts and CommitFailedError lines no line ties to a group were
    counted 0 while events held them; they belong to the only group rebalancing meanwhile."""
    b = kafka_python_storm(tmp_path)
    f = next(f for f in kitlib.triage(b).findings if f.id == "rebalance-storm")
    clients = ["clients/enricher-1.log", "clients/enricher-2.log"]
    assert f.numbers["poll_timeouts_in_client_logs"] == _client_lines(b, POLL_TIMEOUT, clients) == 26
    assert f.numbers["commit_failures_in_client_logs"] == _client_lines(b, COMMIT_FAILED, clients) == 26
    cited = {(e["file"], e["line"]) for e in f.evidence}
    for key, (table, query) in f.counted_from.items():
        rows = recount(b, table, query)
        assert len(rows) == f.numbers[key]
        assert not len(rows) or set(zip(rows["file"].astype(str), rows["line"].astype(int))) & cited, key


def test_stalled_broker_shrinks_match_the_leaders_lines():
    """isr-flapping: the stall finding's ISR departures are the leaders' 'Shrinking ISR' lines
    naming broker 2 (16 in the sample's PROVENANCE.md)."""
    b = sample("isr-flapping")
    f = next(f for f in triaged("isr-flapping") if f.id == "broker-fenced")
    ev = b.events
    lines = ev["message"].astype(str).str.contains(r"Shrinking ISR from .* Out of sync replicas: \(brokerId: 2,")
    assert f.numbers["isr_shrinks"] == int(lines.sum()) == 16


# --- what each finding rests on (its extent), recounted from its rows ---


def _utc(t) -> pd.Timestamp:
    t = pd.Timestamp(t)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def rested_on(bundle, f) -> tuple[set, set, set, set, list]:
    """(file:line rows, rows without a line, hosts, files, times) of a finding's evidence rows and
    of the rows its counts select, gathered here without the kit's own code."""
    lined, bare, hosts, files, times = set(), set(), set(), set(), []
    for e in f.evidence:
        if e.get("line") is not None:
            lined.add((e["file"], e["line"]))
        else:
            bare.add((e["file"], e["host"], None if not e.get("ts") else _utc(e["ts"]), e["text"]))
        hosts |= {e["host"]} - {"", None}
        files |= {e["file"]} - {"", None}
        times += [_utc(e["ts"])] if e.get("ts") else []
    for table, query in f.counted_from.values():
        rows = recount(bundle, table, query)
        lined |= set(zip(rows["file"].astype(str), rows["line"].astype(int)))
        hosts |= set(rows["host"].dropna().astype(str)) - {""}
        files |= set(rows["file"].dropna().astype(str)) - {""}
        times += [_utc(t) for t in rows["ts"].dropna()]
    return lined, bare, hosts, files, times


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_extent_is_recounted_from_the_rows_it_rests_on(name):
    """The lines, hosts, files and first/last time a finding says it rests on are those of its
    evidence rows and of the rows its counts select: no more, no fewer."""
    b = sample(name)
    real = provenance(name)
    for f in triaged(name):
        ext = f.extent
        assert ext is not None, f"{f.id}: triage measured no extent"
        lined, bare, hosts, files, times = rested_on(b, f)
        assert lined <= real, f"{f.id}: rests on rows no table holds"
        assert (ext.lines, ext.other) == (len(lined), len(bare)), f"{f.id}: {ext}"
        assert set(ext.hosts) == hosts and ext.files == len(files), f"{f.id}: {ext}"
        assert (ext.first, ext.last) == ((min(times), max(times)) if times else (None, None)), f"{f.id}: {ext}"
        assert f.to_dict()["extent"] == ext.to_dict()


@pytest.mark.slow
def test_the_samples_exercise_the_extent():
    """The recount above meets findings whose counts reach past their cited rows, and findings
    that span hosts and time (rows without a line number: tests/test_evidence_extent.py)."""
    found = [f for n in NAMES for f in triaged(n)]
    assert any(f.extent.lines > len(f.evidence) for f in found)  # counted rows beyond the cited ones
    assert any(len(f.extent.hosts) > 1 and f.extent.span_s for f in found)
