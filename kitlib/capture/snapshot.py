"""One capture of a cluster's facts: brokers, configs (secrets redacted), log-dir sizes, API
versions, and the consumer groups' lag (:func:`lag_rows`, also what a lag series repeats).
"""

from __future__ import annotations

import time
from pathlib import Path

from kitlib.capture.admin import admin_client
from kitlib.capture.writer import Writer
from kitlib.redact import redact_value


def _is_default(meta: dict) -> bool:
    """Whether a described config is at Kafka's default (not set by the broker's properties
    file, a dynamic update or a topic override)."""
    from kafka.admin._configs import ConfigSourceType

    src = meta.get("config_source")
    if src is None:
        return bool(meta.get("is_default", False))
    try:
        return ConfigSourceType.build_from(src) is ConfigSourceType.DEFAULT_CONFIG
    except (ValueError, KeyError, TypeError):
        return False


def capture(
    bootstrap: str, out: str | Path, groups: list[str] | None = None, all_configs: bool = False, **client_kw
) -> Path:
    """Capture cluster facts into ``out/capture-<time>.jsonl``; returns the file.

    ``all_configs`` includes default-valued configs (otherwise every config that is not at its
    default: static broker settings from server.properties, dynamic updates, topic overrides).
    ``groups`` limits the consumer groups (default: all)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    out = Path(out)
    w = Writer(out / f"capture-{time.strftime('%Y%m%d-%H%M%S')}.jsonl", "cluster", bootstrap)
    admin = admin_client(bootstrap, client_kw)
    try:
        cl = admin.describe_cluster()
        for b in cl.get("brokers", []):
            w.row(
                "brokers",
                cluster_id=cl.get("cluster_id"),
                broker_id=b["broker_id"],
                broker_host=b["host"],
                port=b["port"],
                rack=b.get("rack"),
                controller=b["broker_id"] == cl.get("controller_id"),
            )
        broker_ids = [b["broker_id"] for b in cl.get("brokers", [])]
        topics = sorted(t for t in admin.list_topics())
        res = [ConfigResource(ConfigResourceType.BROKER, str(i)) for i in broker_ids]
        res += [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        # "all", then keep what is not at Kafka's default: kafka-python's "modified" filter also drops
        # static broker configs, which is every setting a broker's server.properties makes
        got = admin.describe_configs(res, config_filter="all")
        for scope, entities in got.items():
            for entity, cfg in entities.items():
                for key, meta in sorted(cfg.items()):
                    if not all_configs and _is_default(meta):
                        continue
                    value = "[hidden]" if meta.get("is_sensitive") else redact_value(key, meta.get("value"))
                    w.row(
                        "configs",
                        source="live",
                        scope=scope,
                        entity=str(entity),
                        key=key,
                        value=value,
                        config_source=str(meta.get("config_source", "")),
                    )
        for entry in admin.describe_log_dirs():
            for d in entry.get("log_dirs", []):
                for t in d.get("topics", []):
                    for p in t.get("partitions", []):
                        w.row(
                            "log_dirs",
                            broker_id=entry["broker"],
                            log_dir=d["log_dir"],
                            topic=t["name"],
                            partition=p["partition_index"],
                            size_bytes=p["partition_size"],
                            offset_lag=p["offset_lag"],
                            is_future=p.get("is_future_key", False),
                        )
        for key, name, lo, hi in api_versions(admin):
            w.row("api_versions", api_key=key, api_name=name, min_version=lo, max_version=hi)
        for row in lag_rows(admin, bootstrap, groups, client_kw):
            w.row("consumer_lag", **row)
    finally:
        admin.close()
    return w.close()


def api_versions(admin) -> list[tuple[int, str, int, int]]:
    """The broker's API versions as (key, name, min, max), by key. A broker newer than the client
    (Kafka 4.x announces keys such as 93 that kafka-python has no name for) keeps those keys, named
    ``api_<key>``, instead of failing the capture."""
    from kafka.protocol.api_key import ApiKey

    raw = admin._manager.broker_version_data.api_versions  # kafka-python's own admin.api_versions()
    known = ApiKey._value2member_map_  # raises on a key it cannot name
    return [
        (int(k), known[int(k)].name if int(k) in known else f"api_{int(k)}", lo, hi)
        for k, (lo, hi) in sorted(raw.items(), key=lambda kv: int(kv[0]))
    ]


def lag_rows(admin, bootstrap: str, groups: list[str] | None, client_kw: dict, consumer=None) -> list[dict]:
    """One lag snapshot: a row per (group, partition) with the committed offset, the log end
    offset, the lag, the group's state and the member the partition is assigned to (the columns
    of ``kafka-consumer-groups.sh --describe``). Assigned partitions without a committed offset
    have ``committed`` None. ``consumer`` (a group-less KafkaConsumer) is reused when given."""
    from kafka import KafkaConsumer, TopicPartition

    known = sorted(g["group_id"] for g in admin.list_groups())
    # a named group that does not exist (yet) has no rows: asking its coordinator would create the
    # offsets topic and wait on its loading
    group_ids = known if groups is None else [g for g in groups if g in known]
    if not group_ids:
        return []
    offsets = admin.list_group_offsets({g: None for g in group_ids})
    described = admin.describe_groups(group_ids)
    owners: dict[tuple[str, TopicPartition], dict] = {}
    for g, d in described.items():
        for m in d.get("members") or []:
            for a in (m.get("member_assignment") or {}).get("assigned_partitions") or []:
                for part in a["partitions"]:
                    owners[(g, TopicPartition(a["topic"], part))] = m
    keys = {(g, tp) for g, o in offsets.items() for tp in o} | set(owners)
    tps = sorted({tp for _, tp in keys}, key=lambda tp: (tp.topic, tp.partition))
    ends = {}
    if tps:
        c = consumer or KafkaConsumer(bootstrap_servers=bootstrap, client_id="kitlib-capture", **client_kw)
        try:
            ends = c.end_offsets(tps)
        finally:
            if consumer is None:
                c.close()
    rows = []
    for g, tp in sorted(keys, key=lambda k: (k[0], k[1].topic, k[1].partition)):
        om = offsets.get(g, {}).get(tp)
        committed = om.offset if om is not None and om.offset >= 0 else None
        end = ends.get(tp)
        m = owners.get((g, tp), {})
        rows.append(
            {
                "group": g,
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": committed,
                "end_offset": end,
                "lag": None if end is None or committed is None else end - committed,
                "group_state": described.get(g, {}).get("group_state"),
                "consumer_id": m.get("member_id"),
                "client_id": m.get("client_id"),
                "member_host": m.get("client_host"),
            }
        )
    return rows
