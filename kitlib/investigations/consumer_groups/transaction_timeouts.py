"""Transactions in trouble: rolled back on timeout, producers fenced by a newer one, and
partitions whose transaction is left open (the brokers' PartitionsWithLateTransactionsCount).
Reads ``txn_events``, which :mod:`.transactions` extracts, and ``metrics``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.findings import Finding, detector, evidence
from kitlib.findings.extent import exact_query

LATE_TXN_MBEAN = "PartitionsWithLateTransactionsCount"

# what the detector reads of ``txn_events``: every column but the text, which only the rows it
# quotes need (on the dense incident's 532,609 transaction lines the text was 64 MB of the read,
# and the whole read lifted the triage's peak by 150 MB)
TXN_COLUMNS = ["ts", "kind", "transactional_id", "producer_id", "epoch", "error", "client_id", "host", "file", "line"]


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
    te = te[te["transactional_id"].notna().to_numpy(bool)]
    if not len(te):
        return pd.DataFrame(columns=cols)
    # one groupby over every transactional id at once (no Python per id or per row)
    k = te["kind"].astype("string").fillna("").to_numpy(object)
    d = pd.DataFrame(
        {
            "tx": te["transactional_id"].astype("string").to_numpy(),
            "ts": te["ts"].array,
            "init": k == "initialized",
            "rollback": k == "timeout_rollback",
            # a fenced line with the PRODUCER_FENCED error counts twice (two signs)
            "fenced": np.isin(k, ["fenced", "old_epoch"]).astype(np.int64)
            + (te["error"].astype("string") == "PRODUCER_FENCED").fillna(False).to_numpy(np.int64),
            "refused": np.isin(k, ["init_refused", "end_refused", "rollback_failed"]),
            "pid": te["producer_id"].astype("float64").to_numpy(),
            "epoch": te["epoch"].astype("float64").to_numpy(),
        }
    )
    # one producer's own lines of one fencing (the TransactionManager going fatal, then the Sender aborting
    # its batches, a millisecond apart) are one sign: a client's fenced line within a second of its previous
    # one for the same id counts no more
    client = te["client_id"].astype("string").to_numpy(object)
    mine = pd.DataFrame({"tx": d["tx"], "client": client, "ts": d["ts"]})[(d["fenced"] > 0).to_numpy(bool)]
    mine = mine[mine["client"].notna().to_numpy(bool) & mine["ts"].notna().to_numpy(bool)]
    if len(mine) > 1:
        mine = mine.sort_values(["tx", "client", "ts"], kind="stable")
        same = (mine["tx"] == mine["tx"].shift()) & (mine["client"] == mine["client"].shift())
        again = same & ((mine["ts"] - mine["ts"].shift()) <= pd.Timedelta(seconds=1))
        d.loc[mine.index[again.to_numpy(bool)], "fenced"] = 0
    g = d.groupby("tx", sort=True)
    out = g.agg(
        inits=("init", "sum"),
        timeout_rollbacks=("rollback", "sum"),
        fenced=("fenced", "sum"),
        refused=("refused", "sum"),
        first=("ts", "min"),
        last=("ts", "max"),
    )
    # an epoch bumped by two or more between consecutive inits of one producer id, with no timeout
    # rollback of that id in between: the last rollback at or before an init is after the one before
    inits = d[d["init"]].sort_values(["tx", "ts"], kind="stable")
    prev_t = inits.groupby("tx", sort=False)["ts"].shift()
    prev_pid = inits.groupby("tx", sort=False)["pid"].shift()
    prev_e = inits.groupby("tx", sort=False)["epoch"].shift()
    rolls = d.loc[d["rollback"] & d["ts"].notna(), ["tx", "ts"]].sort_values("ts", kind="stable")
    latest = pd.Series(pd.NaT, index=inits.index, dtype=d["ts"].dtype)
    timed = inits[inits["ts"].notna()]
    if len(rolls) and len(timed):
        got = pd.merge_asof(
            timed[["tx", "ts"]].reset_index().sort_values("ts", kind="stable"),
            rolls.rename(columns={"ts": "rolled_at"}),
            left_on="ts",
            right_on="rolled_at",
            by="tx",
            direction="backward",
        ).set_index("index")
        latest = got["rolled_at"].reindex(inits.index)
    rolled = (latest > prev_t).fillna(False).to_numpy(bool)
    jump = (inits["pid"] == prev_pid).to_numpy(bool) & ((inits["epoch"] - prev_e) >= 2).to_numpy(bool) & ~rolled
    out["epoch_jumps"] = pd.Series(jump, index=inits.index).groupby(inits["tx"]).sum().reindex(out.index).fillna(0)
    last_init = inits.drop_duplicates("tx", keep="last").set_index("tx")["epoch"]
    # ints, or None for an id never initialised (the column is int64 when every id was)
    last = last_init.reindex(out.index).astype("Int64").astype(object)
    out["last_epoch"] = last.where(out.index.isin(last_init.index), None).infer_objects()
    ids = d[["tx", "pid"]].dropna().astype({"pid": "int64"}).drop_duplicates()
    ids = ids.assign(pid=ids["pid"].astype(str)).sort_values(["tx", "pid"], kind="stable")
    out["producer_ids"] = ids.groupby("tx", sort=True)["pid"].agg(", ".join).reindex(out.index).fillna("")
    out = out.astype({c: "int64" for c in ("inits", "timeout_rollbacks", "fenced", "refused", "epoch_jumps")})
    return out.rename_axis("transactional_id").reset_index()[cols]


EVIDENCE_ROWS = 20  # the transaction lines a finding quotes


def _with_text(bundle, rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` of ``txn_events`` (taken from what the detector read, labelled by position) with
    their ``message``, read for these rows alone when the detector read the table without it."""
    if "message" in rows.columns or not len(rows):
        return rows
    text = bundle.rows_at("txn_events", rows.index.to_numpy(), ["message"])["message"]
    return rows.assign(message=text.array)


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
    reads=["metrics", "txn_events"],
    checks="transactions rolled back on timeout, producers fenced, partitions with late (hanging) transactions",
)
def transaction_timeouts(bundle) -> list[Finding]:
    columns = getattr(bundle, "columns", None)
    te = columns("txn_events", TXN_COLUMNS) if callable(columns) else bundle.table("txn_events")
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
    ev_list = evidence(_with_text(bundle, ev.head(EVIDENCE_ROWS)), limit=EVIDENCE_ROWS)
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
            counted_from=_rollback_counts(te, int(trouble["timeout_rollbacks"].sum()) if len(trouble) else 0),
        )
    ]


def _rollback_counts(te: pd.DataFrame, rollbacks: int) -> dict[str, tuple[str, str]]:
    """Where the count of rollbacks on timeout comes from (``counted_from``): every
    ``txn_events`` row of that kind naming a transactional id (each id with one is in trouble),
    as a query that selects exactly them; nothing when they are not the rows counted."""
    rows = np.flatnonzero(
        (te["kind"] == "timeout_rollback").fillna(False).to_numpy(bool) & te["transactional_id"].notna().to_numpy(bool)
    )
    if not rollbacks or len(rows) != rollbacks:
        return {}
    query = exact_query(te, rows, "kind == 'timeout_rollback' and transactional_id.notna()")
    return {} if query is None else {"timeout_rollbacks": ("txn_events", query)}
