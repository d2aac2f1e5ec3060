"""Reports render offline in a real browser: headless Chromium (Debian's `chromium`) with all
network access disabled opens the generated HTML, every chart draws, and log text carrying
markup is shown as text, never executed.

On the report of every sample bundle (``kitlib report sample_data``), measured in the browser: no
code cell is visible, every chart's SVG has marks of non-zero size, the summary shows a time span,
every finding links to an evidence entry holding the text of the lines it cites (read here from
the bundle's files), and no page makes a network request (Chromium's net log)."""

import gzip
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kitlib.report import bundles_in, redact_line, report, report_many

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.chromium

EVIL_SCRIPT = "<script>document.title='pwned'</script>"
EVIL_IMG = "<img src=x onerror=\"document.title='pwned'\">"
LOG = (
    "[2024-05-22 00:00:01,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
    f"[2024-05-22 00:00:02,000] WARN [SocketServer listenerType=BROKER, nodeId=1] Unexpected error from client {EVIL_SCRIPT}; closing connection (kafka.network.Processor)\n"
    f"[2024-05-22 00:00:03,000] ERROR [KafkaApi-1] Error when handling request from {EVIL_IMG} (kafka.server.KafkaApis)\n"
    "[2024-05-22 00:01:03,000] ERROR [ReplicaManager broker=1] Error processing append operation on partition orders-0 (kafka.server.ReplicaManager)\n"
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: not the leader\n"
)


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.fail("Debian's chromium is not installed (make test installs it: apt-get install chromium)")
    return exe


