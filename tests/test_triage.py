"""Triage over every sample bundle: each yields exactly the findings its investigations declare
as examples (a bundle no investigation names, such as healthy, yields none), as JSON a script
can rely on."""

import json
from pathlib import Path

import pytest
from samples import NAMES, sample

from kitlib import registry

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = NAMES


def expected(bundle: str) -> set[str]:
    return {fid for inv in registry.investigations() for fid in inv.examples.get(bundle, ())}


def test_every_example_names_a_sample_bundle():
    for inv in registry.investigations():
        for b in inv.examples:
            assert b in BUNDLES, f"{inv.name} names sample bundle {b!r}, which sample_data/ lacks"


def triage_json(bundle: str) -> list[dict]:
    """What `kitlib triage --json` prints, computed in this process (the CLI itself is run once below)."""
    import kitlib

    return json.loads(json.dumps([f.to_dict() for f in kitlib.triage(sample(bundle)).findings]))


@pytest.mark.slow
def test_the_cli_prints_the_same_json_and_exit_status(kit):
    r = kit("triage", ROOT / "sample_data" / "compaction", "--json")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout) == triage_json("compaction")
    r = kit("triage", ROOT / "sample_data" / "healthy", "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == []


@pytest.mark.slow
@pytest.mark.parametrize("bundle", BUNDLES)
def test_triage_json(bundle):
    found = triage_json(bundle)
    want = expected(bundle)
    assert {f["id"] for f in found} == want
    for f in found:
        assert set(f) >= {"id", "severity", "summary", "recommendation", "evidence", "numbers", "investigation"}
        owner = registry.owner(f["id"])
        assert owner is not None and f["investigation"] == owner.name and f["notebook"] == owner.notebook
        assert f["evidence"] and all(e["file"] and isinstance(e["line"], int) for e in f["evidence"])
        assert (ROOT / "sample_data" / bundle / f["evidence"][0]["file"]).is_file()


def triage_text(bundle: str) -> str:
    import contextlib
    import io

    from kitlib.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        main(["triage", str(ROOT / "sample_data" / bundle)])
    return buf.getvalue()


@pytest.mark.slow
def test_healthy_text_says_what_was_checked():
    out = triage_text("healthy")
    assert "No findings. Checked:" in out
    for d in registry.DETECTORS.values():
        assert d.name in out


@pytest.mark.slow
def test_findings_are_ranked_and_cite_file_and_line():
    out = triage_text("compaction")
    assert out.index("[HIGH] cleaner-buffer-too-small") < out.index("[MEDIUM] cleaner-no-reclaim")
    assert "evidence broker-1/log-cleaner.log:" in out and "fix: Raise log.cleaner.dedupe.buffer.size" in out
    assert "open: notebook compaction.ipynb (compaction)" in out
