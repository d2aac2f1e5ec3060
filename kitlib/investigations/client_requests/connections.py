"""What clients say about their connections to the brokers -> ``client_connections``: a broker
disconnecting them, a connection that could not be made, every broker down, requests timing out
in flight, and the throttle time a broker imposed (where the client logs it). Read from the Java
clients (``NetworkClient``), kafka-python (``kafka.conn``), librdkafka (``FACILITY [instance]
<proto>://host:port/id: ...``, see :mod:`kitlib.formats.logs.clients`), Sarama and franz-go.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2026-01-01"], utc=True), "level": ["ERROR"],
    ...     "logger": ["rdkafka"], "host": ["app"], "file": ["app.log"], "line": [3],
    ...     "message": ["FAIL [rdkafka#producer-1] [thrd:b1:9092/1]: b1:9092/1: Connect to ipv4#10.0.0.5:9092 failed: "
    ...                 "Connection refused (after 0ms in state CONNECT)"]})
    >>> build(ev)[["kind", "client_id", "broker"]].iloc[0].tolist()
    ['connect_failed', 'rdkafka#producer-1', 'b1:9092']
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib import tables
from kitlib.extract import extractor
from kitlib.extract.rules import Rule, field_of, in_slices, logger_keywords, match, to_int

tables.declare(
    "client_connections",
    "Clients' lines about their broker connections: disconnects, failed connects, all brokers down, "
    "requests timed out in flight, throttling the client logged; one per record.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "disconnected, connect_failed, all_brokers_down, request_timeout, connection_error (a request failed "
            "on the connection) or throttled",
        ),
        ("client_id", "str", "the client: Java clientId, kafka-python client_id, librdkafka instance"),
        ("broker", "str", "the broker as the client names it: host:port, or a node id"),
        ("reason", "str", "why, as logged"),
        ("throttle_ms", "int", "throttle time the broker imposed (throttled rows)"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line (500 characters at most)"),
    ],
)

# librdkafka names the broker '<proto>://host:port/<id or bootstrap>: ' (or 'host:port/id: ')
_RD = r"(?:[a-z_]+://)?(?P<broker>[^\s/\[\]]+:\d+)/\w+: "
RULES = [
    Rule(
        "throttled",
        r"^broker is throttling us in response; broker: (?P<broker>[^,]+), .*?throttle_millis: "
        r"(?P<throttle_ms>\d+)",
    ),
    Rule("all_brokers_down", r"(?P<reason>\d+/\d+ brokers are down)"),
    Rule("disconnected", _RD + r"(?P<reason>Disconnected\b.*)$"),
    Rule("connect_failed", _RD + r"(?P<reason>Connect to \S+ failed: .*)$"),
    Rule("request_timeout", _RD + r"(?P<reason>Timed out \d+ in-flight.*)$"),
    # the Java clients' NetworkClient
    Rule(
        "disconnected",
        r"\] (?:Node (?P<broker>-?\d+) disconnected|Bootstrap broker (?P<broker2>\S+) \(id: -?\d+ rack: \S+\) "
        r"disconnected)",
    ),
    Rule(
        "connect_failed",
        r"Connection to node (?P<broker>-?\d+) \((?P<address>[^)]*)\) could not be established\. (?P<reason>.*)$",
    ),
    Rule("request_timeout", r"Disconnecting from node (?P<broker>-?\d+) due to request timeout"),
    # kafka-python
    Rule(
        "connect_failed",
        r"Connect attempt to <BrokerConnection[^>]*?host=(?P<broker>\S+?)[ >/].*? returned error (?P<reason>.*)$",
    ),
    Rule(
        "disconnected",
        r"<BrokerConnection[^>]*?host=(?P<broker>[^\s/>]+)[^>]*>: (?P<reason>Closing connection\. \S*Error.*)$",
    ),
    # Sarama
    Rule("disconnected", r"consumer/broker/(?P<broker>-?\d+) disconnecting due to error (?P<reason>.*)$"),
    Rule("connect_failed", r"Failed to connect to broker (?P<broker>\S+): (?P<reason>.*)$"),
    Rule(
        "connection_error",
        r"client/metadata got error from broker (?P<broker>-?\d+) while fetching metadata: (?P<reason>.*)$",
    ),
    # franz-go
    Rule("disconnected", r"^read from broker errored, killing connection.*?; .*?addr: (?P<broker>[^,]+)"),
]
_ANCHORS = (
    r"(?i)throttling us|brokers are down|Disconnect|Connect to \S+ failed|in-flight|could not be established|"
    r"Connect attempt|Closing connection|disconnecting due to error|Failed to connect to broker|"
    r"got error from broker|killing connection"
)
_CLIENT = (
    r"clientId=(?P<client>[^,\]]+)|client_id=(?P<client2>[^,\s>]+)|"
    r"\[(?P<client3>[^\]\s]+#(?:consumer|producer|admin)-\d+)\]"
)


@extractor(
    "client_connections",
    match=logger_keywords(
        "networkclient", "kafka.conn", "kafka.client", "rdkafka", "confluent", "kgo", "sarama", "clients"
    ),
    contains=_ANCHORS,
    blockwise=True,
)
@in_slices
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("client_connections")
    m = match(events, RULES)
    if not len(m):
        return tables.empty("client_connections")
    client = np.full(len(m), None, object)
    for g in ("client", "client2", "client3"):
        client = np.where(client == None, field_of(m.first, _CLIENT, g), client)  # noqa: E711
    return m.frame(
        {
            "kind": m.kinds,
            "client_id": client,
            "broker": m.cols["broker"],
            "reason": m.cols["reason"],
            "throttle_ms": to_int(m.cols["throttle_ms"]),
        }
    )
