"""Broker and cluster health: under-replication and ISR flapping, controller failover, fenced
brokers and lost sessions, failed log directories, GC pauses and out-of-memory, unclean
elections, on one timeline across every host."""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation
from kitlib.investigations.cluster_health import detectors, gclog, jvm_crash, state  # noqa: F401  (registers its format, tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="cluster_health",
    title="Broker and cluster health",
    question="Which broker left the ISR, lost its session, the controller role or a log directory, and what "
    "(a GC pause, a full disk, a crash) set it off?",
    tables=(
        "gc_pauses",
        "partition_changes",
        "node_events",
        "restarts",
        "metrics",
        "events",
        "topic_partitions",
        "quorum_status",
        "quorum_replication",
        "jvm_errors",
    ),
    findings=(
        FindingKind(
            "isr-shrink", Severity.MEDIUM, "replicas leave partitions' in-sync replica sets (ISR), or flap in and out"
        ),
        FindingKind("controller-failover", Severity.MEDIUM, "the active controller changes after the cluster started"),
        FindingKind(
            "broker-fenced",
            Severity.HIGH,
            "a broker loses its session with the controller and is fenced or declared failed",
        ),
        FindingKind(
            "log-dir-failure",
            Severity.HIGH,
            "a log directory goes offline on an I/O error (a full disk, a failed device)",
        ),
        FindingKind(
            "gc-pauses",
            Severity.MEDIUM,
            "long or frequent stop-the-world GC pauses, or an out-of-memory error, on a broker",
        ),
        FindingKind(
            "jvm-out-of-memory",
            Severity.CRITICAL,
            "a JVM ran out of heap or native memory, from its own output (stderr, ExitOnOutOfMemoryError, hs_err)",
        ),
        FindingKind("jvm-crash", Severity.CRITICAL, "a JVM crashed with a fatal error (hs_err_pid*.log)"),
        FindingKind(
            "unclean-election", Severity.CRITICAL, "an out-of-sync replica is elected leader: records are lost"
        ),
    ),
    relevant_when=("gc_pauses", "node_events", "partition_changes", "quorum_status", "jvm_errors"),
    # a controller failover owns the fencing of the node that lost the role (see analysis), so
    # controller-failover alone is expected there; a stalled node's ISR departures are told in
    # its broker-fenced finding (stalls.py)
    loggers=(
        "kafka.cluster",
        "kafka.controller",
        "org.apache.kafka.controller",
        "state.change.logger",
        "kafka.server.ReplicaManager",
        "kafka.server.ReplicaFetcherManager",
        "kafka.server.ReplicaFetcherThread",
        "kafka.server.ReplicaAlterLogDirsManager",
        "kafka.server.BrokerLifecycleManager",
        "kafka.server.KafkaServer",
        "kafka.server.BrokerServer",
        "kafka.server.KafkaRaftServer",
        "kafka.server.SharedServer",
        "kafka.log.LogManager",
        "kafka.raft",
        "org.apache.kafka.raft",
        "kafka.zookeeper",
        "kafka.zk",
        "org.apache.kafka.metadata",
        "org.apache.kafka.image",
        "org.apache.kafka.storage.internals.log.LogDirFailureChannel",
    ),
    examples={
        "isr-flapping": ("broker-fenced",),
        # Kafka 4.4: besides the stalled node, the leaders' ISRs shrank once at start-up (before any pause)
        "isr-flapping-kafka4": ("broker-fenced", "isr-shrink"),
        "controller-failover": ("controller-failover",),
        "log-dir-failure": ("log-dir-failure",),
        "gc-pressure": ("gc-pauses",),
    },
)
