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
    assert names[0] == "triage.ipynb" and "compaction.ipynb" in names
    # only investigations the bundle holds data for: no Connect, tiered storage or consumer groups here
    assert not {"connect_offsets.ipynb", "tiered_storage.ipynb", "consumer_groups.ipynb"} & set(names)
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
    assert (tmp_path / "out" / "compaction.html").stat().st_size > 1000  # the partial notebook
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
