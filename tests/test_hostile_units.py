"""The pieces that keep the promises under hostile input, one by one: manifest checks, line
capping, output refusal, folder-of-bundles detection, terminal escaping, the fresh output folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kitlib.formats.logs.blocks import _count_lines as count_newlines
from kitlib.ingestion.guard import fresh_output
from kitlib.report import bundles_in as _bundles_in
from kitlib.sources import ManifestError, SourceFile, cap_lines, check_output, load_manifest
from kitlib.terminal import visible

CASES = Path(__file__).resolve().parent / "adversarial" / "cases"


@pytest.mark.parametrize(
    "case,words",
    [
        ("manifest-yaml-syntax", ["bundle.yaml", "invalid YAML", "line"]),
        ("manifest-python-tag", ["bundle.yaml", "invalid YAML"]),
        ("manifest-list", ["bundle.yaml", "mapping", "list"]),
        ("manifest-wrong-types", ["bundle.yaml", "'files'", "got int"]),
        ("manifest-bad-tz", ["bundle.yaml", "'tz'", "Mars/Olympus_Mons"]),
        ("manifest-host-tz", ["bundle.yaml", "hosts.broker-1.tz", "Not/AZone"]),
        ("manifest-json-bad", ["bundle.json", "invalid JSON", "line 1"]),
    ],
)
def test_a_bad_manifest_is_named_with_its_key(case, words):
    with pytest.raises(ManifestError) as e:
        load_manifest(CASES / case)
    for w in words:
        assert w in str(e.value), (w, str(e.value))


def test_a_python_tag_builds_nothing(tmp_path):
    marker = tmp_path / "made"
    (tmp_path / "bundle.yaml").write_text(f'host: !!python/object/apply:os.mkdir ["{marker}"]\n')
    with pytest.raises(ManifestError):
        load_manifest(tmp_path)
    assert not marker.exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=12), st.integers(1, 16))
def test_capped_lines_keep_the_line_count(pieces, limit):
    data = b"".join(pieces)
    src = SourceFile(None, "x", "h")
    out = b"".join(cap_lines(iter(pieces), src, limit=limit))
    assert out.count(b"\n") == data.count(b"\n")
    assert all(len(ln) <= limit for ln in out.split(b"\n"))
    want = [ln[:limit] for ln in data.split(b"\n")]
    assert out.split(b"\n") == want
    dropped = sum(len(ln) - limit for ln in data.split(b"\n") if len(ln) > limit)
    assert sum(d for _, d in src.meta.get("cut_lines", [])) == dropped
    # the compiled newline count a log4j read passes in cuts the same lines at the same numbers
    counted = SourceFile(None, "x", "h")
    assert b"".join(cap_lines(iter(pieces), counted, limit=limit, count=count_newlines)) == out
    assert counted.meta.get("cut_lines") == src.meta.get("cut_lines")


def test_outputs_inside_or_around_a_bundle_are_refused(tmp_path):
    b = tmp_path / "x" / "b"
    b.mkdir(parents=True)
    for out in (b, b / "tables", tmp_path / "x", tmp_path):
        with pytest.raises(ValueError, match="input files are never written to"):
            check_output(b, out)
    os.symlink(b, tmp_path / "alias")
    with pytest.raises(ValueError):
        check_output(b, tmp_path / "alias" / "o")
    check_output(b, tmp_path / "x" / "elsewhere")


def test_a_failed_ingest_leaves_the_previous_output(tmp_path):
    out = tmp_path / "o"
    with fresh_output(out) as t:
        (t / "events.parquet").write_bytes(b"first")
    with pytest.raises(RuntimeError):
        with fresh_output(out) as t:
            (t / "events.parquet").write_bytes(b"partial")
            raise RuntimeError("parser blew up")
    assert (out / "events.parquet").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    (out / "mine.txt").write_text("not kit output")
    with pytest.raises(ValueError, match="holds files the kit did not write"):
        with fresh_output(out):
            pass


def test_folder_of_bundles_only_when_every_subfolder_is_one(tmp_path):
    sample = Path(__file__).resolve().parent.parent / "sample_data"
    assert len(_bundles_in(sample)) >= 5
    assert _bundles_in(CASES / "host-notes") == []  # host folders holding notes
    top = tmp_path / "top"
    for name in ("a", "b"):
        (top / name / "broker-1").mkdir(parents=True)
        (top / name / "PROVENANCE.md").write_text("x\n")
    assert [p.name for p in _bundles_in(top)] == ["a", "b"]
    (top / "server.log").write_text("loose file\n")
    assert _bundles_in(top) == []  # a loose file: one bundle
    (top / "server.log").unlink()
    (top / "c").mkdir()
    assert _bundles_in(top) == []  # a subfolder that is no bundle


@pytest.mark.parametrize(
    "raw,shown",
    [
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
        ("ok\x07", "ok\\x07"),
        ("a\rb", "a\\rb"),
        ("a\x08b", "a\\bb"),
        ("\x1b]52;c;cm0gLXJmIH4K\x07", "\\x1b]52;c;cm0gLXJmIH4K\\x07"),
        ("x\x9by", "x\\x9by"),
        ("evil\u202etxt.log", "evil\\u202etxt.log"),
        (os.fsdecode(b"caf\xe9.log"), "caf\\xe9.log"),
        ("line1\n\tline2", "line1\n\tline2"),
        ("password=hunter2x", "password=[redacted]"),
    ],
)
def test_terminal_text_shows_controls_as_escapes(raw, shown):
    assert visible(raw) == shown


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_nothing_visible_drives_a_terminal(text):
    out = visible(text)
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F for c in out)
    out.encode("utf-8")  # printable: no lone surrogates left
