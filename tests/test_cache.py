"""The cache of ingested big bundles (kitlib.ingestion.cache): a raw bundle above the threshold is
ingested once into $XDG_CACHE_HOME/kitlib and read from there; the threshold is lowered here so
that the (small) sample bundles take that path."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import kitlib
from kitlib.ingestion import cache
from kitlib.ingestion.guard import MARKER, mark
from kitlib.ingestion.store import is_store

SAMPLES = Path(__file__).resolve().parents[1] / "sample_data"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A cache folder of the test's own, every bundle cached (threshold 0 MiB); returned as the
    environment a child process is given."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "0")
    for name in ("KITLIB_CACHE_DIR", "KITLIB_NO_CACHE", "KITLIB_CACHE_MAX_GB"):
        monkeypatch.delenv(name, raising=False)
    return dict(os.environ)


def copy_of(tmp_path, name):
    dest = tmp_path / "bundles" / name
    shutil.copytree(SAMPLES / name, dest)
    return dest


def digest(folder: Path) -> dict:
    """Every path under ``folder`` with its content hash, size, mtime and mode."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        data = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        out[str(p.relative_to(folder))] = (data, st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def files_of(store: Path) -> dict:
    return {str(p.relative_to(store)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in store.rglob("*") if p.is_file()}


def findings(b) -> list:
    return json.loads(json.dumps([f.to_dict() for f in kitlib.triage(b).findings], default=str))


@pytest.mark.slow
def test_first_run_writes_the_store_the_second_reuses_it_and_the_bundle_is_untouched(tmp_path, env):
    bundle = copy_of(tmp_path, "compaction")
    before = digest(bundle)
    first = kitlib.load_bundle(bundle)
    root = tmp_path / "xdg" / "kitlib"
    assert first.store is not None and first.store.parent.parent == root
    entry = first.store.parent
    assert cache.is_entry(entry) and is_store(first.store)
    assert json.loads((entry / cache.ENTRY).read_text())["bundle"] == str(bundle.resolve())
    assert first.root == str(bundle) and first.summary.bundle == str(bundle)
    written = files_of(first.store)
    assert "events.parquet" in written and "commits.parquet" in written  # derived tables built in the ingest
    used = (entry / cache.ENTRY).stat().st_mtime_ns
    os.utime(entry / cache.ENTRY, ns=(used - 10**9, used - 10**9))

    second = kitlib.load_bundle(bundle)
    assert second.store == first.store
    assert files_of(second.store) == written  # same files, not written again
    assert (entry / cache.ENTRY).stat().st_mtime_ns > used - 10**9  # last use recorded
    assert stores(root) == [entry.name]  # no lock, partial or other entry left
    assert len(second.events) == len(kitlib.load_bundle(bundle, cache=False).events) > 0
    assert digest(bundle) == before


@pytest.mark.slow
def test_touching_a_file_of_the_bundle_makes_a_new_entry(tmp_path, env):
    bundle = copy_of(tmp_path, "compaction")
    first = kitlib.load_bundle(bundle).store
    log = next(p for p in sorted(bundle.rglob("*")) if p.is_file() and p.suffix != ".md")
    st = log.stat()
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    second = kitlib.load_bundle(bundle).store
    assert second is not None and second != first
    assert kitlib.load_bundle(bundle).store == second
    # another time zone is another parse, so another entry
    assert kitlib.load_bundle(bundle, tz="Europe/Berlin").store not in (first, second)


def stores(root: Path) -> list[str]:
    """What the cache folder holds besides the compiled catalogue of log statements."""
    return sorted(p.name for p in root.iterdir() if p.name != "statements") if root.is_dir() else []


@pytest.mark.slow
def test_below_the_threshold_and_with_no_cache_nothing_is_written(tmp_path, env, monkeypatch, kit):
    # the compiled catalogue of Kafka's log statements is cached there too (statements/); what
    # must not appear is a store of the bundle
    bundle = copy_of(tmp_path, "healthy")
    root = tmp_path / "xdg" / "kitlib"
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "128")
    b = kitlib.load_bundle(bundle)
    assert b.store is None and len(b.events) > 0 and not stores(root)
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "0")
    assert kitlib.load_bundle(bundle, cache=False).store is None and not stores(root)
    monkeypatch.setenv("KITLIB_NO_CACHE", "1")
    assert kitlib.load_bundle(bundle).store is None and not stores(root)
    monkeypatch.delenv("KITLIB_NO_CACHE")
    run = kit("triage", bundle, "--no-cache", "--json", env={**env, "KITLIB_CACHE_MIN_MB": "0"})
    assert run.returncode in (0, 1), run.stderr
    assert not stores(root)
    run = kit("triage", bundle, env={**env, "KITLIB_CACHE_MIN_MB": "nope"})
    assert run.returncode == 2 and "KITLIB_CACHE_MIN_MB='nope' is not a number" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_a_cache_folder_that_cannot_be_written_means_reading_into_memory(tmp_path, env, monkeypatch, capsys):
    bundle = copy_of(tmp_path, "healthy")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder's parent should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    b = kitlib.load_bundle(bundle, progress=True)
    assert b.store is None and len(b.events) > 0
    assert "cannot be written" in capsys.readouterr().err
    assert blocked.read_text().startswith("a file")


