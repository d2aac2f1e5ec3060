"""Live capture and probes with kafka-python against the real lab broker, read back by the
ingest core."""

import json

import pytest

import kitlib
from kitlib.capture import capture, probe_codecs, probe_consume

pytestmark = pytest.mark.broker


@pytest.fixture(scope="module")
def filled(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    a.create_topics([NewTopic("cap-orders", 2, 1, topic_configs={"retention.ms": "86400000"})])
    a.close()
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(3000):
        p.send("cap-orders", key=str(i).encode(), value=json.dumps({"id": i, "pad": "x" * 300}).encode())
    p.flush()
    p.close()
    c = KafkaConsumer(
        "cap-orders",
        bootstrap_servers=broker.bootstrap,
        group_id="cap-group",
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
        max_poll_records=1000,
    )
    for _ in range(1000):  # consume part of it, so the group has lag
        next(c)
    c.commit()
    c.close()
    return broker


def test_capture_writes_a_bundle_the_ingest_core_reads(filled, tmp_path):
    capture(filled.bootstrap, tmp_path / "bundle" / "live", ssl_check_hostname=False)
    b = kitlib.load_bundle(tmp_path / "bundle")
    assert b.summary.unparsed_lines == 0 and not b.summary.errors
    assert b.brokers["broker_id"].tolist() == [1]
    cfg = b.configs
    row = cfg[(cfg["entity"] == "cap-orders") & (cfg["key"] == "retention.ms")]
    assert row["value"].tolist() == ["86400000"] and row["source"].tolist() == ["live"]
    # every setting not at Kafka's default, static ones from server.properties included; defaults left out
    broker_cfg = cfg[cfg["entity"] == "1"].set_index("key")["value"]
    assert broker_cfg["log.dirs"].endswith("data") and broker_cfg["offsets.topic.replication.factor"] == "1"
    assert broker_cfg["log.cleaner.dedupe.buffer.size"] == "1048577" and broker_cfg["log.cleaner.backoff.ms"] == "1000"
    assert "message.max.bytes" not in broker_cfg.index and "num.io.threads" not in broker_cfg.index
    sizes = b.log_dirs[b.log_dirs["topic"] == "cap-orders"]
    assert sorted(sizes["partition"].tolist()) == [0, 1] and sizes["size_bytes"].sum() > 3000 * 300
    lag = b.consumer_lag[b.consumer_lag["group"] == "cap-group"]
    assert lag["end_offset"].sum() == 3000 and lag["lag"].sum() == 3000 - lag["committed"].sum() > 0
    fetch = b.api_versions[b.api_versions["api_name"] == "Fetch"]
    assert fetch["min_version"].item() == 0 and fetch["max_version"].item() >= 16


def test_consume_probe_old_and_new_client(filled, tmp_path):
    probe_consume(filled.bootstrap, "cap-orders", tmp_path / "b", api_version=(0, 9), seconds=10)
    probe_consume(filled.bootstrap, "cap-orders", tmp_path / "b", seconds=10)
    t = kitlib.load_bundle(tmp_path / "b").probe_throughput
    per = t.groupby("api_version")["records"].sum()
    assert per["0.9"] == 3000 and per["auto"] == 3000
    assert (t["mb_per_s"] >= 0).all() and t["bytes"].sum() > 2 * 3000 * 300


def test_codec_probe(filled, tmp_path):
    sample = tmp_path / "sample.jsonl"
    sample.write_text(
        "".join(
            json.dumps({"order": i, "status": "shipped", "customer": f"c{i % 97}", "note": "same words again " * 5})
            + "\n"
            for i in range(2000)
        )
    )
    probe_codecs(filled.bootstrap, sample, tmp_path / "b")
    t = kitlib.load_bundle(tmp_path / "b").probe_codecs.set_index("codec")
    assert set(t.index) == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert (t["records"] == 2000).all()
    # compressible JSON: every codec beats no compression on disk, gzip/zstd beat lz4/snappy
    assert t.loc["none", "ratio"] < 1.2
    for c in ("gzip", "snappy", "lz4", "zstd"):
        assert t.loc[c, "bytes_on_disk"] < t.loc["none", "bytes_on_disk"] / 2
    assert min(t.loc["gzip", "ratio"], t.loc["zstd", "ratio"]) > max(t.loc["lz4", "ratio"], t.loc["snappy", "ratio"])
