"""Seed 001 in miniature: a Connect source task whose producer sends tiny batches cannot drain
its outstanding records within offset.flush.timeout.ms, so offset commits fail; then the
connector is reconfigured with a large producer.override.batch.size and the failures stop.

A Connect 3.9.1 standalone worker runs FileStreamSource on a large file. Period 1 ("before"):
producer.override.batch.size=16, max.in.flight 1, offset.flush.timeout.ms short. Period 2
("after"): the connector config is replaced through the REST API with batch.size=327680 (the
seed's value). JmxTool records the task and producer metrics of each period.

    .venv/bin/python lab/scenarios/connect_offsets.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

from kitlib import lab

NAME = "orders-source"


def connector(file: Path, batch_size: int) -> dict:
    return {
        "name": NAME,
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(file),
        "topic": "orders-cdc",
        "batch.size": "2000",
        "producer.override.batch.size": str(batch_size),
        "producer.override.linger.ms": "0",
        "producer.override.max.in.flight.requests.per.connection": "1",
        "producer.override.client.id": f"{NAME}-producer",
    }


def mbeans() -> list[str]:
    return [
        f"kafka.connect:type=source-task-metrics,connector={NAME},task=0",
        f"kafka.connect:type=connector-task-metrics,connector={NAME},task=0",
        f"kafka.producer:type=producer-metrics,client-id={NAME}-producer",
    ]


def _put_config(rest_port: int, cfg: dict) -> None:
    body = json.dumps({k: v for k, v in cfg.items() if k != "name"}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{rest_port}/connectors/{NAME}/config",
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        r.read()


def run(
    out: str | Path, lines: int = 400_000, period_s: float = 20, flush_timeout_ms: int = 1, work: Path | None = None
) -> Path:
    out = Path(out)
    host = out / "connect-1"
    host.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker("connect-broker", work=work, request_log="WARN")
        src_dir = Path(b.work) / "source"
        src_dir.mkdir(exist_ok=True)
        src = src_dir / "orders.jsonl"
        with open(src, "w") as f:
            for i in range(lines):
                f.write(
                    json.dumps(
                        {
                            "order_id": i,
                            "customer": f"c{i % 9973}",
                            "status": "paid",
                            "amount": i % 1000 / 10,
                            "note": "binlog row image",
                        }
                    )
                    + "\n"
                )
        c = s.connect(
            b,
            [connector(src, 16)],
            work=(Path(work).parent / "connect-1") if work else None,
            flush_interval_ms=1000,
            flush_timeout_ms=flush_timeout_ms,
            task_log_level="DEBUG",
        )
        time.sleep(3)
        jmx = s.jmxtool(c, mbeans(), host / "jmx-connect-before.csv", interval_ms=2000)
        time.sleep(period_s)
        lab.finish_jmxtool(jmx, host / "jmx-connect-before.csv")
        # the fix from the seed: larger batches (source file appended so the task has work again)
        with open(src, "a") as f:
            for i in range(lines, 2 * lines):
                f.write(
                    json.dumps(
                        {
                            "order_id": i,
                            "customer": f"c{i % 9973}",
                            "status": "paid",
                            "amount": i % 1000 / 10,
                            "note": "binlog row image",
                        }
                    )
                    + "\n"
                )
        _put_config(c.port, connector(src, 327680))
        time.sleep(8)
        jmx = s.jmxtool(c, mbeans(), host / "jmx-connect-after.csv", interval_ms=2000)
        time.sleep(period_s)
        lab.finish_jmxtool(jmx, host / "jmx-connect-after.csv")
        return s.finish(logs={"connect-1": c, "broker-1": (b, ("server.log",))})


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/connect-offsets"))
