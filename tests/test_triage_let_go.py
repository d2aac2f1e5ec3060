"""A triage over an ingest output holds the tables of one detector at a time: a table is let go
after the last detector that needs or reads it, the cluster-health models read node_events and
partition_changes without their text (only the quoted rows' text is read), and the findings are
the ones a triage of the same bundle in memory gives."""

import json
import os

import pytest

import kitlib
from kitlib.findings import triage
from kitlib.investigations.cluster_health import analysis

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "sample_data")


def _dicts(result) -> list[dict]:
    return [f.to_dict() for f in result.findings]


@pytest.mark.slow
def test_triage_lets_tables_go_and_finds_the_same(tmp_path):
    root = os.path.join(SAMPLES, "log-dir-failure")
    out = tmp_path / "kit"
    kitlib.ingest(root, out, progress=False)
    kitlib.load(out).table("cleaner_runs")  # an earlier reader built and cached the derived tables

    mem = triage(kitlib.load_bundle(root, cache=False))
    b = kitlib.load(out)
    kept = b.table("restarts")  # read before the triage: the caller's, kept
    got = triage(b)
    assert json.dumps(_dicts(got), sort_keys=True) == json.dumps(_dicts(mem), sort_keys=True)
    assert any(f.id == "log-dir-failure" for f in got.findings)
    assert [(r.detector, r.status) for r in got.runs] == [(r.detector, r.status) for r in mem.runs]
    # read during the triage, then let go with what was computed from them
    for name in ("node_events", "partition_changes", "metrics"):
        assert name not in b.tables and not [k for k in b.parts if k[0] == name], name
    assert b.derived is None or not b.derived.built
    assert b.tables["restarts"] is kept
    assert not any(any(name == "node_events" for name, _ in frames) for frames, _ in b.memo.values())


@pytest.mark.slow
def test_models_read_no_text_and_quote_only_the_rows_shown(tmp_path):
    root = os.path.join(SAMPLES, "isr-flapping")
    out = tmp_path / "kit"
    kitlib.ingest(root, out, progress=False)
    kitlib.load(out).table("cleaner_runs")
    b, mem = kitlib.load(out), kitlib.load_bundle(root, cache=False)
    sh = analysis.shrink_rows(b)
    assert len(sh) and "message" not in sh.columns and "partition_changes" not in b.tables
    # the text of the rows a finding shows, by their file and line: the whole table's
    rows = sh.sort_values("ts").tail(5)
    whole = mem.table("partition_changes")
    text = dict(zip(zip(whole["file"].astype(str), whole["line"].astype(int)), whole["message"].astype(str)))
    want = [text[(f, int(n))] for f, n in zip(rows["file"].astype(str), rows["line"])]
    shown = analysis.quoted(b, rows, "partition_changes")
    assert list(shown["message"].astype(str)) == want and len(set(want)) > 1
    assert "partition_changes" not in b.tables  # still never read whole
    # in memory the rows keep the text they have
    assert analysis.quoted(mem, analysis.shrink_rows(mem).head(2), "partition_changes")["message"].notna().all()


@pytest.mark.slow
def test_transaction_timeouts_reads_no_text_and_quotes_the_rows_it_shows(tmp_path):
    """On an ingest output the transaction detector reads txn_events without its text (it never
    holds the table whole) and reads the text of the rows it quotes only: its finding, evidence
    text included, is the one the same detector gives on the bundle in memory."""
    from kitlib.findings import DETECTORS

    root = os.path.join(SAMPLES, "transactions")
    out = tmp_path / "kit"
    kitlib.ingest(root, out, progress=False, derive=True)
    b, mem = kitlib.load(out), kitlib.load_bundle(root, cache=False)
    detect = DETECTORS["transaction_timeouts"].fn
    got, want = detect(b), detect(mem)
    assert [f.id for f in got] == ["transaction-timeouts"] and len(got[0].evidence) > 1
    assert [f.to_dict() for f in got] == [f.to_dict() for f in want]
    assert all(e["text"] for e in got[0].evidence)
    assert "txn_events" not in b.tables
    read = [cols for name, cols, _ in b.parts if name == "txn_events"]
    assert read and all("message" not in cols for cols in read)
