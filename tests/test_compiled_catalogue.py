"""The catalogue compiled for matching: the copy that ships with the kit, the user's cache."""

import gzip
import json

import numpy as np
import pytest

from kitlib.formats.logs import compiled, matching


def same(a: compiled.Patterns, b: compiled.Patterns) -> bool:
    return (
        a.templates == b.templates
        and a.ids == b.ids
        and a.loggers == b.loggers
        and a.vocab.equals(b.vocab)
        and all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("key_order", "key_bounds", "pairs"))
    )


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """patterns() with nothing remembered in the process and the user's cache in ``tmp_path``."""
    monkeypatch.setenv("KITLIB_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("KITLIB_TEMPLATE_CACHE", raising=False)
    compiled.patterns.cache_clear()
    yield tmp_path
    compiled.patterns.cache_clear()


def test_the_shipped_copy_is_the_catalogue_compiled_by_this_code():
    key = compiled.source_key()
    shipped = compiled._shipped(key)
    assert shipped is not None, "the shipped compiled catalogue is out of date: run `make patterns` and commit it"
    assert same(shipped, compiled._compile())


def test_compiling_twice_writes_the_same_bytes(tmp_path):
    a = compiled.write_shipped(tmp_path / "a.json.gz")
    b = compiled.write_shipped(tmp_path / "b.json.gz")
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(gzip.decompress(a.read_bytes()))["key"] == compiled.source_key()


def test_the_shipped_copy_is_read_and_nothing_is_written_to_the_cache(fresh):
    p = matching.patterns()
    assert p is compiled.patterns()  # one compiled catalogue per process, whichever module asks
    assert len(p.templates) > 1000
    assert not (fresh / "statements").exists()


@pytest.mark.slow
def test_a_shipped_copy_of_other_code_is_not_used_and_the_cache_takes_over(fresh, monkeypatch):
    other = fresh / "shipped.json.gz"
    compiled.write_shipped(other)
    doc = json.loads(gzip.decompress(other.read_bytes()))
    doc["key"] = "0" * 24  # compiled by other code
    doc["templates"] = doc["templates"][:3]
    other.write_bytes(gzip.compress(json.dumps(doc).encode()))
    monkeypatch.setattr(compiled, "SHIPPED_FILE", other)
    stale = fresh / "statements" / "patterns-0000.json"
    stale.parent.mkdir()
    stale.write_text("{}")
    first = compiled.patterns()
    assert len(first.templates) > 1000  # not the other code's copy
    path = compiled.cache_file()
    assert path.is_relative_to(fresh) and path.exists() and not stale.exists()
    compiled.patterns.cache_clear()
    cached = compiled.patterns()
    assert cached is not first and same(cached, first)
    # a damaged cache file is compiled around and written again
    path.write_bytes(b'{"templates": [')
    compiled.patterns.cache_clear()
    again = compiled.patterns()
    assert same(again, first) and path.read_bytes().startswith(b'{"templates":["')


@pytest.mark.slow
@pytest.mark.parametrize("damage", [b"", b"\x1f\x8b\x08\x00 cut short", b"not gzip at all"])
def test_a_damaged_or_missing_shipped_copy_costs_only_the_compile(fresh, monkeypatch, damage):
    bad = fresh / "shipped.json.gz"
    bad.write_bytes(damage)
    monkeypatch.setattr(compiled, "SHIPPED_FILE", bad)
    p = compiled.patterns()
    assert len(p.templates) > 1000 and compiled.cache_file().exists()  # compiled, and kept for the next process
