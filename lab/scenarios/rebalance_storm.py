"""Rebalance storm: a consumer group whose members take longer to process a batch than
``max.poll.interval.ms`` allows, so each one is dropped from the group (its heartbeat thread
sends LeaveGroup) and rejoins on its next poll, over and over; one member is also killed outright
in the middle of a batch and never leaves: the coordinator has to remove it. The group
coordinator's lines tell the story:
``Preparing to rebalance group order-enricher ... (reason: ...)``, ``Stabilized group
order-enricher generation N``, member removals.

    .venv/bin/python lab/scenarios/rebalance_storm.py OUT_DIR
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

GROUP = "order-enricher"
TOPIC = "orders"
MAX_POLL_MS = 6000
SESSION_MS = 10000
GROUP_MBEANS = [
    f"kafka.coordinator.group:type=GroupMetadataManager,name={n}"
    for n in ("NumGroupsPreparingRebalance", "NumGroupsCompletingRebalance", "NumGroupsStable", "NumGroups")
]


def worker(bootstrap: str, client_id: str, log: str, process_ms: int, die_when: str = "") -> None:
    """One member of the group: poll up to 20 records, 'process' them for ``process_ms``, repeat.
    Once the file ``die_when`` exists, the next batch is never finished: the process SIGKILLs
    itself while it holds its partitions, so it has no JoinGroup or SyncGroup under way that
    the coordinator could time out instead of its membership."""
    from kafka import KafkaConsumer

    with labclients.client_log(log) as app:
        c = KafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id=GROUP,
            client_id=client_id,
            max_poll_interval_ms=MAX_POLL_MS,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=1000,
            max_poll_records=20,
            auto_offset_reset="earliest",
        )
        app.info(
            "%s started, processing takes %d ms per batch (max.poll.interval.ms %d)", client_id, process_ms, MAX_POLL_MS
        )
        while True:
            batch = c.poll(timeout_ms=1000)
            n = sum(len(v) for v in batch.values())
            if n:
                if die_when and os.path.exists(die_when):
                    app.info("dying (SIGKILL) in the middle of a batch of %d records", n)
                    os.kill(os.getpid(), signal.SIGKILL)
                time.sleep(process_ms / 1000)
                app.info("processed %d records in %d ms", n, process_ms)


def run(out: str | Path, seconds: float = 60, work: Path | None = None) -> Path:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host, clients = out / "broker-1", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    clients.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker("rebalance-broker", work=work, request_log="WARN")
        workers: list = []
        jmx = s.jmxtool(b, lab.BROKER_MBEANS + GROUP_MBEANS, host / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, 6, 1)])
        a.close()
        history = s.track(labclients.start_lag_history(b, out / "live", every=2, groups=(GROUP,)))
        die_when = Path(b.work) / f"{GROUP}-4.die"
        # two slow members (8 s per batch > 6 s max.poll.interval.ms) and two that keep up
        for i, ms in ((1, 8000), (2, 8000), (3, 200), (4, 200)):
            name = f"{GROUP}-{i}"
            workers.append(
                s.track(
                    labclients.spawn(
                        __file__,
                        "--worker",
                        b.bootstrap,
                        name,
                        str(clients / f"{name}.log"),
                        str(ms),
                        *([str(die_when)] if i == 4 else []),
                        out=Path(b.work) / f"{name}.out",
                    )
                )
            )
        # On a busy machine the members take a while to start. Nothing is produced until one
        # generation holds all four: the two slow members then get their first records together
        # and their poll timers expire together while the group is stable, so the first of them
        # to leave starts a rebalance of its own. (Were they out of step, each one's rejoin would
        # open a rebalance that lasts until the other's poll timer expires: every LeaveGroup
        # would land inside a rebalance and none would be the reason for one.)
        labclients.wait_for(lambda: _whole_group_formed(b), 120, f"all four members in one generation of {GROUP}")
        with labclients.client_log(clients / "order-producer.log") as app:
            p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="order-api", linger_ms=5)
            app.info("producing ~100 orders/s to %s", TOPIC)
            t0 = checked = time.monotonic()
            i = 0
            asked: float | None = None
            died = removed = False
            # `seconds` of traffic; past that, while the coordinator has not yet removed the killed
            # member, at most 30 s more
            while (now := time.monotonic()) - t0 < seconds or (not removed and now - t0 < seconds + 30):
                p.send(TOPIC, key=str(i % 300).encode(), value=b'{"order":%d,"items":3}' % i)
                i += 1
                time.sleep(0.01)
                if asked is None and now - t0 > seconds / 2:
                    die_when.touch()  # member 4 dies on its next batch, without leaving the group
                    asked = now
                elif asked is not None and not died:
                    if workers[3].poll() is not None:
                        app.info("killed %s-4 (pid %d) in the middle of a batch", GROUP, workers[3].pid)
                        died = True
                    elif now - asked > 15:  # it got no batch at all: kill it wherever it is
                        os.killpg(workers[3].pid, signal.SIGKILL)
                        workers[3].wait()
                        app.info("killed %s-4 (pid %d) between batches", GROUP, workers[3].pid)
                        died = True
                if died and not removed and now - checked > 1:
                    removed, checked = _victim_removed(b), now
            p.flush()
            p.close()
        labclients.stop_lag_history(history)
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        # the live capture, then the workers killed, then the logs collected
        s.finish(logs={"broker-1": b}, live=b, hosts={"clients": "clients"})
    lab.write_client_provenance(out, "a consumer group that keeps rebalancing", "rebalance_storm.py", BODY, EVIDENCE)
    return out


def _server_log(b: lab.Proc) -> str:
    return lab.whole_log(Path(b.logs) / "server.log")  # with what log4j's hourly roll moved aside


def _whole_group_formed(b: lab.Proc) -> bool:
    """Whether one generation of the group holds all four members."""
    return re.search(rf"Stabilized group {GROUP} generation \d+ \(\S+\) with 4 members", _server_log(b)) is not None


def _victim_removed(b: lab.Proc) -> bool:
    """Whether the coordinator has removed the killed member, on either of its paths."""
    return any(
        f"{GROUP}-4-" in ln
        and (f"in group {GROUP} has failed, removing it" in ln or f"Group {GROUP} removed dynamic members" in ln)
        for ln in _server_log(b).splitlines()
    )


BODY = f"""
- Topic `{TOPIC}` (6 partitions), produced at ~100 records/s by client `order-api` for the whole run.
- Group `{GROUP}`: four kafka-python consumers, each its own process, `max.poll.interval.ms` =
  {MAX_POLL_MS}, `session.timeout.ms` = {SESSION_MS}, 20 records per poll. Members
  `{GROUP}-1` and `{GROUP}-2` spend 8 s on every batch (longer than the poll interval): their
  heartbeat thread gives up (`Consumer poll timeout has expired`), sends LeaveGroup, and they
  rejoin on their next poll, so the group rebalances every few seconds. `{GROUP}-3` and
  `{GROUP}-4` keep up (200 ms per batch) and are dragged through every rebalance.
