"""Tiered-storage metadata and broker I/O imbalance (seed 004).

Example:
    >>> from kitlib.investigations.tiered_storage.analysis import read_iops
    >>> read_iops(bundle.file_io)            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kitlib.findings import Finding, detector, evidence

BIG_STATE_BYTES = 100 * 1024 * 1024  # a tier-state file this big is read/written at a cost
SLOW_MIGRATION_S = 10.0
RATIO = 3.0  # one broker's reads at 3x+ its peers' median
MIN_IOPS = 1000.0  # ignore near-idle brokers
PERSIST = 0.5  # in at least half of the intervals

CLEANUP = (
    "confluent.tier.partition.state.cleanup.enable=true, confluent.tier.partition.state.cleanup.delay.ms "
    "(default 2592000000, 30 days) and confluent.tier.partition.state.cleanup.interval.ms (e.g. 86400000)"
)


def read_iops(file_io: pd.DataFrame) -> pd.DataFrame:
    """Read operations per second per host and interval."""
    r = file_io[file_io["op"] == "R"]
    if not len(r):
        return pd.DataFrame(columns=["host", "interval", "ts", "reads", "iops"])
    g = (
        r.groupby(["host", "interval"], observed=True)
        .agg(ts=("ts", "first"), reads=("count", "sum"), interval_s=("interval_s", "first"))
        .reset_index()
    )
    g["iops"] = g["reads"] / g["interval_s"]
    g["host"] = g["host"].astype("string")
    return g[["host", "interval", "ts", "reads", "iops"]]


def imbalance(file_io: pd.DataFrame) -> pd.DataFrame:
    """Per host: mean read IOPS, the peers' median, the ratio, and in how many intervals the
    host was at RATIO x its peers (above MIN_IOPS)."""
    io = read_iops(file_io)
    if io["host"].nunique() < 3:
        return pd.DataFrame(columns=["host", "iops", "peers_iops", "ratio", "hot_intervals", "intervals"])
    rows = []
    for host in sorted(io["host"].unique()):
        mine = io[io["host"] == host].set_index("interval")["iops"]
        peers = io[io["host"] != host].groupby("interval")["iops"].median()
        both = pd.concat([mine.rename("me"), peers.rename("peers")], axis=1).dropna()
        hot = (both["me"] >= MIN_IOPS) & (both["me"] >= RATIO * both["peers"].clip(lower=1.0))
        rows.append(
            {
                "host": host,
                "iops": float(mine.mean()),
                "peers_iops": float(peers.mean()),
                "ratio": float(mine.mean() / max(peers.mean(), 1.0)),
                "hot_intervals": int(hot.sum()),
                "intervals": int(len(both)),
            }
        )
    return pd.DataFrame(rows).sort_values("ratio", ascending=False).reset_index(drop=True)


def top_files(file_io: pd.DataFrame, host: str | None = None, n: int = 15) -> pd.DataFrame:
    """Files with the most reads (summed over intervals), with topic, partition and kind."""
    r = file_io[file_io["op"] == "R"]
    if host is not None:
        r = r[r["host"].astype("string") == host]
    if not len(r):
        return pd.DataFrame(columns=["host", "path", "topic", "partition", "kind", "reads", "file", "line"])
    g = (
        r.groupby(["host", "path"], observed=True)
        .agg(
            topic=("topic", "first"),
            partition=("partition", "first"),
            kind=("kind", "first"),
            reads=("count", "sum"),
            file=("file", "first"),
            line=("line", "first"),
        )
        .reset_index()
    )
    return g.sort_values("reads", ascending=False).head(n).reset_index(drop=True)


def state_sizes(tier: pd.DataFrame) -> pd.DataFrame:
    """Per partition: the seed's table — segments removed, size before/after, difference, % change."""
    c = tier[tier["kind"] == "cleanup"]
    if not len(c):
        return pd.DataFrame(
            columns=[
                "host",
                "topic",
                "partition",
                "segments_removed",
                "size_before",
                "size_after",
                "size_change",
                "pct_change",
            ]
        )
    cols = ["host", "topic", "partition", "segments_removed", "size_before", "size_after", "size_change", "pct_change"]
    return c.sort_values("size_change")[cols].reset_index(drop=True)


