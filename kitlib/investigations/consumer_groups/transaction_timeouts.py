"""Transactions in trouble: rolled back on timeout, producers fenced by a newer one, and
partitions whose transaction is left open (the brokers' PartitionsWithLateTransactionsCount).
Reads ``txn_events``, which :mod:`.transactions` extracts, and ``metrics``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.findings import Finding, detector, evidence

LATE_TXN_MBEAN = "PartitionsWithLateTransactionsCount"


def _sentence(text: str) -> str:
    return (text[:1].upper() + text[1:] + ".") if text else ""


def transaction_summary(txn_events: pd.DataFrame) -> pd.DataFrame:
    """Per transactional id: inits, rollbacks on timeout, fencing signs (fenced errors, refused old
    epochs, an epoch bumped by two or more between inits without a timeout rollback), first/last."""
    cols = [
        "transactional_id",
        "inits",
        "timeout_rollbacks",
        "fenced",
        "epoch_jumps",
        "refused",
        "producer_ids",
        "last_epoch",
        "first",
        "last",
    ]
    te = txn_events
    if not len(te):
        return pd.DataFrame(columns=cols)
    rows = []
    for tx, r in te[te["transactional_id"].notna()].groupby(te["transactional_id"].astype("string"), sort=True):
        k = r["kind"].astype("string")
        inits = r[k == "initialized"].sort_values("ts")
        jumps = 0
        if len(inits) > 1:
            e = inits["epoch"].astype("float64").to_numpy()
            pid = inits["producer_id"].astype("float64").to_numpy()
            times = inits["ts"].to_numpy()
            roll = r.loc[k == "timeout_rollback", "ts"].to_numpy()
            for i in range(1, len(e)):
                rolled = ((roll > times[i - 1]) & (roll <= times[i])).any()
                if pid[i] == pid[i - 1] and e[i] - e[i - 1] >= 2 and not rolled:
                    jumps += 1
        rows.append(
            {
                "transactional_id": tx,
                "inits": len(inits),
                "timeout_rollbacks": int((k == "timeout_rollback").sum()),
                "fenced": int(
                    k.isin(["fenced", "old_epoch"]).sum() + (r["error"].astype("string") == "PRODUCER_FENCED").sum()
                ),
                "epoch_jumps": jumps,
                "refused": int(k.isin(["init_refused", "end_refused", "rollback_failed"]).sum()),
                "producer_ids": ", ".join(sorted({str(int(x)) for x in r["producer_id"].dropna()})),
                "last_epoch": None if not len(inits) else int(inits["epoch"].iloc[-1]),
                "first": r["ts"].min(),
                "last": r["ts"].max(),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def late_transactions(metrics: pd.DataFrame) -> pd.DataFrame:
    """PartitionsWithLateTransactionsCount samples above 0 (per host), the broker's count of
    partitions whose open transaction is older than transaction.max.timeout.ms."""
    if not len(metrics):
        return metrics.iloc[0:0]
    m = metrics[metrics["mbean"].astype("string").str.contains(LATE_TXN_MBEAN, regex=False, na=False)]
    return m[m["value"] > 0]


@detector(
    ids=["transaction-timeouts"],
    needs=[],
    checks="transactions rolled back on timeout, producers fenced, partitions with late (hanging) transactions",
)
def transaction_timeouts(bundle) -> list[Finding]:
    te = bundle.table("txn_events")
    late = late_transactions(bundle.table("metrics"))
    s = transaction_summary(te)
    trouble = s[(s["timeout_rollbacks"] > 0) | (s["fenced"] > 0) | (s["epoch_jumps"] > 0)] if len(s) else s
    # fenced lines that name no transactional id (a partition leader refusing an old epoch) still count
    anonymous = (
        te[te["transactional_id"].isna() & te["kind"].astype("string").isin(["fenced", "old_epoch"])] if len(te) else te
    )
    # a producer's own fenced lines that name its client but no transactional id (librdkafka's
    # 'Producer fenced by newer instance' under its instance name): the producer was fenced
    named = anonymous["client_id"].notna().to_numpy(bool) if len(anonymous) else np.zeros(0, bool)
    fenced_clients, anonymous = anonymous[named], anonymous[~named]
    if not len(trouble) and not len(late) and not len(anonymous) and not len(fenced_clients):
        return []
    parts = []
    for _, r in trouble.iterrows():
        bits = []
        if r["timeout_rollbacks"]:
            bits.append(f"rolled back on timeout {r['timeout_rollbacks']}x")
        if r["fenced"] or r["epoch_jumps"]:
            bits.append(f"fenced by a newer producer ({max(r['fenced'], r['epoch_jumps'])} signs)")
        parts.append(f"{r['transactional_id']} ({', '.join(bits)})")
    if len(fenced_clients):
        who = ", ".join(sorted(fenced_clients["client_id"].astype(str).unique()))
        parts.append(f"producer {who} fenced by a newer instance with the same transactional.id")
    if len(anonymous):
        parts.append(f"{len(anonymous)} writes refused for an old producer epoch")
    late_max = int(late["value"].max()) if len(late) else 0
    if late_max:
        parts.append(
            f"up to {late_max} partition(s) with late transactions: read_committed consumers cannot read "
            "past their last stable offset"
        )
    fixes = []
    if trouble["timeout_rollbacks"].sum() if len(trouble) else 0:
        fixes.append(
            "a producer stopped between beginning and committing a transaction (crash, kill, long pause) "
            "and the coordinator aborted it after transaction.timeout.ms; until then read_committed consumers "
            "of those partitions wait at the last stable offset, so keep transaction.timeout.ms short and "
            "make the application commit or abort on every path"
        )
    if (
        (trouble["fenced"].sum() + trouble["epoch_jumps"].sum() if len(trouble) else 0)
        or len(anonymous)
        or len(fenced_clients)
    ):
        fixes.append(
            "two producer instances used the same transactional.id, and the newer one fenced the older: "
            "give each instance its own transactional.id (stable per instance or per input partition), "
            "and close and recreate a producer that gets ProducerFencedException"
        )
    if late_max:
        fixes.append(
            "for a transaction that never ends, list it with kafka-transactions.sh find-hanging and abort "
            "it with kafka-transactions.sh abort"
        )
    ev = pd.concat(
        [
            te[
                te["transactional_id"].astype("string").isin(list(trouble["transactional_id"]))
                & te["kind"]
                .astype("string")
                .isin(["timeout_rollback", "fenced", "old_epoch", "initialized", "end_refused", "init_refused"])
            ]
            if len(trouble)
            else te.iloc[0:0],
            anonymous.head(5),
            fenced_clients.head(5),
        ]
    ).sort_values("ts")
    ev_list = evidence(ev)
    if len(late):
        ev_list += evidence(late.head(3), lambda r: f"{r['mbean']} {r['attribute']} = {r['value']:g}")
    return [
        Finding(
            "transaction-timeouts",
            "high" if late_max or (len(trouble) and trouble["timeout_rollbacks"].sum()) else "medium",
            "Transactions in trouble: " + "; ".join(parts),
            numbers={
                "transactional_ids": ", ".join(trouble["transactional_id"]) if len(trouble) else "",
                "timeout_rollbacks": int(trouble["timeout_rollbacks"].sum()) if len(trouble) else 0,
                "fenced": int(trouble[["fenced", "epoch_jumps"]].max(axis=1).sum()) if len(trouble) else 0,
                "refused_old_epoch_writes": len(anonymous),
                **(
                    {"fenced_clients": ", ".join(sorted(fenced_clients["client_id"].astype(str).unique()))}
                    if len(fenced_clients)
                    else {}
                ),
                "late_transaction_partitions_max": late_max,
            },
            recommendation=_sentence("; ".join(fixes)),
            evidence=ev_list,
        )
    ]
