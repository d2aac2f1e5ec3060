"""Tiered storage and broker I/O: why does one broker read far more than its peers, and are
segments reaching the remote store? Seed 004 (tier-state metadata growth) and Apache Kafka's
KIP-405 remote copies."""

from kitlib.investigations import Investigation, has_rows
from kitlib.investigations.tiered_storage import analysis, remote_log, tierstate  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="tiered_storage",
    title="Tiered storage and broker I/O",
    question="Is tier-state metadata or a failing remote store behind one broker's I/O or lag?",
    tables=("tierstate_events", "file_io", "restarts", "remote_log_events", "metrics"),
    finding_ids=("tierstate-metadata-growth", "broker-io-imbalance", "remote-copy-errors"),
    relevant=lambda b: (
        has_rows(b, "tierstate_events")
        or has_rows(b, "file_io")
        or has_rows(b, "remote_log_events", lambda r: (r["kind"] != "other").any())
    ),
    examples={
        "tiered-storage": ("tierstate-metadata-growth", "broker-io-imbalance"),
        "remote-storage": ("remote-copy-errors",),
    },
)
