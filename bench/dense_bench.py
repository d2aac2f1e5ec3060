"""Every detector on a dense incident, at two sizes: does twice the rows cost about twice the time?

An ISR storm on a broker with thousands of partitions writes hundreds of thousands of `Shrinking
ISR` and `ISR updated` lines, a rebalance storm as many `Preparing to rebalance` lines. This bench
writes such a log (synthetic, in Kafka 3.9's wording: ISR changes, group rebalances and member
removals, fencing and unfencing of brokers and controlled shutdowns, transaction rollbacks,
authentication failures, on three brokers), ingests it, then runs
each detector alone on the ingest output, at ``--records`` and at twice that, each size in a fresh
process (an existing ingest output in ``--workdir`` is reused). The derived tables a
detector reads are built (and cached) before it is timed, so the figure is the detector's own.

Prints one row per detector: seconds at N, at 2N (each the best of three runs), and their ratio (about 2 means linear; 4 means
quadratic). Paste the table into bench/README.md.

With ``--builders``, it times the derived tables' blockwise builders instead, as a first triage
runs them on the stream: the records each group wants picked from every stored block of the events
(``kitlib.extract.select``), then built batch by batch (``kitlib.extract.build_blockwise``), all in
one thread of one fresh process per size. One row per group: records, rows built, CPU seconds,
microseconds per record, and the ratio at 2N; the picking's own cost is a row of its own. These
are the figures to hold against the plain ingest's (about 1 CPU microsecond a record).

Example:
    .venv/bin/python bench/dense_bench.py --records 200000
    .venv/bin/python bench/dense_bench.py --records 1000000 --builders
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = [
    # an ISR storm: a follower drops out of and back into the ISR of many partitions
    (
        "INFO",
        "[Partition {t}-{p} broker={b}] Shrinking ISR from {b},{f},{o} to {b},{o}. Leader: (highWatermark: {n}, "
        "endOffset: {m}). Out of sync replicas: (brokerId: {f}, endOffset: {n}, lastCaughtUpTimeMs: {e}).",
        "kafka.cluster.Partition",
    ),
    (
        "INFO",
        "[Partition {t}-{p} broker={b}] ISR updated to {b},{o},{f}  and version updated to {v}",
        "kafka.cluster.Partition",
    ),
    # a rebalance storm
    (
        "INFO",
        "[GroupCoordinator {b}]: Preparing to rebalance group {g} in state PreparingRebalance with old generation "
        "{v} (__consumer_offsets-{p}) (reason: Adding new member {g}-{v}-{u} with group instance id None; "
        "client reason: not provided)",
        "kafka.coordinator.group.GroupCoordinator",
    ),
    (
        "INFO",
        "[GroupCoordinator {b}]: Stabilized group {g} generation {v} (__consumer_offsets-{p}) with 3 members",
        "kafka.coordinator.group.GroupCoordinator",
    ),
    # a fencing storm: the controller fences brokers whose sessions time out, they come back, and some
    # shut down in a controlled way (ReplicationControlManager, under the controller's log prefix)
    (
        "INFO",
        "[QuorumController id={b}] Fencing broker {f} because its session has timed out.",
        "org.apache.kafka.controller.ReplicationControlManager",
    ),
    (
        "INFO",
        "[QuorumController id={b}] The request from broker {f} to unfence has been granted because it has caught up "
        "with the offset of its register broker record {n}.",
        "org.apache.kafka.controller.ReplicationControlManager",
    ),
    (
        "INFO",
        "[QuorumController id={b}] Unfenced broker {o} has requested and been granted a controlled shutdown.",
        "org.apache.kafka.controller.ReplicationControlManager",
    ),
    # transactions timing out
    (
        "INFO",
        "[TransactionCoordinator id={b}] Completed rollback of ongoing transaction for transactionalId tx-{q} due "
        "to timeout",
        "kafka.coordinator.transaction.TransactionCoordinator",
    ),
    # clients failing authentication
    (
        "INFO",
        "[SocketServer listenerType=BROKER, nodeId={b}] Failed authentication with /10.0.{q}.{p} (channelId="
        "10.0.{q}.{p}:9092-10.0.{q}.{p}:{m}-0) (Authentication failed: Invalid username or password)",
        "org.apache.kafka.common.network.Selector",
    ),
]


def write_bundle(root: Path, records: int, seed: int = 11) -> None:
    """Three brokers' server.log holding ``records`` records in all."""
    rnd = random.Random(seed)
    t = 1795392000 * 1000
    per = records // 3
    for b in (1, 2, 3):
        folder = root / f"broker-{b}"
        folder.mkdir(parents=True, exist_ok=True)
        buf = []
        for _ in range(per):
            t += rnd.randint(0, 5)
            sec, ms = divmod(t, 1000)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec)) + f",{ms:03d}"
            level, shape, logger = SHAPES[rnd.randrange(len(SHAPES))]
            others = [x for x in (1, 2, 3) if x != b]
            msg = shape.format(
                t=rnd.choice(("orders", "payments", "clicks")),
                p=rnd.randint(0, 999),
                b=b,
                f=others[0],
                o=others[1],
                n=rnd.randint(0, 10**6),
                m=rnd.randint(10**6, 2 * 10**6),
                e=t,
                v=rnd.randint(1, 5000),
                g=f"group-{rnd.randint(1, 20)}",
                u=f"{rnd.getrandbits(64):016x}",
                q=rnd.randint(1, 40),
            )
            buf.append(f"[{stamp}] {level} {msg} ({logger})\n")
        (folder / "server.log").write_text("".join(buf))


