"""The findings catalogue and what is generated from it: ``docs/findings.md`` and the findings
column of ``sample_data/README.md`` (what triage finds on each sample bundle) are current, and a
finding's severity is one :class:`~kitlib.findings.Severity` that prints as its plain name."""

import json
from pathlib import Path

import pytest
from samples import NAMES, SAMPLE_DATA, sample

import kitlib
from kitlib import registry
from kitlib.findings import Finding, Severity
from kitlib.investigations import FindingKind, catalogue

ROOT = Path(__file__).resolve().parents[1]


def test_docs_findings_md_is_current():
    doc = ROOT / "docs" / "findings.md"
    assert doc.read_text() == catalogue.markdown(), "docs/findings.md is stale: kitlib findings > docs/findings.md"


def test_every_finding_id_is_in_the_catalogue_once_with_a_meaning():
    text = catalogue.markdown()
    for inv in registry.investigations():
        for k in inv.findings:
            assert isinstance(k, FindingKind) and k.meaning and isinstance(k.severity, Severity)
            assert text.count(f"| `{k.id}` | {k.severity} |") == 1


@pytest.mark.slow
def test_sample_readme_table_is_what_triage_finds():
    readme = SAMPLE_DATA / "README.md"
    found = {name: kitlib.triage(sample(name)).findings for name in NAMES}
    assert readme.read_text() == catalogue.with_sample_table(readme.read_text(), found), (
        "sample_data/README.md is stale: python -m kitlib.investigations.catalogue --samples sample_data"
    )
    for name in NAMES:  # and what triage finds is what the investigations declare as examples
        declared = {fid for inv in registry.investigations() for fid in inv.examples.get(name, ())}
        assert {f.id for f in found[name]} == declared, name


def test_the_table_keeps_the_written_columns_and_adds_a_row_for_a_new_bundle():
    readme = "\n".join(
        [
            "intro",
            catalogue.BEGIN,
            "| bundle | incident | how | findings |",
            "|---|---|---|---|",
            "| `a/` | what went wrong | made so | `old-id` |",
            "| `gone/` | removed | - | none |",
            catalogue.END,
            "outro",
        ]
    )
    found = {"a": [Finding("x-y", "low", "s")], "b": []}
    out = catalogue.with_sample_table(readme, found).split("\n")
    assert out[0] == "intro" and out[-1] == "outro"
    assert "| `a/` | what went wrong | made so | `x-y` (low) |" in out
    assert "| `b/` |  |  | none |" in out and not any("gone" in line for line in out)
    with pytest.raises(ValueError, match="no findings table"):
        catalogue.with_sample_table("no table here", found)


def test_severity_ranks_and_prints_as_its_plain_name():
    assert list(Severity) == ["critical", "high", "medium", "low", "info"]
    assert Severity.CRITICAL > Severity.HIGH > Severity.MEDIUM > Severity.LOW > Severity.INFO
    assert max(Severity.LOW, Severity.HIGH) is Severity.HIGH and Severity.LOW < "medium"
    assert sorted(["info", "none", "high"], key=Severity.rank_of) == ["high", "info", "none"]
    f = Finding("demo-x", "high", "one line")
    assert f.severity is Severity.HIGH and f.severity == "high"
    d = f.to_dict()
    assert type(d["severity"]) is str and json.dumps(d["severity"]) == '"high"'
    assert f"[{f.severity}] {f.severity.upper()} {f.severity.capitalize()}" == "[high] HIGH High"
    with pytest.raises(ValueError, match="severity must be one of"):
        Finding("demo-x", "urgent", "one line")
    with pytest.raises(ValueError):
        FindingKind("demo-x", "urgent", "what it means")
