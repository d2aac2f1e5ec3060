"""SYNTHETIC sample bundle for seed 004 (Confluent Tiered Storage metadata and broker I/O).

No public broker writes Confluent's tier-state lines, so this script builds a deterministic
bundle that reproduces the figures seed 004 published: 9 brokers, one (broker-4) doing ~8x the
read IOPS of its peers (~54k/s against a 40k-rated device), its reads going to
``retriever-mutation-*/00000000000000000000.tierstate.mutable`` files (per-file counts per minute
like the seed's trace), one-at-a-time state file format migrations during a 20+ minute start-up
(508509470 -> 591531390 bytes in ~27 s, the seed's example), cleanups whose sizes and segment
counts are the seed's top-10 table, and a restart under a minute after the cleanup.

    .venv/bin/python lab/scenarios/tiered_synthetic.py sample_data/tiered-storage
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

from kitlib import lab

TOPIC_ID = "flE-6I70RCyT2gK2Qc3YBw"
# seed 004's table: partition, segments removed, size difference, % change
SEED_TABLE = [
    (40, 6089448, -694197072, -99.394814),
    (11, 5828664, -664467696, -99.574791),
    (8, 5774099, -658247286, -99.552919),
    (38, 5718854, -651949356, -99.511308),
    (27, 5697808, -649550112, -99.620408),
    (24, 5696804, -649435656, -99.536340),
    (20, 5633769, -642249666, -99.464455),
    (35, 5629745, -641790930, -99.475492),
    (29, 5627607, -641547198, -99.433064),
    (12, 5619466, -640619124, -99.506901),
]
# seed 004's per-minute trace on the hot broker (partition: reads)
SEED_TRACE = {
    53: 111724,
    18: 112825,
    19: 112843,
    10: 119265,
    35: 125779,
    33: 125857,
    34: 127535,
    27: 128281,
    11: 130245,
    29: 138090,
    20: 140152,
}
HOT = "broker-4"


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def rec(t: datetime, level: str, msg: str, logger: str) -> str:
    return f"[{stamp(t)}] {level} {msg} ({logger})\n"


def server_log(host: str, rnd: random.Random) -> str:
    bid = host.split("-")[1]
    out = []
    t = datetime(2024, 5, 22, 0, 12, 1, 118000)
    tier = "kafka.tier.state.FileTierPartitionState"

    def start(t, migrations):
        out.append(
            rec(
                t,
                "INFO",
                "Registered kafka:type=kafka.Log4jController MBean",
                "kafka.utils.Log4jControllerRegistration$",
            )
        )
        out.append(
            rec(t + timedelta(milliseconds=900), "INFO", f"[KafkaServer id={bid}] starting", "kafka.server.KafkaServer")
        )
        out.append(
            rec(
                t + timedelta(seconds=2),
                "INFO",
                "Kafka version: 7.6.0-ce",
                "org.apache.kafka.common.utils.AppInfoParser",
            )
        )
        t = t + timedelta(seconds=5)
        for p in migrations:
            before = 480_000_000 + rnd.randint(0, 60_000_000)
            after = int(before * 591531390 / 508509470)
            if p == 10:
                before, after = 508509470, 591531390
            out.append(
                rec(
                    t, "INFO", f"Migrating tier partition state file format for {TOPIC_ID}:retriever-mutation-{p}", tier
                )
            )
            t = t + timedelta(seconds=22 + rnd.random() * 8, milliseconds=rnd.randint(0, 999))
            out.append(
                rec(
                    t,
                    "INFO",
                    f"tier partition state file format migration complete for topicIdPartition "
                    f"{TOPIC_ID}:retriever-mutation-{p}, state file size changed from {before} to {after}",
                    tier,
                )
            )
            t = t + timedelta(milliseconds=rnd.randint(5, 60))
        t = t + timedelta(seconds=20)
        out.append(rec(t, "INFO", f"[KafkaServer id={bid}] started", "kafka.server.KafkaServer"))
        return t

    hot = host == HOT
    parts = (
        sorted(set(range(44)) | set(SEED_TRACE) | {p for p, *_ in SEED_TABLE})
        if hot
        else [rnd.randint(0, 55) for _ in range(3)]
    )
    t = start(t, parts if hot else [])
    # ordinary traffic lines
    for _ in range(40):
        t += timedelta(seconds=rnd.randint(20, 90))
        out.append(
            rec(
                t,
                "INFO",
                f"[ProducerStateManager partition=retriever-mutation-{rnd.randint(0, 55)}] Wrote producer "
                f"snapshot at offset {rnd.randint(10**8, 10**9)} with 0 producer ids in {rnd.randint(1, 9)} ms.",
                "org.apache.kafka.storage.internals.log.ProducerStateManager",
            )
        )
    if hot:
        # weeks later: cleanup enabled; the seed's table, then a fast restart
        t = datetime(2024, 6, 9, 15, 4, 47, 458000)
        for p, segs, diff, pct in SEED_TABLE:
            before = round(-diff / (-pct / 100))
            after = before + diff
            out.append(
                rec(
                    t,
                    "INFO",
                    f"{segs} segments removed by cleanup from tier partition state file for topicIdPartition "
                    f"{TOPIC_ID}:retriever-mutation-{p}, state file size changed from {before} to {after}",
                    tier,
                )
            )
            t += timedelta(minutes=rnd.randint(20, 170), seconds=rnd.randint(0, 59))
        t = start(t + timedelta(hours=6), [])
    return "".join(out)


def trace(host: str, rnd: random.Random, minutes: int = 10) -> str:
    out = ["# per-file read/write counts per minute, SystemTap; interval=60\n"]
    t0 = datetime(2024, 6, 3, 14, 0, 0)
    for m in range(minutes):
        out.append(f"--- {(t0 + timedelta(minutes=m)).strftime('%Y-%m-%d %H:%M:%S')}\n")
        rows = []
        if host == HOT:
            for p in sorted(set(range(36)) | set(SEED_TRACE)):
                base = SEED_TRACE.get(p, rnd.randint(40000, 75000))
                rows.append(
                    (
                        "R",
                        int(base * (0.93 + rnd.random() * 0.1)),
                        f"/var/lib/kafka/data/retriever-mutation-{p}/00000000000000000000.tierstate.mutable",
                    )
                )
        for _ in range(25):
            p = rnd.randint(0, 55)
            off = f"{rnd.randint(0, 10**9) // 1000 * 1000:020d}"
            kind = rnd.choice([".log", ".log", ".index", ".timeindex"])
            rows.append(("R", rnd.randint(9000, 22000), f"/var/lib/kafka/data/retriever-mutation-{p}/{off}{kind}"))
        for _ in range(8):
            p = rnd.randint(0, 55)
            rows.append(
                (
                    "W",
                    rnd.randint(2000, 9000),
                    f"/var/lib/kafka/data/retriever-mutation-{p}/{rnd.randint(0, 10**9):020d}.log",
                )
            )
        rows.sort(key=lambda r: r[1])
        out += [f"{op} {n} {path}\n" for op, n, path in rows]
    return "".join(out)


def run(out: str | Path) -> Path:
    out = Path(out)
    rnd = random.Random(4)
    with lab.Scenario(out) as s:
        for i in range(1, 10):
            host = f"broker-{i}"
            d = out / host
            d.mkdir(parents=True, exist_ok=True)
            (d / "server.log").write_text(server_log(host, rnd))
            (d / "iotrace-read-per-file.txt").write_text(trace(host, rnd))
        # no lab process ran and no path of this machine is in the files: the bundle stays as
        # written, with no bundle.yaml (its PROVENANCE.md is written by hand)
        return s.finish(manifest=False)


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/tiered-storage"))
