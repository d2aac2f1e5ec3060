"""Kafka's own CLI outputs (consumer groups, topics, log dirs, configs, dump-log, metadata quorum)
and every JmxTool output variant become tables. Fixtures: tests/fixtures/cli (SOURCES.md)."""

import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib import formats

CLI = Path(__file__).parent / "fixtures" / "cli"
FIXTURES = sorted(p for p in CLI.glob("*.txt"))
FORMAT_OF = {
    "consumer-groups": "consumer_groups",
    "topics": "topics",
    "log-dirs": "log_dirs_cli",
    "configs": "configs_cli",
    "dump-log": "dump_log",
    "quorum": "metadata_quorum",
    "metadata-quorum": "metadata_quorum",
    "jmxtool": "jmxtool",
    "df": "df",
}


def expected_format(path: Path) -> str | None:
    name = path.stem.split("-", 2)[-1]
    for key, fmt in FORMAT_OF.items():
        if name.startswith(key) or path.stem.startswith(f"constructed-{key}"):
            return fmt
    return None


def bundle(tmp_path, *files, host="tools-1", tz=None):
    """A bundle folder holding copies of the given fixtures (or (name, text) pairs) for one host."""
    d = tmp_path / "b" / host
    d.mkdir(parents=True, exist_ok=True)
    if tz:
        (tmp_path / "b" / "bundle.yaml").write_text(f"tz: {tz}\n")
    for f in files:
        if isinstance(f, tuple):
            (d / f[0]).write_text(f[1])
        else:
            shutil.copy(CLI / f, d / f)
    return kitlib.load_bundle(tmp_path / "b")


