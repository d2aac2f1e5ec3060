"""The sample bundles of ``sample_data/``, each parsed at most once per test run.

Most tests only read a sample bundle, and parsing one costs more than the test itself; a test
that changes a bundle's tables must load its own copy with :func:`kitlib.load_bundle`.

Under pytest-xdist the workers of one run share what they parsed: the first worker to need a
sample parses it and leaves the loaded bundle (pickled) in a folder of that run, and the others
read it from there instead of parsing it again. The controller removes the folder at the end."""

import fcntl
import os
import pickle
import tempfile
from functools import cache
from pathlib import Path

import kitlib

SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"
NAMES = sorted(p.name for p in SAMPLE_DATA.iterdir() if p.is_dir())


def shared_folder(run: str | None = None) -> Path | None:
    """The folder the workers of xdist run ``run`` (by default this worker's) share loaded samples
    in; None outside xdist."""
    run = run or os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir()) / f"kit-test-samples-{run}" if run else None


@cache
def sample(name: str) -> kitlib.Bundle:
    """The sample bundle ``name``, loaded in memory (shared: read it, do not change it)."""
    folder = shared_folder()
    if folder is None:
        return kitlib.load_bundle(SAMPLE_DATA / name)
    folder.mkdir(exist_ok=True)
    kept = folder / f"{name}.pickle"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker parses; the other waits and reads its result
        if kept.is_file():
            with kept.open("rb") as fh:
                return pickle.load(fh)
        b = kitlib.load_bundle(SAMPLE_DATA / name)
        partial = kept.with_suffix(".partial")
        with partial.open("wb") as fh:
            pickle.dump(b, fh, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(kept)
        return b
