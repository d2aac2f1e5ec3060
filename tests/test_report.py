"""kitlib report: one HTML per relevant notebook plus index.html; a failing notebook still yields
its partial HTML and an error in the index while the others are written. The notebooks ship in the
wheel (a report runs from an install outside the repository), and `kitlib notebooks DIR` copies
them for an analyst without ever replacing a file the kit did not write."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from kitlib.report import report

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.mark.slow  # runs notebooks in Jupyter kernels, as the two tests after it
def test_report_on_a_sample_bundle(tmp_path):
    res = report(ROOT / "sample_data" / "compaction", tmp_path / "out", log=lambda *a: None)
    names = [n["notebook"] for n in res["notebooks"]]
    assert names[0] == "triage.ipynb" and "compaction.ipynb" in names
    # only investigations the bundle holds data for: no Connect, tiered storage or consumer groups here
    assert not {"connect_offsets.ipynb", "tiered_storage.ipynb", "consumer_groups.ipynb"} & set(names)
    assert not [n for n in res["notebooks"] if n["error"]]
    index = (tmp_path / "out" / "index.html").read_text()
    assert "cleaner-buffer-too-small" in index and "compaction.html" in index and "triage.html" in index
    html = (tmp_path / "out" / "compaction.html").read_text()
    assert "<svg" in html and "Planner" in html
    assert res["findings"] == ["cleaner-buffer-too-small", "cleaner-no-reclaim"]


@pytest.mark.slow
def test_a_failing_notebook_is_reported_and_the_rest_still_written(tmp_path):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    shutil.copy(NOTEBOOKS / "triage.ipynb", nbdir / "triage.ipynb")
    nb = nbformat.read(str(NOTEBOOKS / "compaction.ipynb"), as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell("raise RuntimeError('cleaner chart exploded')"))
    nbformat.write(nb, str(nbdir / "compaction.ipynb"))
    res = report(ROOT / "sample_data" / "compaction", tmp_path / "out", notebook_folder=nbdir, log=lambda *a: None)
    status = {n["notebook"]: n["error"] for n in res["notebooks"]}
    assert status["triage.ipynb"] == ""
    assert "cleaner chart exploded" in status["compaction.ipynb"]
    assert (tmp_path / "out" / "compaction.html").stat().st_size > 1000  # the partial notebook
    assert "cleaner chart exploded" in (tmp_path / "out" / "compaction.html").read_text()
    index = (tmp_path / "out" / "index.html").read_text()
    assert "notebook failed" in index and "cleaner chart exploded" in index


@pytest.mark.slow
def test_report_on_the_kip405_bundle_runs_every_relevant_notebook_cleanly(tmp_path):
    """remote-storage has no I/O traces and no probes: notebooks must cope with absent tables."""
    res = report(ROOT / "sample_data" / "remote-storage", tmp_path / "out", log=lambda *a: None)
    status = {n["notebook"]: n["error"] for n in res["notebooks"]}
    assert "tiered_storage.ipynb" in status and all(e == "" for e in status.values()), status
    assert res["findings"] == ["remote-copy-errors"]
    html = (tmp_path / "out" / "tiered_storage.html").read_text()
    assert "Remote storage: copies, copy errors, deletions" in html and "FileSystemException" in html


# ---------------------------------------------------------------------------------------------
# what a reader sees: cell tags, tables, axes, cited lines, parameters


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _code(src, tags=(), html=None):
    c = nbformat.v4.new_code_cell(src)
    c.metadata["tags"] = list(tags)
    if html is not None:
        c.outputs = [
            nbformat.v4.new_output("execute_result", data={"text/html": html, "text/plain": "x"}, execution_count=1)
        ]
    return c


def test_reader_cells_drop_parameters_demo_and_the_narrative_of_empty_sections():
    from kitlib.display import missing
    from kitlib.report import reader_cells

    md = nbformat.v4.new_markdown_cell
    nb = _nb(
        md("# Title"),
        _code('BUNDLE = "x"', ["parameters"]),
        _code('BUNDLE = "/tmp/t"', ["injected-parameters"]),
        md("## Runs\n\nLong explanation of the runs."),
        _code("runs", html=missing("runs", "Collect X.").html),
        md("## Seed"),
        _code("seed()", ["demo"], html="<p>54 passes</p>"),
        md("## Planner\n\nWhat the planner does."),
        _code("plan", html="<table><tr><td>1</td></tr></table>"),
    )
    reader_cells(nb, demo=False)
    text = "\n".join(c.source for c in nb.cells)
    assert "BUNDLE" not in text and "seed()" not in text
    assert "## Runs" in text and "Long explanation" not in text  # collapsed to heading + the missing line
    assert "What the planner does." in text and "plan" in text  # a section with data keeps its text
    nb2 = _nb(md("## Seed"), _code("seed()", ["demo"], html="<p>54 passes</p>"))
    reader_cells(nb2, demo=True)
    assert [c.source for c in nb2.cells] == ["## Seed", "seed()"]


def test_tables_drop_the_index_and_format_units():
    import pandas as pd

    from kitlib.display import table

    t = table(
        pd.DataFrame(
            {
                "host": ["broker-4"],
                "size_before": [698423835],
                "reduction_pct": [-99.394814],
                "records": [1234567],
                "drain_s": [11.23],
                "conversion_ms": [82.731],
            }
        )
    )
    assert "698.4 MB" in t.html and "-99.4 %" in t.html and "1,234,567" in t.html and "11.2 s" in t.html
    assert "82.7 ms" in t.html and "<th></th>" not in t.html and ">0<" not in t.html
    empty = table(pd.DataFrame(columns=["a"]), empty="Nothing to show.")
    assert "kit-empty" in empty.html and "<table" not in empty.html


def _svg_texts(chart) -> list[str]:
    import re

    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(chart.to_dict())
    return [re.sub(r"<[^>]+>", "", t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]


@pytest.mark.slow
def test_time_axis_reads_the_same_from_milliseconds_to_weeks():
    import re

    import altair as alt
    import pandas as pd

    from kitlib.display.axes import chart_times, count_y, time_x

    start = pd.Timestamp("2024-05-22 13:59:58", tz="UTC")
    for span in ("1500ms", "9min", "30h", "21D"):
        ts = chart_times(pd.Series(pd.date_range(start, start + pd.Timedelta(span), periods=12)), "Europe/Berlin")
        d = pd.DataFrame({"ts": ts, "n": range(12)})
        texts = _svg_texts(alt.Chart(d).mark_line().encode(x=time_x("ts", d["ts"], "Europe/Berlin"), y="n:Q"))
        title = [t for t in texts if t.startswith("time (")]
        assert title and title[0].startswith("time (Europe/Berlin), 2024-05-22"), (span, title)
        labels = [t for t in texts if re.match(r"^(\d\d:\d\d|[A-Z][a-z]{2} \d\d)", t)]
        assert len(labels) >= 2, (span, texts)
        assert not [t for t in texts if t.startswith(".") or " PM" in t or " AM" in t], (span, texts)
        if span == "1500ms":
            assert all(re.match(r"^\d\d:\d\d:\d\d\.\d{3}$|^\d\d:\d\d(:\d\d)?$", t) for t in labels), labels
        if span in ("30h", "21D"):
            assert any(re.match(r"^[A-Z][a-z]{2} \d\d$", t) for t in labels), labels  # the date at midnight
    d = pd.DataFrame({"k": ["a", "b"], "n": [1, 2]})
    counts = _svg_texts(alt.Chart(d).mark_bar().encode(x="k:N", y=count_y("n:Q", "records")))
    assert "0.5" not in counts and "1.5" not in counts and "2" in counts


def test_cited_lines_come_from_the_bundle_files_redacted(tmp_path):
    import gzip

    from kitlib.report import cited_lines, redact_line

    host = tmp_path / "b" / "connect-1"
    host.mkdir(parents=True)
    lines = [
        "[2024-05-22 00:00:01,000] INFO first (x)",
        "[2024-05-22 00:00:02,000] INFO ProducerConfig values: (y)",
        "\tbatch.size = 16384",
        '\tsasl.jaas.config = org.apache.kafka.Plain password="hunter2";',
        "[2024-05-22 00:00:03,000] WARN next (z)",
    ]
    (host / "connect.log.1.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    got = cited_lines(tmp_path / "b", [{"file": "connect-1/connect.log.1.gz", "line": 2}])
    before, text, after = got[("connect-1/connect.log.1.gz", 2)]
    assert before == [lines[0]] and "ProducerConfig values" in text
    assert after[0] == "\tbatch.size = 16384" and "hunter2" not in "".join(after) and len(after) == 2
    assert (
        redact_line('{"sasl.jaas.config": "x password=y", "acks": "all"}')
        == '{"sasl.jaas.config": "[redacted]", "acks": "all"}'
    )


def test_list_parameters_take_a_list_or_a_comma_separated_string():
    from kitlib.params import as_list

    assert as_list("broker-1,broker-2") == ["broker-1", "broker-2"] == as_list(["broker-1", "broker-2"])
    assert as_list(None) is None and as_list(" , ") is None


def test_every_notebook_documents_its_parameters_for_papermill():
    """papermill --help-notebook shows a type and a help line for every parameter, and reads every
    assignment of the parameters cell (a comment holding '=' makes it skip the line)."""
    import ast

    import papermill as pm

    from kitlib.report import notebook_dir

    for path in sorted(notebook_dir().glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        names = [t.id for node in ast.parse(cell.source).body if isinstance(node, ast.Assign) for t in node.targets]
        params = pm.inspect_notebook(str(path))
        assert list(params) == names, (path.name, list(params), names)
        for name, p in params.items():
            assert p["inferred_type_name"] not in ("None", "", None) and p["help"].strip(), (path.name, name, p)
        assert {"BUNDLE", "TZ"} <= set(params), path.name  # what kitlib report passes


# ---------------------------------------------------------------------------------------------
# where the notebooks live, and the analyst's copy


def test_the_report_runs_the_notebooks_of_the_repository():
    from kitlib.report import notebook_dir, notebooks

    assert notebook_dir() == NOTEBOOKS
    assert not (ROOT / "kitlib" / "notebooks").exists()  # one home: notebooks/ at the top
    assert {n.file for n in notebooks()} == {p.name for p in NOTEBOOKS.glob("*.ipynb")}


def test_every_notebook_opens_its_bundle_in_one_line():
    """The preamble is ``bundle = kitlib.open(...)``: no notebook builds its window by hand or
    reaches for a private name of the kit."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        code = [c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]
        assert any(line.startswith("bundle = kitlib.open(") for c in code for line in c.splitlines()), path.name
        assert not [c for c in code if "load_bundle(" in c or "._" in c], path.name


