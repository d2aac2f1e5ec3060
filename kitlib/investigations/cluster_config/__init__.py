"""Cluster configuration, layout and capacity: the risks a bundle shows before anything breaks.

Config risks, not incidents: each finding names the topic, broker or log directory, the current
value and the recommended one, why it matters, and the rows it rests on. The checks read what
the kit already parses: the brokers' config dumps, live captures and saved ``kafka-configs``
output (``configs``), ``kafka-topics --describe`` (``topic_partitions``), ``kafka-log-dirs
--describe`` and captures (``log_dirs``), JMX (``metrics``), start-up banners (``restarts``),
``kafka-metadata-quorum`` (``quorum_status``), ``df`` output (``disk_usage``), GC logs
(``gc_pauses``) and the broker request log (``requests``). Every detector is silent when the
tables it needs are absent. The lag in time lives with the consumer groups
(:mod:`kitlib.investigations.consumer_groups.lag_time`); this investigation's notebook shows it.
"""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation, Rows
from kitlib.investigations.cluster_config import capacity, durability, layout, threads, versions  # noqa: F401  (registers its detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="cluster_config",
    title="Cluster configuration, layout and capacity",
    question="Which settings and placements would turn the next broker failure, full disk or upgrade into an "
    "outage or data loss?",
    tables=(
        "configs",
        "topic_partitions",
        "log_dirs",
        "brokers",
        "metrics",
        "restarts",
        "quorum_status",
        "consumer_lag",
        "group_offsets",
        "disk_usage",
        "gc_pauses",
        "requests",
    ),
    findings=(
        FindingKind(
            "replication-factor-low",
            Severity.MEDIUM,
            "topics with replication factor 1 (medium) or 2 (low) on a cluster with more brokers",
        ),
        FindingKind(
            "replication-factor-above-brokers",
            Severity.MEDIUM,
            "topics with more replicas than the cluster has brokers",
        ),
        FindingKind(
            "internal-topic-rf-low",
            Severity.MEDIUM,
            "__consumer_offsets or __transaction_state under replication factor 3",
        ),
        FindingKind(
            "min-isr-blocks-writes",
            Severity.MEDIUM,
            "min.insync.replicas equal to the replication factor: one replica behind stops acks=all producers",
        ),
        FindingKind(
            "min-isr-too-low",
            Severity.MEDIUM,
            "min.insync.replicas 1 with replication factor 3 or more: acknowledged writes can be lost",
        ),
        FindingKind(
            "unclean-election-enabled", Severity.MEDIUM, "unclean.leader.election.enable=true on a broker or topic"
        ),
        FindingKind(
            "partition-skew", Severity.LOW, "a broker holds more replicas than an even split (10 % low, 20 % medium)"
        ),
        FindingKind(
            "leader-skew", Severity.LOW, "a broker leads more partitions than an even split (10 % low, 20 % medium)"
        ),
        FindingKind(
            "preferred-leader-imbalance", Severity.LOW, "partitions led by a broker other than their preferred leader"
        ),
        FindingKind("replicas-on-one-rack", Severity.MEDIUM, "every replica of a partition on one rack"),
        FindingKind(
            "controller-quorum-size", Severity.LOW, "a controller quorum of an even number of voters, or of one"
        ),
        FindingKind("disk-use-skew", Severity.LOW, "a broker's log dirs hold far more than the cluster average"),
        FindingKind(
            "log-dir-filling",
            Severity.LOW,
            "a log dir grows steadily: its rate, the fit, and the time until full when the capacity is known",
        ),
        FindingKind("broker-versions-mixed", Severity.LOW, "brokers of more than one Kafka version in one bundle"),
        FindingKind(
            "clients-on-removed-protocol",
            Severity.MEDIUM,
            "clients sending API versions Kafka 4.0 removes (KIP-896), from the request log or JMX by version",
        ),
        FindingKind(
            "io-threads-short",
            Severity.LOW,
            "request handlers under 30 % idle for a fifth of the window: num.io.threads against the load "
            "(medium under 10 %)",
        ),
        FindingKind(
            "network-threads-short",
            Severity.LOW,
            "network processors under 30 % idle for a fifth of the window: num.network.threads against the load",
        ),
        FindingKind(
            "replica-fetchers-short",
            Severity.LOW,
            "followers over 4,000 records behind in every sample (MaxLag): num.replica.fetchers",
        ),
        FindingKind("heap-too-small", Severity.MEDIUM, "the heap after GC at or above 45 % of the heap (median)"),
        FindingKind(
            "controller-combined-busy",
            Severity.LOW,
            "a broker+controller node whose broker is busy (handler idle under 50 %) or holds 1,000+ replicas",
        ),
    ),
    risks=True,
    relevant_when=(
        "topic_partitions",
        "log_dirs",
        "quorum_status",
        "disk_usage",
        "gc_pauses",
        "requests",
        Rows(
            "metrics",
            "name",
            among=(
                "RequestHandlerAvgIdlePercent",
                "NetworkProcessorAvgIdlePercent",
                "MaxLag",
                "DeprecatedRequestsPerSec",
            ),
        ),
    ),
    loggers=(
        "kafka.server.KafkaConfig",
        "kafka.server.DynamicBrokerConfig",
        "kafka.server.DynamicConfigManager",
        "kafka.server.ConfigAdminManager",
        "kafka.server.TopicConfigHandler",
        "kafka.server.metadata.DynamicConfigPublisher",
        "kafka.log.LogManager",
        "org.apache.kafka.common.config",
        "org.apache.kafka.controller.ConfigurationControlManager",
        "org.apache.kafka.controller.FeatureControlManager",
        "org.apache.kafka.common.utils.AppInfoParser",
    ),
    examples={
        "cluster-config": (
            "replication-factor-low",
            "min-isr-blocks-writes",
            "unclean-election-enabled",
            "leader-skew",
            "disk-use-skew",
            "log-dir-filling",
            "clients-on-removed-protocol",
        ),
        "request-saturation": ("io-threads-short",),
        "gc-pressure": ("heap-too-small",),
        "down-conversion": ("clients-on-removed-protocol",),
    },
)
