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
NOTEBOOKS = ROOT / "notebooks"
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
        pm.execute_notebook(
            str(NOTEBOOKS / notebook),
            str(out),
            parameters={"BUNDLE": str(bundle)},
            # the kernel starts in the notebooks' folder without chdir-ing this process: papermill's
            # cwd= would, and two threads doing so race (one kernel then starts in the other's folder)
            resources={"metadata": {"path": str(NOTEBOOKS)}},
            kernel_name="python3",
            progress_bar=False,
            log_output=False,
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
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
        cut = tmp_path / f"{bundle}-without-{table}"
        if not cut.exists():  # two investigations may share an example bundle and a table
            without(stores[bundle], table, cut)
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


def _run_cells(notebook: Path, params: dict) -> None:
    """Run a notebook's code cells in this process as Jupyter would (the parameters cell's values
    replaced, each cell's last expression rendered through its rich display), without a kernel."""
    import ast

    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    ns: dict = {"__name__": "__main__"}
    cwd = os.getcwd()
    os.chdir(notebook.parent)
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            tree = ast.parse(cell.source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"{notebook.name}", "exec"), ns)
            if "parameters" in cell.metadata.get("tags", []):
                ns.update(params)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), notebook.name, "eval"), ns)
                for rich in ("_repr_mimebundle_", "_repr_html_"):
                    if hasattr(value, rich):
                        getattr(value, rich)()
                        break
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    out = {}
    for b in sorted(p.name for p in (ROOT / "sample_data").iterdir() if p.is_dir()):
        out[b] = tmp_path_factory.mktemp("stores") / b
        kitlib.ingest(ROOT / "sample_data" / b, out[b], progress=False)
    return out


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_every_notebook_runs_on_every_sample_bundle(notebook, stores):
    """Whatever a bundle holds (or lacks), every notebook runs to the end on it."""
    failures = []
    for name, store in stores.items():
        try:
            _run_cells(NOTEBOOKS / notebook, {"BUNDLE": str(store)})
        except Exception as e:  # noqa: BLE001 - collected, all bundles tried
            failures.append(f"{notebook} on {name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)
