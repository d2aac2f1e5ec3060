"""The one registry: every investigation declared once and listed, every finding id owned by one
investigation, detectors checked against their investigation's ids and skipped when their tables
are empty, third-party investigations through entry points, one time-zone rule everywhere."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from samples import sample

import kitlib
from kitlib import registry
from kitlib.findings import Detector, Finding

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.mark.slow
def test_investigations_json_lists_each_with_its_notebook_tables_and_ids(kit):
    r = kit("investigations", "--json")
    assert r.returncode == 0, r.stderr
    listed = {i["name"]: i for i in json.loads(r.stdout)}
    assert set(listed) == set(registry.load()) >= {"compaction", "connect_offsets", "throughput", "tiered_storage"}
    seen: dict[str, str] = {}
    for name, inv in listed.items():
        assert (NOTEBOOKS / inv["notebook"]).is_file(), inv["notebook"]
        assert inv["notebook"] == f"{name}.ipynb" and inv["package"] == f"kitlib.investigations.{name}"
        assert all(t in registry.TABLES for t in inv["tables"])
        for fid in inv["finding_ids"]:
            assert fid not in seen, f"{fid} claimed by {seen.get(fid)} and {name}"
            seen[fid] = name
    assert seen["cleaner-no-reclaim"] == "compaction" and seen["down-conversion"] == "throughput"
    text = kit("investigations").stdout
    assert "compaction: Log compaction" in text and "notebook  compaction.ipynb" in text


def test_every_notebook_belongs_to_an_investigation_or_is_the_triage_page():
    names = {p.name for p in NOTEBOOKS.glob("*.ipynb")}
    assert names == {"triage.ipynb"} | {inv.notebook for inv in registry.investigations()}


@pytest.mark.slow
def test_relevance_is_data_on_declared_tables(monkeypatch):
    from dataclasses import replace

    from kitlib.investigations import Rows

    registry.load()
    for inv in registry.investigations():
        assert inv.relevant_when and all(isinstance(r, (str, Rows)) for r in inv.relevant_when), inv.name
        for b in inv.examples:
            assert inv.relevant(sample(b)), f"{inv.name} is not relevant on its own sample bundle {b}"
    # healthy has metrics, but none of the request handlers' idle meters; remote-storage has only
    # remote log lines, of which the copies make tiered storage relevant
    assert not registry.investigation("client_requests").relevant(sample("healthy"))
    assert registry.investigation("tiered_storage").relevant(sample("remote-storage"))
    assert not registry.investigation("throughput").relevant(sample("codecs"))
    odd = replace(registry.INVESTIGATIONS["compaction"], relevant_when=("cleaner_runs", Rows("no_such_table")))
    monkeypatch.setitem(registry.INVESTIGATIONS, "compaction", odd)
    with pytest.raises(registry.RegistryError, match="relevant on undeclared tables.*no_such_table"):
        registry.check()


def test_the_registry_imports_nothing_of_the_kit_but_through_importlib():
    """The registry sits at the bottom of the import graph: the modules above it register into it
    and it loads them by name, so it has no import of them, not even under ``TYPE_CHECKING``."""
    import ast

    tree = ast.parse((ROOT / "kitlib" / "registry.py").read_text())
    found = []
    for n in ast.walk(tree):
        if not isinstance(n, (ast.Import, ast.ImportFrom)):
            continue
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
        found += [ast.unparse(n) for x in names if x == "kitlib" or x.startswith("kitlib.")]
    assert found == []


def test_a_detector_with_an_undeclared_id_is_refused(monkeypatch):
    registry.load()
    d = Detector(
        "detect_stray", lambda b: [], ("cleaner-made-up",), "nothing", (), "kitlib.investigations.compaction.analysis"
    )
    monkeypatch.setitem(registry.DETECTORS, d.name, d)
    with pytest.raises(registry.RegistryError, match="cleaner-made-up.*compaction"):
        registry.check()


def test_a_detector_outside_every_investigation_is_refused(monkeypatch):
    registry.load()
    monkeypatch.setitem(
        registry.DETECTORS,
        "detect_orphan",
        Detector("detect_orphan", lambda b: [], (), "nothing", (), "somewhere.else"),
    )
    with pytest.raises(registry.RegistryError, match="not inside any investigation"):
        registry.check()


def test_a_finding_id_claimed_twice_is_refused(monkeypatch):
    from dataclasses import replace

    registry.load()
    twin = replace(registry.INVESTIGATIONS["compaction"], name="compaction_twin", package="elsewhere")
    monkeypatch.setitem(registry.INVESTIGATIONS, "compaction_twin", twin)
    with pytest.raises(registry.RegistryError, match="claimed by investigations"):
        registry.check()


def test_undeclared_ids_at_run_time_are_dropped_and_reported(monkeypatch):
    registry.load()
    b = sample("compaction")

    def liar(bundle):
        return [Finding("cleaner-no-reclaim", "low", "fine"), Finding("not-mine", "low", "stray")]

    monkeypatch.setitem(
        registry.DETECTORS,
        "detect_liar",
        Detector(
            "detect_liar", liar, ("cleaner-no-reclaim",), "a test", (), "kitlib.investigations.compaction.analysis"
        ),
    )
    result = kitlib.triage(b, investigations=["compaction"])
    run = next(r for r in result.runs if r.detector == "detect_liar")
    assert run.status == "failed" and "not-mine" in run.reason
    assert "not-mine" not in {f.id for f in result.findings}
    assert any(f.detector == "detect_liar" and f.investigation == "compaction" for f in result.findings)


@pytest.mark.slow
def test_a_detector_whose_tables_are_empty_is_skipped_not_run(kit):
    b = sample("codecs")
    result = kitlib.triage(b)
    runs = {r.detector: r for r in result.runs}
    assert runs["detect_no_reclaim"].status == "skipped" and "cleaner_runs" in runs["detect_no_reclaim"].reason
    assert not result.failed
    text = kit("triage", ROOT / "sample_data" / "codecs").stdout
    assert "[skipped: no rows in cleaner_runs]" in text


@pytest.mark.slow
def test_a_third_party_investigation_arrives_through_an_entry_point(kit, tmp_path):
    pkg = tmp_path / "acme_kafka"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        from kitlib.findings import Finding, detector
        from kitlib.investigations import FindingKind, Investigation

        @detector(ids=["acme-too-many-warnings"], needs=["events"], checks="more than 2 WARN records")
        def detect_warnings(bundle):
            warn = bundle.events[bundle.events["level"] == "WARN"]
            return [Finding("acme-too-many-warnings", "low", f"{len(warn)} warnings")] if len(warn) > 2 else []

        INVESTIGATION = Investigation(name="acme", title="Acme warnings", question="Too many warnings?",
                                      tables=("events",), relevant_when=("events",),
                                      findings=(FindingKind("acme-too-many-warnings", "low", "many warnings"),))
    """)
    )
    dist = tmp_path / "acme_kafka-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-kafka\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kitlib.investigations]\nacme = acme_kafka\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    r = kit("investigations", "--json", env=env)
    assert r.returncode == 0, r.stderr
    acme = [i for i in json.loads(r.stdout) if i["name"] == "acme"]
    assert acme and acme[0]["package"] == "acme_kafka" and acme[0]["finding_ids"] == ["acme-too-many-warnings"]
    r = kit("triage", ROOT / "sample_data" / "remote-storage", "--json", env=env)
    found = {f["id"]: f for f in json.loads(r.stdout)}
    assert found["acme-too-many-warnings"]["investigation"] == "acme"