def test_notebooks_are_copied_for_an_analyst_and_their_work_is_never_replaced(tmp_path):
    from kitlib.ingestion.guard import OutputRefused
    from kitlib.report import copy_notebooks

    work = tmp_path / "work"
    written = copy_notebooks(work)
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert sorted(p.name for p in written) == names and len(names) >= 9
    assert (work / "triage.ipynb").read_bytes() == (NOTEBOOKS / "triage.ipynb").read_bytes()
    record = json.loads((work / ".kitlib-notebooks").read_text())
    assert record["writer"] == "kitlib notebooks" and sorted(record["wrote"]) == names
    (work / "notes.md").write_text("mine")
    assert len(copy_notebooks(work)) == len(names)  # copies left as the kit wrote them: replaced
    # the analyst's changes, and a file of the same name the kit did not write, stop the copy whole
    (work / "compaction.ipynb").write_text((work / "compaction.ipynb").read_text().replace("cleaner", "CLEANER"))
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    with pytest.raises(OutputRefused, match="compaction.ipynb"):
        copy_notebooks(work)
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before
    other = tmp_path / "other"
    other.mkdir()
    (other / "triage.ipynb").write_text("{}")
    with pytest.raises(OutputRefused, match="triage.ipynb"):
        copy_notebooks(other)
    assert [p.name for p in other.iterdir()] == ["triage.ipynb"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputRefused):
        copy_notebooks(tmp_path / "file")


