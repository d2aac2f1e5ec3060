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

from kitlib.bundle import Bundle, ingest, load, load_bundle
from kitlib.findings import Finding, Triage, triage
from kitlib.registry import investigation, investigations

__all__ = ["Bundle", "Finding", "Triage", "ingest", "investigation", "investigations", "load", "load_bundle", "triage"]
__version__ = "0.1.0"
