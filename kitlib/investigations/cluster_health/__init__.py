"""Broker and cluster health: under-replication and ISR flapping, controller failover, fenced
brokers and lost sessions, failed log directories, GC pauses and out-of-memory, unclean
elections, on one timeline across every host."""

from kitlib.investigations import Investigation, has_rows
from kitlib.investigations.cluster_health import detectors, gclog, state  # noqa: F401  (registers its format, tables and detectors; charts load with the notebook)

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
    ),
    finding_ids=(
        "isr-shrink",
        "controller-failover",
        "broker-fenced",
        "log-dir-failure",
        "gc-pauses",
        "unclean-election",
    ),
    relevant=lambda b: (
        has_rows(b, "gc_pauses")
        or has_rows(b, "node_events")
        or has_rows(b, "partition_changes")
        or has_rows(b, "quorum_status")
    ),
    # a controller failover owns the fencing of the node that lost the role (see analysis), so
    # controller-failover alone is expected there; a stalled node's ISR departures are told in
    # its broker-fenced finding (stalls.py)
    examples={
        "isr-flapping": ("broker-fenced",),
        "controller-failover": ("controller-failover",),
        "log-dir-failure": ("log-dir-failure",),
        "gc-pressure": ("gc-pauses",),
    },
)