def test_the_cache_is_never_inside_the_bundle(tmp_path, env, monkeypatch):
    bundle = copy_of(tmp_path, "healthy")
    before = digest(bundle)
    monkeypatch.setenv("XDG_CACHE_HOME", str(bundle / "cache"))
    with pytest.raises(ValueError, match="is inside the bundle"):
        kitlib.load_bundle(bundle)
    assert digest(bundle) == before


@pytest.mark.slow
def test_the_oldest_used_entries_are_evicted_to_keep_the_bound(tmp_path, env, monkeypatch):
    a, b, c = (copy_of(tmp_path, n) for n in ("healthy", "compaction", "codecs"))
    sa, sb, sc = (kitlib.load_bundle(x).store for x in (a, b, c))
    size = {e.path: e.bytes for e in cache.entries()}
    assert cache.clear(sc.parent.name)[0].path == sc.parent
    os.utime(sb.parent / cache.ENTRY, (1, 1))  # b used long ago, a just now
    # room for a and c and half of b: writing c again must evict b, the one used longest ago
    bound = size[sa.parent] + size[sc.parent] + size[sb.parent] // 2
    monkeypatch.setenv("KITLIB_CACHE_MAX_GB", repr(bound / 2**30))
    assert kitlib.load_bundle(c).store == sc
    left = cache.entries()
    assert [e.path for e in left] == [sc.parent, sa.parent]  # most recently used first
    assert sum(e.bytes for e in left) <= bound
    # the entry in use stays even when it alone is above the bound
    monkeypatch.setenv("KITLIB_CACHE_MAX_GB", "0")
    kitlib.load_bundle(b)
    assert [e.bundle for e in cache.entries()] == [str(b.resolve())]


@pytest.mark.slow
def test_a_run_cut_short_leaves_nothing_that_is_read_later(tmp_path, env, monkeypatch):
    from kitlib.ingestion import store

    bundle = copy_of(tmp_path, "healthy")
    root = tmp_path / "xdg" / "kitlib"
    real = store.ingest

    def cut(*a, **k):
        real(*a, **k)
        raise KeyboardInterrupt  # after the store is written, before the entry is complete

    monkeypatch.setattr(store, "ingest", cut)
    with pytest.raises(KeyboardInterrupt):
        kitlib.load_bundle(bundle)
    assert stores(root) == []
    monkeypatch.setattr(store, "ingest", real)
    # what a killed run leaves (a marked partial folder whose writer is gone) is removed by the next
    debris = root / ".0123.partial-x"
    debris.mkdir()
    mark(debris, cache.ENTRY_WRITER)
    info = json.loads((debris / MARKER).read_text())
    info.update(pid=2**22 + 17, pid_started="1")
    (debris / MARKER).write_text(json.dumps(info))
    b = kitlib.load_bundle(bundle)
    assert b.store is not None and stores(root) == [b.store.parent.name]