def rows(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return [tuple(None if pd.isna(v) else v for v in r) for r in df[cols].itertuples(index=False)]


@pytest.mark.slow
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_is_detected_and_accounted_for(tmp_path, path):
    fmt = formats.detect(path.read_bytes()[:65536])
    assert fmt is not None and fmt.name == expected_format(path)
    b = bundle(tmp_path, path.name)
    f = b.files.iloc[0]
    assert f["format"] == expected_format(path)
    assert f["lines"] == f["parsed"] + f["unparsed"] == len(path.read_text().splitlines())
    assert f["parsed"] >= 0.95 * f["lines"]
    assert len(b.unparsed) == f["unparsed"] and b.unparsed["reason"].notna().all()


# --- consumer groups -------------------------------------------------------------------------


def test_consumer_groups_describe_all_groups_real(tmp_path):
    b = bundle(tmp_path, "real-3.9-consumer-groups-describe-all.txt")
    g = b.group_offsets
    cols = ["topic", "partition", "current_offset", "log_end_offset", "lag", "consumer_id"]
    assert rows(g[g.group == "billing"], cols) == [
        ("orders", 0, 100, 100, 0, None),
        ("orders", 1, 60, 100, 40, None),
        ("orders", 2, 100, 100, 0, None),
    ]
    s = g[g.group == "shipping"].sort_values(["topic", "partition"])
    assert rows(s, ["topic", "partition", "lag", "client_id", "member_host"]) == [
        ("orders", 0, 0, "shipping-0", "/127.0.0.1"),
        ("orders", 1, 0, "shipping-0", "/127.0.0.1"),
        ("orders", 2, 70, "shipping-1", "/127.0.0.1"),
        ("payments", 0, 0, "shipping-0", "/127.0.0.1"),
        ("payments", 1, 0, "shipping-1", "/127.0.0.1"),
    ]
    assert s.consumer_id.str.startswith(("shipping-0-", "shipping-1-")).all()
    assert rows(b.group_states, ["group", "note", "line"]) == [("billing", "has no active members", 12)]


def test_consumer_groups_members_and_state_real(tmp_path):
    b = bundle(
        tmp_path,
        "real-3.9-consumer-groups-members-verbose.txt",
        "real-3.9-consumer-groups-members.txt",
        "real-3.9-consumer-groups-state.txt",
    )
    m = b.group_members.sort_values(["file", "client_id"])
    assert rows(m, ["group", "client_id", "partitions", "assignment"]) == [
        ("shipping", "shipping-0", 3, "(0), (0,1)"),
        ("shipping", "shipping-1", 2, "(1), (2)"),
        ("shipping", "shipping-0", 3, None),
        ("shipping", "shipping-1", 2, None),
    ]
    st = b.group_states[b.group_states.note.isna()]
    assert rows(st, ["group", "coordinator_id", "assignment_strategy", "state", "members"]) == [
        ("billing", 1, None, "Empty", 0),
        ("shipping", 1, "range", "Stable", 2),
    ]
    assert st.coordinator.str.fullmatch(r"127\.0\.0\.1:\d+").all()


def test_lag_history_loads_as_one_table_with_snapshot_times(tmp_path):
    b = bundle(
        tmp_path, "real-3.9-consumer-groups-lag-history-date.txt", "real-3.9-consumer-groups-lag-history-iso.txt"
    )
    g = b.group_offsets
    assert len(g) == 18 and g.snapshot_ts.notna().all() and g.snapshot_ts.nunique() == 6
    p1 = g[g.partition == 1].sort_values("snapshot_ts")
    assert p1.lag.tolist() == [40, 50, 60, 70, 80, 90]
    assert p1.log_end_offset.tolist() == [100, 110, 120, 130, 140, 150]
    first = g[g.file.str.endswith("date.txt")].snapshot_ts.min()
    assert first == pd.Timestamp("2026-11-23 11:35:41", tz="UTC")
    assert g[g.file.str.endswith("iso.txt")].snapshot_ts.min() == pd.Timestamp("2026-11-23 11:35:46", tz="UTC")
    assert b.group_states.snapshot_ts.notna().all() and len(b.group_states) == 6


def test_old_and_new_consumer_group_layouts(tmp_path):
    b = bundle(
        tmp_path,
        "constructed-1.1-consumer-groups-describe.txt",
        "constructed-2.8-consumer-groups-lag-history.txt",
        "constructed-2.0-consumer-groups-state-members.txt",
        "constructed-4.0-consumer-groups-verbose.txt",
        tz="Europe/Berlin",
    )
    g = b.group_offsets
    old = g[g.file.str.contains("1.1")]
    assert rows(old, ["group", "topic", "partition", "current_offset", "lag", "client_id"]) == [
        (None, "storage-events", 0, 22922, 0, "consumer-1"),
        (None, "storage-events", 1, 21980, 1124, "consumer-1"),
        (None, "storage-events", 2, None, None, "consumer-2"),
        (None, None, None, None, None, "consumer-4"),
    ]
    hist = g[g.file.str.contains("2.8")]
    # `date` printed CET: the bundle's zone (Europe/Berlin) reads it, UTC is one hour earlier
    assert sorted(hist.snapshot_ts.unique()) == [
        pd.Timestamp(f"2024-03-05 13:0{i}:0{s}", tz="UTC") for i, s in ((0, 1), (1, 1), (2, 2))
    ]
    assert hist[hist.partition == 0].lag.tolist() == [20, 280, 595]
    assert rows(b.group_states[b.group_states.note.notna()], ["group", "note"]) == [("orders-svc", "is rebalancing")]
    v4 = g[g.file.str.contains("4.0")]
    assert rows(v4, ["group", "partition", "leader_epoch", "current_offset", "log_end_offset", "lag"]) == [
        ("orders-svc", 0, 7, 48211, 48260, 49),
        ("orders-svc", 1, 7, 47100, 47100, 0),
    ]
    st = b.group_states[b.group_states.note.isna()]
    assert rows(st, ["group", "coordinator", "coordinator_id", "assignment_strategy", "state", "members"]) == [
        (None, "kafka-2.internal:9092", 2, "range", "Stable", 2)
    ]
    assert rows(b.group_members, ["group", "client_id", "partitions", "assignment"]) == [
        (None, "consumer-orders-svc-1", 2, "orders(0,1)"),
        (None, "consumer-orders-svc-2", 1, "orders(2)"),
    ]


def test_tool_error_lines_are_kept_with_a_reason(tmp_path):
    text = (CLI / "real-3.9-consumer-groups-offsets.txt").read_text() + (
        "Error: Executing consumer group command failed due to org.apache.kafka.common.errors.TimeoutException: "
        "Timed out waiting for a node assignment.\n"
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.TimeoutException: Timed out\n"
        "\tat java.base/java.util.concurrent.CompletableFuture.reportGet(CompletableFuture.java:396)\n"
    )
    b = bundle(tmp_path, ("lag.txt", text))
    f = b.files.iloc[0]
    assert f["format"] == "consumer_groups" and f["lines"] == 9 and f["parsed"] == 6 and f["unparsed"] == 3
    assert b.unparsed.line.tolist() == [7, 8, 9] and "line 7" in f["error"]
    assert len(b.group_offsets) == 3


# --- topics ----------------------------------------------------------------------------------


def test_topics_describe_real(tmp_path):
    b = bundle(tmp_path, "real-3.9-topics-describe.txt")
    t = b.topic_partitions
    assert len(t) == 3 + 50 + 50 + 2 + 1 and not t.under_replicated.any() and not t.offline.any()
    o = t[t.topic == "orders"]
    assert rows(o, ["partition", "leader", "replicas", "isr", "partition_count", "replication_factor"]) == [
        (0, 1, "1", "1", 3, 1),
        (1, 1, "1", "1", 3, 1),
        (2, 1, "1", "1", 3, 1),
    ]
    assert o.topic_id.unique().tolist() == ["_qP8e2lNREyFiYxmVLA-Ng"]
    assert o.topic_configs.iloc[0] == "min.insync.replicas=1,retention.ms=604800000"
    c = b.configs[(b.configs.entity == "payments")]
    assert dict(zip(c.key, c.value)) == {"cleanup.policy": "compact", "compression.type": "producer"}
    assert set(b.configs.source) == {"cli"} and set(b.configs.scope) == {"topic"}


def test_topics_old_layout_flags(tmp_path):
    b = bundle(tmp_path, "constructed-1.1-topics-describe.txt", "constructed-2.8-topics-under-replicated.txt")
    t = b.topic_partitions
    assert rows(t, ["topic", "partition", "leader", "isr", "under_replicated", "offline", "replication_factor"]) == [
        ("orders", 0, 1, "1,2,3", False, False, 3),
        ("orders", 1, 2, "2,1", True, False, 3),
        ("orders", 2, None, "", True, True, 3),
        ("payments", 0, 2, "2", True, False, 2),
        ("orders", 1, 2, "2,3", True, False, None),
        ("payments", 0, 2, "2", True, False, None),
        ("orders", 2, None, "", True, True, None),
    ]
    r = t[t.adding_replicas.notna()]
    assert rows(r, ["replicas", "adding_replicas", "removing_replicas"]) == [("2,3,1,4", "4", "1")]


def test_reassignment_target_is_not_under_replicated(tmp_path):
    text = (
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1,4\tIsr: 2,3,1\tAdding Replicas: 4"
        "\tRemoving Replicas: 1\n"
    )
    b = bundle(tmp_path, ("urp.txt", text))
    assert b.topic_partitions.under_replicated.tolist() == [False]


# --- log dirs --------------------------------------------------------------------------------


def test_log_dirs_real_and_offline_dir(tmp_path):
    b = bundle(tmp_path, "real-3.9-log-dirs-topics.txt", "constructed-2.x-log-dirs.txt")
    d = b.log_dirs
    real = d[d.file.str.contains("real")].sort_values(["topic", "partition"])
    assert rows(real, ["broker_id", "log_dir", "topic", "partition", "size_bytes", "offset_lag", "is_future"]) == [
        (1, "/var/lib/kafka-lab/data", "orders", 0, 10667, 0, False),
        (1, "/var/lib/kafka-lab/data", "orders", 1, 10673, 0, False),
        (1, "/var/lib/kafka-lab/data", "orders", 2, 10674, 0, False),
        (1, "/var/lib/kafka-lab/data", "payments", 0, 834, 0, False),
        (1, "/var/lib/kafka-lab/data", "payments", 1, 641, 0, False),
    ]
    old = d[d.file.str.contains("constructed")]
    assert rows(old[old.error.notna()], ["broker_id", "log_dir", "topic", "error"]) == [
        (1, "/data/kafka-2", None, "org.apache.kafka.common.errors.KafkaStorageException")
    ]
    assert rows(old[old.is_future == True], ["broker_id", "size_bytes", "offset_lag"]) == [(2, 1024, 394000)]  # noqa: E712


# --- configs ---------------------------------------------------------------------------------


def test_kafka_configs_real(tmp_path):
    b = bundle(
        tmp_path,
        "real-3.9-configs-broker.txt",
        "real-3.9-configs-broker-all.txt",
        "real-3.9-configs-clients.txt",
        "real-3.9-configs-users.txt",
        "real-3.9-configs-topics.txt",
    )
    c = b.configs
    dyn = c[c.file.str.endswith("configs-broker.txt")]
    assert rows(dyn, ["scope", "entity", "key", "value", "origin"]) == [
        ("broker", "1", "log.cleaner.threads", "2", "DYNAMIC_BROKER_CONFIG"),
        ("broker", "1", "max.connections.per.ip", "500", "DYNAMIC_BROKER_CONFIG"),
    ]
    allc = c[c.file.str.endswith("broker-all.txt")]
    assert len(allc) == 314 and allc.key.is_unique
    assert allc.set_index("key").loc["ssl.keystore.password", "value"] == "[redacted]"
    assert allc.set_index("key").loc["num.partitions", "origin"] == "STATIC_BROKER_CONFIG"
    assert rows(c[c.scope.isin(["client-id", "user-principal"])], ["scope", "entity", "key", "value"]) == [
        ("client-id", "reporting", "consumer_byte_rate", "2097152.0"),
        ("client-id", "reporting", "producer_byte_rate", "1048576.0"),
        ("user-principal", "alice", "request_percentage", "50.0"),
        ("user-principal", "alice", "SCRAM-SHA-256", "iterations=8192"),
    ]
    topics = c[c.scope == "topic"]
    assert set(topics.entity) == {"__transaction_state", "payments", "orders", "__consumer_offsets"}
    assert topics[topics.entity == "orders"].set_index("key").loc["retention.ms", "value"] == "604800000"


def test_kafka_configs_secrets_never_stored(tmp_path):
    b = bundle(tmp_path, "constructed-2.x-configs.txt")
    c = b.configs
    text = c.to_csv() + b.unparsed.to_csv()
    for secret in ("admin-secret", "MWd3Mmlq", "Z2l3YmVxZQ==", "cXplbGJr"):
        assert secret not in text
    assert c.set_index("key").loc["sasl.jaas.config", "value"] == "[redacted]"
    assert rows(c[c.entity.str.contains("alice|bob")], ["scope", "entity", "key", "value"]) == [
        ("user-principal", "alice", "SCRAM-SHA-512", "iterations=4096"),
        ("user-principal", "alice", "producer_byte_rate", "1024"),
        ("user-principal/client-id", "bob/reports", "consumer_byte_rate", "2048"),
    ]
    assert rows(c[c.entity == "<default>"], ["scope", "key", "value", "origin"]) == [
        ("broker", "log.cleaner.io.max.bytes.per.second", "5.24288E7", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("client-id", "producer_byte_rate", "1048576.0", None),
    ]
    assert len(b.unparsed) == 0


# --- dump-log --------------------------------------------------------------------------------


def test_dump_log_real_batches_records_and_markers(tmp_path):
    b = bundle(
        tmp_path,
        "real-3.9-dump-log.txt",
        "real-3.9-dump-log-deep.txt",
        "real-3.9-dump-log-print-data.txt",
        "real-3.9-dump-log-transaction.txt",
        "real-3.9-dump-log-index.txt",
    )
    bt = b.log_batches
    shallow = bt[bt.file.str.endswith("dump-log.txt")]
    assert shallow["count"].sum() == 160 and shallow["size"].tolist()[:2] == [6413, 707]
    assert rows(
        shallow.head(1),
        ["topic", "partition", "base_offset", "last_offset", "producer_id", "compression", "is_valid", "magic"],
    ) == [("orders", 0, 0, 99, 0, "none", True, 2)]
    assert shallow.timestamp.iloc[0] == pd.Timestamp(1795433727339, unit="ms", tz="UTC")
    r = b.log_records
    deep = r[r.file.str.endswith("deep.txt")]
    assert len(deep) == 160 and deep.offset.tolist() == list(range(160))
    assert set(deep.header_keys) == {"trace-id,origin"} and set(deep.header_count) == {2}
    assert deep.key_size.iloc[:4].tolist() == [2, 2, 2, 2] and deep.value_size.iloc[:4].tolist() == [23, 23, 23, 23]
    gz = bt[bt.topic == "payments"]
    assert gz.compression.tolist() == ["gzip"] and gz["count"].tolist() == [70]
    # --print-data-log printed keys and payloads: none of it is stored
    payload = r[r.topic == "payments"]
    assert len(payload) == 70
    assert not payload.astype(str).apply(lambda col: col.str.contains("sku", regex=False)).any().any()
    tx = bt[bt.topic == "audit"]
    assert rows(tx, ["base_offset", "count", "is_transactional", "is_control", "size"]) == [
        (0, 5, True, False, 126),
        (5, 1, True, True, 78),
    ]
    assert rows(r[r.control.notna()], ["topic", "offset", "control", "coordinator_epoch"]) == [
        ("audit", 5, "COMMIT", 0)
    ]
    assert rows(b.log_index_entries, ["kind", "offset", "position"]) == [("offset", 109, 6413), ("time", 109, None)]


def test_dump_log_old_layouts(tmp_path):
    b = bundle(tmp_path, "constructed-2.0-dump-log.txt")
    bt = b.log_batches
    cols = ["topic", "base_offset", "last_offset", "count", "producer_id", "compression", "is_control", "magic", "size"]
    assert rows(bt, cols) == [
        ("orders", 0, 1, 2, -1, "none", None, 2, 151),
        ("orders", 2, 2, 1, 4001, "lz4", None, 2, 96),
        ("legacy", 0, 0, None, None, "none", None, 1, 60),
        ("legacy", 1, 1, None, None, "none", None, 1, 61),
    ]
    r = b.log_records
    assert rows(r, ["offset", "key_size", "value_size", "header_keys", "producer_id", "position"]) == [
        (0, 25, 363, "", -1, 0),
        (1, 25, 371, "trace-id", -1, 0),
        (2, -1, 40, "", 4001, 151),
    ]
    assert not r.astype(str).apply(lambda col: col.str.contains("do-not-store", regex=False)).any().any()


@pytest.mark.slow
def test_dump_log_bulk_path_is_fast(tmp_path):
    """A 300k-line deep dump (real lines repeated) loads in bulk, not line by line."""
    lines = (CLI / "real-3.9-dump-log-deep.txt").read_text().splitlines()
    body = [ln for ln in lines if ln.startswith(("| ", "baseOffset"))]
    text = "\n".join(lines[:2] + body * (300_000 // len(body))) + "\n"
    t0 = time.perf_counter()
    b = bundle(tmp_path, ("big-dump.txt", text))
    took = time.perf_counter() - t0
    f = b.files.iloc[0]
    assert f["unparsed"] == 0 and f["parsed"] == f["lines"]
    assert len(b.log_records) == 287_360 and len(b.log_batches) == 12_572
    assert took < 60, f"{took:.1f} s"


# --- metadata quorum -------------------------------------------------------------------------


def test_metadata_quorum_real_and_older(tmp_path):
    b = bundle(
        tmp_path, "real-3.9-quorum-status.txt", "real-3.9-quorum-replication.txt", "constructed-3.5-metadata-quorum.txt"
    )
    s = b.quorum_status.sort_values("file")
    assert rows(
        s, ["cluster_id", "leader_id", "leader_epoch", "high_watermark", "max_follower_lag", "voters", "observers"]
    ) == [
        ("MkU3OEVBNTcwNTJENDM2Qk", 3001, 12, 408221, 1520, "3001,3002,3003", "1,2,3"),
        ("Zhhak0S0SDygpAfaOTov4A", 1, 1, 240, 0, "1", ""),
    ]
    assert s.voter_endpoints.iloc[1].startswith("1=CONTROLLER://127.0.0.1:")
    r = b.quorum_replication.sort_values(["file", "node_id"])
    assert rows(r, ["node_id", "log_end_offset", "lag", "status"]) == [
        (1, 408221, 0, "Observer"),
        (3001, 408221, 0, "Leader"),
        (3002, 406701, 1520, "Follower"),
        (3003, 408221, 0, "Follower"),
        (1, 242, 0, "Leader"),
    ]
    assert r.directory_id.iloc[-1] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert r.last_caught_up_ts.iloc[2] == pd.Timestamp(1709647196988, unit="ms", tz="UTC")


# --- JmxTool variants ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tsv", "properties", "csv", "deprecated-shim"])
def test_jmxtool_report_formats(tmp_path, name):
    b = bundle(tmp_path, f"real-3.9-jmxtool-{name}.txt")
    m = b.metrics
    assert len(m) == 7 and set(m.source) == {"jmxtool"} and m.ts.nunique() == 1
    assert m.ts.iloc[0].year == 2026
    by = m.set_index("attribute")
    assert by.loc["Count", "value"] == 621 and by.loc["RateUnit", "text"] == "SECONDS"
    assert by.loc["EventType", "text"] == "messages" and set(m.name) == {"MessagesInPerSec"}


def test_jmxtool_date_format_and_unquoted_header(tmp_path):
    b = bundle(tmp_path, "real-3.9-jmxtool-date-format.txt", "constructed-jmxtool-unquoted.txt")
    m = b.metrics
    real = m[m.file.str.contains("real")]
    assert rows(real, ["attribute", "value"]) == [("Count", 621.0), ("OneMinuteRate", 5.63568489708254)]
    assert real.ts.iloc[0] == pd.Timestamp("2026-11-23 11:36:16", tz="UTC")
    old = m[m.file.str.contains("constructed")].sort_values(["name", "ts"])
    assert rows(old, ["name", "attribute", "value"]) == [
        ("BytesInPerSec", "Count", 1048576.0),
        ("BytesInPerSec", "Count", 2097152.0),
        ("UnderReplicatedPartitions", "Value", 0.0),
        ("UnderReplicatedPartitions", "Value", 3.0),
    ]
    assert old.ts.iloc[0] == pd.Timestamp("2024-03-05 14:00:01.250", tz="UTC")


# --- detection does not steal other files ----------------------------------------------------


@pytest.mark.parametrize(
    "path,fmt",
    [
        ("sample_data/healthy/broker-1/server.log", "log4j"),
        ("sample_data/healthy/broker-1/state-change.log", "log4j"),
        ("sample_data/healthy/broker-1/jmx-broker.csv", "jmxtool"),
        ("sample_data/healthy/live/capture-20261123-064841.jsonl", "capture"),
        ("sample_data/codecs/payloads/orders.jsonl", "payload"),
    ],
)
def test_detection_leaves_other_files_alone(path, fmt):
    head = (Path(__file__).parent.parent / path).read_bytes()[:65536]
    assert formats.detect(head).name == fmt


def test_cli_text_quoted_in_a_log_stays_a_log():
    text = (
        b"[2026-11-23 11:35:41,001] INFO running lag check (kit.Cron)\n"
        b"GROUP    TOPIC     PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID HOST CLIENT-ID\n"
        b"Topic: orders\tTopicId: x\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: \n"
    )
    assert formats.detect(text).name == "log4j"


# --- live tools against the real broker ------------------------------------------------------


@pytest.mark.broker
def test_live_tool_output_parses(broker, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from kitlib import lab

    bs = ["--bootstrap-server", broker.bootstrap]
    lab.run_tool(
        "org.apache.kafka.tools.TopicCommand",
        bs
        + [
            "--create",
            "--topic",
            "cli-live",
            "--partitions",
            "2",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=3600000",
        ],
    )
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="cli-live-producer")
    for i in range(50):
        p.send("cli-live", value=b"v%d" % i, partition=i % 2, headers=[("h1", b"x")])
    p.flush()
    p.close()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="cli-live-group", enable_auto_commit=False)
    c.assign([TopicPartition("cli-live", 0), TopicPartition("cli-live", 1)])
    c.commit(
        {
            TopicPartition("cli-live", 0): OffsetAndMetadata(10, None, -1),
            TopicPartition("cli-live", 1): OffsetAndMetadata(25, None, -1),
        }
    )
    c.close()
    outputs = {
        "groups.txt": lab.run_tool(
            "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
            bs + ["--describe", "--group", "cli-live-group"],
        ),
        "topics.txt": lab.run_tool("org.apache.kafka.tools.TopicCommand", bs + ["--describe", "--topic", "cli-live"]),
        "logdirs.txt": lab.run_tool(
            "org.apache.kafka.tools.LogDirsCommand", bs + ["--describe", "--topic-list", "cli-live"]
        ),
        "configs.txt": lab.run_tool(
            "kafka.admin.ConfigCommand", bs + ["--describe", "--entity-type", "topics", "--entity-name", "cli-live"]
        ),
        "quorum.txt": lab.run_tool("org.apache.kafka.tools.MetadataQuorumCommand", bs + ["describe", "--status"]),
        "jmx.tsv": lab.run_tool(
            "org.apache.kafka.tools.JmxTool",
            [
                "--jmx-url",
                broker.jmx_url,
                "--object-name",
                "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
                "--one-time",
                "true",
                "--report-format",
                "tsv",
            ],
            stderr=False,
        ),
    }
    seg = Path(broker.work) / "data" / "cli-live-0" / "00000000000000000000.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and seg.stat().st_size == 0:
        time.sleep(0.5)
    outputs["dump.txt"] = lab.run_tool("kafka.tools.DumpLogSegments", ["--files", str(seg), "--deep-iteration"])
    meta = sorted((Path(broker.work) / "data" / "__cluster_metadata-0").glob("*.log"))[0]
    outputs["metadata-dump.txt"] = lab.run_tool(
        "kafka.tools.DumpLogSegments", ["--files", str(meta), "--cluster-metadata-decoder"]
    )
    outputs["replication.txt"] = lab.run_tool(
        "org.apache.kafka.tools.MetadataQuorumCommand", bs + ["describe", "--replication", "--human-readable"]
    )
    b = bundle(tmp_path, *outputs.items())
    f = b.files.set_index("file")
    assert (f["lines"] == f["parsed"] + f["unparsed"]).all() and (f["unparsed"] == 0).all(), f.to_string()
    assert dict(zip(f.index.str.split("/").str[-1], f["format"])) == {
        "groups.txt": "consumer_groups",
        "topics.txt": "topics",
        "logdirs.txt": "log_dirs_cli",
        "configs.txt": "configs_cli",
        "quorum.txt": "metadata_quorum",
        "jmx.tsv": "jmxtool",
        "dump.txt": "dump_log",
        "metadata-dump.txt": "dump_log",
        "replication.txt": "metadata_quorum",
    }
    cols = ["group", "partition", "current_offset", "log_end_offset", "lag"]
    assert rows(b.group_offsets.sort_values("partition"), cols) == [
        ("cli-live-group", 0, 10, 25, 15),
        ("cli-live-group", 1, 25, 25, 0),
    ]
    assert rows(b.topic_partitions, ["topic", "partition", "leader", "isr"]) == [
        ("cli-live", 0, 1, "1"),
        ("cli-live", 1, 1, "1"),
    ]
    assert b.log_dirs.groupby("partition").size_bytes.max().gt(0).all()
    assert ("retention.ms", "3600000") in set(zip(b.configs.key, b.configs.value))
    assert b.quorum_status.leader_id.tolist() == [1]
    assert (b.metrics.attribute == "Count").any()
    data = b.log_records[b.log_records.topic == "cli-live"]
    assert len(data) == 25 and set(data.header_keys) == {"h1"}
    kraft = b.log_batches[b.log_batches.topic == "__cluster_metadata"]
    assert len(kraft) > 0 and kraft.is_control.any() and kraft.is_valid.all()
    assert "LEADER_CHANGE" in set(b.log_records.control.dropna())
    r = b.quorum_replication
    assert r.status.tolist() == ["Leader"] and r.last_fetch_ago_ms.notna().all()


def test_dump_log_cluster_metadata_real(tmp_path):
    """The KRaft metadata log dumped with --cluster-metadata-decoder: control records by type,
    metadata records' JSON payloads not stored."""
    b = bundle(tmp_path, "real-3.9-dump-log-cluster-metadata.txt")
    r, bt = b.log_records, b.log_batches
    assert set(r.topic) == {"__cluster_metadata"} and set(r.partition) == {0}
    assert len(r) == bt["count"].sum() == 31 and r.offset.tolist() == list(range(31))
    assert rows(r[r.control.notna()], ["offset", "control"]) == [(0, "LEADER_CHANGE")]
    assert bt.is_control.tolist()[:2] == [True, False]
    assert "REGISTER_BROKER_RECORD" not in r.to_csv() + b.unparsed.to_csv()


def test_unknown_columns_of_newer_versions_are_skipped(tmp_path):
    """4.x consumer-protocol groups print more columns; known ones still land, nothing fails."""
    text = (
        "\nGROUP      CONSUMER-ID             GROUP-EPOCH  TARGET-ASSIGNMENT-EPOCH  HOST        CLIENT-ID   "
        "#PARTITIONS  ASSIGNMENT\n"
        "orders-svc 3m4XhS8uQ0mJ5wKc2xT1Pg  14           14                       /10.0.0.12  consumer-1  "
        "2            orders:0,1\n"
    )
    b = bundle(tmp_path, ("members.txt", text))
    assert b.files.iloc[0]["unparsed"] == 0
    assert rows(b.group_members, ["group", "consumer_id", "member_host", "client_id", "partitions", "assignment"]) == [
        ("orders-svc", "3m4XhS8uQ0mJ5wKc2xT1Pg", "/10.0.0.12", "consumer-1", 2, "orders:0,1")
    ]
