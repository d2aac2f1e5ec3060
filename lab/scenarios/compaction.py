"""Seed 003 in miniature: a compacted topic whose dirty section is far bigger than the dedupe
buffer, so the cleaner needs several passes and the first passes over a first publication
reclaim nothing.

The broker's dedupe buffer is set to its minimum (1 MiB + 1 byte: ~39k keys a pass at the 0.9
load factor). A topic (delete policy first, so nothing is cleaned while it fills) receives
KEYS distinct keys twice (a publication, then a republication with the same keys); it is then
switched to compact with min.cleanable.dirty.ratio=0.01 and the cleaner's statistics blocks are
awaited in log-cleaner.log.

    .venv/bin/python lab/scenarios/compaction.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import lab

DEDUPE = 1048577
MBEANS = [
    "kafka.log:type=LogCleaner,name=max-buffer-utilization-percent",
    "kafka.log:type=LogCleaner,name=cleaner-recopy-percent",
    "kafka.log:type=LogCleaner,name=max-clean-time-secs",
    "kafka.log:type=LogCleanerManager,name=max-dirty-percent",
]


def run(
    out: str | Path,
    keys: int = 120_000,
    value_size: int = 100,
    min_runs: int = 4,
    timeout: float = 150,
    work: Path | None = None,
) -> Path:
    from kafka import KafkaProducer
    from kafka.admin import (
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        NewTopic,
    )

    out = Path(out)
    host = out / "broker-1"
    host.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker(
            "compaction-broker",
            work=work,
            settings={
                "log.cleaner.dedupe.buffer.size": DEDUPE,
                "log.cleaner.threads": 1,
                "log.cleaner.backoff.ms": 1000,
            },
        )
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics(
            [NewTopic("tickets", 1, 1, topic_configs={"cleanup.policy": "delete", "segment.bytes": "1048576"})]
        )
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="ticket-publisher", linger_ms=20, batch_size=262144)
        pad = b"x" * value_size
        for generation in (b"v1", b"v2"):
            for k in range(keys):
                p.send("tickets", key=f"ticket-{k}".encode(), value=generation + pad)
            p.flush()
        p.close()
        s.jmxtool(b, MBEANS, host / "jmx-cleaner.csv", interval_ms=2000)
        a.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    "tickets",
                    configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
                )
            ]
        )
        log = Path(b.logs) / "log-cleaner.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = lab.whole_log(log)  # with what log4j's hourly roll moved aside
            if text.count("cleaned log tickets-0") >= min_runs:
                break
            time.sleep(1)
        time.sleep(2)
        a.close()
        return s.finish(logs={"broker-1": b}, live=b)


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/compaction"))
