"""``kitlib triage`` of a cached bundle keeps what it printed in the cache entry
(kitlib.ingestion.memo): the next triage with the same bundle, kit, arguments and store prints
the same bytes and exit status from it without running a detector; any change of those, or a memo
that cannot be read, runs the detectors again."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

import kitlib.findings
from kitlib.cli import main
from kitlib.ingestion import cache, memo

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "0")
    for name in ("KITLIB_CACHE_DIR", "KITLIB_NO_CACHE", "KITLIB_CACHE_MAX_GB"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def runs(monkeypatch):
    """How many times the detectors ran (kitlib.findings.triage called)."""
    count = {"n": 0}
    real = kitlib.findings.triage

    def counted(*a, **kw):
        count["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(kitlib.findings, "triage", counted)
    return count


def triage(capsys, *argv):
    code = main(["triage", *map(str, argv)])
    out = capsys.readouterr()
    assert out.err == ""
    return code, out.out


def memo_files() -> list[Path]:
    return sorted(cache.cache_root().glob(f"*/{memo.FOLDER}/*.json"))


def load_time(text: str) -> str:  # the text form's load time is each run's own
    return re.sub(r"(bytes\) in )[0-9.]+( s)", r"\1T\2", text)


@pytest.mark.slow
def test_a_memo_prints_what_the_detectors_print_json_and_text(tmp_path, env, runs, capsys):
    bundle = tmp_path / "b"
    shutil.copytree(SAMPLES / "rebalance-storm", bundle)
    first = triage(capsys, bundle, "--json")
    assert runs["n"] == 1 and first[0] == 1 and json.loads(first[1])
    assert len(memo_files()) == 1
    again = triage(capsys, bundle, "--json")
    assert runs["n"] == 1 and again == first  # from the memo, byte for byte
    plain = triage(capsys, bundle, "--json", "--no-cache")
    assert runs["n"] == 2 and plain == first  # recomputed in memory: the same bytes
    text = triage(capsys, bundle)
    assert runs["n"] == 3 and len(memo_files()) == 2  # another form, another memo
    text_again = triage(capsys, bundle)
    assert runs["n"] == 3
    assert text_again[0] == text[0] == 1
    assert load_time(text_again[1]) == load_time(text[1]) and "bytes) in " in text[1]
    # the memo's own load time is printed, not the first run's
    assert re.search(r"bytes\) in [0-9]+\.[0-9]{2} s\n", text_again[1])


@pytest.mark.slow
def test_a_changed_store_kit_or_argument_recomputes(tmp_path, env, runs, capsys, monkeypatch):
    bundle = tmp_path / "b"
    shutil.copytree(SAMPLES / "isr-flapping", bundle)
    first = triage(capsys, bundle, "--json")
    triage(capsys, bundle, "--json")
    assert runs["n"] == 1
    # the store changed (a file of it rewritten): recomputed, same answer, a new memo
    (store,) = cache.cache_root().glob(f"*/{cache.STORE}")
    st = (store / "summary.json").stat()
    os.utime(store / "summary.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert triage(capsys, bundle, "--json") == first and runs["n"] == 2
    assert triage(capsys, bundle, "--json") == first and runs["n"] == 2
    # another kit (its code's hash)
    monkeypatch.setattr(memo, "_CODE", "0" * 64)
    assert triage(capsys, bundle, "--json") == first and runs["n"] == 3
    assert triage(capsys, bundle, "--json") == first and runs["n"] == 3
    # another argument (the time zone; a window or any other argument is keyed the same way)
    assert triage(capsys, bundle, "--json", "--tz", "UTC")[0] == first[0] and runs["n"] == 4
    # another environment of the kit's, and the bundle changed
    monkeypatch.setenv("KITLIB_CACHE_MAX_GB", "4")
    triage(capsys, bundle, "--json")
    assert runs["n"] == 5
    log = next(p for p in sorted(bundle.rglob("*")) if p.is_file())
    log.write_bytes(log.read_bytes() + b"\n")
    triage(capsys, bundle, "--json")
    assert runs["n"] == 6


def test_every_argument_and_the_bundle_make_the_key(tmp_path, env):
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "server.log").write_text("[2026-11-23 12:00:00,000] INFO x (y)\n")
    base = memo.request(bundle, {"json": True, "tz": None})
    assert base is not None and base == memo.request(bundle, {"tz": None, "json": True})
    keys = {
        base.key,
        memo.request(bundle, {"json": False, "tz": None}).key,
        memo.request(bundle, {"json": True, "tz": "UTC"}).key,
        memo.request(bundle, {"json": True, "tz": None, "start": "2026-11-23T12:00"}).key,
        memo.request(bundle, {"json": True, "tz": None, "start": "2026-11-23T12:01"}).key,
        memo.request(bundle, {"json": True, "tz": None, "end": "2026-11-23T12:01"}).key,
    }
    assert len(keys) == 6
    os.utime(bundle / "server.log", ns=(0, 10**18))
    assert memo.request(bundle, {"json": True, "tz": None}).key not in keys
    os.environ["KITLIB_NO_CACHE"] = "1"
    try:
        assert memo.request(bundle, {"json": True, "tz": None}) is None
    finally:
        del os.environ["KITLIB_NO_CACHE"]


@pytest.mark.slow
def test_a_memo_that_cannot_be_read_is_ignored(tmp_path, env, runs, capsys):
    bundle = tmp_path / "b"
    shutil.copytree(SAMPLES / "compaction", bundle)
    first = triage(capsys, bundle, "--json")
    (path,) = memo_files()
    good = json.loads(path.read_text())
    other = {**good, "key": "0" * 40, "parts": ["[]\n"], "exit": 0}  # well formed, another request's
    bad = [b"", b"{not json", b"[]", b'{"format": 1}', b"\xff\xfe\x00", json.dumps(other).encode()]
    bad += [json.dumps({**good, "exit": "1"}).encode(), json.dumps({**good, "parts": [1]}).encode()]
    for n, garbage in enumerate(bad, start=2):
        path.write_bytes(garbage)
        again = triage(capsys, bundle, "--json")  # no traceback: the detectors ran again
        assert again == first and runs["n"] == n, garbage
        assert json.loads(path.read_text()) == good  # written again, whole
    assert triage(capsys, bundle, "--json") == first and runs["n"] == len(bad) + 1


@pytest.mark.slow
def test_an_ingest_output_keeps_its_memo_in_itself(tmp_path, env, runs, capsys):
    """A triage of a ``kitlib ingest`` output (no cache entry) keeps its memo in a hidden folder of
    that output: the next one prints the same bytes without a detector; a changed output runs them
    again; a new ingest into the same folder takes the memos with it; where none can be written,
    none is kept and the answer is the same."""
    from kitlib.ingestion import derive

    out = tmp_path / "kit"
    assert main(["ingest", str(SAMPLES / "rebalance-storm"), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    first = triage(capsys, out, "--json")
    assert runs["n"] == 1 and first[0] == 1 and json.loads(first[1])
    kept = sorted((out / memo.IN_OUTPUT).glob("*.json"))
    assert len(kept) == 1 and not memo_files()  # in the output, not in the kit's cache
    assert (out / derive.CACHE / "index.json").exists()  # (built by that first triage)
    assert triage(capsys, out, "--json") == first and runs["n"] == 1
    text = triage(capsys, out)
    assert triage(capsys, out)[1] == text[1] and runs["n"] == 2
    # a file of the output changed: the detectors run again
    st = (out / "summary.json").stat()
    os.utime(out / "summary.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert triage(capsys, out, "--json") == first and runs["n"] == 3
    assert triage(capsys, out, "--json") == first and runs["n"] == 3
    # the ingest again into the same folder: replaced whole, its memos gone with it
    assert main(["ingest", str(SAMPLES / "rebalance-storm"), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert not (out / memo.IN_OUTPUT).exists()
    assert triage(capsys, out, "--json") == first and runs["n"] == 4
    # where no memo can be written (its folder's name taken by a file): none kept, the same answer
    shutil.rmtree(out / memo.IN_OUTPUT)
    (out / memo.IN_OUTPUT).write_text("")
    assert triage(capsys, out, "--json") == first and triage(capsys, out, "--json") == first
    assert runs["n"] == 6 and (out / memo.IN_OUTPUT).is_file()
