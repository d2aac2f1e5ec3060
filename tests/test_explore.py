"""Explore mode: when it is on, search over every line, the raw lines around a hit, the
cross-host timeline and its brush, the panel's one window, and pinning a view."""

import gzip
import os
import re
from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib import explore
from kitlib.explore import query as s
from kitlib.explore import timeline as tl
from kitlib.window import Window

# absolute: another test of the same process may have left the working folder elsewhere
ISR_FLAPPING = str(Path(__file__).resolve().parents[1] / "sample_data" / "isr-flapping")

LEVELS = ["INFO", "INFO", "WARN", "INFO", "ERROR", "DEBUG", "INFO"]
LOGGERS = ["kafka.cluster.Partition", "kafka.server.ReplicaFetcherThread", "kafka.log.UnifiedLog"]


def _line(i: int, host: int) -> str:
    t = pd.Timestamp("2026-11-23 12:00:00") + pd.Timedelta(seconds=7 * i + host)
    stamp = t.strftime("%Y-%m-%d %H:%M:%S") + f",{(37 * i) % 1000:03d}"
    level, logger = LEVELS[i % len(LEVELS)], LOGGERS[i % len(LOGGERS)]
    if i % 11 == 3:
        msg = f"[Partition orders-{i % 4} broker={host}] Shrinking ISR from {host},2,3 to {host},3."
    elif i % 13 == 5:
        msg = f"[ReplicaFetcher replicaId={host}] Error for partition orders-{i % 4} <b>not_leader</b>"
    else:
        msg = f"[Log partition=orders-{i % 4}] Rolled new log segment at offset {i * 100}"
    return f"[{stamp}] {level} {msg} ({logger})"


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """A two-broker bundle: broker-1's log plain, broker-2's gzip-compressed, one line holding a
    password next to a search hit."""
    root = tmp_path_factory.mktemp("explore") / "bundle"
    lines = {h: [_line(i, h) for i in range(240)] for h in (1, 2)}
    lines[1][120] = lines[1][120].replace(
        "Rolled new log segment", "Connecting with sasl.jaas.config password=hunter2 and"
    )
    (root / "broker-1").mkdir(parents=True)
    (root / "broker-2").mkdir()
    (root / "broker-1" / "server.log").write_text("\n".join(lines[1]) + "\n")
    (root / "broker-2" / "server.log.1.gz").write_bytes(gzip.compress(("\n".join(lines[2]) + "\n").encode()))
    return root, lines


@pytest.fixture(scope="module")
def bundle(raw):
    return kitlib.open(raw[0])


def _count(lines, pattern: str, flags=0, level=None, host=None):
    """Hits counted from the raw lines with Python's re (the check, independent of DuckDB)."""
    n = 0
    for h, ls in lines.items():
        if host and f"broker-{h}" != host:
            continue
        for line in ls:
            lv = line.split("] ", 1)[1].split(" ", 1)[0]
            if level and lv not in level:
                continue
            n += bool(re.search(pattern, line.split("] ", 1)[1], flags))
    return n


