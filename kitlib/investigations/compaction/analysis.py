"""Log compaction (seed 003): how many keys a cleaner pass can index, how many passes a dirty
section needs, what reserve storage the dirty ratio costs, and detectors over cleaner runs.

Kafka's dedupe buffer (``log.cleaner.dedupe.buffer.size``, default 128 MiB) is split evenly
between the ``log.cleaner.threads`` (each share capped at 2 GiB); each entry is a 16-byte MD5 of
the key plus an 8-byte offset (24 bytes), and a pass stops once the map is
``log.cleaner.io.buffer.load.factor`` (0.9) full — which is why ``Buffer utilization: 90.0%``
means "this pass ran out of buffer".

Example:
    >>> entries_per_pass(128 * 1024 * 1024)
    5592405
    >>> passes_needed(2_400_000_000 / 8, entries_per_pass(128 * 1024 * 1024))
    54
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from kitlib.findings import Finding, detector, evidence

ENTRY_BYTES = 24
DEFAULTS = {
    "log.cleaner.dedupe.buffer.size": 134217728,
    "log.cleaner.io.buffer.load.factor": 0.9,
    "log.cleaner.threads": 1,
    "min.cleanable.dirty.ratio": 0.5,
}
MAX_PER_THREAD = 2 * 1024**3


def entries_per_pass(buffer_bytes: int, threads: int = 1, load_factor: float | None = None) -> int:
    """Keys one cleaner thread can index in a pass: its share of the dedupe buffer / 24 bytes
    (times ``load_factor`` when given: the fill at which Kafka stops a pass).

    Example:
        >>> entries_per_pass(1024 ** 3)
        44739242
        >>> entries_per_pass(1048577, load_factor=0.9)
        39321
    """
    per_thread = min(buffer_bytes // max(threads, 1), MAX_PER_THREAD)
    slots = per_thread // ENTRY_BYTES
    return int(slots * load_factor) if load_factor else int(slots)


def passes_needed(dirty_records: float, entries: int) -> int:
    """Cleaner passes to get through ``dirty_records`` distinct-key records at ``entries`` per pass."""
    return int(math.ceil(dirty_records / entries)) if entries > 0 else 0


def buffer_for_one_pass(dirty_records: float, threads: int = 1, load_factor: float = 1.0) -> int:
    """Dedupe buffer (bytes, all threads) that indexes ``dirty_records`` in one pass.

    Example:
        >>> round(buffer_for_one_pass(300_000_000) / 1e9, 1)   # seed 003: ~7.2 GB
        7.2
    """
    return int(math.ceil(dirty_records / load_factor)) * ENTRY_BYTES * max(threads, 1)


def partitions_for_one_pass(total_dirty: float, entries: int, round_to: int = 10) -> tuple[int, int]:
    """(minimum partitions, rounded up to a multiple of ``round_to``) so each partition's dirty
    records fit one pass.

    Example:
        >>> partitions_for_one_pass(2_400_000_000, entries_per_pass(1024 ** 3))
        (54, 60)
    """
    need = passes_needed(total_dirty, entries)
    return need, int(math.ceil(need / round_to) * round_to)


def reserve_storage(base_bytes: float, dirty_ratio: float, price_per_gb_month: float = 0.10) -> dict:
    """Extra storage a compacted topic holds before the cleaner triggers: at ratio r the dirty
    part reaches r/(1-r) of the clean part. Returns bytes and monthly cost (GB = 10^9 bytes).

    Example:
        >>> reserve_storage(16e12, 0.5)["monthly_cost"]     # seed 003: $1,600
        1600.0
    """
    reserve = base_bytes * dirty_ratio / (1 - dirty_ratio)
    return {
        "reserve_bytes": reserve,
        "reserve_gb": reserve / 1e9,
        "monthly_cost": round(reserve / 1e9 * price_per_gb_month, 2),
    }


def days_until_cleaning(clean_records: float, updates_per_s: float, dirty_ratio: float) -> float:
    """Days of updates before a freshly cleaned log is dirty enough to be cleaned again.

    Example:
        >>> round(days_until_cleaning(1.6e9, 300, 0.5))      # seed 003: ~61 days
        62
    """
    return clean_records * dirty_ratio / (1 - dirty_ratio) / updates_per_s / 86400


def settings(bundle) -> dict:
    """Cleaner settings from the bundle's configs (broker dump or live capture), else Kafka's
    defaults; ``_from`` says which were found."""
    out: dict[str, Any] = dict(DEFAULTS)
    found = []
    cfg = bundle.configs
    if len(cfg):
        for key in DEFAULTS:
            rows = cfg[cfg["key"] == key]
            if len(rows):
                try:
                    out[key] = (
                        float(rows["value"].iloc[-1])
                        if "." in str(rows["value"].iloc[-1])
                        else int(rows["value"].iloc[-1])
                    )
                    found.append(key)
                except ValueError:
                    pass
    out["_from"] = found
    return out


def partition_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per host and log: runs, records indexed, reduction, buffer utilization, throughput."""
    cols = [
        "host",
        "log",
        "runs",
        "indexed_records",
        "mean_buffer_pct",
        "full_buffer_runs",
        "zero_reclaim_runs",
        "mean_reduction_pct",
        "mb_processed",
        "mean_mb_per_s",
        "first",
        "last",
    ]
    if not len(runs):
        return pd.DataFrame(columns=cols)
    r = runs.assign(
        indexed=runs["dirty_end"] - runs["dirty_start"],
        full=runs["buffer_utilization_pct"] >= 85,
        zero=runs["size_reduction_pct"] < 1,
    )
    g = r.groupby(["host", "log"], observed=True)
    out = g.agg(
        runs=("ts", "size"),
        indexed_records=("indexed", "sum"),
        mean_buffer_pct=("buffer_utilization_pct", "mean"),
        full_buffer_runs=("full", "sum"),
        zero_reclaim_runs=("zero", "sum"),
        mean_reduction_pct=("size_reduction_pct", "mean"),
        mb_processed=("mb_processed", "sum"),
        mean_mb_per_s=("mb_per_s", "mean"),
        first=("ts", "min"),
        last=("ts", "max"),
    ).reset_index()
    return out[cols]