@detector(
    ids=["tierstate-metadata-growth"],
    needs=["tierstate_events"],
    checks="tier-state metadata files: sizes, migration durations, cleanups (Confluent Tiered Storage)",
)
def detect_tierstate_growth(bundle) -> list[Finding]:
    t = bundle.tierstate_events
    if not len(t):
        return []
    sizes = pd.concat([t["size_before"], t["size_after"]]).dropna()
    mig = t[t["kind"] == "migration_complete"]
    clean = t[t["kind"] == "cleanup"]
    big = t[(t["size_before"] >= BIG_STATE_BYTES) | (t["size_after"] >= BIG_STATE_BYTES)]
    slow = mig[mig["duration_s"] >= SLOW_MIGRATION_S]
    reclaim = clean[clean["pct_change"] <= -90]
    if not len(big) and not len(slow) and not len(reclaim):
        return []
    nums: dict[str, Any] = {
        "largest_state_file_bytes": int(sizes.max()) if len(sizes) else 0,
        "partitions_with_big_state_files": int(big[["host", "topic", "partition"]].drop_duplicates().shape[0]),
        "migrations": int(len(mig)),
        "slowest_migration_s": round(float(mig["duration_s"].max()), 1) if len(mig) else None,
        "migration_seconds_total": round(float(mig["duration_s"].sum()), 1) if len(mig) else None,
        "cleanups": int(len(clean)),
    }
    if len(clean):
        nums["cleanup_median_pct_change"] = round(float(clean["pct_change"].median()), 2)
        nums["cleanup_bytes_reclaimed"] = int(-clean["size_change"].sum())
        nums["segments_removed"] = int(clean["segments_removed"].sum())
    rs = bundle.restarts
    if len(rs.dropna(subset=["duration_s"])):
        nums["slowest_start_s"] = round(float(rs["duration_s"].max()), 1)
        nums["fastest_start_s"] = round(float(rs["duration_s"].min()), 1)
    parts = []
    if len(big):
        parts.append(
            f"{nums['partitions_with_big_state_files']} tier-state files over {BIG_STATE_BYTES // 2**20} MB "
            f"(largest {nums['largest_state_file_bytes'] / 1e6:,.0f} MB)"
        )
    if len(slow):
        parts.append(
            f"{len(slow)} format migrations took ≥ {SLOW_MIGRATION_S:.0f} s (one at a time at start-up; "
            f"{nums['migration_seconds_total']:,.0f} s in all)"
        )
    if len(reclaim):
        parts.append(
            f"cleanups shrank {len(reclaim)} state files by more than 90 % "
            f"(median {nums.get('cleanup_median_pct_change')} %): most of the metadata described deleted segments"
        )
    ev_rows = pd.concat([big.nlargest(4, "size_before"), slow.nlargest(3, "duration_s"), reclaim.head(3)])
    ev_rows = ev_rows.drop_duplicates(subset=["file", "line"]).sort_values("ts")
    resolved = (
        len(clean)
        and not len(slow)
        and (clean["size_after"] < BIG_STATE_BYTES).all()
        and len(big) == len(clean[clean["size_before"] >= BIG_STATE_BYTES])
    )
    return [
        Finding(
            id="tierstate-metadata-growth",
            severity="medium" if resolved else "high",
            summary="Tiered-storage metadata grew large: "
            + "; ".join(parts)
            + (". The cleanups in this bundle already fixed it." if resolved else "."),
            numbers=nums,
            recommendation=(
                f"Enable tier partition state cleanup on the brokers: {CLEANUP}. Caveat: the delay clock only "
                "starts when cleanup is enabled, so everything tombstoned before becomes eligible at once, one "
                "delay later — expect a burst of cleanups then (seed 004: state files shrank >99 %, broker "
                "start-up went from 20+ minutes to under one, and the extra read I/O disappeared)."
            ),
            evidence=evidence(
                ev_rows,
                text=lambda x: (
                    f"{x['kind']} {x['topic']}-{x['partition']}: state file {x['size_before']:,.0f} -> {x['size_after']:,.0f} bytes"
                    + (f", {x['segments_removed']:,.0f} segments removed" if pd.notna(x["segments_removed"]) else "")
                    + (f", took {x['duration_s']:.1f} s" if pd.notna(x["duration_s"]) else "")
                ),
            ),
        )
    ]