def test_explore_is_on_only_in_a_kernel_a_jupyter_server_started(monkeypatch):
    monkeypatch.delenv("KITLIB_EXPLORE", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert not explore.enabled(None)  # papermill, nbval, kitlib report: no server, no session name
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/analyst/triage.ipynb")
    assert explore.enabled(None)
    assert not explore.enabled(False)  # the notebook's own parameter wins
    monkeypatch.setenv("KITLIB_EXPLORE", "0")
    assert not explore.enabled(None) and explore.enabled("on")
    assert explore.explorer(None, [], False) is None  # off: the cell shows nothing


def test_search_finds_what_the_raw_lines_hold(bundle, raw):
    _, lines = raw
    hits = s.search(bundle, "shrinking isr")
    assert hits.total == _count(lines, r"(?i)shrinking isr") > 0
    assert not hits.error
    first = hits.rows.iloc[0]
    assert first["where"] == f"{first['file']}:{first['line']}"
    assert "Shrinking ISR" in lines[int(first["host"][-1])][int(first["line"]) - 1]
    # smart case: one capital letter makes the match exact
    assert s.search(bundle, "Shrinking ISR").total == hits.total
    assert s.search(bundle, "Shrinking isr").total == _count(lines, r"Shrinking isr") == 0
    rx = s.search(bundle, r"orders-[13]\] Rolled", regex=True)
    assert rx.total == _count(lines, r"orders-[13]\] Rolled")
    warn = s.search(bundle, level="WARN+")
    assert warn.total == _count(lines, "", level={"WARN", "ERROR", "FATAL"})
    assert set(warn.rows["level"]) <= {"WARN", "ERROR"}
    one = s.search(bundle, "error for partition", host="broker-2")
    assert one.total == _count(lines, r"(?i)error for partition", host="broker-2") > 0
    assert set(one.rows["host"]) == {"broker-2"}
    fetch = s.search(bundle, logger="replicafetcher")
    assert fetch.total == sum(1 for ls in lines.values() for line in ls if "ReplicaFetcherThread)" in line)


def test_search_follows_the_window_pages_and_sorts(bundle):
    w = Window.of("2026-11-23 12:05", "2026-11-23 12:10")
    every = s.search(bundle, window=w, limit=1000)
    ts = pd.to_datetime(every.rows["ts"], utc=True)
    assert every.total == len(every.rows) > 0 and ts.min() >= w.start and ts.max() < w.end
    assert ts.is_monotonic_increasing
    page2 = s.search(bundle, window=w, limit=10, offset=10)
    assert page2.rows["where"].tolist() == every.rows["where"].tolist()[10:20]
    assert page2.describe().startswith(f"{every.total:,} lines match; 11–20 shown")
    back = s.search(bundle, window=w, limit=5, desc=True)
    assert back.rows["where"].tolist() == every.rows["where"].tolist()[::-1][:5]
    by_host = s.search(bundle, window=w, limit=1000, order="host")
    assert by_host.rows["host"].is_monotonic_increasing


def test_a_bad_pattern_is_a_message_not_a_traceback(bundle):
    hits = s.search(bundle, "orders-(", regex=True)
    assert hits.total == 0 and hits.error.startswith("Search failed:") and "Traceback" not in hits.error
    assert s.search(bundle, "no such text anywhere").describe() == "No line matches."


def test_the_lines_around_a_hit_come_from_the_file_redacted_and_escaped(bundle, raw):
    _, lines = raw
    got = s.context(bundle, "broker-1/server.log", 122, before=3, after=3)
    assert [n for n, _ in got] == [119, 120, 121, 122, 123, 124, 125]
    assert got[0][1] == lines[1][118] and got[-1][1] == lines[1][124]
    assert "hunter2" not in got[2][1] and "[redacted]" in got[2][1]
    gz = s.context(bundle, "broker-2/server.log.1.gz", 1, before=5, after=2)  # decompressed as parsed
    assert [t for _, t in s.context(bundle, "broker-1/server.log", 240, 1, 5)] == lines[1][238:240]  # the end
    assert s.context(bundle, "broker-1/server.log", 400, 1, 1) == []  # past the end
    assert [t for _, t in gz] == lines[2][:3]
    hit = s.search(bundle, "not_leader", host="broker-2").rows.iloc[0]
    html = s.context_html(bundle, hit["file"], int(hit["line"])).html
    assert "&lt;b&gt;not_leader&lt;/b&gt;" in html and "<b>not_leader" not in html
    assert html.count("kit-hit") == 1
    missing = s.context_html(bundle, "broker-9/server.log", 3)
    assert "not in the bundle folder" in missing.text


def test_timeline_aggregates_to_at_most_max_points_and_counts_every_record(bundle):
    d, bucket, n = tl.counts(bundle, max_points=60)
    assert len(d) <= 60 and d["count"].sum() == n == len(bundle.events.dropna(subset=["ts"]))
    assert bucket > 1
    fine, b1, _ = tl.counts(bundle, max_points=5000)
    assert b1 < bucket and fine["count"].sum() == n
    spec = tl.chart(bundle, explore.evidence_rows([]), max_points=60).to_dict()
    assert "aggregated into" in spec["title"]["subtitle"] and spec["params"][0]["name"] == "window"


def test_a_brush_on_the_chart_becomes_a_utc_window():
    # the chart shows Berlin wall clock on a UTC scale: 13:00-13:01 on the axis is 12:00-12:01 UTC
    lo, hi = tl.brushed(
        {"bucket": [pd.Timestamp("2026-11-23 13:00").value // 10**6, pd.Timestamp("2026-11-23 13:01").value // 10**6]},
        "Europe/Berlin",
    )
    assert (lo, hi) == (pd.Timestamp("2026-11-23 12:00", tz="UTC"), pd.Timestamp("2026-11-23 12:01", tz="UTC"))
    assert tl.brushed({}) is None and tl.brushed({"bucket": [5, 5]}) is None


@pytest.mark.slow  # vl-convert bundles Vega's JavaScript: seconds
def test_live_charts_load_nothing_from_the_network():
    import altair as alt

    from kitlib import display

    display.setup(explore=True)
    try:
        assert alt.renderers.active == "jupyter"
        alt.JupyterChart.enable_offline()
        esm = alt.JupyterChart(alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q"))._esm
        assert "vega" in esm.lower() and not re.search(r"""(import|from)\s*\(?["']https?://""", esm)
    finally:
        display.setup()
    assert alt.renderers.active == "svg"


@pytest.mark.slow
def test_panel_window_requeries_the_evidence_and_pins_the_view(tmp_path):
    from kitlib.explore.panel import Explorer
    from kitlib.params import read_pinned

    b = kitlib.open(ISR_FLAPPING)
    findings = kitlib.triage(b).findings
    every = explore.evidence_rows(findings)
    p = Explorer(b, findings)
    assert f"data-rows='{len(every)}'" in p.evidence_out.value and len(every) > 2
    t = every["ts"].dropna().sort_values()
    lo, hi = t.iloc[0], t.iloc[len(t) // 2]
    p.set_window(lo, hi)
    inside = int(((every["ts"] >= lo) & (every["ts"] < hi)).sum())
    assert 0 < inside < len(every) and f"data-rows='{inside}'" in p.evidence_out.value
    (link,) = _open_next_links(p.next_out.value)  # open next: on the brushed window, not the bundle's
    assert link["href"] == "cluster_health.ipynb" and link["data"]["bundle"] == ISR_FLAPPING
    assert pd.Timestamp(link["data"]["start"]) == lo and pd.Timestamp(link["data"]["end"]) == hi
    assert p.start_box.value.startswith(lo.strftime("%Y-%m-%dT%H:%M:%S"))
    hits = p.run_search(text="shrinking isr")
    assert hits.total == len(s.search(b, "shrinking isr", window=p.window, limit=10_000).rows)
    assert "Shrinking ISR" in p.open_hit(1).text
    ev = explore.evidence_rows(findings, p.window).iloc[0]
    back = p.open_evidence(1)
    assert back.text.startswith("Evidence of [") and ev["finding"] in back.text.splitlines()[0]
    assert f"{ev['file']}:{int(ev['line'])}" in p.context_out.value
    p.end_box.value = "not a time"
    p._typed()
    assert "Not a time" in p.window_label.value
    path = p.pin(tmp_path / "view.yaml")
    got = read_pinned(path)
    assert pd.Timestamp(got["START"]) == lo and pd.Timestamp(got["END"]) == hi
    assert got["SEARCH"]["text"] == "shrinking isr"
    assert "kitlib report BUNDLE" in path.read_text()


@pytest.mark.slow
def test_search_over_an_ingest_output_matches_the_bundle_in_memory(bundle, raw, tmp_path):
    out = tmp_path / "tables"
    kitlib.ingest(raw[0], out, progress=False)
    stored = kitlib.load(out)
    assert stored.lazy("events")
    for kw in (
        {"text": "shrinking isr"},
        {"level": "WARN+", "host": "broker-1"},
        {"window": Window.of("2026-11-23 12:05", None)},
    ):
        a, b = s.search(stored, limit=1000, **kw), s.search(bundle, limit=1000, **kw)
        assert a.total == b.total > 0
        assert a.rows["where"].tolist() == b.rows["where"].tolist()
    assert s.context(stored, "broker-1/server.log", 2, 1, 1) == s.context(bundle, "broker-1/server.log", 2, 1, 1)
    d1, _, n1 = tl.counts(stored, 200)
    d2, _, n2 = tl.counts(bundle, 200)
    assert n1 == n2 and d1["count"].sum() == d2["count"].sum()


def test_every_notebook_takes_the_explore_parameter():
    import nbformat

    from kitlib.report import notebook_dir

    for path in sorted(notebook_dir().glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assert re.search(r"^EXPLORE = None\b", params.source, re.M), path.name
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "display.setup(explore=explore.enabled(EXPLORE))" in code, path.name
        for c in nb.cells:  # no widget state stored: explore mode is off when outputs are made
            for o in c.get("outputs", []):
                assert "application/vnd.jupyter.widget-view+json" not in o.get("data", {}), path.name


@pytest.mark.slow
def test_a_pinned_view_renders_as_the_static_report_of_that_window(kit, tmp_path):
    from kitlib.params import write_pinned

    view = tmp_path / "view.yaml"
    write_pinned(
        view, {"START": "2026-11-23T12:00:00+00:00", "END": "2026-11-23T12:00:30+00:00", "SEARCH": {"text": "ISR"}}
    )
    out = tmp_path / "report"
    run = kit("report", ISR_FLAPPING, "--out", out, "--notebook", "triage", "--params", view, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    page = (out / "triage.html").read_text()
    assert "2026-11-23T12:00:00+00:00 → 2026-11-23T12:00:30+00:00 (pinned view)" in page
    assert "text ISR" in page
    executed = (out / "triage.ipynb").read_text()
    assert '"2026-11-23T12:00:30+00:00"' in executed  # papermill passed the window to the notebook
    # the same numbers as the notebook run by hand on that window
    b = kitlib.open(ISR_FLAPPING, None, "2026-11-23T12:00:00+00:00", "2026-11-23T12:00:30+00:00")
    shown = {f.id for f in kitlib.triage(b).findings}
    import json

    assert {f["id"] for f in json.loads((out / "findings.json").read_text())} == shown
    bad = tmp_path / "bad.yaml"
    bad.write_text("START: 2026-11-23\nWINDOW: 5\n")
    refused = kit("report", ISR_FLAPPING, "--out", tmp_path / "r2", "--params", bad)
    assert (
        refused.returncode == 2
        and "unknown parameter(s) WINDOW" in refused.stderr
        and "Traceback" not in refused.stderr
    )


def test_tables_blank_missing_values_put_key_columns_first_and_say_why_they_are_empty():
    from kitlib.display import table

    df = pd.DataFrame(
        {
            "level": ["WARN", "ERROR"],
            "count": [3.0, float("nan")],
            "message": ["Shrinking ISR for partition orders-0 from 1,2,3 to 1", None],
            "where": ["broker-1/server.log:557", "broker-2/server.log:12"],
            "ts": pd.to_datetime(["2026-11-23 12:00:01", None], utc=True),
            "host": ["broker-1", "broker-2"],
        }
    )
    t = table(df)
    assert t.columns[:4] == ["host", "ts (UTC)", "where", "message"] and t.columns[4:] == ["level", "count"]
    assert t.rows[1][1] == "" and t.rows[1][3] == "" and t.rows[1][5] == ""  # NaT, None, NaN: blanks
    assert "NaN" not in t.html and "NaT" not in t.html and "None" not in t.html
    msg = t.html.split("Shrinking ISR")[0].rsplit("<td", 1)[1]
    assert "text-align:left" in msg and "pre-wrap" in msg
    assert "text-align:right" in t.html.split(">3<")[0].rsplit("<td", 1)[1]  # numbers stay right-aligned
    empty = table(df.iloc[:0])
    assert (
        "No rows with host, ts, where, message, ...: the bundle (in the window shown) holds no such records."
        == empty.text
    )
    assert "0 rows" not in empty.html


def test_the_triage_timeline_says_how_many_records_its_bars_aggregate(bundle):
    from kitlib.display import MAX_CHART_ROWS
    from kitlib.display import triage as view

    spec = view.problems_timeline(bundle).to_dict()
    warn = int(bundle.events["level"].isin(["WARN", "ERROR", "FATAL"]).sum())
    assert spec["title"]["subtitle"].startswith(f"{warn:,} records counted in ")
    assert f"at most {MAX_CHART_ROWS:,} rows" in spec["title"]["subtitle"]


def test_the_lines_around_a_hit_deep_in_a_big_file_cross_chunk_boundaries(tmp_path):
    from kitlib.bundle import Bundle
    from kitlib.sources.files import CHUNK

    root = tmp_path / "big"
    (root / "broker-1").mkdir(parents=True)
    line = "[2026-11-23 12:00:00,000] INFO [Log partition=orders-0] Rolled new log segment at offset {} (kafka.log.LocalLog)"
    n = 3 * CHUNK // len(line.format(0)) + 100
    (root / "broker-1" / "server.log").write_text("\n".join(line.format(i) for i in range(1, n + 1)) + "\n")
    b = Bundle(str(root), {})  # the lines come from the files; nothing need be parsed
    for target in (CHUNK // len(line.format(0)), n // 2, n - 2):  # around each chunk boundary, and the end
        got = s.context(b, "broker-1/server.log", target, 4, 4)
        want = [(k, line.format(k)) for k in range(target - 4, min(n, target + 4) + 1)]
        assert got == want, target


def _open_next_links(html: str) -> list[dict]:
    """Each "open next" link of rendered HTML: its href and data- attributes, and the parameters
    cell and papermill command folded below it (unescaped)."""
    import html as h

    out = []
    for m in re.finditer(r"<a class='kit-open-next' href='([^']*)'([^>]*)>(.*?)</details>", html, re.S):
        data = dict(re.findall(r"data-(\w+)='([^']*)'", m.group(2)))
        pres = [h.unescape(p) for p in re.findall(r"<pre>(.*?)</pre>", m.group(3), re.S)]
        out.append({"href": h.unescape(m.group(1)), "data": {k: h.unescape(v) for k, v in data.items()}, "pre": pres})
    return out


def _finding(evidence_rows: pd.DataFrame) -> kitlib.Finding:
    ev = [
        {"file": r.file, "line": int(r.line), "host": r.host, "ts": r.ts.isoformat(), "text": r.message}
        for r in evidence_rows.itertuples()
    ]
    return kitlib.Finding(
        "isr-shrink",
        "medium",
        f"{len(ev)} ISR shrinks",
        evidence=ev,
        notebook="cluster_health.ipynb",
        investigation="cluster_health",
    )


@pytest.mark.slow  # parses the bundle twice and loads the registry: seconds on a busy machine
def test_open_next_links_carry_the_bundle_and_window_that_reopen_the_same_view(raw):
    from kitlib.display import findings_html
    from kitlib.display.triage import next_steps

    start, end = "2026-11-23 12:05:00", "2026-11-23 12:20:00"
    b = kitlib.open(raw[0], None, start, end, "broker-2")
    shrinks = b.events[b.events["message"].str.contains("Shrinking ISR")]
    assert len(shrinks) and set(shrinks["host"]) == {"broker-2"}
    findings = [_finding(shrinks)]
    for rendered in (findings_html(findings, bundle=b, tz="UTC").html, next_steps(findings, bundle=b, tz="UTC").html):
        (link,) = _open_next_links(rendered)
        assert link["href"] == "cluster_health.ipynb"
        assert link["data"]["bundle"] == str(raw[0]) and link["data"]["hosts"] == "broker-2"
        assert pd.Timestamp(link["data"]["start"]) == pd.Timestamp(start, tz="UTC")
        assert pd.Timestamp(link["data"]["end"]) == pd.Timestamp(end, tz="UTC")
        cell, command = link["pre"]
        params: dict = {}
        exec(cell, {}, params)  # the lines an analyst pastes into the next parameters cell
        assert set(params) == {"BUNDLE", "TZ", "START", "END", "HOSTS"}
        again = kitlib.open(params["BUNDLE"], params["TZ"], params["START"], params["END"], params["HOSTS"])
        assert again.window == b.window
        pd.testing.assert_frame_equal(again.events.reset_index(drop=True), b.events.reset_index(drop=True))
        words = __import__("shlex").split(command)
        assert words[:2] == ["papermill", "cluster_health.ipynb"]
        pairs = dict(zip(words[4::3], words[5::3], strict=True))
        assert words[3::3] == ["-p"] * len(pairs)
        assert pairs == {
            "BUNDLE": str(raw[0]),
            "TZ": "UTC",
            "START": params["START"],
            "END": params["END"],
            "HOSTS": "broker-2",
        }
        assert f"bundle {raw[0]}, window 2026-11-23 12:05:00 UTC → 2026-11-23 12:20:00 UTC, hosts broker-2" in rendered


def test_an_open_next_link_on_the_whole_bundle_says_so_and_escapes_the_path(tmp_path):
    from kitlib.display import findings_html

    f = _finding(pd.DataFrame(columns=["file", "line", "host", "ts", "message"]))
    html = findings_html([f], bundle={"BUNDLE": "../incidents/o'brien <2>", "START": None, "END": None}).html
    (link,) = _open_next_links(html)
    assert link["data"] == {"bundle": "../incidents/o'brien <2>"}
    assert "o'brien <2>" not in html and "window the whole bundle, hosts all" in html
    params: dict = {}
    exec(link["pre"][0], {}, params)
    assert params == {"BUNDLE": "../incidents/o'brien <2>", "START": None, "END": None}
    plain = findings_html([f]).html  # no bundle given: the link alone, as before
    assert "kit-open-next" in plain and "kit-open-params" not in plain


def test_every_notebook_hands_its_bundle_and_window_to_its_open_next_links():
    import nbformat

    from kitlib.report import notebook_dir

    for path in sorted(notebook_dir().glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        calls = re.findall(r"(?:display\.findings_html|view\.next_steps)\((.*?)\)\s*$", code, re.S | re.M)
        assert len(calls) == code.count("findings_html(") + code.count("next_steps("), path.name
        for call in calls:
            assert "bundle=" in call and "tz=TZ" in call, (path.name, call)


def test_a_sample_bundle_is_marked_as_such_and_an_analysts_bundle_is_not(raw, tmp_path, capsys, monkeypatch):
    from kitlib.display.sample import is_sample, sample_note, sample_notice
    from kitlib.report import notebook_dir

    monkeypatch.chdir(notebook_dir())  # where a notebook's kernel runs: its BUNDLE is relative to it
    sample = kitlib.bundle.Bundle("../sample_data/isr-flapping", {})
    note = sample_note(sample)
    assert note is not None and "kit-sample-banner" in note.html
    assert "sample bundle 'isr-flapping', not your cluster" in note.text and "BUNDLE =" not in note.text
    assert "<code>isr-flapping</code>" in note.html and "sample_data" not in note.html
    assert sample_note(sample).html == note.html  # the same on every run: stored outputs stay fixed
    for path in ("../sample_data/isr-flapping", "../sample_data/down-conversion/"):
        assert is_sample(path), path
    # the analyst's own bundle, a folder merely named like one, and a copy of a sample elsewhere
    lookalike = tmp_path / "sample_data" / "mine"
    lookalike.mkdir(parents=True)
    copied = tmp_path / "incident"
    copied.mkdir()
    (copied / "PROVENANCE.md").write_text("copied from a sample\n")
    for path in (raw[0], lookalike, copied):
        assert not is_sample(path) and sample_note(kitlib.bundle.Bundle(str(path), {})) is None, path
    sample_notice(kitlib.bundle.Bundle(str(raw[0]), {}))
    assert capsys.readouterr().out == ""  # nothing shown for the analyst's bundle


def test_every_notebook_marks_sample_outputs_right_after_opening_its_bundle():
    import nbformat

    from kitlib.report import notebook_dir

    for path in sorted(notebook_dir().glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert re.search(r"^bundle = kitlib\.open\(.*\)\ndisplay\.sample_notice\(bundle\)$", code, re.M), path.name
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        default = re.search(r'^BUNDLE = "([^"]+)"', params.source, re.M).group(1)
        assert (path.parent / default).is_dir(), path.name  # the default is a sample the notice names


@pytest.mark.slow  # eight searches per order: over a second each on a busy machine
@pytest.mark.parametrize(
    ("order", "desc", "keys"),
    [("time", False, ["ts"]), ("host", True, ["host"]), ("logger", False, ["logger"]), ("file:line", True, [])],
)
def test_search_pages_match_a_full_sort_and_the_count_stops_at_its_cap(bundle, order, desc, keys):
    ev = bundle.events
    hit = ev[ev["message"].str.lower().str.contains("orders-1")]
    want = hit.assign(host=hit["host"].astype(str), logger=hit["logger"].astype(str), file=hit["file"].astype(str))
    by = keys or ["file", "line"]
    ties = bool(keys) or not desc  # file and line break ties in ascending order, as the query does
    want = want.sort_values([*by, "file", "line"], ascending=[not desc] * len(by) + [ties] * 2)
    where = (want["file"] + ":" + want["line"].astype(str)).tolist()
    n = len(where)
    assert n > 100
    for offset, limit in ((0, 25), (40, 10), (n - 3, 10), (n + 5, 10)):
        got = s.search(bundle, "orders-1", order=order, desc=desc, limit=limit, offset=offset)
        assert got.rows["where"].tolist() == where[offset : offset + limit]
        assert got.total == n and not got.capped  # under the cap: exact, from the last page or the count
        low = s.search(bundle, "orders-1", order=order, desc=desc, limit=limit, offset=offset, count_cap=30)
        assert low.rows["where"].tolist() == got.rows["where"].tolist()
        if offset + limit < n:  # a full page, not the last: counted up to the cap (or the page's end)
            assert low.capped and low.total == max(30, offset + limit) < n
            assert low.describe().startswith(f"at least {low.total:,} lines match; {offset + 1:,}–")
        else:
            assert not low.capped and low.total == n


@pytest.mark.slow  # runs the cluster_health detectors and its analyses twice: seconds on a busy machine
def test_an_investigation_panel_recomputes_its_own_tables_and_charts_for_the_window():
    from kitlib.investigations.cluster_health import analysis

    b = kitlib.open(ISR_FLAPPING)
    called = []

    def never(x):
        called.append(x)
        raise AssertionError("computed with explore mode off")

    assert explore.investigation(b, "cluster_health", False, tables={"x": never}, charts={"y": never}) is None
    assert not called  # off (papermill, nbval, reports): nothing computed, nothing shown

    def broken(x):
        raise ValueError("no such column: 'leader'")

    p = explore.investigation(
        b,
        "cluster_health",
        True,
        tables={"ISR episodes": analysis.isr_episodes, "Outage sequence": analysis.outage_sequence, "Broken": broken},
        charts={"Drawn": lambda x: len(x.events)},
    )
    findings = kitlib.triage(b, investigations=["cluster_health"]).findings
    every = explore.evidence_rows(findings)
    assert p.findings and {f.id for f in p.findings} == {f.id for f in findings}
    assert len(p.table_frames["ISR episodes"]) == len(analysis.isr_episodes(b)) > 2
    assert "Could not compute it: no such column: &#x27;leader&#x27;" in p.tables_out.value  # a message, no traceback
    t = every["ts"].dropna().sort_values()
    lo, hi = t.iloc[len(t) // 4], t.iloc[3 * len(t) // 4]
    p.set_window(lo, hi)
    cut = kitlib.window(b, lo, hi)
    for name, fn in (("ISR episodes", analysis.isr_episodes), ("Outage sequence", analysis.outage_sequence)):
        want = fn(cut)
        assert len(p.table_frames[name]) == len(want), name
        assert f"data-table='{name}' data-rows='{len(want)}'" in p.tables_out.value
    assert len(p.table_frames["ISR episodes"]) < len(analysis.isr_episodes(b))
    inside = int(((every["ts"] >= lo) & (every["ts"] < hi)).sum())
    assert 0 < inside < len(every) and f"data-rows='{inside}'" in p.evidence_out.value
    p.set_window(None, None, None)
    assert len(p.table_frames["ISR episodes"]) == len(analysis.isr_episodes(b))


def test_every_investigation_notebook_has_its_explore_panel_right_after_its_findings():
    import nbformat

    from kitlib.report import notebook_dir

    for path in sorted(notebook_dir().glob("*.ipynb")):
        if path.stem == "triage":
            continue
        nb = nbformat.read(str(path), as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        at = [i for i, src in enumerate(code) if f'explore.investigation(\n    bundle, "{path.stem}", EXPLORE' in src]
        assert len(at) == 1, path.name
        opened = [i for i, src in enumerate(code) if "bundle = kitlib.open(" in src]
        assert opened and at[0] > opened[0], path.name
        shown = [i for i, src in enumerate(code) if "findings_html(" in src]
        assert not shown or at[0] == shown[0] + 1, path.name  # right after the findings it explores


@pytest.mark.slow  # writes 300,000 lines twice (plain and gzip): over a second on a busy machine
def test_the_lines_around_a_hit_at_the_end_of_a_big_file_are_read_from_its_line_index(tmp_path, monkeypatch):
    from kitlib.bundle import Bundle
    from kitlib.explore import lines as li
    from kitlib.sources import decompress

    root = tmp_path / "big"
    (root / "broker-1").mkdir(parents=True)
    n = 300_000
    text = "".join(
        f"[2026-11-23 12:00:00,{i % 1000:03d}] INFO line {i} of the log (kafka.log.LocalLog)\n" for i in range(1, n + 1)
    )
    (root / "broker-1" / "server.log").write_text(text)
    (root / "broker-1" / "server.log.1.gz").write_bytes(gzip.compress(text.encode(), compresslevel=1))
    b = Bundle(str(root), {})  # a raw bundle in memory: its index is kept by the process, never in the bundle
    read: list[int] = []
    real = decompress.open_raw

    def counting(src):  # every byte the context view reads from disk (a seek reads none)
        fh = real(src)
        plain_read = fh.read

        def tally(k=-1):
            got = plain_read(k)
            read.append(len(got))
            return got

        fh.read = tally
        return fh

    monkeypatch.setattr(decompress, "open_raw", counting)
    want = [
        (k, f"[2026-11-23 12:00:00,{k % 1000:03d}] INFO line {k} of the log (kafka.log.LocalLog)")
        for k in range(n - 8, n + 1)
    ]
    assert s.context(b, "broker-1/server.log", n - 4, 4, 6) == want  # the first call builds the index
    read.clear()
    for target, lo, hi in (
        (n - 4, n - 8, n),
        (n // 2, n // 2 - 4, n // 2 + 4),
        (li.STEP + 10, li.STEP + 6, li.STEP + 14),
    ):
        read.clear()
        got = s.context(b, "broker-1/server.log", target, 4, 4)
        assert got == [
            (k, f"[2026-11-23 12:00:00,{k % 1000:03d}] INFO line {k} of the log (kafka.log.LocalLog)")
            for k in range(lo, min(hi, n) + 1)
        ]
        assert 0 < sum(read) <= 2 * li.STEP * 80, (target, sum(read))  # two steps of lines at most, not the file
    assert list(root.rglob("*.npz")) == [] and sorted(p.name for p in root.rglob("*")) == [
        "broker-1",
        "server.log",
        "server.log.1.gz",
    ]
    read.clear()  # a compressed copy has no index: read from its start, and still right
    assert s.context(b, "broker-1/server.log.1.gz", n - 4, 4, 6) == want
    assert sum(read) > len(text) // 1000  # its compressed bytes, all of them


def test_a_line_index_kept_in_the_store_is_rebuilt_when_the_file_changes(tmp_path):
    from kitlib.explore import lines as li
    from kitlib.sources.files import SourceFile

    store = tmp_path / "out.kit"
    store.mkdir()
    f = tmp_path / "server.log"
    f.write_bytes(b"".join(b"row %d\n" % i for i in range(1, 20_001)))
    src = SourceFile(f, "broker-1/server.log", "broker-1")
    holder = type("B", (), {})()
    holder.store = store
    got = li.index_of(holder, src, step=1000)
    assert got is not None and len(got) == 21 and f.read_bytes()[got[7] :].startswith(b"row 7001\n")
    assert got[-1] == f.stat().st_size  # line 20,001 would start at the end
    (saved,) = (store / ".index" / "lines").glob("*.npz")
    li._MEMO.clear()
    assert li.index_of(holder, src, step=1000).tolist() == got.tolist()  # read back from the store
    f.write_bytes(b"x\n" + f.read_bytes())
    os.utime(f, ns=(1, 1))
    again = li.index_of(holder, src, step=1000)
    assert f.read_bytes()[again[7] :].startswith(b"row 7000\n")  # one line shifted: a new index
    cr = tmp_path / "mac.log"
    cr.write_bytes(b"a\rb\r" * 10)
    assert li.offsets(cr) is None


@pytest.mark.slow  # ingests a bundle and searches it twice per query
def test_the_trigram_index_finds_exactly_what_a_scan_of_every_line_finds(tmp_path, monkeypatch):
    from kitlib.explore import textindex as ti

    root = tmp_path / "bundle"
    (root / "broker-1").mkdir(parents=True)
    lines = [_line(i, 1) for i in range(6000)]
    lines[4000] = lines[4000].replace("Rolled new log segment", "Disk at 300\u212aelvin, rolled new log segment")
    lines[5000] = lines[5000].replace("Rolled new log segment", "Fenced broker epoch=17 after ÜBER-long pause")
    lines[5500] = lines[5500].replace("Rolled new log segment", "\u017ftalled fetcher, rolled new log segment")
    lines[4500] = lines[4500].replace("offset 450000", "offset 912345 in 12 ms")  # the one 9\d{5} offset
    lines[4600] = lines[4600].replace("offset 460000", "offset 9123456 in 3 ms")  # seven digits: no hit of it
    (root / "broker-1" / "server.log").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.kit"
    kitlib.ingest(root, out, progress=False)
    store = kitlib.load(out)
    monkeypatch.setattr(ti, "MOST", 1.0)  # narrow even when the store's one row group must be read
    queries = [
        {"text": "shrinking isr"},  # any case
        {"text": "Shrinking ISR from 1,2,3"},  # exact
        {"text": "SHRINKING"},  # exact: no line holds it in capitals
        {"text": "300kelvin"},  # any case: the Kelvin sign lowers to an ASCII k
        {"text": "über-long"},  # any case, past ASCII
        {"text": "not_leader", "level": "ERROR"},
        {"text": r"Shrinking ISR from \d,2,3 to", "regex": True},
        {"text": r"(?i)fenced broker epoch=\d+", "regex": True},
        {"text": r"offset (12|34)00\b", "regex": True},
        {"text": "[[:upper:]]enced", "regex": True},  # RE2's class: Python would read literals into it
        {"text": "Rolled new log segment at offset 1", "window": Window.of("2026-11-23 12:30", "2026-11-23 13:00")},
        # numbers: the Bloom filters of number keys (digits after four bytes of text)
        {"text": "offset 4242"},  # any case: offset 424200
        {"text": "Offset 4242"},  # exact: no line
        {"text": "orders-3] rolled new log segment at offset 42"},  # a one-digit run closed by "]"
        {"text": r"ISR from 1,\d,3 to 1,3\.", "regex": True},
        {"text": r"at offset 9\d{5} in", "regex": True},  # the run's length fixed: 912345, not 9123456
        {"text": "at offset 912345 in 12"},
        {"text": r"offset 9\d+ in", "regex": True},  # no number key: the trigrams alone
    ]

    def _scan(text, regex):
        with monkeypatch.context() as m:
            m.setattr(s, "_narrowed", lambda b, q: None)
            return s.search(store, text, regex=regex, limit=50).rows["where"].tolist()

    narrowed = set()
    for kw in queries:
        q = s.Query(**kw)
        part = s._narrowed(store, q)
        if part is not None and part.num_rows < len(lines) // 10:
            narrowed.add(kw["text"])
        with_index = s.search(store, query=q, limit=5000)
        with monkeypatch.context() as m:
            m.setattr(s, "_narrowed", lambda b, q: None)
            scanned = s.search(store, query=q, limit=5000)
        assert not with_index.error and not scanned.error, kw
        assert with_index.total == scanned.total, kw
        assert with_index.rows["where"].tolist() == scanned.rows["where"].tolist(), kw
        if "window" not in kw and "[[:" not in kw["text"]:
            pattern = kw["text"].replace("(?i)", "") if kw.get("regex") else re.escape(kw["text"])
            flags = re.I if kw["text"] == kw["text"].lower() or "(?i)" in kw["text"] else 0
            assert scanned.total == _count({1: lines}, pattern, flags, level=kw.get("level")), kw
    # rare text: the index rules out all but a tenth of the store (a line past ASCII: its part only)
    assert {"300kelvin", "über-long", r"(?i)fenced broker epoch=\d+"} <= narrowed, narrowed
    # numbers whose trigrams are on every line: the number keys narrow them to a tenth too
    assert {"offset 4242", "Offset 4242", r"at offset 9\d{5} in", "at offset 912345 in 12"} <= narrowed, narrowed
    assert s.search(store, "offset 4242").total == 1 and s.search(store, r"at offset 9\d{5} in", regex=True).total == 1
    assert (out / ".index" / "parts.arrow").is_file() and (out / ".index" / "numbers.npy").is_file()
    ti.index_of(store).copied = None  # as on a read-only store: no copy, candidate row groups read instead
    for text, regex in [("offset 4242", False), (r"at offset 9\d{5} in", True)]:
        assert s.search(store, text, regex=regex, limit=50).rows["where"].tolist() == _scan(text, regex)
    assert s.search(store, "300kelvin").total == 1 and s.search(store, "über-long").total == 1
    # any case is lower(): the long s is lower case already, so it is no 's' (RE2 without case would say it is)
    assert s.search(store, "stalled fetcher").total == 0 and s.search(store, "\u017ftalled fetcher").total == 1
    assert s.search(store, "rolled new log segment at offset 1").total == _count(
        {1: lines}, "rolled new log segment at offset 1", re.I
    )
    assert (out / ".index" / "trigrams.npz").is_file() and not list(root.rglob("*.npz"))
    assert ti.literals(r"Shrinking ISR from \d,2,3 to") == ["Shrinking ISR from ", ",2,3 to"]


def test_number_runs_and_keys_match_a_reading_of_each_message_with_re():
    import numpy as np

    from kitlib.explore import textindex as ti

    msgs = [b"12ab", b"34", b"x 5678901 y", b"", b"OFF 99 and 7", b"7", b"at offset 9123456 in 3"]
    data = ti.LOWER[np.frombuffer(b"".join(msgs), np.uint8)]
    offs = np.concatenate([[0], np.cumsum([len(m) for m in msgs])]).astype(np.int64)
    got = ti.number_runs(data, offs)
    want = []
    for m, base in zip(msgs, offs):
        low = m.lower()
        for d in re.finditer(rb"[0-9]+", low):  # a run never crosses from one message into the next
            a = d.start()
            before = int.from_bytes(low[max(0, a - 4) : a].rjust(4, b"\0"), "big")
            digits = int.from_bytes(d.group()[:4].ljust(4, b"\0"), "big")
            want.append((base + a, before, digits, len(d.group())))
    assert list(zip(*(g.tolist() for g in got))) == want
    # a query's keys are among the keys of a message that holds it, whatever its case
    at, before, digits, length = got
    held = set(ti._hash(before, digits, length, False).tolist()) | set(ti._hash(before, digits, length, True).tolist())
    for text, regex in [
        ("offset 9123", False),
        ("OFFSET 9123456 in", False),
        (r"offset 9\d{6} in", True),
        ("off 99 ", False),
    ]:
        keys = ti.number_keys(text, regex)
        assert len(keys) and set(keys.tolist()) <= held, text
    assert not set(ti.number_keys(r"offset 9\d{5} in", True).tolist()) <= held  # six digits: not that run
    assert not len(ti.number_keys("t 9123")) and not len(ti.number_keys(r"offset 9\d+", True))
