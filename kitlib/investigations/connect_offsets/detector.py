"""The ``offset-commit-timeouts`` detector: one finding per Connect task whose offset commits
timed out or failed, told from the source task's drain model (:mod:`.model`) with the producer
settings that would drain it in time.
"""

from __future__ import annotations

import math

import pandas as pd

from kitlib import findings
from kitlib.investigations.connect_offsets import commits as _commits  # noqa: F401  (declares the commits table)
from kitlib.investigations.connect_offsets.arithmetic import what_if
from kitlib.investigations.connect_offsets.model import DrainModel, task_model


@findings.detector(
    ids=["offset-commit-timeouts"],
    needs=["commits"],
    checks="Connect source offset commits that time out or fail, with the producer drain model",
)
def detect_offset_commit_timeouts(bundle) -> list[findings.Finding]:
    """One finding per source task whose offset commits timed out or failed."""
    c = bundle.commits
    if c.empty:
        return []
    bad = c[c["outcome"].isin(["timeout", "failed"]) & (c["kind"] == "source")]
    out = []
    for (conn, task), _ in bad.groupby(["connector", "task"], observed=True):
        m = task_model(bundle, str(conn), int(task), c)
        out.append(_finding(m))
    sink_bad = c[c["outcome"].isin(["timeout", "failed"]) & (c["kind"] == "sink")]
    for (conn, task), rows in sink_bad.groupby(["connector", "task"], observed=True):
        out.append(
            findings.Finding(
                "offset-commit-timeouts",
                "medium",
                f"Sink task {conn}-{task}: {len(rows)} offset commit(s) failed or timed out "
                f"({rows['ts'].min():%Y-%m-%d %H:%M} to {rows['ts'].max():%H:%M} UTC)",
                numbers={
                    "failed_commits": len(rows),
                    "attempts": int(((c["connector"] == conn) & (c["task"] == task)).sum()),
                },
                recommendation="Sink commits go through the consumer group: look for rebalances and consumer "
                "'Commit cannot be completed' errors around these times; if put() is slow, lower "
                "consumer.override.max.poll.records or raise consumer.override.max.poll.interval.ms.",
                evidence=findings.evidence(rows),
            )
        )
    return out