@detector(
    ids=["broker-io-imbalance"],
    needs=["file_io"],
    checks="one broker's file read I/O far above its peers, persisting across intervals",
)
def detect_io_imbalance(bundle) -> list[Finding]:
    io = bundle.file_io
    if not len(io):
        return []
    imb = imbalance(io)
    if not len(imb):
        return []
    top = imb.iloc[0]
    if top["ratio"] < RATIO or top["hot_intervals"] < max(1, PERSIST * top["intervals"]) or top["iops"] < MIN_IOPS:
        return []
    host = str(top["host"])
    mine = io[(io["host"].astype("string") == host) & (io["op"] == "R")]
    by_kind = (mine.groupby("kind", observed=True)["count"].sum() / mine["count"].sum() * 100).sort_values(
        ascending=False
    )
    files = top_files(io, host)
    tparts = mine.groupby(["topic", "partition"], observed=True)["count"].sum().sort_values(ascending=False).head(5)
    main_kind = str(by_kind.index[0])
    return [
        Finding(
            id="broker-io-imbalance",
            severity="high",
            summary=(
                f"{host} reads {top['ratio']:.1f}x the median of its peers ({top['iops']:,.0f} vs {top['peers_iops']:,.0f} "
                f"read ops/s) in {top['hot_intervals']} of {top['intervals']} intervals; {by_kind.iloc[0]:.0f} % of its reads "
                f"go to {main_kind} files, led by " + ", ".join(f"{t}-{p}" for (t, p) in tparts.index[:3])
            ),
            numbers={
                "host": host,
                "read_iops": round(top["iops"]),
                "peers_median_read_iops": round(top["peers_iops"]),
                "ratio": round(top["ratio"], 1),
                "hot_intervals": int(top["hot_intervals"]),
                "intervals": int(top["intervals"]),
                **{f"share_{k}_pct": round(float(v), 1) for k, v in by_kind.head(3).items()},
            },
            recommendation=(
                (
                    "The reads are tier-state metadata: enable its cleanup (" + CLEANUP + "); see the "
                    "tierstate-metadata-growth finding for the caveat."
                )
                if main_kind == "tierstate"
                else (
                    "Find what reads these files: consumers far behind (lag), a partition reassignment or a "
                    "replica catching up, or log cleaning; rebalance leadership if one broker leads the hot partitions."
                )
            ),
            evidence=evidence(files.head(10), text=lambda x: f"R {x['reads']:,} {x['path']} ({x['kind']})"),
        )
    ]


# --- Apache Kafka tiered storage (KIP-405) -----------------------------------------------------


def remote_copies(remote: pd.DataFrame) -> pd.DataFrame:
    """Per partition: segments copied to remote storage, copy errors, remote deletions and the
    copy-failure window (first to last error), from ``remote_log_events``.

    Example:
        >>> remote_copies(bundle.remote_log_events)      # doctest: +SKIP
    """
    cols = [
        "host",
        "topic",
        "partition",
        "copied",
        "copy_errors",
        "remote_deletes",
        "first_error",
        "last_error",
        "failing_s",
        "copied_after_errors",
        "median_copy_s",
    ]
    r = remote[remote["topic"].notna()] if len(remote) else remote
    if not len(r):
        return pd.DataFrame(columns=cols)
    out = []
    for (host, topic, part), g in r.groupby(["host", "topic", "partition"], observed=True):
        err = g[g["kind"] == "copy_error"]
        copied = g[g["kind"] == "copied"]
        starts = g[g["kind"] == "copying"].drop_duplicates("segment", keep="last").set_index("segment")["ts"]
        ends = copied.drop_duplicates("segment", keep="last").set_index("segment")["ts"]
        took = (ends - starts.reindex(ends.index)).dt.total_seconds().dropna()
        last_err = err["ts"].max() if len(err) else pd.NaT
        out.append(
            {
                "host": host,
                "topic": topic,
                "partition": part,
                "copied": len(copied),
                "copy_errors": len(err),
                "remote_deletes": int(g["kind"].astype(str).str.startswith("delete").sum()),
                "first_error": err["ts"].min() if len(err) else pd.NaT,
                "last_error": last_err,
                "failing_s": (last_err - err["ts"].min()).total_seconds() if len(err) else 0.0,
                "copied_after_errors": int((copied["ts"] > last_err).sum()) if len(err) else len(copied),
                "median_copy_s": round(float(took.median()), 3) if len(took) else None,
            }
        )
    return (
        pd.DataFrame(out, columns=cols).sort_values(["copy_errors", "copied"], ascending=False).reset_index(drop=True)
    )