def plan(
    bundle,
    dirty_records: float | None = None,
    partitions: int = 1,
    price_per_gb_month: float = 0.10,
    base_bytes: float | None = None,
) -> pd.DataFrame:
    """The planner's table for a bundle: current settings, keys per pass, passes for the
    observed (or given) dirty records, the buffer / partition count for one pass, and the
    reserve storage cost of the dirty ratio on ``base_bytes`` of topic data (default: the
    compacted topics' size in the bundle, :func:`compacted_bytes`)."""
    s = settings(bundle)
    runs = bundle.cleaner_runs
    if dirty_records is None:
        dirty_records = (
            float((runs["dirty_end"] - runs["dirty_start"]).groupby(runs["log"]).sum().max()) if len(runs) else 0.0
        )
    entries = entries_per_pass(
        int(s["log.cleaner.dedupe.buffer.size"]),
        int(s["log.cleaner.threads"]),
        float(s["log.cleaner.io.buffer.load.factor"]),
    )
    mbps = float(runs["mb_per_s"].median()) if len(runs) else float("nan")
    rows = [
        (
            "log.cleaner.dedupe.buffer.size",
            f"{int(s['log.cleaner.dedupe.buffer.size']):,} bytes",
            "from configs" if "log.cleaner.dedupe.buffer.size" in s["_from"] else "Kafka default",
        ),
        (
            "log.cleaner.threads",
            s["log.cleaner.threads"],
            "from configs" if "log.cleaner.threads" in s["_from"] else "Kafka default",
        ),
        ("keys indexed per pass (at load factor)", f"{entries:,}", "buffer / threads / 24 bytes × load factor"),
        ("dirty records per partition", f"{dirty_records:,.0f}", "observed in cleaner runs" if len(runs) else "given"),
        ("passes needed per partition", passes_needed(dirty_records, entries), "at the current buffer"),
        (
            "buffer for one pass",
            f"{buffer_for_one_pass(dirty_records, int(s['log.cleaner.threads']), float(s['log.cleaner.io.buffer.load.factor'])):,} bytes",
            "log.cleaner.dedupe.buffer.size that indexes it all at once",
        ),
        (
            "partitions for one pass",
            partitions_for_one_pass(dirty_records * partitions, entries)[1],
            "spread the same dirty records so each partition fits one pass",
        ),
        ("median cleaner MB/s", f"{mbps:.1f}", "observed"),
    ]
    size_basis = "given"
    if base_bytes is None:
        base_bytes, size_basis = compacted_bytes(bundle)
    if base_bytes:
        rs = reserve_storage(base_bytes, float(s["min.cleanable.dirty.ratio"]), price_per_gb_month)
        rows.append(
            (
                "reserve storage at min.cleanable.dirty.ratio",
                f"{_gb(rs['reserve_bytes'])} (${rs['monthly_cost']:,.2f}/month)",
                f"ratio {s['min.cleanable.dirty.ratio']} on {_gb(base_bytes)} of topic data ({size_basis}), "
                f"${price_per_gb_month}/GB-month",
            )
        )
    else:
        rows.append(
            (
                "reserve storage at min.cleanable.dirty.ratio",
                "unknown",
                "needs the size of the compacted topic: a log-dir capture (kitlib capture) or BASE_BYTES",
            )
        )
    return pd.DataFrame(rows, columns=["quantity", "value", "basis"])


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e8 else f"{n / 1e6:,.1f} MB"


