"""Real bundles are partial: every investigation's notebook runs to the end on its example bundle
with each table it reads removed in turn, and the triage notebook on one that lacks most tables."""
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import kitlib
from kitlib import registry

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "kitlib" / "notebooks"
pytestmark = pytest.mark.slow


def cases() -> list[tuple[str, str, str]]:
    """(investigation, example bundle, table removed) for every table it reads that the bundle has."""
    out = []
    for inv in registry.investigations():
        if not inv.examples:
            continue
        bundle = sorted(inv.examples)[0]
        b = kitlib.load_bundle(ROOT / "sample_data" / bundle)
        out += [(inv.name, bundle, t) for t in inv.tables if len(b.table(t))]
    return out


def without(store: Path, table: str, dest: Path) -> Path:
    """A copy of an ingest output without one table (files linked, not copied)."""
    dest.mkdir(parents=True)
    for p in store.iterdir():
        if p.stem == table or p.name == table:
            continue
        if p.is_dir():
            shutil.copytree(p, dest / p.name, copy_function=os.link)
        else:
            os.link(p, dest / p.name)
    return dest


def run(notebook: str, bundle: Path, out: Path) -> str:
    import papermill as pm
    try:
        pm.execute_notebook(str(NOTEBOOKS / notebook), str(out), parameters={"BUNDLE": str(bundle)},
                            cwd=str(NOTEBOOKS), kernel_name="python3", progress_bar=False, log_output=False,
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
        return ""
    except Exception as e:  # noqa: BLE001 - collected and reported together below
        return f"{notebook} on {bundle.name}: {type(e).__name__}: {getattr(e, 'evalue', e)}"


def test_every_notebook_runs_with_each_of_its_tables_missing(tmp_path):
    stores: dict[str, Path] = {}
    jobs = []
    for name, bundle, table in cases():
        if bundle not in stores:
            stores[bundle] = tmp_path / f"{bundle}.kit"
            kitlib.ingest(ROOT / "sample_data" / bundle, stores[bundle], progress=False)
        cut = without(stores[bundle], table, tmp_path / f"{bundle}-without-{table}")
        jobs.append((registry.investigation(name).notebook, cut, tmp_path / f"{name}-without-{table}.ipynb"))
    assert len(jobs) >= 10
    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(lambda j: run(*j), jobs) if f]
    assert not failures, "\n".join(failures)


def test_triage_notebook_runs_on_a_bundle_with_only_a_log(tmp_path):
    b = tmp_path / "bundle" / "broker-1"
    b.mkdir(parents=True)
    shutil.copy(ROOT / "sample_data" / "compaction" / "broker-1" / "server.log", b / "server.log")
    assert run("triage.ipynb", tmp_path / "bundle", tmp_path / "triage.ipynb") == ""
