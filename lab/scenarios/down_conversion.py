"""Seed 000 in miniature: an old-protocol consumer makes a Kafka 3.9 broker down-convert.

A topic is filled by a current producer; then a consumer speaking the 0.9 protocol (Fetch v1,
message format v1) reads it, then a current consumer reads it again. JmxTool records the broker's
conversion and byte-rate MBeans throughout, the request log (DEBUG) records every Fetch with its
API version and client id, and both consumers' MB/s are probed.

    .venv/bin/python lab/scenarios/down_conversion.py OUT_DIR
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from kitlib import capture, lab


def produce(bootstrap: str, topic: str, n: int, size: int = 400) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=bootstrap)
    a.create_topics([NewTopic(topic, 1, 1)])
    a.close()
    rnd = random.Random(0)
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="clickstream-producer", linger_ms=20, batch_size=131072)
    for i in range(n):
        v = {"event": "click", "user": f"u{rnd.randint(1, 50000)}", "page": f"/p/{rnd.randint(1, 999)}", "seq": i}
        body = json.dumps(v)
        p.send(topic, key=str(i % 1000).encode(), value=(body + " " * max(0, size - len(body))).encode())
    p.flush()
    p.close()


def run(out: str | Path, records: int = 60000, probe_seconds: float = 15, work: Path | None = None) -> Path:
    out = Path(out)
    host = out / "broker-1"
    with lab.Scenario(out) as s:
        b = s.broker("dc-broker", work=work)
        produce(b.bootstrap, "clickstream", records)
        s.jmxtool(b, lab.BROKER_MBEANS, host / "jmx-broker.csv", interval_ms=1000)
        time.sleep(2)
        capture.probe_consume(
            b.bootstrap,
            "clickstream",
            out / "probes",
            api_version=(0, 9),
            seconds=probe_seconds,
            probe_id="secor-0.9-client",
        )
        time.sleep(3)
        capture.probe_consume(
            b.bootstrap, "clickstream", out / "probes", seconds=probe_seconds, probe_id="upgraded-client"
        )
        time.sleep(3)
        return s.finish(logs={"broker-1": b}, live=b)


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/down-conversion"))