@pytest.mark.slow
def test_cache_command_lists_and_clears_only_its_entries(tmp_path, env, kit):
    a, b = copy_of(tmp_path, "healthy"), copy_of(tmp_path, "compaction")
    ka = kitlib.load_bundle(a).store.parent.name
    kb = kitlib.load_bundle(b).store.parent.name
    root = tmp_path / "xdg" / "kitlib"
    help_ = kit("cache", "--help", env=env)
    assert help_.returncode == 0
    for words in ("XDG_CACHE_HOME", "KITLIB_CACHE_MIN_MB", "KITLIB_CACHE_MAX_GB", "--clear", "--all", "--no-cache"):
        assert words in help_.stdout
    listed = kit("cache", env=env)
    assert listed.returncode == 0, listed.stderr
    assert ka in listed.stdout and kb in listed.stdout and str(a.resolve()) in listed.stdout
    assert "2 entries" in listed.stdout
    as_json = json.loads(kit("cache", "--json", env=env).stdout)
    assert {e["key"] for e in as_json} == {ka, kb} and all(e["bytes"] > 0 for e in as_json)

    mine = root / "notes"  # not the kit's: never removed
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    refused = kit("cache", "--clear", "notes", env=env)
    assert refused.returncode == 2 and "not an entry the kit wrote" in refused.stderr
    assert (mine / "keep.txt").read_text() == "mine"
    assert kit("cache", "--clear", env=env).returncode == 2  # neither a key nor --all

    gone = kit("cache", "--clear", ka, env=env)
    assert gone.returncode == 0 and "removed 1 cache entry" in gone.stdout
    assert not (root / ka).exists() and (root / kb).exists()
    assert kit("cache", "--clear", b, env=env).returncode == 0  # by the bundle's path
    assert not (root / kb).exists()
    kitlib.load_bundle(a)
    assert kit("cache", "--clear", "--all", env=env).returncode == 0
    assert stores(root) == ["notes"]
    assert "no cache entries" in kit("cache", env=env).stdout


@pytest.mark.slow
def test_progress_is_shown_when_asked_and_silent_with_json(tmp_path, env, kit, capsys):
    bundle = copy_of(tmp_path, "healthy")
    kitlib.load_bundle(bundle, progress=True)
    err = capsys.readouterr().err
    assert "first read of" in err and "cached in" in err and "building the derived tables" in err
    kitlib.load_bundle(bundle, progress=True)  # reused: nothing to say
    assert capsys.readouterr().err == ""
    run = kit("triage", copy_of(tmp_path, "compaction"), "--json", env=env)
    assert run.returncode == 1 and run.stderr == ""
    assert json.loads(run.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["isr-flapping", "compaction", "transactions", "rebalance-storm", "auth-failures"])
def test_findings_from_the_cache_are_those_of_the_in_memory_load(tmp_path, env, sample):
    root = SAMPLES / sample
    mem = findings(kitlib.load_bundle(root, cache=False))
    first = kitlib.load_bundle(root)
    assert first.store is not None
    assert findings(first) == mem and mem
    assert findings(kitlib.load_bundle(root)) == mem
    opened = kitlib.open(root, None, "2000-01-01", None)
    assert opened.store == first.store


