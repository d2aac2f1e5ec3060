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

from kitlib.investigations import Investigation, has_rows
from kitlib.investigations.consumer_groups import analysis, groups, lag, transactions  # noqa: F401  (registers tables and detectors)

INVESTIGATION = Investigation(
    name="consumer_groups",
    title="Consumer groups and transactions",
    question="Is a consumer group rebalancing over and over, has a consumer stopped while lag grows, "
    "or are transactions timing out, fenced or hanging?",
    tables=("group_events", "txn_events", "consumer_lag", "group_offsets", "group_states", "metrics", "configs"),
    finding_ids=("rebalance-storm", "consumer-stalled", "transaction-timeouts"),
    relevant=lambda b: (
        has_rows(b, "group_events")
        or has_rows(b, "txn_events")
        or has_rows(b, "consumer_lag")
        or has_rows(b, "group_offsets")
    ),
    examples={
        "rebalance-storm": ("rebalance-storm",),
        "consumer-stalled": ("consumer-stalled",),
        "transactions": ("transaction-timeouts",),
    },
)