def _short_cause(cause: str) -> str:
    """``java.nio.file.FileSystemException: /a/b.log: Not a directory`` -> ``FileSystemException: Not a directory``."""
    cls, _, text = cause.partition(": ")
    parts = text.split(": ")
    while len(parts) > 1 and parts[0].startswith(("/", "\\", "file:")):  # drop the file path, keep the reason
        parts.pop(0)
    text = ": ".join(parts)
    return f"{cls.rsplit('.', 1)[-1]}: {text}" if text else cls.rsplit(".", 1)[-1]


@detector(
    ids=["remote-copy-errors"],
    needs=["remote_log_events"],
    checks="KIP-405 tiered storage: segment copies to the remote store failing",
)
def detect_remote_copy_errors(bundle) -> list[Finding]:
    r = bundle.remote_log_events
    if not len(r) or not (r["kind"] == "copy_error").any():
        return []
    per = remote_copies(r)
    bad = per[per["copy_errors"] > 0]
    err = r[r["kind"] == "copy_error"]
    causes = err["exception"].dropna().astype(str).value_counts()
    still = bad[bad["copied_after_errors"] == 0]
    m = bundle.metrics
    lag = m[m["mbean"].astype("string").str.contains("RemoteCopyLagBytes", regex=False)]["value"] if len(m) else []
    nums: dict[str, Any] = {
        "copy_errors": int(len(err)),
        "partitions": int(len(bad)),
        "failing_s": round(float(bad["failing_s"].max()), 1),
        "segments_copied": int(per["copied"].sum()),
        "partitions_still_failing": int(len(still)),
        "max_remote_copy_lag_bytes": int(max(lag)) if len(lag) else None,
        "cause": causes.index[0] if len(causes) else None,
    }
    names = ", ".join(f"{t}-{p}" for t, p in zip(bad["topic"], bad["partition"]))
    summary = (
        f"{nums['copy_errors']} segment copies to remote storage failed on {names} over "
        f"{nums['failing_s']:,.0f} s"
        + (f" ({_short_cause(nums['cause'])})" if nums["cause"] else "")
        + (
            "; copies resumed afterwards"
            if not len(still)
            else f"; {len(still)} partition(s) had not copied a segment since"
        )
    )
    ev = pd.concat([err.head(3), err.tail(2), r[(r["kind"] == "copied") & (r["ts"] > err["ts"].max())].head(2)])
    return [
        Finding(
            id="remote-copy-errors",
            severity="medium" if not len(still) else "high",
            summary=summary,
            numbers=nums,
            recommendation=(
                "Restore the brokers' access to the remote store first (the exception names the cause: "
                "credentials, bucket or container, network). While copies fail, segments past "
                "local.retention.ms / local.retention.bytes stay on the local disk, so watch "
                "RemoteCopyLagBytes against free space. If the store stays down longer than the disk can "
                "absorb, set remote.log.copy.disable=true on the topic (Kafka 3.9+, KIP-950) to stop tiering "
                "it; segments not yet copied then live only locally and follow retention.ms / retention.bytes."
            ),
            evidence=evidence(
                ev.drop_duplicates(subset=["file", "line"]).sort_values("ts"),
                text=lambda x: (
                    f"{x['kind']} {x['topic']}-{x['partition']}"
                    + (f": {x['exception']}" if pd.notna(x.get("exception")) else f": {x['message'][:160]}")
                ),
            ),
        )
    ]
