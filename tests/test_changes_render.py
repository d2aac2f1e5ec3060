"""What else changed in the window, as a reader sees it: the report's summary page and the triage
page of an incident bundle (the ISR-flapping sample: the shrinks are among the rows) and of a
healthy broker log seen through a window (one quiet line), rendered in headless Chromium."""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_render import browse

from kitlib.report import report

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.chromium, pytest.mark.slow]


class Changes(HTMLParser):
    """The rows (their text, by kind) and the quiet lines of every "what else changed" block."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.block_at, self.rows, self.quiet, self.windows = 0, None, [], [], []
        self._row: list[str] | None = None
        self._kind = ""
        self._grab: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "meta", "link", "input", "hr"):
            return
        self.depth += 1
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if "kit-changes" in cls and self.block_at is None:
            self.block_at = self.depth
        if self.block_at is None:
            return
        if tag == "tr" and a.get("data-kind"):
            self._row, self._kind = [], a["data-kind"]
        if "kit-changes-quiet" in cls or "kit-changes-window" in cls:
            self._grab = []

    def handle_endtag(self, tag):
        if tag in ("br", "img", "meta", "link", "input", "hr"):
            return
        if self.block_at is not None:
            if tag == "tr" and self._row is not None:
                self.rows.append((self._kind, " ".join(self._row)))
                self._row = None
            if tag == "p" and self._grab is not None:
                text = " ".join(self._grab)
                (self.windows if text.startswith("Window") else self.quiet).append(text)
                self._grab = None
            if self.depth == self.block_at:
                self.block_at = None
        self.depth -= 1

    def handle_data(self, data):
        if self._row is not None:
            self._row.append(data.strip())
        if self._grab is not None:
            self._grab.append(data.strip())


def blocks(page: Path, tmp: Path) -> Changes:
    p = Changes()
    p.feed(browse(page, tmp))
    return p


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("changes-incident")
    res = report(ROOT / "sample_data" / "isr-flapping", tmp / "out", only=["triage"], log=lambda *a: None)
    assert not [n for n in res["notebooks"] if n["error"]], res
    return tmp


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """A generated broker log whose message shapes are drawn at random throughout, reported with
    a window pinned in its middle."""
    sys.path.insert(0, str(ROOT / "bench"))
    from genlog import generate

    tmp = tmp_path_factory.mktemp("changes-healthy")
    (tmp / "b" / "broker-1").mkdir(parents=True)
    with open(tmp / "b" / "broker-1" / "server.log", "wb") as fh:
        generate(2_000_000, fh)
    import kitlib

    lo, hi = kitlib.load_bundle(tmp / "b").span()
    start, end = lo + (hi - lo) * 0.4, lo + (hi - lo) * 0.5
    pinned = {"START": start.isoformat(), "END": end.isoformat()}
    res = report(tmp / "b", tmp / "out", only=["triage"], log=lambda *a: None, pinned=pinned)
    assert not [n for n in res["notebooks"] if n["error"]], res
    return tmp


def test_the_summary_page_shows_the_incident_among_what_else_changed(incident):
    got = blocks(incident / "out" / "index.html", incident)
    assert got.windows and "the span of the findings' evidence" in got.windows[0]
    assert not got.quiet and 3 <= len(got.rows) <= 10
    shrink = [text for kind, text in got.rows if "Shrinking ISR" in text]
    assert len(shrink) == 1 and "kafka.cluster.Partition" in shrink[0] and "INFO" in shrink[0]
    assert "broker-1" in shrink[0] and "server.log" in shrink[0]  # the hosts and an example's file:line
    assert {kind for kind, _ in got.rows} <= {"new", "gone", "rose", "fell"}


def test_the_triage_page_shows_the_same_rows(incident):
    summary = blocks(incident / "out" / "index.html", incident)
    page = blocks(incident / "out" / "triage.html", incident)
    assert [k for k, _ in page.rows] == [k for k, _ in summary.rows]
    assert any("Shrinking ISR" in text for _, text in page.rows)


def test_a_healthy_log_in_a_window_gets_one_quiet_line(healthy):
    for page in ("index.html", "triage.html"):
        got = blocks(healthy / "out" / page, healthy)
        assert not got.rows, page
        assert got.windows and "the window asked for" in got.windows[0], page
        assert len(got.quiet) == 1 and got.quiet[0].startswith("Nothing else changed beyond chance"), page