def browse(page: Path, tmp: Path, screenshot: Path | None = None) -> str:
    """The DOM of ``page`` after load, in headless Chromium with every network request failing."""
    flags = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chrome-profile'}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--virtual-time-budget=5000",
    ]
    if screenshot:
        r = subprocess.run(
            flags + [f"--screenshot={screenshot}", "--window-size=1200,1600", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert screenshot.is_file(), r.stderr[-2000:]
    r = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr[-2000:]
    return r.stdout


class Dom(HTMLParser):
    """Just enough of the DOM: chart output containers and whether they hold an svg/canvas,
    every element's tag and attributes, the title and the visible text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.charts, self.elements, self.text, self.title = [], [], [], [], ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "title":
            self._in_title = True
        if a.get("data-mime-type") == "image/svg+xml":
            self.charts.append({"drew": False})
            self.stack.append(("chart", len(self.charts) - 1, tag))
        elif tag in ("svg", "canvas"):
            for kind, idx, _ in reversed(self.stack):
                if kind == "chart":
                    self.charts[idx]["drew"] = True
                    break
        if tag not in ("img", "br", "meta", "link", "input", "hr", "path", "rect", "line", "circle"):
            self.stack.append(("el", None, tag))

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][2] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("render")
    b = tmp / "evil-bundle" / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_text(LOG)
    out = tmp / "report"
    res = report(b.parent, out, only=["triage"], log=lambda *a: None)
    assert not [n for n in res["notebooks"] if n["error"]], res
    return tmp, out


def test_report_pages_have_no_remote_resources(rendered):
    _, out = rendered
    pages = sorted(out.glob("*.html"))
    assert out / "triage.html" in pages and out / "index.html" in pages, pages
    for page in pages:
        html = page.read_text()
        for attr in ('src="http', "src='http", 'href="http', 'import("http', "url(http"):
            assert attr not in html, (page.name, attr)


def test_charts_draw_offline_and_markup_in_logs_stays_text(rendered):
    tmp, out = rendered
    page = out / "triage.html"
    dom = Dom()
    dom.feed(browse(page, tmp, screenshot=tmp / "triage.png"))
    assert dom.charts, "no chart output found in the report"
    assert all(c["drew"] for c in dom.charts), dom.charts
    text = "".join(dom.text)
    # the hostile log text is visible, as text
    assert "document.title='pwned'" in text
    assert "<img src=x" in text
    # and it did not become markup or run
    assert "pwned" not in dom.title
    assert not any(tag == "img" and a.get("src") == "x" for tag, a in dom.elements)
    assert not any(tag == "script" and "pwned" in str(a) for tag, a in dom.elements)
    assert (tmp / "triage.png").stat().st_size > 10_000


def test_index_links_every_page(rendered):
    tmp, out = rendered
    dom = Dom()
    dom.feed(browse(out / "index.html", tmp))
    links = [a.get("href") for tag, a in dom.elements if tag == "a"]
    assert "triage.html" in links
    ids = {a.get("id") for _, a in dom.elements if a.get("id")}
    for h in links:
        page, _, anchor = h.partition("#")
        assert (out / page).is_file() if page else anchor in ids, h


# ---------------------------------------------------------------------------------------------
# every sample bundle's report, measured in the browser

# Run inside the page after load: what a reader sees, as JSON in a body attribute.
CHECK_JS = """<script>(function () {
  const out = {code: 0, params: document.body.innerText.includes('BUNDLE ='), charts: [], evidence: [], spans: []};
  document.querySelectorAll('.jp-CodeCell .jp-InputArea, .jp-InputArea-editor, .jp-CodeMirrorEditor').forEach(function (el) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) out.code++;
  });
  document.querySelectorAll('[data-mime-type="image/svg+xml"]').forEach(function (box) {
    const svg = box.querySelector('svg');
    const chart = {svg: !!svg, groups: []};
    if (svg) svg.querySelectorAll('g.role-mark').forEach(function (g) {
      const kind = (Array.from(g.classList).find(function (c) { return c.indexOf('mark-') === 0; }) || 'mark-?').slice(5);
      const sizes = Array.from(g.children).map(function (e) {
        try { const b = e.getBBox(); return [b.width, b.height]; } catch (x) { return [0, 0]; }
      });
      chart.groups.push({kind: kind, sizes: sizes});
    });
    out.charts.push(chart);
  });
  document.querySelectorAll('.kit-finding-card').forEach(function (card) {
    const a = card.querySelector('a.kit-evidence-link');
    const href = a ? a.getAttribute('href') : null;
    const target = href && href[0] === '#' ? document.getElementById(href.slice(1)) : null;
    out.evidence.push({finding: card.dataset.finding, href: href, text: target ? target.textContent : null});
  });
  document.querySelectorAll('.kit-span').forEach(function (e) { out.spans.push(e.textContent.trim()); });
  out.order = Array.from(document.querySelectorAll('#risks, .kit-finding-card')).map(function (e) {
    return e.id === 'risks' ? '#risks' : e.dataset.finding;
  });
  document.body.setAttribute('data-kit-check', JSON.stringify(out));
})();</script>"""
LOCAL_SCHEMES = ("file:", "data:", "about:", "chrome:", "chrome-search:", "blob:")


def measure(page: Path, tmp: Path) -> dict:
    """Open a copy of ``page`` (beside it, so relative links resolve) with :data:`CHECK_JS` added,
    in headless Chromium with every network request failing and a net log written; return what
    the script measured plus ``requests``: every non-local URL Chromium tried to load."""
    probe = page.with_name(f".check-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK_JS + "</body>"), encoding="utf-8")
    netlog = tmp / f"netlog-{page.parent.name}-{page.stem}.json"
    profile = tmp / f"profile-{page.parent.name}-{page.stem}"
    flags = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--virtual-time-budget=5000",
        f"--log-net-log={netlog}",
        "--window-size=1200,1600",
        "--dump-dom",
        probe.as_uri(),
    ]
    try:
        r = subprocess.run(flags, capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink()
    m = re.search(r'data-kit-check="([^"]*)"', r.stdout)
    assert m, (page, r.stderr[-2000:])
    import html

    got = json.loads(html.unescape(m.group(1)))
    urls = set()
    if netlog.is_file():
        text = netlog.read_text(errors="replace")
        try:
            log = json.loads(text)
        except json.JSONDecodeError:  # chromium may leave the closing of the events list out
            log = json.loads(text.rstrip().rstrip(",") + "]}")
        start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        for ev in log.get("events", []):
            params = ev.get("params") or {}
            url = params.get("url")
            # Chromium's own requests (update checks, network time) have no initiating origin; a
            # request of the page has the page's (opaque, for a file: page) origin
            if (
                ev.get("type") == start_job
                and url
                and not url.startswith(LOCAL_SCHEMES)
                and params.get("initiator") != "not an origin"
            ):
                urls.add(url)
    got["requests"] = sorted(urls)
    return got


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """``kitlib report sample_data`` once, and every page of it measured in Chromium."""
    tmp = tmp_path_factory.mktemp("samples")
    out = tmp / "reports"
    res = report_many(ROOT / "sample_data", out, log=lambda *a: None)
    failed = [(r["bundle"], n["notebook"], n["error"]) for r in res["bundles"] for n in r["notebooks"] if n["error"]]
    assert not failed and not [r for r in res["bundles"] if r.get("error")], failed
    pages = [out / "index.html"] + sorted(out.glob("*/*.html"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        measured = dict(zip(pages, pool.map(lambda p: measure(p, tmp), pages)))
    return out, res, measured


def test_every_sample_bundle_is_reported(samples):
    out, res, measured = samples
    names = {b.name for b in bundles_in(ROOT / "sample_data")}
    assert {Path(r["bundle"]).name for r in res["bundles"]} == names
    top = measured[out / "index.html"]
    assert len(top["spans"]) == len(names) and all(re.match(r"\d{4}-\d\d-\d\d ", s) for s in top["spans"]), top["spans"]


def test_no_code_cell_is_visible_by_default(samples):
    _, _, measured = samples
    shown = {
        p.parent.name + "/" + p.name: (m["code"], m["params"]) for p, m in measured.items() if m["code"] or m["params"]
    }
    assert not shown, shown


def _mark_ok(group: dict) -> bool:
    sizes = group["sizes"]
    if group["kind"] in ("line", "rule", "text"):  # a line or rule may be flat in one direction
        return any(w > 0 or h > 0 for w, h in sizes)
    return any(w > 0 and h > 0 for w, h in sizes)


def test_every_chart_draws_marks_of_nonzero_size(samples):
    _, _, measured = samples
    charts = 0
    for page, m in measured.items():
        for i, chart in enumerate(m["charts"]):
            charts += 1
            where = f"{page.parent.name}/{page.name} chart {i + 1}"
            assert chart["svg"], where
            drawn = [g for g in chart["groups"] if g["sizes"]]
            assert drawn, (where, "no marks")
            # per kind of mark (vega draws one group per series: a series of zeros is flat, but
            # every bar of a chart having height 0 is the defect this catches)
            kinds: dict[str, list] = {}
            for g in drawn:
                kinds.setdefault(g["kind"], []).extend(g["sizes"])
            ok = {k: _mark_ok({"kind": k, "sizes": sizes}) for k, sizes in kinds.items()}
            # a line through one sample is a point, drawn by the chart's point marks
            bad = [k for k, good in ok.items() if not good and not (k == "line" and ok.get("symbol"))]
            assert not bad, (where, "marks of zero size", bad)
    assert charts >= 20


def test_every_summary_shows_a_time_span(samples):
    out, _, measured = samples
    indexes = sorted(out.glob("*/index.html"))
    bundles = bundles_in(Path(__file__).resolve().parents[1] / "sample_data")
    assert len(bundles) >= 5 and len(indexes) == len(bundles), (indexes, bundles)
    for index in indexes:
        spans = measured[index]["spans"]
        assert spans and re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d → .+ UTC \(", spans[0]), (index, spans)


def test_configuration_risks_follow_the_incidents_under_their_own_heading(samples):
    from kitlib import registry

    registry.load()
    risk_ids = {k.id for inv in registry.INVESTIGATIONS.values() if inv.risks for k in inv.findings}
    out, _, measured = samples
    with_risks = 0
    for index in sorted(out.glob("*/index.html")):
        order = measured[index]["order"]
        if "#risks" not in order:
            assert not risk_ids & set(order), (index, order)
            continue
        with_risks += 1
        at = order.index("#risks")
        assert order.count("#risks") == 1 and not risk_ids & set(order[:at]), (index, order)
        assert order[at + 1 :] and set(order[at + 1 :]) <= risk_ids, (index, order)
    assert with_risks >= 1  # the cluster-config bundle


def _line(bundle: Path, rel: str, number: int) -> str:
    path = bundle / rel
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        for i, raw in enumerate(fh, 1):
            if i == number:
                return raw.decode("utf-8", "replace").rstrip("\r\n")
    raise AssertionError(f"{rel} has no line {number}")


def test_every_finding_links_to_evidence_quoting_its_lines(samples):
    out, res, measured = samples
    seen = 0
    for r in res["bundles"]:
        bundle = Path(r["bundle"])
        index = Path(r["index"])
        # one id may name several findings (one per broker): each is checked against its id's cards
        findings = json.loads((index.parent / "findings.json").read_text())
        cards: dict[str, list[dict]] = {}
        for e in measured[index]["evidence"]:
            cards.setdefault(e["finding"], []).append(e)
        assert set(cards) == {f["id"] for f in findings}, (bundle.name, set(cards), {f["id"] for f in findings})
        for f in findings:
            fid = f["id"]
            for card in cards[fid]:
                assert card["href"].startswith(f"#ev-{fid}") and card["text"], (bundle.name, fid, card)
            text = " ".join(" ".join(card["text"] for card in cards[fid]).split())
            cited = [e for e in f["evidence"][:10] if e.get("file") and e.get("line")]
            assert cited, (bundle.name, fid, "cites no file line")
            for e in cited:
                want = " ".join(redact_line(_line(bundle, e["file"], e["line"])).split())
                assert want and want in text, (bundle.name, fid, e["file"], e["line"], want[:200])
                seen += 1
    assert seen >= 10


def test_no_page_makes_a_network_request(samples):
    _, _, measured = samples
    asked = {f"{p.parent.name}/{p.name}": m["requests"] for p, m in measured.items() if m["requests"]}
    assert not asked, asked


def test_the_network_check_sees_a_request_of_the_page(tmp_path):
    """The check above is not blind: a page loading one remote image is caught."""
    page = tmp_path / "remote.html"
    page.write_text("<!doctype html><html><body><p>x</p><img src='http://kit-test.invalid/pixel.png'></body></html>")
    got = measure(page, tmp_path)
    assert got["requests"] == ["http://kit-test.invalid/pixel.png"], got["requests"]
