"""The sample bundles of ``sample_data/``, each parsed at most once per test process.

Most tests only read a sample bundle, and parsing one costs more than the test itself; a test
that changes a bundle's tables must load its own copy with :func:`kitlib.load_bundle`."""

from functools import cache
from pathlib import Path

import kitlib

SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"
NAMES = sorted(p.name for p in SAMPLE_DATA.iterdir() if p.is_dir())


@cache
def sample(name: str) -> kitlib.Bundle:
    """The sample bundle ``name``, loaded in memory (shared: read it, do not change it)."""
    return kitlib.load_bundle(SAMPLE_DATA / name)
