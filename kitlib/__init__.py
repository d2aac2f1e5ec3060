"""kitlib: the library behind the Kafka incident kit.

Load a bundle of broker/worker files into tables, run the detectors, chart the results.

Example:
    >>> import kitlib
    >>> b = kitlib.load_bundle("sample_data/healthy")     # doctest: +SKIP
    >>> kitlib.triage(b).findings                          # doctest: +SKIP
    []
"""

import os

# numpy's OpenBLAS starts a thread per core that spins after each call; the kit does no linear
# algebra, and on a small machine those threads take CPU from the parse (set it to override)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kitlib.bundle import Bundle, ingest, load, load_bundle, window
from kitlib.findings import Finding, Triage, triage
from kitlib.registry import investigation, investigations


def open(path: str | os.PathLike, tz=None, start=None, end=None, hosts=None) -> Bundle:
    """A bundle folder (or one file) read into memory, or an ingest output opened, seen through the
    window ``start <= time < end`` on ``hosts`` (a list, or one comma-separated string): the first
    line of every notebook, ``bundle = kitlib.open(BUNDLE, TZ, START, END)``. None means no limit.

    Example:
        >>> b = kitlib.open("sample_data/healthy", None, "2026-11-23T03:00")   # doctest: +SKIP
    """
    from kitlib.params import as_list

    return window(load_bundle(path, tz=tz), start, end, as_list(hosts))


__all__ = [
    "Bundle",
    "Finding",
    "Triage",
    "ingest",
    "investigation",
    "investigations",
    "load",
    "load_bundle",
    "open",
    "triage",
]
__version__ = "0.1.0"
