"""Consumer groups: is a group rebalancing over and over, has a consumer stopped while lag grows,
are transactions timing out or fenced?

Two investigations share the client side of an incident. This one follows the consumers: the
group coordinator's and the consumers' own lines (``group_events``), the transaction
coordinator's (``txn_events``, since a hanging transaction shows up as a read_committed consumer
that stops moving) and lag snapshots over time (``consumer_lag`` from ``kitlib capture``,
``group_offsets`` from ``kafka-consumer-groups --describe``). The request path (authentication,
quotas, saturated handlers) asks a different question, whether the brokers refuse or slow
clients, reads different tables (``requests``, ``auth_failures``, ``metrics``) and has its own
notebook: :mod:`kitlib.investigations.client_requests`.
"""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation
from kitlib.investigations.consumer_groups import (  # noqa: F401  (registers tables and detectors)
    groups,
    lag,
    rebalances,
    stalled,
    transaction_timeouts,
    transactions,
)

INVESTIGATION = Investigation(
    name="consumer_groups",
    title="Consumer groups and transactions",
    question="Is a consumer group rebalancing over and over, has a consumer stopped while lag grows, "
    "or are transactions timing out, fenced or hanging?",
    tables=("group_events", "txn_events", "consumer_lag", "group_offsets", "group_states", "metrics", "configs"),
    findings=(
        FindingKind("rebalance-storm", Severity.MEDIUM, "a consumer group rebalances over and over within minutes"),
        FindingKind(
            "consumer-stalled",
            Severity.HIGH,
            "a group stops committing offsets, or its lag never shrinks, while producers go on",
        ),
        FindingKind(
            "transaction-timeouts",
            Severity.MEDIUM,
            "transactions are rolled back on timeout, producers fenced, or partitions held by a hanging transaction",
        ),
    ),
    relevant_when=("group_events", "txn_events", "consumer_lag", "group_offsets"),
    loggers=(
        "kafka.coordinator",
        "org.apache.kafka.coordinator",
        "org.apache.kafka.clients.consumer",
        "org.apache.kafka.clients.producer.internals.TransactionManager",
        "kafka.server.AddPartitionsToTxnManager",
    ),
    examples={
        "rebalance-storm": ("rebalance-storm",),
        "consumer-stalled": ("consumer-stalled",),
        "transactions": ("transaction-timeouts",),
    },
)