def test_the_ingest_function_and_the_ingestion_modules_are_both_reachable():
    """``kitlib.ingest`` is the function; the package behind it has another name, so importing
    one of its modules by dotted path never meets the function (it did while both were
    ``kitlib.ingest``)."""
    import kitlib.ingestion.pipeline as pipeline
    import kitlib.ingestion.store as store

    assert callable(kitlib.ingest) and kitlib.ingest is store.ingest
    assert callable(pipeline.run)


def test_triage_stays_callable_whatever_is_imported():
    import kitlib.cli
    import kitlib.findings
    import kitlib.report

    assert callable(kitlib.triage)
    assert kitlib.triage(sample("healthy")).findings == []


def test_python_m_kitlib_tables_prints_every_table():
    r = subprocess.run([sys.executable, "-m", "kitlib.tables"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "## `events`" in r.stdout and "## `cleaner_runs`" in r.stdout and "## `files`" in r.stdout


LOG = "[2024-05-22 10:00:0{i},000] WARN something odd {i} (kafka.server.ReplicaManager)\n"


@pytest.fixture
def berlin_bundle(tmp_path):
    b = tmp_path / "bundle"
    (b / "broker-1").mkdir(parents=True)
    (b / "broker-1" / "server.log").write_text("".join(LOG.format(i=i) for i in range(3)))
    (b / "bundle.yaml").write_text("tz: Europe/Berlin\n")
    return b


@pytest.mark.slow
def test_timezone_rule_is_option_then_manifest_then_utc_in_every_command(kit, berlin_bundle, tmp_path):
    # Berlin is UTC+2 in May: the manifest's zone applies unless --tz says otherwise
    assert kitlib.load_bundle(berlin_bundle).summary.time_span[0].startswith("2024-05-22T08:00:00")
    assert kitlib.load_bundle(berlin_bundle, tz="UTC").summary.time_span[0].startswith("2024-05-22T10:00:00")
    s = json.loads(kit("summary", berlin_bundle, "--json").stdout)
    assert s["time_span"][0].startswith("2024-05-22T08:00:00")
    s = json.loads(kit("summary", berlin_bundle, "--json", "--tz", "Asia/Tokyo").stdout)
    assert s["time_span"][0].startswith("2024-05-22T01:00:00")
    assert kit("ingest", berlin_bundle, "--out", tmp_path / "kit", "--no-progress").returncode == 0
    s = json.loads((tmp_path / "kit" / "summary.json").read_text())
    assert s["time_span"][0].startswith("2024-05-22T08:00:00")
    (berlin_bundle / "bundle.yaml").unlink()
    assert kitlib.load_bundle(berlin_bundle).summary.time_span[0].startswith("2024-05-22T10:00:00")


@pytest.mark.slow
def test_report_follows_the_manifest_timezone(berlin_bundle, tmp_path):
    from kitlib.report import report

    res = report(berlin_bundle, tmp_path / "out", only=["triage"], log=lambda *a: None)
    assert not [n for n in res["notebooks"] if n["error"]], res
    s = json.loads((tmp_path / "out" / "tables" / "summary.json").read_text())
    assert s["time_span"][0].startswith("2024-05-22T08:00:00")