def compacted_bytes(bundle) -> tuple[float, str]:
    """Bytes on disk of the partitions the cleaner worked on (every replica, the latest log-dir
    capture of each), and where that figure comes from; ``(0.0, reason)`` when the bundle has no
    log-dir sizes for them.

    Example:
        >>> compacted_bytes(kitlib.load_bundle("sample_data/compaction"))   # doctest: +SKIP
        (15229047.0, 'log dirs of tickets, latest capture')
    """
    dirs, runs = bundle.table("log_dirs"), bundle.cleaner_runs
    if not len(dirs) or not len(runs):
        return 0.0, "no log-dir capture"
    topics = sorted(set(runs["topic"].astype(str)))
    d = dirs[dirs["topic"].astype(str).isin(topics) & ~dirs["is_future"].fillna(False).astype(bool)]
    if not len(d):
        return 0.0, "no log-dir sizes for " + ", ".join(topics)
    latest = d.sort_values("ts").groupby(["broker_id", "topic", "partition"], observed=True).tail(1)
    return float(latest["size_bytes"].sum()), f"log dirs of {', '.join(topics)}, latest capture"


@detector(
    ids=["cleaner-buffer-too-small"],
    needs=["cleaner_runs"],
    checks="log cleaner passes limited by a full dedupe buffer (several runs per partition at ~90 % utilization)",
)
def detect_buffer_too_small(bundle) -> list[Finding]:
    runs = bundle.cleaner_runs
    if not len(runs):
        return []
    summ = partition_summary(runs)
    bad = summ[(summ["full_buffer_runs"] >= 2)]
    if not len(bad):
        return []
    s = settings(bundle)
    threads = int(s["log.cleaner.threads"])
    lf = float(s["log.cleaner.io.buffer.load.factor"])
    buf = int(s["log.cleaner.dedupe.buffer.size"])
    entries = entries_per_pass(buf, threads, lf)
    worst = bad.sort_values("indexed_records", ascending=False).iloc[0]
    dirty = float(worst["indexed_records"])
    one_pass = buffer_for_one_pass(dirty, threads, lf)
    suggest = min(max(one_pass, buf * 2), MAX_PER_THREAD * threads)
    rows = runs[runs["log"].isin(bad["log"]) & (runs["buffer_utilization_pct"] >= 85)].sort_values("ts")
    full_pct = float(rows[rows["log"] == worst["log"]]["buffer_utilization_pct"].mean())
    return [
        Finding(
            id="cleaner-buffer-too-small",
            severity="high" if worst["full_buffer_runs"] >= 5 else "medium",
            summary=(
                f"The log cleaner ran out of dedupe buffer on {len(bad)} log(s): {worst['log']} on {worst['host']} needed "
                f"{int(worst['full_buffer_runs'])} passes with a full buffer ({full_pct:.0f} % utilization), each indexing "
                f"~{entries:,} keys, to cover {dirty:,.0f} dirty records"
            ),
            numbers={
                "logs_affected": len(bad),
                "full_buffer_runs": int(bad["full_buffer_runs"].sum()),
                "dedupe_buffer_bytes": buf,
                "cleaner_threads": threads,
                "keys_per_pass": entries,
                "dirty_records_indexed": int(dirty),
                "passes_at_current_buffer": passes_needed(dirty, entries),
                "buffer_for_one_pass_bytes": one_pass,
                "settings_source": "configs"
                if "log.cleaner.dedupe.buffer.size" in s["_from"]
                else "Kafka defaults (no config found)",
            },
            recommendation=(
                f"Raise log.cleaner.dedupe.buffer.size to {suggest:,} bytes (one pass for {dirty:,.0f} dirty records at "
                f"{threads} thread(s); it is heap memory on every broker, capped at 2 GiB per thread), or spread the topic "
                f"over more partitions so each partition's dirty section fits one pass "
                f"(seed 003: 1 GiB buffer ≈ 45 M keys and 60 partitions instead of 8). Check the broker heap first."
            ),
            evidence=evidence(
                rows.head(6),
                text=lambda x: (
                    f"cleaned log {x['log']} dirty section [{x['dirty_start']}, {x['dirty_end']}] buffer utilization "
                    f"{x['buffer_utilization_pct']}% size reduction {x['size_reduction_pct']}%"
                ),
            ),
        )
    ]


