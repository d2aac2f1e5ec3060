"""A healthy broker run, for checking that every detector stays silent: current clients only
(no down-conversion), a compacted topic with a few duplicates cleaned in one pass by the default
dedupe buffer, ordinary produce/consume, JMX throughout, and a live capture with no lag.

    .venv/bin/python lab/scenarios/healthy.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import capture, lab


def run(out: str | Path, records: int = 20000, work: Path | None = None) -> Path:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host = out / "broker-1"
    host.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker(
            "healthy-broker", work=work, settings={"log.cleaner.dedupe.buffer.size": 33554432}, request_log="WARN"
        )
        s.jmxtool(b, lab.BROKER_MBEANS, host / "jmx-broker.csv", interval_ms=1000)
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics(
            [
                NewTopic("payments", 3, 1),
                NewTopic(
                    "customer-profiles",
                    1,
                    1,
                    topic_configs={
                        "cleanup.policy": "compact",
                        "segment.bytes": "1048576",
                        "min.cleanable.dirty.ratio": "0.1",
                    },
                ),
            ]
        )
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="payments-api", linger_ms=10)
        for i in range(records):
            p.send("payments", key=str(i % 500).encode(), value=(b'{"payment":%d,"ok":true}' % i).ljust(200))
            p.send("customer-profiles", key=f"cust-{i % 2000}".encode(), value=b"profile" * 30)
        p.flush()
        p.close()
        c = KafkaConsumer(
            "payments",
            bootstrap_servers=b.bootstrap,
            group_id="ledger",
            client_id="ledger-consumer",
            auto_offset_reset="earliest",
            consumer_timeout_ms=4000,
        )
        n = sum(1 for _ in c)
        c.commit()
        c.close()
        assert n == records, n
        capture.probe_consume(b.bootstrap, "payments", out / "probes", seconds=10, probe_id="ledger-replay")
        time.sleep(12)  # let the cleaner take its turn on customer-profiles
        a.close()
        return s.finish(logs={"broker-1": b}, live=b)


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/healthy"))
