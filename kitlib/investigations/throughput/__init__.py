"""Throughput: is the broker converting messages for old clients, and what does the traffic
look like? Seed 000: a consumer stuck at a fixed rate because the broker down-converted every
fetch for its 0.8-era client."""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation, Rows
from kitlib.investigations.throughput import analysis  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="throughput",
    title="Throughput and down-conversion",
    question="Is a consumer or producer slowed by the broker converting messages for an old client?",
    tables=("metrics", "requests", "probe_throughput"),
    findings=(
        FindingKind(
            "down-conversion",
            Severity.MEDIUM,
            "the broker converts message formats for clients on old API versions, losing zero-copy fetches",
        ),
    ),
    relevant_when=(
        "probe_throughput",
        Rows("requests", "conversion_ms"),
        Rows("metrics", "mbean", mentions=("MessageConversions", "BytesOutPerSec", "BytesInPerSec")),
    ),
    loggers=(
        "kafka.request.logger",
        "kafka.server.KafkaApis",
        "kafka.server.ClientQuotaManager",
        "kafka.server.ReplicationQuotaManager",
        "kafka.server.KafkaRequestHandler",
        "kafka.network.RequestChannel",
        "kafka.log.LogValidator",
        "org.apache.kafka.storage.internals.log.LogValidator",
    ),
    # cluster-config: its legacy-billing client produces with Produce v2 (message format v1)
    examples={"down-conversion": ("down-conversion",), "cluster-config": ("down-conversion",)},
)
