"""Outputs: no command replaces, empties or writes into a folder the kit did not write, and a
killed or concurrent run leaves neither debris nor an output that looks complete.

A user's folder given as an output (connector configs under git, a home-like folder with
``.ssh`` and ``.config``, a web site with its ``index.html``) is refused before anything is
touched, by every command that takes one, and checked byte for byte afterwards. A folder a kit
command wrote (it holds ``.kitlib-output``) is replaced; an empty one is used. Ingests are
killed (SIGKILL, SIGTERM) part way and run two at a time into one output; a report is cut short
and run again. The bundles and planted files here are synthetic.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kitlib.ingestion import guard

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"

LOG = (
    "[2026-11-23 10:00:00,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\n"
    "[2026-11-23 10:00:01,000] WARN [ReplicaManager broker=1] Shrinking ISR for partition t-0 "
    "from 1,2 to 1 (kafka.cluster.Partition)\n"
    "[2026-11-23 10:00:02,000] ERROR [Controller id=1] Broker 2 fenced (kafka.controller.KafkaController)\n"
)


# --- helpers ------------------------------------------------------------------------------------


def tree(root: Path) -> dict[str, str]:
    """Every path under ``root`` (links not followed): content hash, link target or kind, mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                what = "link:" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                what = "dir"
            out[str(p.relative_to(root))] = f"{what} {oct(st.st_mode)}"
    return out


def plant(folder: Path, kind: str) -> None:
    """A folder of the user's, as ``kind`` says (synthetic content, nothing real)."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind in ("configs", "all"):  # connector configs under git: JSON files and a .git
        (folder / ".git" / "refs").mkdir(parents=True)
        (folder / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n")
        (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (folder / "sink.json").write_text('{"name": "s3-sink", "connector.class": "S3SinkConnector"}\n')
    if kind in ("home", "all"):  # a home-like folder: only hidden entries
        (folder / ".ssh").mkdir()
        (folder / ".ssh" / "id_rsa").write_text("SYNTHETIC-NOT-A-KEY\n")
        os.chmod(folder / ".ssh" / "id_rsa", 0o600)
        (folder / ".config").mkdir()
        (folder / ".config" / "x").write_text("x = 1\n")
    if kind in ("site", "all"):  # a web site
        (folder / "index.html").write_text("<h1>my site</h1>\n")


def bundle(where: Path, text: str = LOG) -> Path:
    b = where / "broker-1"
    b.mkdir(parents=True, exist_ok=True)
    (b / "server.log").write_text(text)
    return where


def run_here(*args: str) -> tuple[int, str]:
    """The CLI in this process (no start-up cost): exit status and stderr."""
    from kitlib.cli import main

    err = io.StringIO()
    saved_err, saved_term = sys.stderr, signal.getsignal(signal.SIGTERM)
    sys.stderr = err
    try:
        rc = main([str(a) for a in args])
    finally:
        sys.stderr = saved_err
        signal.signal(signal.SIGTERM, saved_term)  # `kitlib ingest` makes SIGTERM exit
    return rc, err.getvalue()


def debris(parent: Path, name: str) -> list[str]:
    """Hidden entries a run left beside output ``name`` (temporary folders, its lock file)."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def wait_for(cond, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (status {proc.returncode}) before the moment awaited")
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.005)


@pytest.fixture(scope="module")
def big_bundle(tmp_path_factory) -> Path:
    """About 60 MB of generated broker log: an ingest of it runs long enough to be caught."""
    root = tmp_path_factory.mktemp("big")
    seed = root / "seed.log"
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "genlog.py"), "--size-mb", "2", "--out", str(seed)],
        check=True,
        capture_output=True,
    )
    b = root / "bundle" / "broker-1"
    b.mkdir(parents=True)
    chunk = seed.read_bytes()
    with open(b / "server.log", "wb") as fh:
        for _ in range(30):
            fh.write(chunk)
    seed.unlink()
    return root / "bundle"


# --- refusals -----------------------------------------------------------------------------------

COMMANDS = {
    "ingest": lambda b, out: ("ingest", b, "--out", out, "--no-progress"),
    "ingest on Dask": lambda b, out: ("ingest", b, "--out", out, "--no-progress", "--workers", "1"),
    "report": lambda b, out: ("report", b, "--out", out, "--notebook", "triage"),
    "report of bundles": lambda b, out: ("report", SAMPLE, "--out", out, "--notebook", "triage"),
}


