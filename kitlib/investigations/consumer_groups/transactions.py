"""Transactions in the logs -> ``txn_events``: the transaction coordinator's lines (producer ids
and epochs handed out, transactions rolled back on timeout, InitProducerId and EndTxn refused)
and the producers' side of fencing (``ProducerFencedException``, ``PRODUCER_FENCED``, the
partition leader refusing an old epoch).

An InitProducerId for a transactional id whose transaction is still open bumps the epoch, aborts
that transaction and fences the producer holding the old epoch: on the coordinator this shows
as the same transactional id initialized again with a higher epoch.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2026-01-01"], utc=True), "level": ["INFO"],
    ...     "logger": ["kafka.coordinator.transaction.TransactionCoordinator"], "host": ["b1"],
    ...     "file": ["server.log"], "line": [9], "message": ["[TransactionCoordinator id=1] Completed rollback "
    ...     "of ongoing transaction for transactionalId payments-tx due to timeout"]})
    >>> build(ev)[["kind", "transactional_id"]].iloc[0].tolist()
    ['timeout_rollback', 'payments-tx']
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import extractor
from kitlib.extract.rules import Layout, Rule, fields_of, fields_where, in_slices, ints, labels, logger_keywords, match

tables.declare(
    "txn_events",
    "Transaction lines: the transaction coordinator's (producer ids and epochs, rollbacks "
    "on timeout, refused requests) and producers being fenced, one per record.",
    [
        ("ts", "ts", "record time"),
        ("source", "category", "coordinator, leader (a partition leader refusing an old epoch) or client"),
        (
            "kind",
            "category",
            "initialized, timeout_rollback, rollback_failed, init_refused, end_refused, "
            "fenced, old_epoch, aborting, loaded, unloaded",
        ),
        ("transactional_id", "str", "transactional.id"),
        ("producer_id", "int", "producer id"),
        ("epoch", "int", "producer epoch (initialized: the new one; old_epoch: the refused one)"),
        (
            "partition",
            "str",
            "__transaction_state partition (coordinator lines) or the data partition (old_epoch lines)",
        ),
        ("error", "str", "error code the coordinator returned (CONCURRENT_TRANSACTIONS, PRODUCER_FENCED, ...)"),
        ("client_id", "str", "client.id (the Java producer's prefix)"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line (500 characters at most)"),
    ],
)

_TS = r"__transaction_state-\d+"
RULES = [
    Rule(
        "initialized",
        r"Initialized transactionalId (?P<transactional_id>\S+) with producerId (?P<producer_id>\d+) "
        rf"and producer epoch (?P<epoch>-?\d+)(?: on partition (?P<partition>{_TS}))?",
    ),
    Rule(
        "timeout_rollback",
        # 0.11-2.4.0 "Completed rollback ongoing transaction of transactionalId: X due to timeout"
        r"Completed rollback (?:of )?ongoing transaction (?:for|of) transactionalId:? (?P<transactional_id>\S+) "
        r"due to timeout",
        layouts=(
            Layout(
                "Completed rollback ",
                r"of ongoing transaction for transactionalId \S+ due to timeout",
                (("", "transactionalId ", False), ("transactional_id", " due to timeout", False)),
            ),
        ),
    ),
    Rule(
        "rollback_failed",
        r"Rollback of ongoing transaction for transactionalId (?P<transactional_id>\S+) "
        r"(?:failed|has been cancelled) due to error (?P<error>\w+)",
    ),
    Rule(
        "init_refused",
        r"Returning (?P<error>\w+) error code to client for (?P<transactional_id>\S+?)'s "
        r"InitProducerId request",
    ),
    Rule(
        "end_refused",
        r"Aborting sending of transaction markers.* returning (?P<error>\w+) error to client for "
        r"(?P<transactional_id>\S+?)'s EndTransaction request",
    ),
    Rule(
        "old_epoch",
        r"(?i)Epoch of producer (?P<producer_id>\d+) at offset \d+ in (?P<partition>\S+) is "
        r"(?P<epoch>-?\d+), which is smaller than the last seen epoch",
    ),
    Rule(
        "fenced",
        r"(?i)ProducerFenced(?:Exception|Error)|PRODUCER_FENCED|There is a newer producer with the same "
        r"transactionalId|has been fenced|fenced by a newer producer",
    ),
    Rule("aborting", r"(?i)Aborting incomplete transaction|Transiting to abortable error state"),
    Rule("loaded", rf"(?:Finished|Completed) loading (?:\d+ )?transaction metadata from (?P<partition>{_TS})"),
    Rule("unloaded", rf"(?:Unloaded|Finished unloading) transaction metadata .*?(?P<partition>{_TS})"),
]
_SOURCE = {
    "initialized": "coordinator",
    "timeout_rollback": "coordinator",
    "rollback_failed": "coordinator",
    "init_refused": "coordinator",
    "end_refused": "coordinator",
    "loaded": "coordinator",
    "unloaded": "coordinator",
    "old_epoch": "leader",
}
_ANCHORS = (
    r"(?i)transactionalId|transaction metadata|Epoch of producer|fenced|FENCED|Aborting incomplete transaction|"
    r"abortable error state"
)
# librdkafka's client instance in its messages ('FACILITY [<client.id>#producer-N] ...')
_RDKAFKA_CLIENT = r"\[(?P<client>[^\]\s]+#producer-\d+)\]"
# 0.11's producer, before the clients' LogContext, prefixed its transactional lines '[TransactionalId <id>] '
_JAVA_PREFIX = (
    r"\[(?:Producer clientId=(?P<client>[^,\]]+)|TransactionalId)(?:(?:, transactionalId=| )(?P<txid>[^,\]]+))?\]"
)


@extractor(
    "txn_events",
    # "sender": the producer's Sender under an abbreviated logger (o.a.k.c.p.i.Sender), whose "Aborting producer
    # batches due to fatal error" may be the one line that shows a ProducerFencedException
    match=logger_keywords(
        "transaction", "producer", "sender", "replicamanager", "rdkafka", "confluent", "kgo", "sarama"
    ),
    contains=_ANCHORS,
    blockwise=True,
)
@in_slices
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("txn_events")
    # a fencing exception often sits in a stack trace under a generic first line: look at the whole record
    m = match(events, RULES, whole=("fenced", "old_epoch"))
    if not len(m):
        return tables.empty("txn_events")
    kinds, f = m.kinds, m.fields
    java = fields_where(m.first, _JAVA_PREFIX, ["[Producer clientId=", "[TransactionalId"])  # (lines holding one)
    txid = pc.coalesce(f["transactional_id"], java["txid"].cast(f["transactional_id"].type))
    client = java["client"]
    source = np.full(len(kinds), "client", dtype=object)
    for kind, side in _SOURCE.items():
        source[kinds == kind] = side
    # librdkafka's instance, looked for on the clients' own lines only
    todo = (source == "client") & ~np.asarray(pc.is_valid(client).to_numpy(zero_copy_only=False), bool)
    if todo.any():
        found = fields_of(m.first.filter(pa.array(todo)), _RDKAFKA_CLIENT)["client"]
        client = pc.replace_with_mask(client, pa.array(todo), found.cast(client.type))
    return m.frame(
        {
            "source": labels(source),
            "kind": labels(kinds),
            "transactional_id": txid,
            "producer_id": ints(f["producer_id"]),
            "epoch": ints(f["epoch"]),
            "partition": f["partition"],
            "error": f["error"],
            "client_id": client,
        }
    )
