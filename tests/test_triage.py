"""Triage over every sample bundle: the right finding on each unhealthy one, none on the healthy
one, as JSON a script can rely on."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    "down-conversion": {"down-conversion"},
    "connect-offsets": {"offset-commit-timeouts"},
    "connect-offsets-2x": {"offset-commit-timeouts"},
    "compaction": {"cleaner-buffer-too-small", "cleaner-no-reclaim"},
    "codecs": set(),
    "tiered-storage": {"tierstate-metadata-growth", "broker-io-imbalance"},
    "remote-storage": {"remote-copy-errors"},
    "healthy": set(),
}


def test_every_sample_bundle_is_in_the_table():
    bundles = {p.name for p in (ROOT / "sample_data").iterdir() if p.is_dir()}
    assert bundles == set(EXPECTED)


@pytest.mark.parametrize("bundle", sorted(EXPECTED))
def test_triage_json(bundle):
    r = subprocess.run([sys.executable, "-m", "kitlib.cli", "triage", str(ROOT / "sample_data" / bundle), "--json"],
                       capture_output=True, text=True)
    found = json.loads(r.stdout)
    assert r.returncode == (1 if EXPECTED[bundle] else 0), r.stderr
    assert {f["id"] for f in found} == EXPECTED[bundle]
    for f in found:
        assert set(f) >= {"id", "severity", "summary", "recommendation", "evidence", "numbers"}
        assert f["evidence"] and all(e["file"] and isinstance(e["line"], int) for e in f["evidence"])
        assert (ROOT / "sample_data" / bundle / f["evidence"][0]["file"]).is_file()


def test_healthy_text_says_what_was_checked():
    r = subprocess.run([sys.executable, "-m", "kitlib.cli", "triage", str(ROOT / "sample_data" / "healthy")],
                       capture_output=True, text=True)
    assert r.returncode == 0
    assert "No findings. Checked:" in r.stdout
    for name in ("detect_down_conversion", "detect_buffer_too_small", "detect_offset_commit_timeouts"):
        assert name in r.stdout


def test_findings_are_ranked_and_cite_file_and_line():
    r = subprocess.run([sys.executable, "-m", "kitlib.cli", "triage", str(ROOT / "sample_data" / "compaction")],
                       capture_output=True, text=True)
    out = r.stdout
    assert out.index("[HIGH] cleaner-buffer-too-small") < out.index("[MEDIUM] cleaner-no-reclaim")
    assert "evidence broker-1/log-cleaner.log:" in out and "fix: Raise log.cleaner.dedupe.buffer.size" in out
