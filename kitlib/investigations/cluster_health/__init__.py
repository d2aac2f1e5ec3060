"""Broker and cluster health: under-replication and ISR flapping, controller failover, fenced
brokers and lost sessions, failed log directories, GC pauses and unclean elections, on one
timeline across every host."""
from kitlib.investigations import Investigation, has_rows
from kitlib.investigations.cluster_health import gclog, state  # noqa: F401  (registers its format, tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="cluster_health",
    title="Broker and cluster health",
    question="Which broker fell out of the ISR, lost its session, its controller role or its log directory, "
             "and what (a GC pause, a full disk) set it off?",
    tables=("gc_pauses", "partition_changes", "node_events"),
    finding_ids=(),
    relevant=lambda b: has_rows(b, "gc_pauses"),
)
