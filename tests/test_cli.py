"""The kitlib command on a small bundle: ingest writes Parquet + summary, summary reads it back."""

import json
import sys

import pytest

LOG = (
    "[2024-05-22 00:00:0{i},000] INFO [GroupCoordinator 1]: Stabilized group g{i} generation 3 "
    "(__consumer_offsets-7) with 2 members (kafka.coordinator.group.GroupCoordinator)\n"
)


@pytest.mark.slow
def test_ingest_then_summary(kit, tmp_path):
    b = tmp_path / "bundle" / "broker-1"
    b.mkdir(parents=True)
    (b / "server.log").write_text("stray line before any record\n" + "".join(LOG.format(i=i) for i in range(5)))
    out = tmp_path / "out.kit"
    r = kit("ingest", tmp_path / "bundle", "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "events: 5" in r.stdout and "unparsed 1 lines" in r.stdout
    assert (out / "events.parquet").is_file() and (out / "files.parquet").is_file()
    s = json.loads((out / "summary.json").read_text())
    assert s["rows"]["events"] == 5 and s["unparsed_lines"] == 1 and s["hosts"] == ["broker-1"]
    r = kit("summary", out, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["rows"]["events"] == 5


def _subparsers(parser):
    return next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices


def test_each_command_is_registered_by_the_module_named_for_it_alone():
    import argparse
    import importlib

    from kitlib.cli import COMMAND_MODULES, COMMANDS, build_parser

    owned = {}
    for name in COMMAND_MODULES:
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(name).register_cli(sub)
        owned.update(dict.fromkeys(sub.choices, name))
    assert owned == COMMANDS
    full = build_parser()
    assert sorted(_subparsers(full)) == sorted(COMMANDS)
    argv = ["ingest", "b", "--out", "o", "--tz", "UTC", "--no-derive", "--workers", "2"]
    one = build_parser("ingest")
    assert sorted(_subparsers(one)) == ["ingest", "summary"]
    assert vars(one.parse_args(argv)) == vars(full.parse_args(argv))
    assert sorted(_subparsers(build_parser("no-such-command"))) == sorted(COMMANDS)


def test_errors_are_one_clear_line(kit, tmp_path):
    r = kit("ingest", tmp_path / "missing", "--out", tmp_path / "o")
    assert r.returncode == 2
    assert r.stderr.strip().startswith("kitlib ingest: error: bundle not found")


def test_progress_bar_on_big_ingests(monkeypatch):
    from kitlib.ingestion.pipeline import progress_bar

    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)  # not inside a Jupyter kernel
    monkeypatch.delenv("CI", raising=False)  # a user's terminal, not a CI service
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert progress_bar(None, 10 * 2**30, "x") is None  # not a terminal, not Jupyter: no bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress_bar(None, 10, "x") is None  # a terminal, but a small bundle
    bar = progress_bar(None, 64 * 2**20, "x")  # a terminal and 64 MB: a bar
    assert bar is not None and bar.total == 64 * 2**20
    bar.close()
    monkeypatch.setenv("CI", "true")
    assert progress_bar(None, 10 * 2**30, "x") is None  # under CI: no bar, even on a terminal
    monkeypatch.delenv("CI")
    bar = progress_bar(True, 10, "x")
    assert bar is not None and bar.total == 10
    bar.close()


def test_triage_reads_on_the_ingest_allocators_and_a_remembered_answer_imports_no_arrow(tmp_path):
    """``kitlib triage`` sets its process's allocators as an ingest does (Arrow on jemalloc, where
    this pyarrow has it) before it reads any table; printing an answer it remembers for the same
    bundle (the memo) imports neither Arrow nor pandas."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import sys\n"
        "from kitlib.cli import main\n"
        "sys.argv = ['kitlib', 'triage', '--json', sys.argv[1]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "arrow = sys.modules.get('pyarrow')\n"
        "print('POOL', arrow.default_memory_pool().backend_name if arrow else 'none', 'pandas' in sys.modules)\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "KITLIB_CACHE_MIN_MB": "0",
        "PYTHONPATH": str(root),
    }
    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
        first = "jemalloc"
    except (NotImplementedError, pa.ArrowException):  # a pyarrow built without it keeps its default
        first = pa.default_memory_pool().backend_name
    said = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", script, str(root / "sample_data" / "rebalance-storm")],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        said.append(r.stdout.strip().splitlines()[-1])
    assert said == [f"POOL {first} True", "POOL none False"]
