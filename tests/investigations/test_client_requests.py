"""The request path: auth_failures from the selector's and the authorizer's lines, and the
auth-failures, quota-throttling and request-saturation detectors on positive and negative input.

Broker lines are constructed from Kafka's source wording (tests/fixtures/clients/SOURCES.md)."""

from pathlib import Path

import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib.bundle import Bundle
from kitlib.formats.logs import parse_bytes
from kitlib.investigations.client_requests import analysis, auth

FIX = Path(__file__).parent.parent / "fixtures" / "clients"


@pytest.fixture(scope="module")
def auth_bundle():
    return kitlib.load_bundle(FIX / "auth")


def rows(df, cols):
    return [tuple(None if pd.isna(v) else v for v in r) for r in df[cols].itertuples(index=False)]


def test_auth_failures_rows(auth_bundle):
    af = auth_bundle.auth_failures.sort_values(["file", "line"])
    assert rows(
        af,
        ["file", "line", "kind", "principal", "address", "listener", "mechanism", "operation", "resource", "request"],
    ) == [
        (
            "broker-1/kafka-authorizer.log",
            1,
            "authorization",
            "User:reporting",
            "127.0.0.1",
            None,
            None,
            "READ",
            "Topic:LITERAL:payments",
            "Fetch",
        ),
        (
            "broker-1/kafka-authorizer.log",
            2,
            "authorization",
            "User:reporting",
            "127.0.0.1",
            None,
            None,
            "Describe",
            "Group:LITERAL:reports",
            "FindCoordinator",
        ),
        ("broker-1/server.log", 1, "authentication", None, "127.0.0.1", "127.0.0.1:9094", "PLAIN", None, None, None),
        ("broker-1/server.log", 2, "authentication", None, "127.0.0.1", "127.0.0.1:9094", "PLAIN", None, None, None),
        (
            "broker-1/server.log",
            3,
            "authentication",
            None,
            "10.20.0.8",
            "127.0.0.1:9095",
            "SCRAM-SHA-512",
            None,
            None,
            None,
        ),
        ("broker-1/server.log", 4, "ssl_handshake", None, "10.20.0.9", "127.0.0.1:9093", None, None, None, None),
        ("broker-1/server.log", 5, "reauthentication", None, "127.0.0.1", "127.0.0.1:9094", "PLAIN", None, None, None),
    ]
    assert af.loc[af["line"] == 4, "reason"].iloc[0] == "SSL handshake failed"


def test_auth_failures_from_java_client_lines_keep_no_secret():
    text = (
        b"[2026-05-04 10:00:05,100] ERROR [Producer clientId=billing-writer] Connection to node -1 "
        b"(localhost/127.0.0.1:9094) failed authentication due to: Authentication failed: Invalid username or "
        b"password (org.apache.kafka.clients.NetworkClient)\n"
        b"[2026-05-04 10:00:05,200] INFO ProducerConfig values: \n\tsasl.jaas.config = "
        b'org.apache.kafka.common.security.plain.PlainLoginModule required username="billing" '
        b'password="hunter2";\n (org.apache.kafka.clients.producer.ProducerConfig)\n'
    )
    ev, _ = parse_bytes(text, host="app-1", rel="app-1/producer.log")
    af = auth.build(ev)
    assert rows(af, ["line", "kind", "address", "mechanism", "reason"]) == [
        (1, "client", "127.0.0.1:9094", "PLAIN", "Authentication failed: Invalid username or password")
    ]
    assert "hunter2" not in af.to_csv()


def test_auth_failures_finding(auth_bundle):
    found = analysis.auth_failures(auth_bundle)
    assert len(found) == 1
    f = found[0]
    assert f.numbers["failures"] == 7
    assert f.numbers["who"] == "10.20.0.8, 10.20.0.9, 127.0.0.1, User:reporting"
    assert "127.0.0.1 2x since 10:00:05" in f.summary
    assert "kafka-acls" in f.recommendation and "truststore" in f.recommendation
    assert analysis.auth_failures(Bundle("x", {})) == []


def test_auth_failures_on_an_ingest_output_reads_its_columns_and_the_shown_rows_text(auth_bundle, tmp_path):
    """On an ingest output the detector reads auth_failures' counted columns only, and the text
    of the rows it shows; the finding (evidence and extent too) is the one the whole table gives."""
    from kitlib.findings import evidence_extent

    kitlib.ingest(FIX / "auth", tmp_path / "kit", progress=False, derive=True)  # its tables written
    stored = kitlib.load_bundle(tmp_path / "kit")
    got, want = analysis.auth_failures(stored), analysis.auth_failures(auth_bundle)
    assert [f.to_dict() for f in got] == [f.to_dict() for f in want]
    assert len(got[0].evidence) == 7 and {e["text"] != "" for e in got[0].evidence} == {True}
    assert evidence_extent(got[0], stored) == evidence_extent(want[0], auth_bundle)
    assert "auth_failures" not in stored.tables  # neither the detector nor the extent read it whole


