"""kitlib report: one HTML per relevant notebook plus index.html; a failing notebook still yields
its partial HTML and an error in the index while the others are written."""
import shutil
from pathlib import Path

import nbformat
import pytest

from kitlib.report import report

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # each runs notebooks in Jupyter kernels


def test_report_on_a_sample_bundle(tmp_path):
    res = report(ROOT / "sample_data" / "compaction", tmp_path / "out", log=lambda *a: None)
    names = [n["notebook"] for n in res["notebooks"]]
    assert names == ["triage.ipynb", "compaction.ipynb"]          # only the relevant investigation
    assert not [n for n in res["notebooks"] if n["error"]]
    index = (tmp_path / "out" / "index.html").read_text()
    assert "cleaner-buffer-too-small" in index and "compaction.html" in index and "triage.html" in index
    html = (tmp_path / "out" / "compaction.html").read_text()
    assert "<svg" in html and "Planner" in html
    assert res["findings"] == ["cleaner-buffer-too-small", "cleaner-no-reclaim"]


def test_a_failing_notebook_is_reported_and_the_rest_still_written(tmp_path):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    shutil.copy(ROOT / "kitlib" / "notebooks" / "triage.ipynb", nbdir / "triage.ipynb")
    nb = nbformat.read(str(ROOT / "kitlib" / "notebooks" / "compaction.ipynb"), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("raise RuntimeError('cleaner chart exploded')"))
    nbformat.write(nb, str(nbdir / "compaction.ipynb"))
    res = report(ROOT / "sample_data" / "compaction", tmp_path / "out", notebook_folder=nbdir, log=lambda *a: None)
    status = {n["notebook"]: n["error"] for n in res["notebooks"]}
    assert status["triage.ipynb"] == ""
    assert "cleaner chart exploded" in status["compaction.ipynb"]
    assert (tmp_path / "out" / "compaction.html").stat().st_size > 1000    # the partial notebook
    assert "cleaner chart exploded" in (tmp_path / "out" / "compaction.html").read_text()
    index = (tmp_path / "out" / "index.html").read_text()
    assert "notebook failed" in index and "cleaner chart exploded" in index


def test_report_on_the_kip405_bundle_runs_every_relevant_notebook_cleanly(tmp_path):
    """remote-storage has no I/O traces and no probes: notebooks must cope with absent tables."""
    res = report(ROOT / "sample_data" / "remote-storage", tmp_path / "out", log=lambda *a: None)
    status = {n["notebook"]: n["error"] for n in res["notebooks"]}
    assert "tiered_storage.ipynb" in status and all(e == "" for e in status.values()), status
    assert res["findings"] == ["remote-copy-errors"]
    html = (tmp_path / "out" / "tiered_storage.html").read_text()
    assert "Remote storage: copies, copy errors, deletions" in html and "FileSystemException" in html