@detector(
    ids=["cleaner-no-reclaim"],
    needs=["cleaner_runs"],
    checks="log cleaner runs that process data but reclaim ~0 % (first-publication effect)",
)
def detect_no_reclaim(bundle) -> list[Finding]:
    runs = bundle.cleaner_runs
    if not len(runs):
        return []
    zero = runs[
        (runs["size_reduction_pct"] < 1) & (runs["mb_processed"] > 0) & (runs["dirty_end"] > runs["dirty_start"])
    ]
    if len(zero) < 2:
        return []
    mb = float(zero["mb_processed"].sum())
    secs = float(zero["seconds"].sum())
    logs = sorted(zero["log"].astype(str).unique())
    return [
        Finding(
            id="cleaner-no-reclaim",
            severity="medium",
            summary=(
                f"{len(zero)} cleaner runs on {', '.join(logs[:5])} processed {mb:,.1f} MB in {secs:,.1f} s and reclaimed "
                f"nothing: the passes indexed keys that have no older copy yet (typically a first publication of every key, "
                f"seed 003)"
            ),
            numbers={
                "zero_reclaim_runs": len(zero),
                "mb_processed": round(mb, 1),
                "seconds": round(secs, 1),
                "runs_total": len(runs),
                "logs": len(logs),
            },
            recommendation=(
                "Expected after a full (re)publication until the passes reach the records that overwrite older "
                "keys; make the passes bigger (log.cleaner.dedupe.buffer.size) or partitions smaller so the cleaner "
                "gets there in fewer passes, and size disk for the dirty section in the meantime."
            ),
            evidence=evidence(
                zero.sort_values("ts").head(6),
                text=lambda x: (
                    f"cleaned log {x['log']} dirty section [{x['dirty_start']}, {x['dirty_end']}]: {x['mb_processed']} MB processed, "
                    f"{x['size_reduction_pct']}% size reduction"
                ),
            ),
        )
    ]


@detector(
    ids=["cleaner-stalled"],
    needs=["cleaner_events"],
    checks="uncleanable partitions, dead cleaner threads and cleaner I/O errors",
)
def detect_stalled(bundle) -> list[Finding]:
    ev = bundle.cleaner_events
    if not len(ev):
        return []
    bad = ev[
        ev["kind"].isin(["uncleanable", "error"]) | ((ev["kind"] == "manager") & (ev["level"].isin(["WARN", "ERROR"])))
    ]
    bad = bad[bad["kind"] != "manager"] if (bad["kind"] != "manager").any() else bad
    # the cleaner leaving a failed log dir is that dir's failure, reported by cluster_health's log-dir-failure
    bad = bad[~bad["message"].astype("string").str.startswith("Stopping cleaning logs in dir", na=False)]
    if not len(bad):
        return []
    parts = sorted(bad["log"].dropna().astype(str).unique())
    return [
        Finding(
            id="cleaner-stalled",
            severity="high",
            summary=(
                f"The log cleaner hit {len(bad)} error(s)"
                + (f"; uncleanable: {', '.join(parts[:8])}" if parts else "")
                + ". Those logs are no longer compacted and grow until fixed."
            ),
            numbers={"errors": len(bad), "uncleanable_partitions": len(parts)},
            recommendation=(
                "Read the stack trace in the evidence; fix the cause (corrupt segment, disk error, a record the "
                "cleaner cannot handle), then restart the broker to clear the uncleanable mark "
                "(kafka.log:type=LogCleanerManager,name=uncleanable-partitions-count shows it). Watch "
                "DeadThreadCount: a dead cleaner thread stops all compaction on that broker."
            ),
            evidence=evidence(bad.sort_values("ts").head(8)),
        )
    ]
