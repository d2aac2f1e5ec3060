"""``XxxConfig values:`` dumps in broker and Connect logs -> the ``configs`` table.

Kafka logs every config object it builds (``AbstractConfig.logAll``, same layout 2.0-4.x): one
INFO record ``ProducerConfig values: `` followed by ``<TAB>key = value`` lines sorted by key, the
logger being the concrete config class (``...ProducerConfig``, ``kafka.server.KafkaConfig``,
``...ConnectorConfig$EnrichedConnectorConfig``). Each key becomes one row; values are split on
the first `` = `` (JAAS strings hold more) and pass through :func:`kitlib.redact.redact_value`,
so secrets (clear-text passwords under STRING-typed keys included) never reach the table.

``entity`` is the client.id for clients, the connector name for connector/task configs, the
node.id / broker.id for ``KafkaConfig`` and the group.id for distributed workers. ``line``
points at the key's own line in the file.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2020-08-20 01:08:13.195"], utc=True),
    ...   "logger": ["org.apache.kafka.clients.producer.ProducerConfig"],
    ...   "message": ["ProducerConfig values: \\n\\tacks = all\\n\\tbatch.size = 16384\\n\\tclient.id = my-connector-producer"],
    ...   "host": ["w1"], "file": ["w1/connect.log"], "line": [10]})
    >>> df = build_configs(ev)
    >>> df[["scope", "entity", "key", "value"]].iloc[1].tolist(), int(df.line[1])
    (['ProducerConfig', 'my-connector-producer', 'batch.size', '16384'], 12)
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib import tables
from kitlib.extract import extractor
from kitlib.redact import redact_value

tables.declare(
    "configs",
    "Configuration values, one row per key: from the `XxxConfig values:` "
    "dumps in logs (source 'log') or captured from a live cluster (source 'live').",
    [
        ("ts", "ts", "when the config was logged or captured (UTC)"),
        (
            "source",
            "category",
            "'log' (config dump in a log file), 'live' (captured from the cluster) "
            "or 'cli' (saved kafka-configs / kafka-topics output)",
        ),
        (
            "scope",
            "category",
            "config class simple name (ProducerConfig, ConsumerConfig, AdminClientConfig, "
            "KafkaConfig, ConnectorConfig, EnrichedSourceConnectorConfig, DistributedConfig, ...) "
            "or 'topic' / 'broker' for live captures",
        ),
        (
            "entity",
            "str",
            "what the config belongs to: client.id, connector name, topic name or broker id; empty when unknown",
        ),
        ("key", "str", "config key"),
        (
            "value",
            "str",
            "value as Kafka printed it; secrets replaced by '[redacted]', "
            "PASSWORD-typed keys show Kafka's own '[hidden]'",
        ),
        (
            "origin",
            "category",
            "where the value comes from, as kafka-configs printed it: "
            "DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, "
            "DYNAMIC_TOPIC_CONFIG, ...; empty for other sources",
        ),
    ],
)

_CTX = re.compile(r"^\[(?P<conn>[^|\]]+)\|[^\]]*\] ")
_HEAD = re.compile(r"^(?P<scope>[\w$]+) values: ?$")
_KV = re.compile(r"^\s+(?P<key>[^\s=]+) = ?(?P<value>.*)$")
_ENTITY_KEYS = {
    "KafkaConfig": ("node.id", "broker.id"),
    "DistributedConfig": ("group.id",),
}
_CLIENT_KEYS = ("client.id",)
_CONNECTOR_KEYS = ("name",)


@extractor("configs", suffixes=("Config",), blockwise=True)
def build_configs(events: pd.DataFrame) -> pd.DataFrame:
    """One row per key of every ``XxxConfig values:`` record (see the module doc)."""
    rows: list[dict] = []
    for r in events.itertuples(index=False):
        msg = str(r.message)
        ctx = _CTX.match(msg)
        body = msg[ctx.end() :] if ctx else msg
        lines = body.split("\n")
        head = _HEAD.match(lines[0].rstrip())
        if not head:
            continue  # "These configurations ... were supplied but are not used yet." and the like
        scope = head.group("scope")
        kv = []
        for i, ln in enumerate(lines[1:], start=1):
            m = _KV.match(ln)
            if m:
                kv.append((i, m.group("key"), m.group("value").rstrip()))
        values = {k: v for _, k, v in kv}
        entity = _entity(scope, values, ctx.group("conn") if ctx else "")
        for i, k, v in kv:
            rows.append(
                {
                    "ts": r.ts,
                    "source": "log",
                    "scope": scope,
                    "entity": entity,
                    "key": k,
                    "value": redact_value(k, v),
                    "host": r.host,
                    "file": r.file,
                    "line": int(r.line) + i,
                }
            )
    if not rows:
        return tables.empty("configs")
    return pd.DataFrame(rows)


def _entity(scope: str, values: dict, context_connector: str) -> str:
    for k in _ENTITY_KEYS.get(scope, ()):
        v = values.get(k, "")
        if v not in ("", "null", "-1"):
            return v
    if scope.endswith(("ProducerConfig", "ConsumerConfig", "AdminClientConfig")):
        v = values.get("client.id", "")
        if v:
            return v
    if "Connector" in scope or scope == "TaskConfig":
        v = values.get("name", "")
        if v:
            return v
    return context_connector or ""


def latest(configs: pd.DataFrame, scope: str | tuple | None = None, entity: str | None = None) -> dict:
    """The last logged value of every key for a scope/entity, as a dict.

    Example:
        >>> df = pd.DataFrame({"ts": pd.to_datetime(["2024-01-01", "2024-01-02"], utc=True),
        ...   "scope": "ProducerConfig", "entity": "p", "key": "batch.size", "value": ["16384", "327680"]})
        >>> latest(df, "ProducerConfig", "p")["batch.size"]
        '327680'
    """
    df = configs
    if scope is not None:
        df = df[df["scope"].isin([scope] if isinstance(scope, str) else list(scope))]
    if entity is not None:
        df = df[df["entity"] == entity]
    if df.empty:
        return {}
    df = df.sort_values("ts", kind="stable")
    return dict(zip(df["key"].astype(str), df["value"].astype(str)))
