"""kitlib: the library behind the Kafka incident kit.

Load a bundle of broker/worker files into tables, run the detectors, chart the results.

Example:
    >>> import kitlib
    >>> b = kitlib.load_bundle("sample_data/healthy")     # doctest: +SKIP
    >>> kitlib.triage(b)                                   # doctest: +SKIP
"""
from kitlib.bundle import Bundle, ingest, load, load_bundle
from kitlib.findings import Finding, run_detectors

__all__ = ["Bundle", "Finding", "ingest", "load", "load_bundle", "run_detectors", "triage"]
__version__ = "0.1.0"


def triage(bundle):
    """Run every detector over a bundle (a Bundle or a path); returns the ranked findings."""
    if not isinstance(bundle, Bundle):
        bundle = load_bundle(bundle)
    return run_detectors(bundle)[0]
