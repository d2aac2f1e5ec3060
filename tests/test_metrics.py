"""JMX dumps into the metrics table: JmxTool CSV shapes, malformed rows, counters to rates."""

import pandas as pd
from samples import sample

import kitlib
from kitlib.formats import detect
from kitlib.metrics import prometheus_name, rate, select, split_mbean

B = "kafka.server:type=BrokerTopicMetrics,name=FetchMessageConversionsPerSec"
R = "kafka.network:type=RequestMetrics,name=MessageConversionsTimeMs,request=Fetch"
HEADER = (
    f'"time","{R}:99thPercentile","{R}:Count","{R}:Mean","{B}:Count","{B}:EventType","{B}:MeanRate",'
    f'"{B}:OneMinuteRate","{B}:RateUnit"\n'
)
ROWS = (
    "1795391000000,0.0,0,0.0,0,messages,0.0,0.0,SECONDS\n"
    "1795391001000,12.5,4,3.1,29079,messages,14000.2,5815.8,SECONDS\n"
    "1795391002000,15.1,9,3.4,61128,messages,19874.0,11650.1,SECONDS\n"
)


def load(tmp_path, text, name="jmx.csv", host="broker-1"):
    d = tmp_path / "b" / host
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    return kitlib.load_bundle(tmp_path / "b")


def test_jmxtool_csv_long_form_with_keys_and_text(tmp_path):
    assert detect((HEADER + ROWS).encode()).name == "jmxtool"
    b = load(tmp_path, HEADER + ROWS)
    m = b.metrics
    assert len(m) == 3 * 8
    c = select(m, "FetchMessageConversionsPerSec", "Count")
    assert c["value"].tolist() == [0, 29079, 61128] and c["line"].tolist() == [2, 3, 4]
    assert c["ts"].iloc[0] == pd.Timestamp(1795391000000, unit="ms", tz="UTC")
    unit = select(m, "FetchMessageConversionsPerSec", "RateUnit")
    assert unit["value"].isna().all() and unit["text"].tolist() == ["SECONDS"] * 3
    t = select(m, "MessageConversionsTimeMs", "99thPercentile")
    assert t["request"].unique().tolist() == ["Fetch"] and t["domain"].unique().tolist() == ["kafka.network"]
    assert set(m["source"]) == {"jmxtool"} and set(m["host"]) == {"broker-1"}


def test_date_format_time_and_timezone(tmp_path):
    rows = (
        ROWS.replace("1795391000000", "2026-11-23 00:00:00")
        .replace("1795391001000", "2026-11-23 00:00:01")
        .replace("1795391002000", "2026-11-23 00:00:02")
    )
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "bundle.yaml").write_text("tz: Europe/Berlin\n")
    b = load(tmp_path, HEADER + rows)
    assert b.metrics["ts"].min() == pd.Timestamp("2026-11-22 23:00:00", tz="UTC")


def test_malformed_rows_are_kept_and_named(tmp_path):
    text = HEADER + ROWS + "1795391003000,1.0,3\n" + "1795391004000,0.0,0,0.0,61128,messages,0.0,0.0,SECONDS\n"
    b = load(tmp_path, text)
    f = b.files.iloc[0]
    assert f["lines"] == 6 and f["parsed"] == 5 and f["unparsed"] == 1
    assert "jmx.csv line 5" in f["error"] and "3 fields where the header has 9" in f["error"]
    assert b.unparsed["line"].tolist() == [5]
    assert select(b.metrics, "FetchMessageConversionsPerSec", "Count")["line"].tolist() == [2, 3, 4, 6]


def test_rate_handles_counter_reset():
    m = pd.DataFrame(
        {
            "ts": pd.to_datetime([0, 10, 20, 30, 40], unit="s", utc=True),
            "host": "b1",
            "mbean": B,
            "attribute": "Count",
            "value": [100, 200, 400, 30, 90],
        }
    )
    r = rate(m)
    assert r["rate"].tolist() == [10.0, 20.0, 3.0, 6.0]
    assert (r["rate"] >= 0).all()


