"""Transactions: a transactional producer killed in the middle of a transaction, which the
transaction coordinator rolls back once ``transaction.timeout.ms`` has passed (``Completed
rollback of ongoing transaction for transactionalId payments-tx due to timeout``), and two
producer instances sharing one ``transactional.id``: the second one's InitProducerId bumps the
epoch and fences the first, whose commit then fails with PRODUCER_FENCED.

    .venv/bin/python lab/scenarios/transactions.py OUT_DIR
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

TOPIC = "payments"
STUCK_TXID, FENCED_TXID = "payments-tx", "ledger-tx"
TXN_TIMEOUT_MS = 5000
TXN_MBEANS = ["kafka.server:type=ReplicaManager,name=PartitionsWithLateTransactionsCount"]
SETTINGS = {
    # look for expired transactions every second (default 10 s) so the rollback comes quickly
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
}


def stuck_worker(bootstrap: str, log: str) -> None:
    """Commit three transactions, open a fourth, send into it and hang (the parent kills us)."""
    from kafka import KafkaProducer

    with labclients.client_log(log) as app:
        p = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id="payments-writer",
            transactional_id=STUCK_TXID,
            transaction_timeout_ms=TXN_TIMEOUT_MS,
        )
        p.init_transactions()
        for t in range(4):
            p.begin_transaction()
            for i in range(50):
                p.send(TOPIC, key=b"acct-%d" % (i % 7), value=b'{"txn":%d,"n":%d}' % (t, i))
            p.flush()
            if t < 3:
                p.commit_transaction()
                app.info("committed transaction %d", t)
        app.info("transaction 3 sent, waiting on the settlement service before committing")
        print("OPEN", flush=True)
        time.sleep(3600)


def fencing(bootstrap: str, app) -> str:
    """Instance A opens a transaction; instance B starts with the same transactional.id; A's
    commit fails. Returns the error A got."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    kw = {"bootstrap_servers": bootstrap, "transactional_id": FENCED_TXID, "transaction_timeout_ms": 60000}
    a = KafkaProducer(client_id="ledger-writer-a", **kw)
    a.init_transactions()
    a.begin_transaction()
    for i in range(20):
        a.send(TOPIC, key=b"ledger", value=b'{"entry":%d}' % i)
    a.flush()
    app.info("ledger-writer-a: transaction open with 20 records")
    b = KafkaProducer(client_id="ledger-writer-b", **kw)
    b.init_transactions()  # bumps the epoch: A is now a zombie
    app.info("ledger-writer-b: started with the same transactional.id %s", FENCED_TXID)
    b.begin_transaction()
    b.send(TOPIC, key=b"ledger", value=b'{"entry":"b-0"}')
    b.commit_transaction()
    app.info("ledger-writer-b: committed")
    try:
        a.commit_transaction()
        err = ""
    except KafkaError as e:
        err = f"{type(e).__name__}: {e}"
        app.error("ledger-writer-a: commit failed: %s", err)
    for p in (a, b):
        try:
            p.close(timeout=5)
        except KafkaError as e:
            app.warning("close: %s", e)
    return err


def run(out: str | Path, work: Path | None = None) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host, clients = out / "broker-1", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    clients.mkdir(parents=True, exist_ok=True)
    with lab.Scenario(out) as s:
        b = s.broker("txn-broker", work=work, request_log="DEBUG", settings=SETTINGS)
        jmx = s.jmxtool(b, lab.BROKER_MBEANS + TXN_MBEANS, host / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, 3, 1)])
        a.close()
        w = s.track(
            labclients.spawn(
                __file__, "--stuck", b.bootstrap, str(clients / "payments-writer.log"), out=Path(b.work) / "stuck.out"
            )
        )
        labclients.wait_for(
            lambda: "OPEN" in (Path(b.work) / "stuck.out").read_text(),
            60,
            "the payments writer to open its transaction",
        )
        time.sleep(1)
        os.killpg(w.pid, signal.SIGKILL)
        w.wait()
        labclients.wait_for(
            lambda: labclients.log_has(b, f"transactionalId {STUCK_TXID} due to timeout"),
            60,
            "the coordinator to roll back the timed-out transaction",
        )
        with labclients.client_log(clients / "ledger-service.log") as app:
            err = fencing(b.bootstrap, app)
        if "Fenced" not in err:
            raise lab.LabError(f"expected ledger-writer-a to be fenced, got {err!r}")
        time.sleep(3)
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        s.finish(logs={"broker-1": b}, hosts={"clients": "clients"})
    lab.write_client_provenance(
        out, "a transaction rolled back on timeout, and a fenced producer", "transactions.py", BODY, EVIDENCE
    )
    return out


BODY = f"""
- Broker: `transaction.abort.timed.out.transaction.cleanup.interval.ms=1000` (look for expired
  transactions every second instead of every 10 s); topic `{TOPIC}` (3 partitions).
- `payments-writer` (kafka-python, its own process, `transactional.id={STUCK_TXID}`,
  `transaction.timeout.ms={TXN_TIMEOUT_MS}`) commits three transactions of 50 records, opens a
  fourth, sends 50 records into it and is killed (SIGKILL) before committing. About
  {TXN_TIMEOUT_MS // 1000} s later the coordinator rolls it back on its own.
- `ledger-writer-a` and `ledger-writer-b` (one process, `transactional.id={FENCED_TXID}`): A opens
  a transaction and sends 20 records; B calls InitProducerId with the same transactional.id, which
  bumps the producer epoch (0 -> 2: one bump aborts A's open transaction, one is B's own); B commits one record; A's
  commit is refused (PRODUCER_FENCED, error code 90, in kafka-request.log) and A logs the error.
- `broker-1/`: server.log (transaction coordinator at INFO), kafka-request.log (request logger at
  DEBUG: InitProducerId, AddPartitionsToTxn, EndTxn, WriteTxnMarkers with their error codes),
  controller and state-change logs, `jmx-broker.csv` (JmxTool, 1 s) with the byte-rate MBeans and
  ReplicaManager PartitionsWithLateTransactionsCount.
- `clients/`: each application's own log (Python `logging`, kafka-python at INFO, UTC).
"""
EVIDENCE = [
    lab.LineEvidence(
        "transaction rolled back on timeout",
        "broker-1/server.log*",
        f"Completed rollback of ongoing transaction for transactionalId {STUCK_TXID} due to timeout",
    ),
    lab.LineEvidence(
        "producer ids / epochs handed out per transactional id", "broker-1/server.log*", "Initialized transactionalId"
    ),
    lab.LineEvidence(
        "EndTxn refused with PRODUCER_FENCED (90)",
        "broker-1/kafka-request.log*",
        '"clientId":"ledger-writer-a","requestApiKeyName":"END_TXN"',
    ),
    lab.LineEvidence("client: the fenced producer's error", "clients/*.log", "commit failed"),
]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--stuck"]:
        stuck_worker(sys.argv[2], sys.argv[3])
    else:
        print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/transactions"))
