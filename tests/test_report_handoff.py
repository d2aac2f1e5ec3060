"""What a report's main process hands to its triage notebook (:mod:`kitlib.report.handoff`): the
findings and the "what else changed" block it made, read back by the notebook for the same view
of the same store, so the notebook's page is the one it would have computed; and a handed file
that is missing, broken, of another view or holding anything but the kit's values is not used
(the notebook computes everything itself, without a traceback)."""

from __future__ import annotations

import os
import pickle
import re
import zoneinfo
from dataclasses import replace
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

import kitlib
from kitlib.display.changes import changes_block
from kitlib.display.markup import HTML
from kitlib.findings import DetectorRun, Finding, Severity, Triage
from kitlib.findings.extent import Extent
from kitlib.report import handoff
from kitlib.report import run as report_run

ROOT = Path(__file__).resolve().parent.parent
TRIAGE = ROOT / "notebooks" / "triage.ipynb"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("handoff") / "tables"
    kitlib.ingest(ROOT / "sample_data" / "rebalance-storm", out, progress=False, derive=True)
    return out


def _made(store: Path):
    bundle = kitlib.load(store)
    result = kitlib.triage(bundle)
    return result, changes_block(bundle, result.findings, None, None, heading=None)


def _small(folder: Path):
    """A store folder (its summary only) and a triage of values of every kind findings hold."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text("{}\n")
    t = pd.Timestamp("2026-11-23 12:40:41.5", tz="UTC")
    numbers = {
        "first": t,
        "local": pd.Timestamp("2026-11-23 13:40", tz=zoneinfo.ZoneInfo("Europe/Paris")),
        "gap": pd.Timedelta(seconds=90),
        "rows": np.int64(12_345),
        "ratio": np.float64(0.25),
        "worst": float("inf"),
        "none": pd.NaT,
        "hosts": ["broker-1", "broker-2"],
        "brokers": {1, 2},
    }
    f = Finding("demo-finding", "high", "one line", numbers, "do X", [{"file": "b/server.log", "line": 7}])
    f.extent = Extent(3, 0, ("broker-1",), 1, t, t + pd.Timedelta(minutes=3))
    runs = [
        DetectorRun("demo", "demo", "checks a thing", "ok", 1),
        DetectorRun("other", "x", "y", "skipped", 0, "no rows"),
    ]
    return Triage([f], runs), HTML("<p>what changed</p>", "what changed")


def test_the_handed_findings_and_changes_read_back_for_their_view_only(tmp_path):
    store = tmp_path / "tables"
    result, changes = _small(store)
    path = handoff.write(tmp_path, handoff.key(store, None), result, changes)
    got = handoff.read(str(path), str(store), None, None, None)
    assert got.triage == result and got.triage is not result
    assert [type(v) for v in got.triage.findings[0].numbers.values()] == [
        type(v) for v in result.findings[0].numbers.values()
    ]
    assert got.triage.findings[0].severity is Severity.HIGH
    assert got.changes.html == changes.html and got.changes.text == changes.text
    # another view of the store, another time zone, no file given: nothing handed
    assert handoff.read(path, store, None, "2020-01-01", None) == handoff.Handed()
    assert handoff.read(path, store, "Europe/Paris") == handoff.Handed()
    assert handoff.read(path, tmp_path / "other") == handoff.Handed()
    assert handoff.read(None, store) == handoff.Handed()
    # the store written again since: its summary's time of change differs
    summary = store / "summary.json"
    st = summary.stat()
    os.utime(summary, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert handoff.read(path, store) == handoff.Handed()
    os.utime(summary, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert handoff.read(path, store).triage == result


class _Touch:
    """A pickled object that would create a file when loaded: what a handed file must never run."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


@pytest.mark.parametrize("kind", ["missing", "empty", "garbage", "truncated", "code", "other-version", "not-triage"])
def test_a_handed_file_that_cannot_be_used_hands_nothing(tmp_path, kind):
    store = tmp_path / "tables"
    result, changes = _small(store)
    view = handoff.key(store, None)
    path = handoff.write(tmp_path, view, result, changes)
    assert handoff.read(path, store).triage == result
    ran = tmp_path / "ran"
    payload = {"version": handoff.VERSION, "key": view, "triage": result, "changes": changes}
    if kind == "missing":
        path.unlink()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_text("not a pickle at all\n")
    elif kind == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    elif kind == "code":
        payload["triage"] = _Touch(ran)
        path.write_bytes(pickle.dumps(payload))
    elif kind == "other-version":
        path.write_bytes(pickle.dumps({**payload, "version": handoff.VERSION + 1}))
    elif kind == "not-triage":
        path.write_bytes(pickle.dumps({**payload, "triage": [1, 2], "changes": "<p>x</p>"}))
    assert handoff.read(path, store) == handoff.Handed()
    assert not ran.exists()