@pytest.mark.slow
def test_triage_and_report_read_the_one_cached_store(tmp_path, env, kit):
    bundle = copy_of(tmp_path, "compaction")
    t1 = kit("triage", bundle, env=env)
    t2 = kit("triage", bundle, env=env)
    plain = kit("triage", bundle, "--no-cache", env=env)
    assert t1.returncode == t2.returncode == plain.returncode == 1

    def body(run):  # the load's own time aside
        return [line for line in run.stdout.splitlines() if not line.startswith("files ")]

    assert body(t1) == body(t2) == body(plain)
    (entry,) = cache.entries()
    rep = kit("report", bundle, "--out", tmp_path / "rep", "--notebook", "triage", env=env)
    assert rep.returncode == 0, rep.stderr
    assert len(cache.entries()) == 1
    linked = tmp_path / "rep" / "tables" / "events.parquet"
    assert linked.stat().st_ino == (entry.path / cache.STORE / "events.parquet").stat().st_ino
    assert (tmp_path / "rep" / "triage.html").is_file()
    # the report's tables/ holds its own small files (the marker is not shared with the cache)
    assert (tmp_path / "rep" / "tables" / MARKER).stat().st_ino != (entry.path / cache.STORE / MARKER).stat().st_ino


@pytest.mark.slow
def test_a_report_ingests_a_new_cache_entry_in_a_process_of_its_own(tmp_path, env, monkeypatch):
    """kitlib report, like kitlib triage, parses a bundle new to the cache in another process (so
    the report's own process, which then runs the detectors and waits on the notebooks, holds
    none of the ingest's memory), and its tables are the entry that process wrote."""
    from kitlib.report import run

    calls = []
    real = cache.ingest_apart

    def watched(path, out, tz, progress):
        calls.append(Path(path))
        real(path, out, tz, progress)

    monkeypatch.setattr(cache, "ingest_apart", watched)
    bundle = copy_of(tmp_path, "compaction")
    plan = run.prepare(bundle, tmp_path / "rep", only=["triage"])
    assert calls == [bundle] and not cache.APART
    (entry,) = cache.entries()
    shared = (plan.tables / "events.parquet", entry.path / cache.STORE / "events.parquet")
    assert shared[0].stat().st_ino == shared[1].stat().st_ino
    assert {f.id for f in plan.triage.findings} == {
        f.id for f in kitlib.triage(kitlib.load(entry.path / cache.STORE)).findings
    }
    assert plan.triage.findings


@pytest.mark.slow
def test_an_ingest_apart_writes_the_store_one_process_writes_and_raises_what_it_raises(tmp_path):
    """kitlib triage ingests a new entry in a process of its own (cache.ingest_apart): the same
    tables as the ingest in the calling process, and the same error, by type and message."""
    from kitlib.ingestion import store
    from kitlib.ingestion.guard import OutputRefused

    bundle = SAMPLES / "rebalance-storm"
    here, apart = tmp_path / "here", tmp_path / "apart"
    store.ingest(bundle, here, derive=True, writer=cache.ENTRY_WRITER)
    cache.ingest_apart(bundle, apart, None, False)
    tables = store.stored_tables(here)
    assert set(store.stored_tables(apart)) == set(tables) and "group_events" in tables
    for name, path in tables.items():  # the time each file took to read aside
        a, b = (
            store.read_table(p, name).drop(columns=["seconds"], errors="ignore")
            for p in (store.stored_tables(apart)[name], path)
        )
        assert a.equals(b), name
    theirs = tmp_path / "theirs"  # a folder that is not the kit's output: refused, never replaced
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(OutputRefused) as one:
        store.ingest(bundle, theirs, derive=True, writer=cache.ENTRY_WRITER)
    with pytest.raises(OutputRefused) as other:
        cache.ingest_apart(bundle, theirs, None, False)
    assert str(other.value) == str(one.value) and (theirs / "notes.txt").read_text() == "mine"
    with pytest.raises(FileNotFoundError, match="bundle not found"):
        cache.ingest_apart(tmp_path / "gone", tmp_path / "out", None, False)