- Production (and the clock) starts once one generation holds all four members, so the two slow
  members fall behind and time out together.
- Half-way through, `{GROUP}-4`'s process is killed (SIGKILL) in the middle of a batch, while
  it holds its partitions: it never leaves, and the coordinator removes it when its session
  times out (`has failed, removing it from the group`) or, if a rebalance starts first, when
  that rebalance times out without it (`removed dynamic members who haven't joined`).
- `broker-1/`: server.log (group coordinator at INFO), controller and state-change logs, and
  `jmx-broker.csv` (JmxTool, 1 s) with the byte-rate MBeans and GroupMetadataManager
  NumGroupsPreparingRebalance / NumGroupsCompletingRebalance / NumGroupsStable / NumGroups.
- `clients/`: each application's own log (Python `logging`, kafka-python's loggers at INFO,
  layout `time LEVEL logger [thread] message`, UTC).
- `live/lag-*.jsonl`: `kitlib capture --every 2` over the run (lag, group state and assigned
  member per partition); `live/capture-*.jsonl`: one `kitlib capture` at the end.
"""
EVIDENCE = [
    lab.LineEvidence(
        "rebalance started, with its reason", "broker-1/server.log*", f"Preparing to rebalance group {GROUP}"
    ),
    lab.LineEvidence("new generation", "broker-1/server.log*", f"Stabilized group {GROUP} generation"),
    lab.LineEvidence(
        "member left on LeaveGroup (poll interval exceeded)", "broker-1/server.log*", "on LeaveGroup; client reason"
    ),
    lab.LineEvidence(
        "member removed on session timeout (killed process)",
        "broker-1/server.log*",
        f"in group {GROUP} has failed, removing it from the group",
    ),
    lab.LineEvidence(
        "member removed when a rebalance timed out without it",
        "broker-1/server.log*",
        f"Group {GROUP} removed dynamic members who haven't joined",
    ),
    lab.LineEvidence("client: poll interval exceeded", "clients/*.log", "Consumer poll timeout has expired"),
]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), *sys.argv[6:7])
    else:
        print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/rebalance-storm"))
