"""Explore mode as an analyst meets it: JupyterLab on 127.0.0.1 (a token, a new folder), Debian's
Chromium driven by Playwright, the triage notebook on a sample bundle. Run All; brush a window on
the cross-host timeline and see the evidence table follow it; search a string and open a hit's
lines; pin the view and render the pinned view's report. No request may leave 127.0.0.1 (every other one is refused and recorded), and
no JavaScript error may be logged.

Needs Debian's ``chromium`` (``make test`` installs it) and the ``playwright`` package (the test
extra); Playwright's own browser download is never used."""

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "sample_data" / "isr-flapping"

pytestmark = [pytest.mark.chromium, pytest.mark.slow]


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("Debian's chromium is not installed (make test installs it: apt-get install chromium)")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a folder that holds the triage notebook pointed at the sample bundle."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("triage", "cluster_health"):
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        for cell in nb["cells"]:
            if "parameters" in cell["metadata"].get("tags", []):
                src = "".join(cell["source"])
                src = re.sub(r'^BUNDLE = "[^"]*"', f"BUNDLE = {str(BUNDLE)!r}", src, flags=re.M)
                cell["source"] = src.splitlines(keepends=True)
            cell.pop("outputs", None) if cell["cell_type"] != "code" else cell.update(outputs=[], execution_count=None)
        (work / f"{name}.ipynb").write_text(json.dumps(nb, indent=1))
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k not in ("KITLIB_EXPLORE", "JPY_SESSION_NAME")}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp_path / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp_path / "workspaces")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={work}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "lab.log", "w"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start: " + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base, token, work
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def _rows_in_window(label: str, investigations=None) -> int:
    """The evidence rows of the sample's findings (of ``investigations``, default all) inside the
    window a label states (computed here, apart from the panel)."""
    import kitlib
    from kitlib.explore import evidence_rows
    from kitlib.window import Window

    m = re.search(r"Window: (\S+ \S+) → (\S+ \S+) UTC", label)
    assert m, label
    w = Window.of(m.group(1), m.group(2))
    return len(w.frame(evidence_rows(kitlib.triage(kitlib.open(BUNDLE), investigations).findings), "ts"))


def _browser(p):
    return p.chromium.launch(
        executable_path=_chromium(),
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    )