@pytest.mark.parametrize("kind", ["configs", "home", "site", "all"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_folder_the_kit_did_not_write_is_refused_untouched(command, kind, tmp_path):
    b = bundle(tmp_path / "b")
    out = tmp_path / "place" / "mine"
    plant(out, kind)
    before, around = tree(out), sorted(os.listdir(out.parent))
    t = time.perf_counter()
    rc, err = run_here(*COMMANDS[command](b, out))
    assert rc == 2, err
    assert "did not write" in err and ".kitlib-output" in err and "new or empty folder" in err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert tree(out) == before, "a file of the user's changed"
    assert sorted(os.listdir(out.parent)) == around, "something was created beside the output"
    assert time.perf_counter() - t < 5, "refused only after work (the Dask cluster, a parse)"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_file_or_a_link_as_output_is_refused(command, tmp_path):
    b = bundle(tmp_path / "b")
    target = tmp_path / "real"
    plant(target, "site")
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "link").symlink_to(target)
    before = tree(tmp_path)
    for out, says in ((tmp_path / "notes.txt", "not a folder"), (tmp_path / "link", "symbolic link")):
        rc, err = run_here(*COMMANDS[command](b, out))
        assert rc == 2 and says in err and "Traceback" not in err, err
    assert tree(tmp_path) == before


def test_only_a_real_marker_makes_a_folder_the_kits(tmp_path):
    b = bundle(tmp_path / "b")
    cases = {
        "link": lambda d: (d / ".kitlib-output").symlink_to(tmp_path / "elsewhere.json"),
        "not json": lambda d: (d / ".kitlib-output").write_text("kitlib\n"),
        "other writer": lambda d: (d / ".kitlib-output").write_text('{"writer": "rsync"}\n'),
        "a folder": lambda d: (d / ".kitlib-output").mkdir(),
    }
    (tmp_path / "elsewhere.json").write_text('{"writer": "kitlib ingest"}\n')
    for name, make in cases.items():
        out = tmp_path / name.replace(" ", "-")
        plant(out, "site")
        make(out)
        before = tree(out)
        rc, err = run_here("ingest", b, "--out", out, "--no-progress")
        assert rc == 2 and "did not write" in err, (name, err)
        assert tree(out) == before, name


# --- what the kit may replace ---------------------------------------------------------------------


def test_an_empty_folder_is_used_and_marked(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress")
    assert rc == 0, err
    assert (out / "summary.json").is_file() and (out / "events.parquet").is_file()
    info = json.loads((out / ".kitlib-output").read_text())
    assert info["writer"] == "kitlib ingest" and info["pid"] == os.getpid()
    assert debris(tmp_path, "empty") == []


def test_a_kit_output_is_replaced_whole_on_a_rerun(tmp_path):
    out = tmp_path / "o"
    rc, err = run_here("ingest", SAMPLE / "compaction", "--out", out, "--no-progress")
    assert rc == 0, err
    assert (out / "metrics.parquet").exists()
    # a file someone put inside the kit's output is not the kit's: the folder is refused, untouched
    (out / "left-by-someone.txt").write_text("a note of the user's, inside the kit's output\n")
    before = tree(out)
    rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress")
    assert rc == 2 and "left-by-someone.txt" in err and "did not write" in err, err
    assert tree(out) == before
    (out / "left-by-someone.txt").unlink()
    # the derived-table cache a reader writes into the output later is the kit's own
    (out / ".derived").mkdir()
    rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress")
    assert rc == 0, err
    assert not (out / "metrics.parquet").exists(), "a table of the previous bundle stayed"
    assert not (out / ".derived").exists()
    assert json.loads((out / "summary.json").read_text())["bundle"].endswith("b")
    assert (out / ".kitlib-output").is_file()
    assert debris(tmp_path, "o") == []
    # the marker is what counts: without it the same folder is the user's
    (out / ".kitlib-output").unlink()
    before = tree(out)
    rc, err = run_here("ingest", SAMPLE / "compaction", "--out", out, "--no-progress")
    assert rc == 2 and "did not write" in err
    assert tree(out) == before


@pytest.mark.slow
def test_a_report_replaces_its_own_output_and_writes_its_index_last(tmp_path):
    from kitlib.report import report

    out = tmp_path / "r"
    first = report(SAMPLE / "compaction", out, only=["none"], log=lambda *a: None)
    assert Path(first["index"]).is_file() and "compaction" in (out / "index.html").read_text()
    assert json.loads((out / ".kitlib-output").read_text())["writer"] == "kitlib report"
    assert json.loads((out / ".kitlib-output").read_text())["wrote"] == ["findings.json", "index.html", "tables"]
    # a page someone else put there is not the kit's to delete: refused, untouched
    (out / "stale.html").write_text("a page of someone else's\n")
    before = tree(out)
    with pytest.raises(guard.OutputRefused, match="stale.html"):
        report(bundle(tmp_path / "b"), out, only=["none"], log=lambda *a: None)
    assert tree(out) == before
    (out / "stale.html").unlink()
    report(bundle(tmp_path / "b"), out, only=["none"], log=lambda *a: None)
    assert json.loads((out / "tables" / "summary.json").read_text())["bundle"].endswith("b")
    names = sorted(p.name for p in out.iterdir())
    assert names == [".kitlib-output", "findings.json", "index.html", "tables"], names
    assert debris(tmp_path, "r") == [] and debris(out, "tables") == []


@pytest.mark.slow
def test_a_report_cut_short_leaves_no_index(tmp_path, monkeypatch):
    """The earlier report's index is gone as soon as the new run starts: a report that fails or
    is killed before its end never shows the previous bundle's page over the new tables."""
    from kitlib import report as rep

    out = tmp_path / "r"
    rep.report(SAMPLE / "compaction", out, only=["none"], log=lambda *a: None)
    assert (out / "index.html").is_file()

    def cut(*a, **k):
        assert not (out / "index.html").exists() and not (out / "findings.json").exists()
        raise KeyboardInterrupt

    monkeypatch.setattr(rep.run, "summary_view", cut)
    with pytest.raises(KeyboardInterrupt):
        rep.report(bundle(tmp_path / "b"), out, only=["none"], log=lambda *a: None)
    assert not (out / "index.html").exists() and not (out / "findings.json").exists()
    assert not list(out.glob(".index.html.tmp-*"))
    monkeypatch.undo()
    rep.report(bundle(tmp_path / "b"), out, only=["none"], log=lambda *a: None)
    assert (out / "index.html").is_file() and debris(tmp_path, "r") == []


# --- killed and concurrent runs -------------------------------------------------------------------


def _start_ingest(kit, b: Path, out: Path) -> subprocess.Popen:
    return kit.start("ingest", b, "--out", out, "--no-progress")


def _partial(out: Path) -> list[Path]:
    """The partial folders of the kit's beside ``out`` (marked: the run is past its start)."""
    return [p for p in out.parent.glob(f".{out.name}.partial-*") if guard.is_kit_output(p)]


@pytest.mark.slow
def test_a_killed_ingest_leaves_debris_the_next_run_removes(kit, big_bundle, tmp_path):
    out = tmp_path / "o"
    p = _start_ingest(kit, big_bundle, out)
    try:
        wait_for(lambda: _partial(out), proc=p)
        p.kill()
        p.wait(30)
    finally:
        p.kill()
    assert p.returncode == -signal.SIGKILL
    left = _partial(out)
    assert left and guard.is_kit_output(left[0]), "the test killed nothing mid-way"
    assert not out.exists()
    # a partial folder of the kit's whose writer still runs, and one without the marker, stay
    alive = tmp_path / ".o.partial-alive"
    alive.mkdir()
    guard.mark(alive, "kitlib ingest")
    foreign = tmp_path / ".o.partial-notours"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine\n")
    (tmp_path / ".o.partial-unmarked").mkdir()  # killed before it was marked: empty, removed
    rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress")
    assert rc == 0, err
    assert debris(tmp_path, "o") == [".o.partial-alive", ".o.partial-notours"]
    assert (foreign / "keep.txt").read_text() == "mine\n"
    assert (out / "summary.json").is_file()


@pytest.mark.slow
def test_a_terminated_ingest_removes_its_own_partial_folder(kit, big_bundle, tmp_path):
    out = tmp_path / "o"
    p = _start_ingest(kit, big_bundle, out)
    try:
        wait_for(lambda: _partial(out), proc=p)
        p.terminate()
        p.wait(60)
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGTERM, p.stderr.read() if p.stderr else ""
    assert debris(tmp_path, "o") == [] and not out.exists()


@pytest.mark.slow
def test_two_ingests_into_one_output_one_refuses_naming_the_other(kit, big_bundle, tmp_path):
    out = tmp_path / "o"
    p = _start_ingest(kit, big_bundle, out)
    try:
        wait_for(lambda: _partial(out), proc=p)
        rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress")
        running = p.poll() is None
        stdout, stderr = p.communicate(timeout=300)
    finally:
        p.kill()
    assert running, "the first run ended before the second started: nothing was tested"
    assert rc == 2 and f"being written by another kitlib run (pid {p.pid})" in err, err
    assert p.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["bundle"] == str(big_bundle) and summary["rows"]["events"] > 0
    assert debris(tmp_path, "o") == []


def test_a_lock_file_left_by_a_killed_run_does_not_block(tmp_path):
    (tmp_path / ".o.lock").write_text("999999\n")
    rc, err = run_here("ingest", bundle(tmp_path / "b"), "--out", tmp_path / "o", "--no-progress")
    assert rc == 0, err
    assert debris(tmp_path, "o") == []


def test_capture_files_never_replace_a_file_in_the_bundle(tmp_path):
    from kitlib.capture.writer import Writer

    plant(tmp_path, "all")
    taken = tmp_path / "capture-20261123-104500.jsonl"
    taken.write_text("the user's own file\n")
    before = tree(tmp_path)
    w = Writer(taken, "cluster", "127.0.0.1:9092")
    w.row("brokers", broker_id=1)
    path = w.close()
    assert path == tmp_path / "capture-20261123-104500-2.jsonl"
    assert json.loads(path.read_text().splitlines()[0])["kind"] == "header"
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if k != path.name} == before


# --- slow: the real thing end to end ----------------------------------------------------------------


@pytest.mark.slow
def test_a_dask_ingest_replaces_a_kit_output(kit, tmp_path):
    out = tmp_path / "o"
    rc, err = run_here("ingest", SAMPLE / "compaction", "--out", out, "--no-progress")
    assert rc == 0, err
    r = kit("ingest", bundle(tmp_path / "b"), "--out", out, "--no-progress", "--workers", "1", timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / ".kitlib-output").read_text())["writer"] == "kitlib ingest on Dask"
    assert not (out / "metrics.parquet").exists() and (out / "events").is_dir()
    assert debris(tmp_path, "o") == []


