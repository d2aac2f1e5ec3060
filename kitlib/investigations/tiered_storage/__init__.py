"""Tiered storage and broker I/O: why does one broker read far more than its peers, and are
segments reaching the remote store? Seed 004 (tier-state metadata growth) and Apache Kafka's
KIP-405 remote copies."""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation, Rows
from kitlib.investigations.tiered_storage import analysis, remote_log, tierstate  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="tiered_storage",
    title="Tiered storage and broker I/O",
    question="Is tier-state metadata or a failing remote store behind one broker's I/O or lag?",
    tables=("tierstate_events", "file_io", "restarts", "remote_log_events", "metrics"),
    findings=(
        FindingKind(
            "tierstate-metadata-growth",
            Severity.HIGH,
            "tier-state metadata files grow until their migration on start-up takes minutes (Confluent Tiered Storage)",
        ),
        FindingKind(
            "broker-io-imbalance",
            Severity.HIGH,
            "one broker reads far more from its disks than its peers, interval after interval",
        ),
        FindingKind(
            "remote-copy-errors", Severity.HIGH, "segment copies to the remote store fail (KIP-405 tiered storage)"
        ),
    ),
    relevant_when=("tierstate_events", "file_io", Rows("remote_log_events", "kind", other_than=("other",))),
    loggers=(
        "kafka.log.remote",
        "kafka.tier",
        "org.apache.kafka.server.log.remote",
        "org.apache.kafka.storage.internals.log.RemoteIndexCache",
        "kafka.server.DelayedRemoteFetch",
        "kafka.server.RemoteLeaderEndPoint",
        "kafka.server.TierStateMachine",
        "kafka.server.ReplicaFetcherTierStateMachine",
    ),
    examples={
        "tiered-storage": ("tierstate-metadata-growth", "broker-io-imbalance"),
        "remote-storage": ("remote-copy-errors",),
    },
)