def time_detectors(store: Path) -> dict[str, float]:
    """Seconds per detector on the ingest output ``store``, best of three (tables it needs read
    beforehand)."""
    import kitlib
    from kitlib import registry
    from kitlib.findings import DETECTORS

    registry.load()
    bundle = kitlib.load_bundle(store)
    out = {}
    for name, d in sorted(DETECTORS.items()):
        try:
            d.fn(bundle)  # a first run builds and caches what it reads
        except Exception as e:  # noqa: BLE001 - a bench reports a failing detector and goes on
            print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        best = float("inf")
        for _ in range(3):  # the best of three: the machine may be shared
            t = time.perf_counter()
            d.fn(bundle)
            best = min(best, time.perf_counter() - t)
        out[name] = best
    return out


def time_builders(store: Path) -> dict[str, dict[str, float]]:
    """CPU seconds of picking each blockwise group's records from the ingest output ``store``'s
    events, block by block (``select``), and of building each group from them in batches of
    ``BATCH_ROWS`` (``build_blockwise``); with the records each took and the rows each built."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kitlib import extract, registry

    registry.load()
    events = pq.ParquetFile(store / "events.parquet")
    picked: dict[str, list[pa.Table]] = {}
    records, cpu = 0, 0.0
    for i in range(events.num_row_groups):
        block = events.read_row_group(i)  # (the read is not timed: the stream has the block in hand)
        records += block.num_rows
        start = time.process_time()
        for group, rows in extract.select(block).items():
            picked.setdefault(group, []).append(rows)
        cpu += time.process_time() - start
    out = {"picking the records": {"records": records, "rows": 0, "cpu": cpu}}
    for group in sorted(picked):
        taken = pa.concat_tables(picked.pop(group), promote_options="permissive")
        built = 0
        start = time.process_time()
        for at in range(0, taken.num_rows, extract.BATCH_ROWS):
            pieces, errors = extract.build_blockwise(group, taken.slice(at, extract.BATCH_ROWS))
            if errors:
                print(f"{group}: {errors[0].table}: {errors[0].message}", file=sys.stderr)
            built += sum(p.num_rows for p in pieces.values())
        out[group] = {"records": taken.num_rows, "rows": built, "cpu": time.process_time() - start}
    return out


def print_builders(small: dict, big: dict, n: int) -> None:
    """The table of :func:`time_builders` at ``n`` and ``2n`` records."""
    print(f"| step | records at {n:,} | rows built | CPU s | us a record | CPU s at {2 * n:,} | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(small, key=lambda k: -big.get(k, {}).get("cpu", 0)):
        a, b = small[name], big.get(name)
        if b is None:
            continue
        per = 1e6 * a["cpu"] / a["records"] if a["records"] else float("nan")
        ratio = b["cpu"] / a["cpu"] if a["cpu"] > 1e-3 else float("nan")
        print(
            f"| {name} | {a['records']:,} | {a['rows']:,} | {a['cpu']:.2f} | {per:.2f} | {b['cpu']:.2f} | {ratio:.2f} |"
        )
    total = sum(v["cpu"] for v in small.values()), sum(v["cpu"] for v in big.values())
    print(f"| all | | | {total[0]:.2f} | | {total[1]:.2f} | {total[1] / total[0]:.2f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Each detector's time on a dense incident at N and 2N records.")
    ap.add_argument("--records", type=int, default=200_000, help="records at the smaller size (default 200,000)")
    ap.add_argument("--workdir", help="where the bundles go (default: a temp dir)")
    ap.add_argument("--builders", action="store_true", help="time the derived tables' builders, not the detectors")
    ap.add_argument("--time-store", help=argparse.SUPPRESS)  # one size, in its own process: JSON out
    a = ap.parse_args(argv)
    if a.time_store:
        timed = time_builders if a.builders else time_detectors
        print(json.dumps(timed(Path(a.time_store))))
        return 0
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kit-dense-"))
    kit = Path(sys.executable).parent / "kitlib"
    figures = {}
    for n in (a.records, 2 * a.records):
        bundle, store = work / f"dense-{n}", work / f"dense-{n}.out"
        if not bundle.exists():
            write_bundle(bundle, n)
        if not store.exists():
            subprocess.run([str(kit), "ingest", str(bundle), "--out", str(store)], check=True, capture_output=True)
        # each size in a fresh process: the smaller size's tables and heap do not weigh on the larger
        got = subprocess.run(
            [sys.executable, __file__, "--time-store", str(store), *(["--builders"] if a.builders else [])],
            check=True,
            capture_output=True,
            text=True,
        )
        figures[n] = json.loads(got.stdout)
    small, big = figures[a.records], figures[2 * a.records]
    if a.builders:
        print_builders(small, big, a.records)
        return 0
    print(f"| detector | {a.records:,} records (s) | {2 * a.records:,} records (s) | ratio |")
    print("|---|---|---|---|")
    for name in sorted(small, key=lambda k: -big.get(k, 0)):
        if name in big:
            ratio = big[name] / small[name] if small[name] > 1e-3 else float("nan")
            print(f"| {name} | {small[name]:.3f} | {big[name]:.3f} | {ratio:.2f} |")
    print(
        f"| all | {sum(small.values()):.2f} | {sum(big.values()):.2f} | {sum(big.values()) / sum(small.values()):.2f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
