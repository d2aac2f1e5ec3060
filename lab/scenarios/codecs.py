"""Seed 002 in miniature: the same payload sample produced with none, gzip, snappy, lz4 and
zstd against a real broker, recording producer MB/s, bytes on disk and compression ratio.

The sample (one JSON order event per line, the shape CDC pipelines carry) is written into the
bundle so the compression notebook can also measure codecs offline on exactly the same records.

    .venv/bin/python lab/scenarios/codecs.py OUT_DIR
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from kitlib import capture, lab


def write_sample(path: Path, n: int = 5000, seed: int = 2) -> Path:
    """Realistic order events: repeated field names and enum values, varying ids and amounts."""
    rnd = random.Random(seed)
    statuses = ["created", "paid", "packed", "shipped", "delivered", "refunded"]
    with open(path, "w") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "order_id": 9_000_000 + i,
                        "customer_id": rnd.randint(1, 250_000),
                        "status": rnd.choice(statuses),
                        "currency": "EUR",
                        "amount": round(rnd.uniform(3, 900), 2),
                        "items": [
                            {"sku": f"SKU-{rnd.randint(1, 4000):05d}", "qty": rnd.randint(1, 5)}
                            for _ in range(rnd.randint(1, 5))
                        ],
                        "shipping": {
                            "country": rnd.choice(["DE", "FR", "NL", "ES", "IT", "PL"]),
                            "method": rnd.choice(["standard", "express"]),
                        },
                        "updated_at": f"2026-11-{rnd.randint(1, 22):02d}T{rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}:00Z",
                    }
                )
                + "\n"
            )
    return path


def run(out: str | Path, records: int = 3000, repeat: int = 6, work: Path | None = None) -> Path:
    out = Path(out)
    (out / "payloads").mkdir(parents=True, exist_ok=True)
    sample = write_sample(out / "payloads" / "orders.jsonl", records)
    with lab.Scenario(out) as s:
        b = s.broker("codec-broker", work=work, request_log="WARN")
        capture.probe_codecs(b.bootstrap, sample, out / "probes", repeat=repeat)
        return s.finish(logs={"broker-1": (b, ("server.log",))})


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/codecs"))
