"""The down-conversion finding on real lab data and realistic request log lines (the request log's
own parsing is tested in tests/test_requests.py)."""

import json

from samples import sample

import kitlib
from kitlib.extract.requests import client_versions
from kitlib.investigations.throughput.analysis import detect_down_conversion, old_clients

JSON_LINE = (
    '[2026-11-23 00:00:10,085] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":1,'
    '"requestApiVersion":1,"correlationId":4,"clientId":"secor-0.8","requestApiKeyName":"FETCH"},"request":{},'
    '"response":{},"connection":"10.0.0.5:9092-10.0.3.17:51234-7","totalTimeMs":37.9,"requestQueueTimeMs":2.2,'
    '"localTimeMs":25.1,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.1,"sendTimeMs":10.4,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
    '{"softwareName":"unknown","softwareVersion":"unknown"},"temporaryMemoryBytes":2134628,'
    '"messageConversionsTime":12.017} (kafka.request.logger)\n'
)


def test_finding_on_the_real_lab_bundle_names_the_old_client():
    b = sample("down-conversion")
    [f] = detect_down_conversion(b)
    assert f.id == "down-conversion" and f.severity == "high"
    assert "kitlib-probe-0.9" in f.summary and "FETCH v1" in f.summary
    assert f.numbers["fetch_conversions_broker-1"] >= 60000
    assert 0 < f.numbers["share_of_fetches_converted_pct"] < 100
    files = {e["file"] for e in f.evidence}
    assert {"broker-1/jmx-broker.csv", "broker-1/kafka-request.log"} <= files
    assert all(isinstance(e["line"], int) for e in f.evidence)
    assert "log.message.format.version" in f.recommendation
    cv = client_versions(b.requests)
    assert set(cv[cv["api_name"] == "FETCH"]["api_version"]) >= {1, 12}
    json.dumps(f.to_dict())


def test_silent_on_the_healthy_bundle():
    assert detect_down_conversion(sample("healthy")) == []


def test_request_log_alone_is_enough(tmp_path):
    d = tmp_path / "b" / "broker-7"
    d.mkdir(parents=True)
    (d / "kafka-request.log").write_text(
        JSON_LINE * 3
        + JSON_LINE.replace('"requestApiVersion":1', '"requestApiVersion":13')
        .replace("secor-0.8", "new-app")
        .replace(',"temporaryMemoryBytes":2134628,"messageConversionsTime":12.017', "")
    )
    b = kitlib.load_bundle(tmp_path / "b")
    oc = old_clients(b.requests)
    assert oc["client_id"].tolist() == ["secor-0.8"] and oc["requests"].tolist() == [3]
    [f] = detect_down_conversion(b)
    assert f.numbers["share_of_fetches_converted_pct"] == 75.0
    assert f.evidence[0]["file"] == "broker-7/kafka-request.log" and f.evidence[0]["line"] == 1