def _finding(m: DrainModel) -> findings.Finding:
    conn, task = m.connector, m.task
    timeout_s = m.timeout_ms / 1000.0
    rpr, rtt, outst = m.records_per_request, m.round_trip_s, m.outstanding
    nums = {
        "failed_commits": m.failed,
        "attempts": m.attempts,
        "outstanding_at_flush_median": None if math.isnan(outst) else int(outst),
        "outstanding_at_flush_max": None if math.isnan(m.outstanding_max) else int(m.outstanding_max),
        "offset.flush.timeout.ms": _int(m.timeout_ms),
        "batch.size": _int(m.batch_size),
        "linger.ms": _int(m.linger_ms),
        "max.in.flight": m.in_flight,
        "records_per_request": round(rpr, 1),
        "records_per_request_from": m.records_per_request_source,
    }
    new_batch = int(min(m.batch_size * 20, m.max_request_size))
    new_linger = max(_int(m.linger_ms) or 0, 10)
    drain_now = drain_after = None
    if not math.isnan(rtt) and not math.isnan(outst):
        t = what_if(
            outst,
            m.batch_size,
            rpr,
            rtt,
            m.timeout_ms,
            m.in_flight,
            m.linger_ms,
            new_batch,
            new_linger,
            m.max_request_size,
        )
        drain_now, drain_after = float(t["drain_s"].iloc[0]), float(t["drain_s"].iloc[1])
        nums.update(
            {
                "round_trip_ms": round(rtt * 1000, 2),
                "requests_to_drain": int(t["requests_to_drain"].iloc[0]),
                "drain_s_now": round(drain_now, 2),
                "records_per_request_after": float(t["records_per_request"].iloc[1]),
                "drain_s_after": round(drain_after, 2),
            }
        )
    share = m.failed / max(m.attempts, 1)
    severity = "high" if m.failed >= 3 or share >= 0.2 else "medium"
    where = (
        "lines without a time"  # a log service's export may drop the date
        if pd.isna(m.start)
        else f"{m.start:%Y-%m-%d %H:%M}" + (f" to {m.end:%H:%M} UTC" if m.end != m.start else " UTC")
    )
    tiny = not math.isnan(outst) and outst <= max(rpr * m.in_flight * 2, 10)
    bad = m.bad
    # 2.x waits for the producer to drain; 3.0.1+ commits acknowledged records only, so a
    # timeout there is the offset store write itself
    gen_a = bool(
        bad["remaining"].notna().any()
        or bad["message"].astype(str).str.contains("outstanding|flushing", regex=True).any()
    )
    if not gen_a and not tiny:
        pend = (
            f" while ~{int(outst):,} messages were pending in the producer ({m.outstanding_source})"
            if not math.isnan(outst)
            else ""
        )
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits timed out or failed "
            f"({where}): the offset write did not complete within offset.flush.timeout.ms "
            f"{timeout_s:g} s{pend}"
        )
        rec = (
            "Kafka 3.x commits only acknowledged records, so this timeout is the offset store: check the "
            "offsets topic (offset.storage.topic: leaders, ISR, min.insync.replicas, broker produce latency) "
            "or, in standalone mode, the offsets file's disk; offset.flush.timeout.ms on the worker bounds "
            "the wait. If pending messages stay high (source-record-active-count), the task's producer is "
            f"also behind: producer.override.batch.size={new_batch} and producer.override.linger.ms={new_linger}"
            + (
                ""
                if str(m.override_policy).strip().lower() == "all"
                else " (needs connector.client.config.override.policy=All on the workers)"
            )
            + "."
        )
    elif tiny:
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits failed ({where}) with "
            f"only ~{int(outst)} outstanding messages: the producer was not delivering at all"
        )
        rec = (
            "Batching is not the cause here: check that the task's producer can reach the brokers "
            "(NetworkException / TimeoutException / NOT_ENOUGH_REPLICAS in the worker log, broker health, "
            "ACLs and quotas on the target topic) before touching producer settings."
        )
    else:
        why = f"~{int(outst):,} outstanding messages at flush" if not math.isnan(outst) else "a backlog at flush"
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits timed out or failed "
            f"({where}); {why}, ~{rpr:.0f} records per produce request "
            f"(batch.size {int(m.batch_size)}, max.in.flight {m.in_flight})"
        )
        if drain_now is not None:
            summary += (
                f": draining takes ~{drain_now:.1f} s vs offset.flush.timeout.ms {timeout_s:g} s; "
                f"~{drain_after:.1f} s with batch.size {new_batch}"
            )
        pol = str(m.override_policy).strip().lower()
        rec = (
            f"Make each produce request carry more records: set producer.override.batch.size={new_batch} and "
            f"producer.override.linger.ms={new_linger} in the connector config of {conn}"
            + (
                ""
                if pol == "all"
                else " (allow it on every worker with connector.client.config.override.policy=All, a worker restart)"
            )
            + ". Check max.request.size stays >= batch.size and buffer.memory holds several batches. "
            "Raising offset.flush.timeout.ms only hides the backlog."
        )
    fixed = m.after
    if fixed and not tiny and gen_a:
        severity = "low"
        summary += (
            f". Resolved: no failure in the {fixed.commits_ok} commits since the producer was "
            f"re-created with batch.size {int(fixed.batch_size)} at {fixed.since:%Y-%m-%d %H:%M} UTC"
        )
        nums["batch.size_after_change"] = int(fixed.batch_size)
        nums["commits_ok_after_change"] = fixed.commits_ok
        if not math.isnan(fixed.outstanding_max):
            nums["outstanding_max_after_change"] = int(fixed.outstanding_max)
        rec = (
            f"Keep batch.size {int(fixed.batch_size)} for {conn} (set as producer.override.batch.size) "
            "and apply the same override to other high-volume single-partition source connectors."
        )
    ev = findings.evidence(m.bad.head(8), text=lambda r: _ev_text(r))
    prows = m.producer_rows
    if isinstance(prows, pd.DataFrame) and not prows.empty:
        keys = ["batch.size", "linger.ms", "max.in.flight.requests.per.connection"]
        pr = prows[prows["key"].isin(keys)]
        ev += findings.evidence(pr, text=lambda r: f"ProducerConfig ({r['entity']}): {r['key']} = {r['value']}")
    tr = m.timeout_rows
    if isinstance(tr, pd.DataFrame) and not tr.empty:
        ev += findings.evidence(tr, text=lambda r: f"{r['scope']}: {r['key']} = {r['value']}")
    return findings.Finding("offset-commit-timeouts", severity, summary, numbers=nums, recommendation=rec, evidence=ev)


def _int(v) -> int | None:
    """An int, or None for a figure the bundle does not give (NaN)."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _ev_text(r) -> str:
    parts = [str(r.get("message", ""))]
    if not pd.isna(r.get("outstanding")):
        parts.append(f"[outstanding at flush: {int(r['outstanding'])}]")
    return " ".join(parts)