def requests_frame(throttle, client="etl-loader", host="broker-1", queue=None, total=None, n=None):
    n = n or len(throttle)
    return pd.DataFrame(
        {
            "ts": pd.date_range("2026-05-04 10:00", periods=n, freq="s", tz="UTC"),
            "api_name": "PRODUCE",
            "client_id": client,
            "client_address": "127.0.0.1:50000",
            "principal": "User:ANONYMOUS",
            "total_ms": total if total is not None else [5.0] * n,
            "request_queue_ms": queue if queue is not None else [0.2] * n,
            "local_ms": 1.0,
            "remote_ms": 0.0,
            "throttle_ms": throttle,
            "host": host,
            "file": f"{host}/kafka-request.log",
            "line": range(1, n + 1),
        }
    )


def test_quota_throttling_names_the_client_and_the_quota():
    req = pd.concat([requests_frame([0, 0, 850, 1200, 990]), requests_frame([0.0] * 5, client="fast-lane")])
    cfg = pd.DataFrame(
        {
            "ts": pd.NaT,
            "source": "live",
            "scope": "clients",
            "entity": "etl-loader",
            "key": ["producer_byte_rate"],
            "value": ["1048576"],
            "host": "live",
            "file": "live/c.jsonl",
            "line": [4],
        }
    )
    found = analysis.quota_throttling(Bundle("x", {"requests": req, "configs": cfg}))
    assert len(found) == 1
    f = found[0]
    assert f.numbers["clients"] == "etl-loader" and f.numbers["throttled_requests"] == 3
    assert f.numbers["max_throttle_ms"] == 1200.0
    assert f.numbers["quota_in_force"] == "etl-loader producer_byte_rate=1048576"
    assert "fast-lane" not in f.summary
    assert {e["line"] for e in f.evidence if e["file"].endswith("kafka-request.log")} == {3, 4, 5}


def test_quota_throttling_from_metrics_alone():
    m = pd.DataFrame(
        {
            "ts": pd.date_range("2026-05-04 10:00", periods=3, freq="min", tz="UTC"),
            "mbean": "kafka.server:type=Produce,client-id=etl-loader",
            "attribute": "throttle-time",
            "value": [0.0, 410.0, 388.0],
            "name": None,
            "client_id": "etl-loader",
            "host": "broker-1",
            "file": "jmx/b1.csv",
            "line": [2, 3, 4],
        }
    )
    found = analysis.quota_throttling(Bundle("x", {"metrics": m}))
    assert found and found[0].numbers["clients"] == "etl-loader" and found[0].numbers["max_throttle_ms"] == 410.0


def test_quota_throttling_silent_without_throttling():
    assert analysis.quota_throttling(Bundle("x", {"requests": requests_frame([0.0] * 20)})) == []
    # one throttled request is a blip, not a quota problem
    assert analysis.quota_throttling(Bundle("x", {"requests": requests_frame([0.0] * 19 + [30.0])})) == []


def idle_metrics(values, name="RequestHandlerAvgIdlePercent", host="broker-1"):
    mbean = (
        "kafka.server:type=KafkaRequestHandlerPool,name="
        if name.startswith("Request")
        else "kafka.network:type=SocketServer,name="
    ) + name
    return pd.DataFrame(
        {
            "ts": pd.date_range("2026-05-04 10:00", periods=len(values), freq="min", tz="UTC"),
            "mbean": mbean,
            "attribute": "OneMinuteRate" if name.startswith("Request") else "Value",
            "value": values,
            "name": name,
            "host": host,
            "file": f"jmx/{host}.csv",
            "line": range(2, len(values) + 2),
        }
    )


def test_request_saturation_from_idle_metrics():
    m = pd.concat(
        [idle_metrics([0.8, 0.21, 0.12, 0.09]), idle_metrics([0.7, 0.72, 0.69], "NetworkProcessorAvgIdlePercent")]
    )
    found = analysis.request_saturation(Bundle("x", {"metrics": m}))
    assert len(found) == 1
    f = found[0]
    assert f.severity == "high" and f.numbers["hosts"] == "broker-1"
    assert f.numbers["min_handler_idle"] == 0.09 and f.numbers["min_network_idle"] is None
    assert "num.io.threads" in f.recommendation and "num.network.threads" not in f.recommendation


def test_request_saturation_from_queue_times_and_a_slow_peer():
    slow = requests_frame([0.0] * 30, host="broker-2", queue=[250.0] * 10 + [1.0] * 20, total=[300.0] * 30)
    fast = requests_frame([0.0] * 30, host="broker-1")
    found = analysis.request_saturation(Bundle("x", {"requests": pd.concat([fast, slow])}))
    f = found[0]
    assert f.numbers["hosts"] == "broker-2"
    assert "broker-2: 33% of 30 requests waited >= 100 ms" in f.summary and "3x its peers" in f.summary