@pytest.mark.slow
def test_an_ingest_started_ahead_writes_what_one_started_then_writes(tmp_path, env):
    """kitlib triage starts the process that ingests a new entry before it imports the detectors
    (cache.warm_ingest), and hands it its job when the ingest is due: the same tables as a process
    started then, and the same errors; a process no ingest took is ended (end_warm), or ends by
    itself when its job can no longer come."""
    from kitlib.ingestion import store
    from kitlib.ingestion.guard import OutputRefused

    bundle = SAMPLES / "rebalance-storm"
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    cache.ingest_apart(bundle, cold, None, False)
    assert cache.warm_ingest(bundle)
    ahead = cache._WARM
    assert ahead is not None and not cache.warm_ingest(bundle)  # one at a time
    cache.ingest_apart(bundle, warm, None, False)
    assert cache._WARM is None and ahead.returncode == 0  # that process did the ingest
    tables = store.stored_tables(cold)
    assert set(store.stored_tables(warm)) == set(tables) and "group_events" in tables
    for name, path in tables.items():
        a, b = (
            store.read_table(p, name).drop(columns=["seconds"], errors="ignore")
            for p in (store.stored_tables(warm)[name], path)
        )
        assert a.equals(b), name
    theirs = tmp_path / "theirs"  # refused by the process started ahead as by one started then
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    assert cache.warm_ingest(bundle)
    with pytest.raises(OutputRefused, match="theirs"):
        cache.ingest_apart(bundle, theirs, None, False)
    assert (theirs / "notes.txt").read_text() == "mine" and cache._WARM is None
    # not taken: ended, nothing written
    assert cache.warm_ingest(bundle)
    ahead = cache._WARM
    cache.end_warm()
    assert cache._WARM is None and ahead.returncode is not None
    # its job can no longer come (the command's end closes the pipe): it ends by itself
    ahead = cache._start(None)
    ahead.stdin.close()
    assert ahead.wait(60) == 0


@pytest.mark.slow
def test_an_ingest_is_started_ahead_only_for_a_bundle_new_to_the_cache(tmp_path, env, monkeypatch):
    """warm_ingest starts nothing for what the cache does not take (turned off, below the
    threshold, an ingest output, a missing path) nor for a bundle an entry was written for."""
    bundle = copy_of(tmp_path, "compaction")
    assert not cache.warm_ingest(bundle, cache=False)
    assert not cache.warm_ingest(tmp_path / "gone")
    monkeypatch.setenv("KITLIB_NO_CACHE", "1")
    assert not cache.warm_ingest(bundle)
    monkeypatch.delenv("KITLIB_NO_CACHE")
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "1000")
    assert not cache.warm_ingest(bundle) and cache._WARM is None
    assert cache.warm_ingest(bundle, cache=True) and cache._WARM is not None  # asked for whatever its size
    cache.end_warm()
    monkeypatch.setenv("KITLIB_CACHE_MIN_MB", "0")
    entry = cache.cache_root() / ("0" * 32)  # an entry written for this bundle as it is now
    entry.mkdir(parents=True)
    mark(entry, cache.ENTRY_WRITER)
    total, _ = cache.bundle_files(bundle)
    (entry / cache.ENTRY).write_text(json.dumps({"bundle": str(bundle.resolve()), "input_bytes": total}))
    assert not cache.warm_ingest(bundle) and cache._WARM is None
    (bundle / "more.log").write_text("2024-01-01 00:00:00,000 INFO grown (kafka.server.KafkaServer)\n")
    assert cache.warm_ingest(bundle)  # grown since: new to the cache
    ahead = cache._WARM
    cache.end_warm()
    assert ahead is not None and ahead.returncode is not None and cache._WARM is None
    out = tmp_path / "out"
    from kitlib.ingestion.store import ingest

    ingest(bundle, out)
    assert not cache.warm_ingest(out, cache=True) and cache._WARM is None  # an ingest output is read where it is
