"""Live capture from a running cluster with kafka-python, written into a bundle the ingest core
reads (JSON lines, parsed by :mod:`kitlib.formats.capture`).

- :func:`capture`: cluster metadata, broker and topic configs (secrets redacted), log-dir sizes
  per partition, consumer groups with committed offsets, end offsets and lag, API versions
  (:mod:`.snapshot`).
- :func:`capture_lag_series`: a consumer-lag snapshot every few seconds into one file, a lag
  history (:mod:`.series`).
- :func:`probe_consume`: read a topic for N seconds or N MB with a chosen client ``api_version``
  and record MB/s per interval (seed 000: an old client makes the broker down-convert).
- :func:`probe_codecs`: produce the same sample of records with each codec and record producer
  MB/s, compression ratio and bytes on disk (seed 002). Both probes are in :mod:`.probes`.

Every file is written by :class:`.writer.Writer`, which never replaces a file already in the
bundle. Security settings (``security_protocol``, ``sasl_*``, ``ssl_*``) pass straight to
kafka-python and are never written to the bundle. The ``kitlib capture`` and ``kitlib probe``
commands are in :mod:`kitlib.cli.capture`.

Example:
    >>> from kitlib.capture import capture, probe_consume
    >>> capture("127.0.0.1:9092", "incident/live")                                  # doctest: +SKIP
    >>> probe_consume("127.0.0.1:9092", "orders", "incident/live", api_version=(0, 9))  # doctest: +SKIP
"""

from kitlib.capture.probes import CODECS, probe_codecs, probe_consume, read_sample
from kitlib.capture.series import LagSeries, capture_lag_series
from kitlib.capture.snapshot import capture, lag_rows

__all__ = [
    "CODECS",
    "LagSeries",
    "capture",
    "capture_lag_series",
    "lag_rows",
    "probe_codecs",
    "probe_consume",
    "read_sample",
]