def test_request_saturation_silent_on_idle_brokers():
    m = pd.concat([idle_metrics([0.9, 0.85, 0.95]), idle_metrics([0.7, 0.25, 0.8], "NetworkProcessorAvgIdlePercent")])
    req = pd.concat([requests_frame([0.0] * 30), requests_frame([0.0] * 30, host="broker-2")])
    assert analysis.request_saturation(Bundle("x", {"metrics": m, "requests": req})) == []


def test_quota_changes_from_controller_and_zookeeper_lines():
    text = (
        b"[2026-05-04 10:00:01,000] INFO [QuorumController id=1] Replayed ClientQuotaRecord for ClientQuotaEntity("
        b"entries={client-id=etl-loader}) setting producer_byte_rate to 1048576.0. "
        b"(org.apache.kafka.controller.ClientQuotaControlManager)\n"
        b"[2026-05-04 10:05:00,000] INFO [QuorumController id=1] Replayed ClientQuotaRecord for ClientQuotaEntity("
        b"entries={user=alice}) removing consumer_byte_rate. (org.apache.kafka.controller.ClientQuotaControlManager)\n"
        b"[2026-05-04 10:06:00,000] INFO Processing override for entityPath: clients/legacy-app with config: "
        b"Map(producer_byte_rate -> 2048, consumer_byte_rate -> 4096) (kafka.server.DynamicConfigManager)\n"
    )
    ev, _ = parse_bytes(text, host="controller-1", rel="controller-1/controller.log")
    from kitlib.investigations.client_requests import quotas

    q = quotas.build(ev)
    assert rows(q, ["line", "entity", "client_id", "key", "value", "removed"]) == [
        (1, "client-id=etl-loader", "etl-loader", "producer_byte_rate", 1048576.0, False),
        (2, "user=alice", None, "consumer_byte_rate", None, True),
        (3, "clients/legacy-app", "legacy-app", "producer_byte_rate", 2048.0, False),
        (3, "clients/legacy-app", "legacy-app", "consumer_byte_rate", 4096.0, False),
    ]
    inforce = analysis.quotas_in_force(pd.DataFrame(), q)
    assert rows(inforce, ["entity", "key", "value"]) == [
        ("client-id=etl-loader", "producer_byte_rate", "1048576"),
        ("clients/legacy-app", "producer_byte_rate", "2048"),
        ("clients/legacy-app", "consumer_byte_rate", "4096"),
    ]


@pytest.mark.slow
def test_quota_throttling_on_the_real_lab_bundle():
    b = sample("quota-throttling")
    (f,) = analysis.quota_throttling(b)
    assert f.numbers["clients"] == "bulk-loader"
    assert f.numbers["quota_in_force"] == "client-id=bulk-loader producer_byte_rate=65536"


@pytest.mark.parametrize(
    "bundle, fid, key, name",
    [
        ("auth-failures", "auth-failures", "who", "127.0.0.1, User:reporting"),
        ("request-saturation", "request-saturation", "hosts", "broker-2"),
    ],
)
def test_real_lab_bundles_name_who(bundle, fid, key, name):
    found = kitlib.triage(sample(bundle), investigations=["client_requests"]).findings
    assert [(f.id, f.numbers[key]) for f in found] == [(fid, name)]


def test_combined_kraft_nodes_are_not_read_as_saturated():
    """A broker+controller node's handler meter sums two pools (about 2.0 idle): 1.95 is a busy but
    healthy broker pool; 1.05 is saturation only when requests are seen waiting on that node."""
    healthy = idle_metrics([2.0, 1.97, 1.95, 1.99])
    assert analysis.request_saturation(Bundle("x", {"metrics": healthy})) == []
    busy = idle_metrics([2.0, 1.2, 1.1, 1.05])
    # the meter mixes the broker's and the controller's planes: alone it is not enough there...
    assert analysis.request_saturation(Bundle("x", {"metrics": busy})) == []
    # ...with requests queueing on that broker it is
    queued = requests_frame([0.0] * 30, queue=[250.0] * 10 + [1.0] * 20)
    (f,) = analysis.request_saturation(Bundle("x", {"metrics": busy, "requests": queued}))
    assert f.numbers["min_handler_idle"] == 0.05 and f.numbers["hosts"] == "broker-1"


@pytest.mark.parametrize(
    "bundle", ["healthy-cluster", "gc-pressure", "isr-flapping", "controller-failover", "log-dir-failure"]
)
@pytest.mark.slow
def test_request_saturation_silent_on_the_lab_cluster_bundles(bundle):
    """Three combined broker+controller nodes under other incidents: no request queueing, no finding."""
    b = sample(bundle)
    assert analysis.request_saturation(b) == []


def test_the_auth_failures_sample_names_the_denied_operation():
    """The authorizer's denial reads in the finding as logged (the label once read as an HTTP
    Authorization header to the redaction, which masked 'Denied')."""
    (f,) = kitlib.triage(sample("auth-failures"), investigations=["client_requests"]).findings
    assert "User:reporting 3x since 12:19:07 (authorizer: Denied DESCRIBE on Topic:LITERAL:sales)" in f.summary
    assert "[redacted]" not in f.summary