def _run_cells(params: dict) -> dict:
    """The triage notebook's code cells run in this process as Jupyter runs them (its parameters
    cell's values replaced); the namespace they leave and the HTML of each cell's last value."""
    import ast

    nb = nbformat.read(str(TRIAGE), as_version=4)
    ns: dict = {"__name__": "__main__"}
    shown = []
    cwd = os.getcwd()
    os.chdir(TRIAGE.parent)
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            tree = ast.parse(cell.source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, TRIAGE.name, "exec"), ns)
            if "parameters" in cell.metadata.get("tags", []):
                ns.update(params)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), TRIAGE.name, "eval"), ns)
                html = getattr(value, "_repr_html_", None)
                shown.append(html() if html else repr(value))
    finally:
        os.chdir(cwd)
    ns["_shown"] = shown
    return ns


@pytest.mark.slow
def test_the_triage_notebook_shows_what_it_is_handed_and_computes_it_without(store, tmp_path, monkeypatch):
    """With the file the report writes, the notebook's cells show the handed findings and changes
    without running a detector; with none, or one it cannot use, they compute the same page."""
    result, changes = _made(store)
    itself = _run_cells({"BUNDLE": str(store)})
    assert [f.to_dict() for f in itself["findings"]] == [f.to_dict() for f in result.findings]

    path = handoff.write(tmp_path, handoff.key(store, None), result, changes)
    read = handoff.read(path, store)
    assert [f.to_dict() for f in read.triage.findings] == [f.to_dict() for f in result.findings]
    assert read.triage.runs == result.runs and read.changes.html == changes.html
    # an investigation notebook takes its own investigation's findings from the same file
    own = kitlib.triage(kitlib.load(store), investigations=["consumer_groups"]).findings
    assert own and [f.to_dict() for f in handoff.findings_of(read, store, "consumer_groups")] == [
        f.to_dict() for f in own
    ]
    called = []
    real = kitlib.triage
    monkeypatch.setattr(kitlib, "triage", lambda *a, **k: called.append(1) or real(*a, **k))
    handed = _run_cells({"BUNDLE": str(store), "HANDED": str(path)})
    assert not called, "the detectors ran again although the findings were handed on"
    assert handed["result"] is not result and handed["_shown"] == itself["_shown"]

    # what the notebook shows is what it was handed: a finding's summary changed in the file
    marked = replace(result, findings=[replace(result.findings[0], summary="HANDED-ON MARKER")] + result.findings[1:])
    handoff.write(tmp_path, handoff.key(store, None), marked, changes)
    shown = "\n".join(_run_cells({"BUNDLE": str(store), "HANDED": str(path)})["_shown"])
    assert "HANDED-ON MARKER" in shown and not called

    # a handed file that cannot be used: computed here, the same page, no traceback
    path.write_bytes(b"\x80\x05broken")
    again = _run_cells({"BUNDLE": str(store), "HANDED": str(path)})
    assert called and again["_shown"] == itself["_shown"]
    called.clear()
    again = _run_cells({"BUNDLE": str(store), "HANDED": str(tmp_path / "gone.pickle")})
    assert called and again["_shown"] == itself["_shown"]


def _page(html: str) -> str:
    # kernel-run ids (Altair's chart ids, nbconvert's output ids) differ from run to run
    return re.sub(r"(view|vega|chart|output)[-_][0-9a-f]{6,}", r"\1-ID", html)


@pytest.mark.slow
def test_the_report_hands_its_findings_to_the_triage_notebook_with_the_same_page(tmp_path, monkeypatch):
    """``kitlib report``: the triage notebook's kernel is given the file (parameter HANDED), its
    page is the page of a report that hands nothing on, and the folder is gone afterwards."""
    bundle = ROOT / "sample_data" / "rebalance-storm"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    got = kitlib.report.report(bundle, tmp_path / "handed", only=["triage"], log=lambda *_: None)
    assert [n["error"] for n in got["notebooks"]] == [""]
    nb = nbformat.read(str(tmp_path / "handed" / "triage.ipynb"), as_version=4)
    injected = next(c.source for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    file = re.search(r'^HANDED = "(.+)"$', injected, re.M)
    assert file and Path(file.group(1)).name == handoff.FILE
    assert not Path(file.group(1)).parent.exists()

    monkeypatch.setattr(report_run, "hand_on", lambda plan, tz: None)
    plain = kitlib.report.report(bundle, tmp_path / "plain", only=["triage"], log=lambda *_: None)
    assert [n["error"] for n in plain["notebooks"]] == [""]
    nb = nbformat.read(str(tmp_path / "plain" / "triage.ipynb"), as_version=4)
    assert "HANDED" not in next(c.source for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    for page in ("triage.html", "index.html"):
        a = (tmp_path / "handed" / page).read_text(encoding="utf-8")
        b = (tmp_path / "plain" / page).read_text(encoding="utf-8")
        assert _page(a) == _page(b), page
    assert got["findings"] == plain["findings"] and got["findings"]
