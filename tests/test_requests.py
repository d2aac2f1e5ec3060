"""Request log lines (``kafka.request.logger``, the JSON form and the older text form) into the
requests table: API, version, client, address and the time columns."""

from kitlib.extract.requests import build
from kitlib.formats.logs import parse_bytes

JSON_LINE = (
    '[2026-11-23 00:00:10,085] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":1,'
    '"requestApiVersion":1,"correlationId":4,"clientId":"secor-0.8","requestApiKeyName":"FETCH"},"request":{},'
    '"response":{},"connection":"10.0.0.5:9092-10.0.3.17:51234-7","totalTimeMs":37.9,"requestQueueTimeMs":2.2,'
    '"localTimeMs":25.1,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.1,"sendTimeMs":10.4,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
    '{"softwareName":"unknown","softwareVersion":"unknown"},"temporaryMemoryBytes":2134628,'
    '"messageConversionsTime":12.017} (kafka.request.logger)\n'
)
TEXT_LINE = (
    "[2019-06-01 10:00:00,001] DEBUG Completed request:RequestHeader(apiKey=FETCH, apiVersion=2, clientId=old-app, "
    "correlationId=11) -- {replica_id=-1,max_wait_time=500},response:{throttle_time_ms=0} from connection "
    "10.0.0.5:9092-10.0.3.18:40000-3;totalTime:5.1,requestQueueTime:0.1,localTime:4.0,remoteTime:0.0,"
    "throttleTime:0,responseQueueTime:0.1,sendTime:0.9,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT,messageConversionsTime:3.5 (kafka.request.logger)\n"
)


def test_request_log_json_and_old_text_forms():
    ev, _ = parse_bytes((JSON_LINE + TEXT_LINE).encode())
    r = build(ev)
    j = r.iloc[0]
    assert (j["api_name"], j["api_version"], j["client_id"], j["client_address"]) == (
        "FETCH",
        1,
        "secor-0.8",
        "10.0.3.17:51234",
    )
    assert j["conversion_ms"] == 12.017 and j["temporary_memory_bytes"] == 2134628
    t = r.iloc[1]
    assert t["client_address"] == "10.0.3.18:40000" and t["total_ms"] == 5.1 and t["conversion_ms"] == 3.5