def _bundle_of(store: Path) -> str | None:
    try:
        return json.loads((store / "summary.json").read_text())["bundle"]
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_a_report_killed_part_way_never_looks_complete(kit, tmp_path):
    out = tmp_path / "r"
    small = bundle(tmp_path / "b")
    first = kit("report", SAMPLE / "compaction", "--out", out, "--notebook", "triage", timeout=600)
    assert first.returncode in (0, 1) and (out / "index.html").is_file(), first.stderr
    p = kit.start(
        "report",
        small,
        "--out",
        out,
        "--notebook",
        "triage",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # the notebook's kernel dies with it
    )
    try:
        # killed once the new bundle's tables are in place and its notebook runs
        wait_for(lambda: _bundle_of(out / "tables") == str(small), timeout=300, proc=p)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    assert not (out / "index.html").exists(), "the previous bundle's index stayed over the new tables"
    assert not (out / "findings.json").exists()
    again = kit("report", small, "--out", out, "--notebook", "triage", timeout=600)
    assert again.returncode in (0, 1), again.stderr
    assert (out / "index.html").is_file() and (out / "triage.html").is_file()
    assert _bundle_of(out / "tables") == str(small)
    assert debris(tmp_path, "r") == [] and debris(out, "tables") == []
    shutil.rmtree(out)