def _open_and_run_all(browser, base: str, token: str, name: str, outside: list, errors: list):
    """A page on notebook ``name``, every request off 127.0.0.1 refused and recorded, every
    JavaScript error recorded; Run All once its kernel is up."""

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.route("**/*", route)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{base}/lab/tree/{name}.ipynb?token={token}")
    page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=120_000)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_function(
        "document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-Toolbar-kernelStatus') !== null"
        " && window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.sessionContext"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session"
        " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel",
        timeout=120_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    return page


def _brush(page, total: int) -> tuple[str, int]:
    """Drag across the middle of the timeline; wait for the evidence count to leave ``total``.
    Returns the window label and the evidence rows the panel then shows."""
    # every cell run first (no prompt waiting, the kernel idle): a brush made while cells still
    # run is answered only after them, and outputs still drawn above the timeline move it away
    # from the pointer (on a loaded machine the drag then missed the chart)
    page.wait_for_function(
        "(() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext.session && w.sessionContext.session.kernel;"
        " const waiting = [...document.querySelectorAll('.jp-InputPrompt')].some(p => p.textContent.includes('*'));"
        " return k && k.status === 'idle' && !waiting; })()",
        timeout=600_000,
    )
    page.wait_for_timeout(1000)  # (the last outputs drawn)
    page.wait_for_selector(".kit-timeline canvas, .kit-timeline svg.marks", timeout=120_000)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    area = page.locator(".kit-timeline canvas, .kit-timeline svg.marks").first
    changed = f"(() => {{ const e = document.querySelector('.kit-evidence-count'); return e && e.dataset.rows !== '{total}'; }})()"
    for attempt in range(3):  # a drag on a chart JupyterLab was still attaching is lost: drag again
        area.scroll_into_view_if_needed()
        box = area.bounding_box()
        for _ in range(20):  # the chart where it stays (the notebook may still scroll or lay out)
            page.wait_for_timeout(300)
            again = area.bounding_box()
            if again == box:
                break
            box = again
        y = box["y"] + box["height"] * 0.5
        page.mouse.move(box["x"] + box["width"] * 0.35, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.55, y, steps=8)
        page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=4)
        page.mouse.up()
        try:
            page.wait_for_function(changed, timeout=60_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise

    def now():
        return page.locator(".kit-window").inner_text(), int(
            page.locator(".kit-evidence-count").get_attribute("data-rows")
        )

    seen, deadline = now(), time.monotonic() + 120
    while time.monotonic() < deadline:  # the brush sends updates while it moves: wait for the last one
        page.wait_for_timeout(2000)
        got = now()
        if got == seen:
            break
        seen = got
    return seen


def test_brush_search_and_pin_in_jupyterlab(lab, kit, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token, work = lab
    outside: list[str] = []
    errors: list[str] = []

    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = _open_and_run_all(browser, base, token, "triage", outside, errors)

            # Run All: the explore panel (only in explore mode: on, since a Jupyter server started the kernel)
            count = page.wait_for_selector(".kit-evidence-count", timeout=600_000)
            total = int(count.get_attribute("data-rows"))
            assert total > 2

            # brush a window across the middle of the timeline
            label, rows = _brush(page, total)
            assert rows < total and rows == _rows_in_window(label), label
            shown = page.locator(".kit-explore-evidence table.kit-table tbody tr").count()
            assert shown == rows

            # search every line, then open a hit's lines
            box_in = page.locator(".kit-search-text input")
            box_in.scroll_into_view_if_needed()
            box_in.fill("Shrinking ISR")
            box_in.press("Enter")
            page.wait_for_function(
                "(() => { const e = document.querySelector('p.kit-hits-count');"
                " return e && /lines match/.test(e.textContent) && e.textContent.includes('the search'); })()",
                timeout=120_000,
            )
            first = page.locator(".kit-hits tbody tr", has_text="Shrinking ISR").first
            first.wait_for(timeout=60_000)
            assert (
                page.locator(".kit-hits tbody tr").count()
                == page.locator(".kit-hits tbody tr", has_text="Shrinking ISR").count()
            )
            first.click()
            ctx = page.wait_for_selector(".kit-context-view .kit-context", timeout=60_000)
            assert "Shrinking ISR" in ctx.inner_text() and ctx.query_selector(".kit-hit") is not None

            # pin the view
            page.locator("button.kit-pin").click()
            page.wait_for_selector(".kit-pinned", timeout=60_000)
        finally:
            browser.close()

    from kitlib.params import read_pinned

    pinned = read_pinned(work / "pinned-view.yaml")
    m = re.search(r"Window: (\S+ \S+) → (\S+ \S+) UTC", label)
    assert m
    assert pd.Timestamp(pinned["START"]).strftime("%Y-%m-%d %H:%M:%S") == m.group(1)[:19]
    assert pinned["SEARCH"]["text"] == "Shrinking ISR"
    assert outside == [], outside
    assert errors == [], errors

    # the pinned view renders as the static report of that window
    out = tmp_path / "report"
    run = kit(
        "report", BUNDLE, "--out", out, "--notebook", "triage", "--params", work / "pinned-view.yaml", timeout=900
    )
    assert run.returncode == 0, run.stderr[-2000:]
    page = (out / "triage.html").read_text()
    assert f"{pinned['START']} → {pinned['END']} (pinned view)" in page


def test_an_investigation_notebook_follows_the_brush_in_jupyterlab(lab):
    """cluster_health on the same sample: a brush re-queries its own findings' evidence and its
    ISR-episode table to the rows inside the window."""
    from playwright.sync_api import sync_playwright

    import kitlib
    from kitlib.investigations.cluster_health import analysis

    base, token, _work = lab
    outside: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = _open_and_run_all(browser, base, token, "cluster_health", outside, errors)
            count = page.wait_for_selector(".kit-evidence-count", timeout=600_000)
            total = int(count.get_attribute("data-rows"))
            episodes = page.locator(".kit-table-count[data-table='ISR episodes']")
            before = int(episodes.get_attribute("data-rows"))
            assert total > 2 and before > 2
            label, rows = _brush(page, total)
            after = int(episodes.get_attribute("data-rows"))
        finally:
            browser.close()
    assert rows < total and rows == _rows_in_window(label, ["cluster_health"]), label
    m = re.search(r"Window: (\S+ \S+) → (\S+ \S+) UTC", label)
    assert m, label
    want = len(analysis.isr_episodes(kitlib.window(kitlib.open(BUNDLE), m.group(1), m.group(2))))
    assert after == want < before, label
    assert outside == [], outside
    assert errors == [], errors