def test_mbean_names_and_prometheus_mapping_round_trip():
    k = split_mbean('kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count,logDirectory="/var/lib/kafka"')
    assert k["type"] == "LogCleanerManager" and k["props"] == "logDirectory=/var/lib/kafka"
    assert (
        split_mbean("kafka.producer:type=producer-metrics,client-id=orders-producer")["client_id"] == "orders-producer"
    )
    from kitlib.metrics import mbean_from_prometheus

    name = prometheus_name(B, "Count")
    assert name == "kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count"
    assert mbean_from_prometheus(name, {}) == (B, "Count")
    bean, attr = mbean_from_prometheus(
        "kafka_network_requestmetrics_messageconversionstimems", {"request": "Fetch", "quantile": "0.99"}
    )
    assert bean == R and attr == "99thPercentile"


def test_real_lab_dump_parses(tmp_path):
    b = sample("down-conversion")
    f = b.files.set_index("file").loc["broker-1/jmx-broker.csv"]
    assert f["format"] == "jmxtool" and f["unparsed"] == 0 and f["lines"] == f["parsed"] > 5
    assert select(b.metrics, "FetchMessageConversionsPerSec", "Count")["value"].max() > 0


PROM = """# HELP kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count Attribute exposed for management
# TYPE kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count counter
kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count 120.0 1795391000000
kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count{topic="clicks",} 120.0 1795391000000
kafka_network_requestmetrics_messageconversionstimems{request="Fetch",quantile="0.99",} 15.1 1795391000000
# scrape 2026-11-23T00:01:00Z
kafka_server_brokertopicmetrics_fetchmessageconversionspersec_count 420.0
jvm_threads_current 81.0
"""


def test_prometheus_scrapes_map_to_the_same_mbeans(tmp_path):
    b = load(tmp_path, PROM, name="broker-1.prom")
    assert b.files.iloc[0]["format"] == "prometheus" and b.files.iloc[0]["unparsed"] == 0
    c = select(b.metrics, "FetchMessageConversionsPerSec", "Count", topic=None).sort_values("ts")
    assert c["mbean"].unique().tolist() == [B]
    assert c["value"].tolist() == [120.0, 420.0] and c["line"].tolist() == [3, 7]
    assert c["ts"].tolist() == [pd.Timestamp(1795391000000, unit="ms", tz="UTC"), pd.Timestamp("2026-11-23T00:01:00Z")]
    q = select(b.metrics, "MessageConversionsTimeMs", "99thPercentile")
    assert q["request"].tolist() == ["Fetch"] and q["value"].tolist() == [15.1]
    assert select(b.metrics, topic="clicks")["value"].tolist() == [120.0]


def test_prometheus_garbage_line_is_reported(tmp_path):
    b = load(tmp_path, PROM + "this is { not a sample\n", name="x.prom")
    assert b.unparsed["line"].tolist() == [9] and "line 9" in b.files.iloc[0]["error"]


JOLOKIA = """[
  {"request": {"mbean": "kafka.server:type=BrokerTopicMetrics,name=FetchMessageConversionsPerSec", "type": "read"},
   "value": {"Count": 61128, "OneMinuteRate": 11650.1, "RateUnit": "SECONDS"}, "timestamp": 1795391002, "status": 200},
  {"request": {"mbean": "kafka.network:type=RequestMetrics,name=*,request=Fetch", "type": "read"},
   "value": {"kafka.network:type=RequestMetrics,name=MessageConversionsTimeMs,request=Fetch": {"Mean": 3.4, "Count": 9}},
   "timestamp": 1795391002, "status": 200}
]
"""


def test_jolokia_bulk_and_wildcard(tmp_path):
    b = load(tmp_path, JOLOKIA, name="jolokia.json")
    f = b.files.iloc[0]
    assert f["format"] == "jolokia" and f["lines"] == f["parsed"] == 7
    m = b.metrics
    assert select(m, "FetchMessageConversionsPerSec", "Count")["value"].tolist() == [61128]
    assert select(m, "FetchMessageConversionsPerSec", "RateUnit")["text"].tolist() == ["SECONDS"]
    assert select(m, "MessageConversionsTimeMs", "Mean")["request"].tolist() == ["Fetch"]
    assert select(m, "FetchMessageConversionsPerSec", "Count")["line"].tolist() == [2]


def test_jolokia_truncated_json_is_a_clear_error(tmp_path):
    b = load(tmp_path, JOLOKIA[:300], name="jolokia.json")
    f = b.files.iloc[0]
    assert "invalid JSON" in f["error"] and "jolokia.json line" in f["error"]
    assert f["unparsed"] == f["lines"] and len(b.metrics) == 0
