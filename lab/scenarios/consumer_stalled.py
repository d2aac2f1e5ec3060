"""Consumer stalled: the application of group ``billing`` stops making progress (it pauses its
partitions after a downstream call starts hanging, yet keeps polling, so it stays a healthy
member of a Stable group and logs nothing alarming) while the producer goes on. The evidence is
a lag history from ``kitlib capture --every``: committed offsets frozen, log-end offsets and lag
growing. Group ``audit`` reads the same topic and keeps up all along (the contrast).

    .venv/bin/python lab/scenarios/consumer_stalled.py OUT_DIR
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

TOPIC = "invoices"
STALLED, HEALTHY = "billing", "audit"
EVERY_S = 3


def _consume(bootstrap: str, group: str, client_id: str, stop: threading.Event, stall_after: float | None, app) -> None:
    """Consume and commit after every poll; with ``stall_after``, pause every partition that many
    seconds after the first commit (and keep polling)."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_poll_records=200,
    )
    paused, first_commit = False, None
    try:
        while not stop.is_set():
            batch = c.poll(timeout_ms=500)
            if batch and not paused:
                c.commit()
                first_commit = first_commit or time.monotonic()
            if (
                stall_after is not None
                and first_commit
                and not paused
                and time.monotonic() - first_commit >= stall_after
            ):
                c.pause(*c.assignment())
                paused = True
                app.info(
                    "%s: invoice service not answering, pausing %s (still polling)",
                    client_id,
                    sorted(f"{tp.topic}-{tp.partition}" for tp in c.assignment()),
                )
    finally:
        c.close()


def caught_up(bootstrap: str, group: str, timeout: float = 60) -> None:
    """Wait until ``group`` has committed up to the end of every partition of ``TOPIC``."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="lab-check")
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="lab-check")
    try:
        tps = [TopicPartition(TOPIC, p) for p in sorted(c.partitions_for_topic(TOPIC) or ())]
        ends = c.end_offsets(tps)
        labclients.wait_for(
            lambda: all(
                (om := a.list_group_offsets({group: None})[group].get(tp)) is not None and om.offset >= ends[tp]
                for tp in tps
            ),
            timeout,
            f"group {group} to catch up",
        )
    finally:
        c.close()
        a.close()


def run(out: str | Path, seconds: float = 60, stall_after: float = 15, work: Path | None = None) -> Path:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host, clients = out / "broker-1", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker("stalled-broker", work=work, request_log="WARN")
        jmx = s.jmxtool(b, lab.BROKER_MBEANS, host / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, 3, 1)])
        a.close()
        history = s.track(labclients.start_lag_history(b, out / "live", every=EVERY_S))
        stop = threading.Event()
        with labclients.client_log(clients / "billing-service.log") as app:
            t0 = time.monotonic()
            threads = [
                threading.Thread(
                    target=_consume,
                    name=f"consumer-{g}",
                    daemon=True,
                    args=(b.bootstrap, g, f"{g}-service", stop, st, app),
                )
                for g, st in ((STALLED, stall_after), (HEALTHY, None))
            ]
            for t in threads:
                t.start()
            p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="invoice-api", linger_ms=5)
            i = 0
            while time.monotonic() - t0 < seconds:
                p.send(TOPIC, key=str(i % 1000).encode(), value=b'{"invoice":%d,"amount":12.5}' % i)
                i += 1
                time.sleep(0.005)
            p.flush()
            p.close()
            app.info("produced %d invoices", i)
            caught_up(b.bootstrap, HEALTHY)
            time.sleep(EVERY_S)  # one more snapshot after the last record
            # the snapshots end before the consumers leave: the last one must not see the groups
            # empty (on a busy machine a snapshot fell between the two)
            labclients.stop_lag_history(history)
            stop.set()
            for t in threads:
                t.join(timeout=10)
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        s.finish(logs={"broker-1": b}, hosts={"clients": "clients"})
    body = BODY + "\nThe lag history, summed over partitions per snapshot:\n\n" + lag_summary(out)
    lab.write_client_provenance(
        out, "a consumer that stopped making progress while producers go on", "consumer_stalled.py", body, EVIDENCE
    )
    return out


BODY = f"""
- Topic `{TOPIC}` (3 partitions), produced at ~150 records/s by client `invoice-api` for 60 s.
- Group `{STALLED}` (client `{STALLED}-service`, kafka-python, manual commits after each poll)
  keeps up for 15 s after its first commit, then pauses all its partitions (as an application does when a downstream
  call hangs) but goes on polling: it stays a member of a Stable group, logs nothing above INFO,
  and its committed offsets stop moving while the log-end offsets grow.
- Group `{HEALTHY}` (client `{HEALTHY}-service`) reads the same topic and keeps up throughout:
  its lag returns to near zero in every snapshot (the contrast a detector must not flag).
- `live/lag-*.jsonl`: `kitlib capture --every {EVERY_S}` over the whole run: one `consumer_lag`
  row per group and partition per snapshot, all rows of a snapshot with the same `ts`, plus the
  group state and the member each partition is assigned to.
- `broker-1/`: server.log, controller and state-change logs, `jmx-broker.csv` (JmxTool, 1 s).
- `clients/billing-service.log`: the application's own log (Python `logging`, kafka-python at
  INFO, UTC). Its `pausing` line is the application's own record of the stall time.
"""
EVIDENCE = [
    lab.LineEvidence(f"lag snapshots of the stalled group `{STALLED}`", "live/lag-*.jsonl", f'"group": "{STALLED}"'),
    lab.LineEvidence(f"lag snapshots of the healthy group `{HEALTHY}`", "live/lag-*.jsonl", f'"group": "{HEALTHY}"'),
    lab.LineEvidence("the application's own record of the stall", "clients/*.log", "pausing"),
]


def lag_summary(bundle: Path) -> str:
    """Per group: snapshots, summed committed offsets and lag in the first and last snapshot, and
    the last snapshot in which the group's committed offsets moved."""
    import kitlib

    lag = kitlib.load_bundle(bundle).consumer_lag
    lag = lag[lag["file"].astype(str).str.startswith("live/lag-")]
    rows = [
        "| group | snapshots | committed (first -> last) | lag (first -> last) | committed last moved |",
        "|---|---|---|---|---|",
    ]
    for g, d in lag.groupby("group"):
        per = d.groupby("ts")[["committed", "lag"]].sum().sort_index()
        moved = per.index[per["committed"].diff() > 0]
        rows.append(
            f"| `{g}` | {len(per)} | {per['committed'].iloc[0]} -> {per['committed'].iloc[-1]} | "
            f"{per['lag'].iloc[0]} -> {per['lag'].iloc[-1]} | "
            f"{moved.max().strftime('%H:%M:%S') if len(moved) else 'never'} UTC |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/consumer-stalled"))
