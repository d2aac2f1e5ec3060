"""Reports render offline in a real browser: headless Chromium (Debian's `chromium`) with all
network access disabled opens the generated HTML, every chart draws, and log text carrying
markup is shown as text, never executed."""
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kitlib.report import report

pytestmark = pytest.mark.chromium

EVIL_SCRIPT = "<script>document.title='pwned'</script>"
EVIL_IMG = '<img src=x onerror="document.title=\'pwned\'">'
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
    flags = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp / 'chrome-profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=5000"]
    if screenshot:
        r = subprocess.run(flags + [f"--screenshot={screenshot}", "--window-size=1200,1600", page.as_uri()],
                           capture_output=True, text=True, timeout=120)
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
    for page in out.glob("*.html"):
        html = page.read_text()
        for attr in ("src=\"http", "src='http", "href=\"http", "import(\"http", "url(http"):
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
    assert all((out / h).is_file() for h in links)
