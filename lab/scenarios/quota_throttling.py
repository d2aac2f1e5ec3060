"""Quota throttling: client-id ``bulk-loader`` has a produce quota of 64 KiB/s (set with
kafka-configs, the ``kafka.admin.ConfigCommand`` tool class) and pushes far more; the broker
delays its responses, so every Produce response in kafka-request.log carries throttleTimeMs > 0,
the per-client quota MBean ``kafka.server:type=Produce,client-id=bulk-loader`` shows
throttle-time, and kafka-python logs each throttled response. ``web-api``, without a quota,
produces alongside at a modest rate and is never throttled.

    .venv/bin/python lab/scenarios/quota_throttling.py OUT_DIR
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

TOPIC = "clickstream-raw"
CLIENT_ID = "bulk-loader"
RATE = 65536  # producer_byte_rate, bytes/s
QUOTA_MBEANS = ["kafka.server:type=Produce,*", "kafka.network:type=RequestMetrics,name=ThrottleTimeMs,request=Produce"]


def _produce(bootstrap: str, client_id: str, seconds: float, pause: float, counts: dict) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, linger_ms=20, batch_size=65536)
    value = b'{"event":"page_view","pad":"' + b"x" * 980 + b'"}'
    t0, n = time.monotonic(), 0
    while time.monotonic() - t0 < seconds:
        p.send(TOPIC, value)
        n += 1
        if pause:
            time.sleep(pause)
        elif n % 200 == 0:
            p.flush()  # keep the backlog bounded: the client waits on the throttled broker
    p.flush()
    p.close()
    counts[client_id] = n


def run(out: str | Path, seconds: float = 40, work: Path | None = None) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host, clients = out / "broker-1", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker("quota-broker", work=work, request_log="DEBUG")
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, 3, 1)])
        a.close()
        quota_out = lab.set_client_quota(b, CLIENT_ID, producer_byte_rate=RATE)
        counts: dict[str, int] = {}
        with labclients.client_log(clients / "loader.log") as app:
            app.info("kafka-configs: %s", quota_out)
            threads = [
                threading.Thread(target=_produce, name=f"producer-{c}", args=(b.bootstrap, c, seconds, pause, counts))
                for c, pause in ((CLIENT_ID, 0.0), ("web-api", 0.05))
            ]
            for t in threads:
                t.start()
            time.sleep(3)  # the per-client quota MBeans exist once the clients have produced
            jmx = s.jmxtool(b, lab.BROKER_MBEANS + QUOTA_MBEANS, host / "jmx-broker.csv")
            for t in threads:
                t.join()
            app.info("records sent: %s", counts)
        time.sleep(2)
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        s.finish(logs={"broker-1": b}, hosts={"clients": "clients"})
    lab.write_client_provenance(out, "a producer held to its byte-rate quota", "quota_throttling.py", BODY, EVIDENCE)
    return out


BODY = f"""
- Client quota set with kafka-configs before any traffic: `--alter --add-config
  producer_byte_rate={RATE} --entity-type clients --entity-name {CLIENT_ID}` (64 KiB/s).
- `{CLIENT_ID}` (kafka-python producer, ~1 KB records, as fast as it can, 40 s) on topic `{TOPIC}`
  (3 partitions) is throttled for the whole run; `web-api` (no quota, ~20 records/s) alongside is
  not.
- `broker-1/`: server.log, kafka-request.log (request logger at DEBUG: every Produce with its
  client id and `throttleTimeMs`, both in the response and in the timing fields), controller and
  state-change logs, `jmx-broker.csv` (JmxTool, 1 s, started 3 s into the run once the
  per-client MBeans exist) with the byte-rate MBeans, the quota MBeans `kafka.server:type=Produce,
  client-id=...` (throttle-time, byte-rate) and RequestMetrics ThrottleTimeMs for Produce.
- `clients/loader.log`: the application's own log (Python `logging`, kafka-python at INFO, UTC),
  with kafka-python's warning for every throttled response.
"""
EVIDENCE = [
    lab.LineEvidence(
        f"Produce responses to `{CLIENT_ID}` (throttleTimeMs in each)",
        "broker-1/kafka-request.log*",
        f'"clientId":"{CLIENT_ID}","requestApiKeyName":"PRODUCE"',
    ),
    lab.LineEvidence("client: throttled responses", "clients/*.log", "throttled by broker"),
    lab.LineEvidence(
        "quota MBean columns in the JMX CSV (header)", "broker-1/jmx-broker.csv", f"client-id={CLIENT_ID}"
    ),
]


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/quota-throttling"))