def test_the_labs_work_folder_of_the_users_is_refused_untouched(tmp_path, monkeypatch):
    """`kitlib lab start --work DIR --name NAME` starts afresh in DIR/NAME: a folder of the
    user's there is refused before anything is touched (no Java is reached)."""
    from kitlib import lab

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KITLIB_LAB_WORK", raising=False)  # `--work` sets it: put back afterwards
    mine = tmp_path / "mine"
    plant(mine, "all")
    before = tree(mine)
    for start in (
        lambda: lab.start_broker("b", work=mine, jmx=False),
        lambda: lab.start_cluster(1, work=mine, jmx=False),
        lambda: lab.start_connect(None, [], work=mine),
    ):
        with pytest.raises(guard.OutputRefused, match="did not write"):
            start()
    assert tree(mine) == before
    rc, err = run_here("lab", "start", "--work", tmp_path, "--name", "mine")
    assert rc == 2 and "did not write" in err and "Traceback" not in err, err
    assert tree(mine) == before
    # a work folder the lab made, or an empty one, is started afresh (and marked)
    ours = tmp_path / "ours"
    ours.mkdir()
    lab.fresh_work(ours)
    (ours / "logs").mkdir()
    lab.fresh_work(ours)
    assert sorted(p.name for p in ours.iterdir()) == [".kitlib-output"]
    # so is one in the lab's own state folder, from before work folders were marked
    old = tmp_path / "state" / "kafka-incident-kit" / "lab" / "broker-1"
    (old / "logs").mkdir(parents=True)
    (old / "server.properties").write_text("node.id=1\n")
    lab.fresh_work(old)
    assert sorted(p.name for p in old.iterdir()) == [".kitlib-output"]