def test_kitlib_notebooks_command(tmp_path):
    from kitlib.cli import main

    assert main(["notebooks", str(tmp_path / "nb")]) == 0
    assert (tmp_path / "nb" / "triage.ipynb").is_file()
    (tmp_path / "nb" / "triage.ipynb").write_text("{}")
    assert main(["notebooks", str(tmp_path / "nb")]) == 2
    assert (tmp_path / "nb" / "triage.ipynb").read_text() == "{}"


def _wheel(tmp_path: Path) -> Path:
    """A wheel of the kit built from a copy of the source tree (nothing is written into the checkout)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "kitlib", src / "kitlib", ignore=skip)
    shutil.copytree(NOTEBOOKS, src / "notebooks", ignore=skip)
    dist = tmp_path / "dist"
    uv = Path(sys.executable).parent / "uv"
    cmd = (
        [str(uv), "build", "--wheel", "--offline", "-q", "-o", str(dist), str(src)]
        if uv.exists()
        else [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(src),
        ]
    )
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return next(dist.glob("*.whl"))


@pytest.mark.slow
def test_a_wheel_installed_outside_the_repository_runs_the_report(tmp_path):
    """The wheel carries the notebooks and templates: installed into a new virtualenv (its
    dependencies borrowed from this one by a .pth line, so nothing is downloaded), its `kitlib
    report` runs from a folder outside the checkout, and `kitlib notebooks` copies them."""
    import zipfile

    whl = _wheel(tmp_path)
    listed = zipfile.ZipFile(whl).namelist()
    assert {f"kitlib/notebooks/{p.name}" for p in NOTEBOOKS.glob("*.ipynb")} <= set(listed)
    assert "kitlib/templates/nbconvert/kit/index.html.j2" in listed
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    uv = Path(sys.executable).parent / "uv"
    cmd = (
        [str(uv), "pip", "install", "-q", "--offline", "--no-deps", "--python", str(py), str(whl)]
        if uv.exists()
        else [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--prefix", str(venv), str(whl)]
    )
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "zz-test-deps.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # the kernel is the new venv's python; nbconvert's base templates are data files of this environment
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")

    def run(*args, timeout=900):
        return subprocess.run(
            list(args), capture_output=True, text=True, cwd=away, env=env, timeout=timeout, check=False
        )

    where = run(str(py), "-c", "import kitlib.report as r; print(r.notebook_dir())")
    assert where.returncode == 0 and Path(where.stdout.strip()) == site / "kitlib" / "notebooks", where
    out = tmp_path / "report"
    r = run(str(venv / "bin" / "kitlib"), "report", str(ROOT / "sample_data" / "healthy"), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "index.html").is_file() and (out / "triage.html").is_file()
    executed = nbformat.read(str(out / "triage.ipynb"), as_version=4)
    assert not [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    r = run(str(venv / "bin" / "kitlib"), "notebooks", str(away / "mine"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in (away / "mine").glob("*.ipynb")) == sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.slow
def test_a_kernel_writing_to_its_stderr_reaches_no_terminal(tmp_path, capfd):
    """A kernel's own tracebacks (its event loop logs one now and then while shutting down) are
    not the user's: the report's kernels write nothing to the terminal."""
    import nbformat
    import papermill as pm

    from kitlib.report.run import quiet_kernel_manager

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('import os\nos.write(2, b"Traceback (most recent call last): kernel noise\\n")')
    ]
    nbformat.write(nb, tmp_path / "noisy.ipynb")
    pm.execute_notebook(
        str(tmp_path / "noisy.ipynb"),
        str(tmp_path / "out.ipynb"),
        kernel_name="python3",
        progress_bar=False,
        kernel_manager_class=quiet_kernel_manager(),
    )
    assert "kernel noise" not in capfd.readouterr().err
    pm.execute_notebook(
        str(tmp_path / "noisy.ipynb"), str(tmp_path / "out2.ipynb"), kernel_name="python3", progress_bar=False
    )
    assert "kernel noise" in capfd.readouterr().err  # the same notebook, run plainly, does write it
