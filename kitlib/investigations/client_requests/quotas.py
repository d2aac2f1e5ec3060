"""Client quotas as the brokers and controllers log them -> ``quota_changes``.

KRaft controllers log each quota record they replay (``Replayed ClientQuotaRecord for
ClientQuotaEntity(entries={client-id=bulk-loader}) setting producer_byte_rate to 65536.0.``, or
``removing producer_byte_rate``); ZooKeeper-era brokers log the override they apply
(``Processing override for entityPath: clients/bulk-loader with config: Map(producer_byte_rate ->
65536)``, one row per key). With these a throttling finding can name the quota in force even when
nobody ran ``kafka-configs --describe``.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2026-01-01"], utc=True), "level": ["INFO"],
    ...     "logger": ["org.apache.kafka.controller.ClientQuotaControlManager"], "host": ["c1"], "file": ["c.log"],
    ...     "line": [4], "message": ["[QuorumController id=1] Replayed ClientQuotaRecord for ClientQuotaEntity("
    ...     "entries={client-id=bulk-loader}) setting producer_byte_rate to 65536.0."]})
    >>> build(ev)[["entity", "client_id", "key"]].iloc[0].tolist(), float(build(ev)["value"].iloc[0])
    (['client-id=bulk-loader', 'bulk-loader', 'producer_byte_rate'], 65536.0)
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor, quotes
from kitlib.extract.rules import Rule, logger_keywords, match

tables.declare(
    "quota_changes",
    "Client quota settings the controllers (KRaft) or brokers (ZooKeeper) logged applying, one row per key.",
    [
        ("ts", "ts", "when it was applied"),
        (
            "entity",
            "str",
            "quota entity as logged: 'client-id=bulk-loader', 'user=alice', "
            "'clients/bulk-loader' (ZooKeeper path), empty name = default",
        ),
        ("client_id", "str", "the client id the entity names (empty for user-only quotas)"),
        ("key", "str", "producer_byte_rate, consumer_byte_rate, request_percentage, ..."),
        ("value", "float", "the new value; NaN when the key was removed"),
        ("removed", "bool", "the key was removed (the default applies again)"),
        ("message", "str", "the record's first line (500 characters at most)"),
    ],
)

RULES = [
    Rule(
        "kraft",
        r"Replayed ClientQuotaRecord for ClientQuotaEntity\(entries=\{(?P<entity>[^}]*)\}\) "
        r"(?:setting (?P<key>\w+) to (?P<value>-?\d+(?:\.\d+)?(?:[Ee][-+]?\d+)?)|removing (?P<rkey>\w+))",
    ),
    Rule(
        "zk",
        r"Processing override for entityPath: (?P<entity>\S+) with config: (?:Map|HashMap|\{)\(?(?P<map>.*?)\)?\}?$",
    ),
]
_PAIR = re.compile(r"(\w+)\s*(?:->|=)\s*(-?\d+(?:\.\d+)?(?:[Ee][-+]?\d+)?)")


@extractor(
    "quota_changes",
    match=logger_keywords("quota", "dynamicconfig", "configadminmanager", empty=False),
    contains=r"ClientQuotaRecord|Processing override for entityPath: (?:clients|users)",
)
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("quota_changes")
    found = match(events, RULES)
    first, kinds, cols, ev = found.first, found.kinds, found.cols, found.events
    rows = []
    # few rows (one per quota change): read each matched line's pairs in Python
    for i in range(len(found)):
        entity = cols["entity"][i]
        if kinds[i] == "kraft":
            key = cols["key"][i] or cols["rkey"][i]
            pairs = [(key, None if cols["rkey"][i] else float(cols["value"][i]))]
        else:
            pairs = [(k, float(v)) for k, v in _PAIR.findall(cols["map"][i] or "")]
        m = re.search(r"client-id=([^,]*)|^clients/([^/]+)", entity or "")
        client = (m.group(1) or m.group(2)) if m else None
        for key, value in pairs:
            rows.append(
                {
                    "ts": ev["ts"].iat[i],
                    "entity": entity,
                    "client_id": client,
                    "key": key,
                    "value": value,
                    "removed": value is None,
                    "message": quotes(first[i : i + 1])[0].as_py(),
                    "host": ev["host"].iat[i],
                    "file": ev["file"].iat[i],
                    "line": ev["line"].iat[i],
                }
            )
    return pd.DataFrame(rows) if rows else tables.empty("quota_changes")
