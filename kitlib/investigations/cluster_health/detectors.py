"""The cluster_health detectors: GC pauses and out-of-memory, ISR shrinks, controller failovers,
fenced brokers, failed log directories and unclean elections. One cause, one finding: a symptom
a GC pause, a controlled shutdown, a controller failover or a stall explains is told in that
cause's finding (``causes.py``, ``failover.py``, ``stalls.py``), not again in its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_health import stalls
from kitlib.investigations.cluster_health.analysis import (
    LONG_PAUSE_MS,
    described_under_replication,
    gc_summary,
    host_of,
    isr_episodes,
    joined_by_place,
    long_pauses,
    metric_series,
    node_col,
    node_events,
    node_ids,
    partition_changes,
    place_codes,
    quoted,
    shrink_rows,
)
from kitlib.investigations.cluster_health.causes import drop_explained, explained_rows, gc_links, in_shutdown
from kitlib.investigations.cluster_health.codes import earliest, text_counts
from kitlib.investigations.cluster_health.counts import fenced_counts, shrink_counts
from kitlib.investigations.cluster_health.failover import STORM_S, described_quorum_leader, failover_owned, failovers

PAUSE_SHARE_ALERT = 0.05  # 5 % of wall-clock time in pauses
FLAP_MIN = 3  # the same broker leaving the same partition's ISR this often = flapping
HEAP_FULL = 0.9  # heap still this full after a collection = the heap is too small
URP_MBEAN = "UnderReplicatedPartitions"
WATCH_AFTER_S = 30  # replica.lag.time.max.ms: how long the lines must go on past a departure to call it lasting
HUMONGOUS_MIN = 5  # collections started by humongous allocations: the heap (or region) is too small for the batches


def _count_increase(bundle, name: str) -> float:
    s = metric_series(bundle, name, "Count")
    if not len(s):
        return 0.0
    return float(s.groupby("host", observed=True)["value"].agg(lambda v: v.max() - v.min()).sum())


def _fmt_s(x: float | None) -> str:
    return "n/a" if x is None or x != x else (f"{x:.1f} s" if x < 120 else f"{x / 60:.1f} min")


@detector(
    ids=["gc-pauses"],
    needs=[],
    reads=["gc_pauses", "node_events"],
    checks="stop-the-world GC pauses (>= 1 s, full GCs, to-space exhaustion, >= 5 % of time paused, heap "
    "full after GC, humongous-allocation collections) and OutOfMemoryError, "
    "and the ISR departures and session losses they caused",
)
def detect_gc_pauses(bundle) -> list[Finding]:
    g = bundle.table("gc_pauses")
    ne = node_events(bundle)
    oom = ne[ne["kind"] == "oom"] if len(ne) else ne
    summ = gc_summary(bundle)
    if not len(summ) and not len(oom):
        return []
    bad_hosts = []
    for r in summ.itertuples():
        reasons = []
        if r.longest_ms >= LONG_PAUSE_MS:
            reasons.append(f"longest pause {r.longest_ms:,.0f} ms")
        if r.full_pauses:
            reasons.append(f"{r.full_pauses} full GC(s)")
        if r.to_space_exhausted:
            reasons.append(f"to-space exhausted {r.to_space_exhausted}x")
        if r.paused_share == r.paused_share and r.paused_share >= PAUSE_SHARE_ALERT and r.span_s >= 30:
            reasons.append(f"{r.paused_share:.0%} of {r.span_s:,.0f} s paused")
        if r.max_heap_after_share == r.max_heap_after_share and r.max_heap_after_share >= HEAP_FULL:
            reasons.append(f"heap {r.max_heap_after_share:.0%} full after a collection")
        if r.humongous >= HUMONGOUS_MIN:
            reasons.append(f"{r.humongous} collections forced by humongous allocations")
        if reasons:
            bad_hosts.append((r, reasons))
    oom_hosts = sorted(oom["host"].astype(str).unique()) if len(oom) else []
    if not bad_hosts and not oom_hosts:
        return []
    links = gc_links(bundle)
    worst = max(bad_hosts, key=lambda x: x[0].longest_ms)[0] if bad_hosts else None
    conseq: dict = {}
    for lk in links:
        conseq.setdefault((lk.host, lk.node), []).append(lk)
    parts = []
    for r, reasons in bad_hosts:
        parts.append(f"{r.host} (node {r.node}): " + ", ".join(reasons))
    for h in oom_hosts:
        parts.append(f"{h}: java.lang.OutOfMemoryError")
    summary = "GC trouble: " + "; ".join(parts)
    if conseq:
        said = []
        for (_host, node), lks in conseq.items():
            kinds = pd.Series([lk.symptom for lk in lks]).value_counts()
            words = {
                "isr_shrink": "left the ISR",
                "fenced": "was fenced",
                "broker_failed": "was declared failed",
                "zk_session_expired": "lost its ZooKeeper session",
                "zk_session_timeout": "timed out its ZooKeeper session",
                "heartbeat_timeout": "missed heartbeats",
            }
            said.append(
                f"node {node} "
                + ", ".join(f"{words.get(k, k)} ({n}x)" for k, n in kinds.items())
                + f" right after a {max(lk.pause_ms for lk in lks):,.0f} ms pause"
            )
        summary += ". Consequences: " + "; ".join(said)
    rows = long_pauses(bundle)
    ev_rows = (
        rows.sort_values("duration_ms", ascending=False).head(6)
        if len(rows)
        else g[g["is_pause"].fillna(False).astype(bool)].sort_values("duration_ms", ascending=False).head(3)
    )
    evid = evidence(ev_rows, text=lambda x: f"{x['kind']} ({x['cause']}) {x['duration_ms']:.1f} ms: {x['message']}")
    for lk in links[:6]:
        evid.append(
            {
                "file": lk.symptom_file,
                "line": lk.symptom_line,
                "host": lk.host,
                "ts": lk.symptom_ts.isoformat(),
                "text": f"{lk.symptom} on node {lk.node}, {lk.pause_ms:,.0f} ms pause ended {lk.pause_ts.isoformat()}",
            }
        )
    if len(oom):
        evid += evidence(quoted(bundle, oom.head(3), "node_events"))
    severity = (
        "critical"
        if oom_hosts
        else "high"
        if (conseq or (worst is not None and worst.longest_ms >= 5000))
        else "medium"
        if (worst is not None and worst.longest_ms >= LONG_PAUSE_MS)
        else "low"
    )
    worst = (
        max(bad_hosts, key=lambda x: (x[0].longest_ms >= LONG_PAUSE_MS, x[0].humongous, x[0].longest_ms))[0]
        if bad_hosts
        else None
    )
    numbers: dict[str, Any] = {
        "hosts": len(bad_hosts) + len([h for h in oom_hosts if h not in {r.host for r, _ in bad_hosts}]),
        "explained_symptoms": len(links),
        "oom_records": len(oom),
    }
    if worst is not None:
        numbers.update(
            worst_host=worst.host,
            worst_node=worst.node,
            pauses_per_min=round(float(worst.pauses_per_min), 1),
            humongous_collections=int(worst.humongous),
            longest_pause_ms=round(worst.longest_ms, 1),
            longest_pause_host=worst.host,
            paused_share=round(float(worst.paused_share), 4) if worst.paused_share == worst.paused_share else None,
            full_pauses=int(summ["full_pauses"].sum()),
        )
    return [
        Finding(
            id="gc-pauses",
            severity=severity,
            summary=summary,
            numbers=numbers,
            recommendation=(
                "Give the broker heap room (collections forced by humongous allocations mean record "
                "batches of at least half a G1 region: raise -Xmx or -XX:G1HeapRegionSize): Kafka needs little heap (6 GB is the usual ceiling; the page cache "
                "does the caching), so raise -Xmx (KAFKA_HEAP_OPTS) where the heap is full after collections, "
                "keep G1 with -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 (Kafka's "
                "KAFKA_JVM_PERFORMANCE_OPTS), look for what allocates (huge message.max.bytes batches, many "
                "partitions, down-conversion) and keep pauses well under replica.lag.time.max.ms and "
                "broker.session.timeout.ms / zookeeper.session.timeout.ms."
                + (
                    " An OutOfMemoryError leaves the broker in an unknown state: restart it and add "
                    "-XX:+HeapDumpOnOutOfMemoryError to learn what filled the heap."
                    if oom_hosts
                    else ""
                )
            ),
            evidence=evid,
        )
    ]


@detector(
    ids=["isr-shrink"],
    needs=[],
    reads=["files", "gc_pauses", "metrics", "node_events", "partition_changes", "restarts", "topic_partitions"],
    checks="brokers leaving partitions' ISR (Shrinking ISR lines, under-min-isr updates, JMX "
    "UnderReplicatedPartitions / IsrShrinksPerSec), flapping, not explained by a GC pause",
)
def detect_isr_shrink(bundle) -> list[Finding]:
    # the columns read below and by the evidence (its text read by file and line: ``quoted``)
    sh = shrink_rows(bundle, ["ts", "topic", "partition", "host", "file", "line"], positions=True)
    pchg = partition_changes(bundle)
    urp = metric_series(bundle, URP_MBEAN, "Value")
    urp_max = float(urp["value"].max()) if len(urp) else 0.0
    shrinks_metric = _count_increase(bundle, "IsrShrinksPerSec")
    desc = described_under_replication(bundle)
    if not len(sh) and not len(pchg) and len(desc):
        brokers = desc.explode("missing")["missing"].dropna().astype(int).value_counts()
        offline = int(desc["offline"].fillna(False).astype(bool).sum())
        return [
            Finding(
                id="isr-shrink",
                severity="high",
                summary=(
                    f"kafka-topics --describe shows {len(desc)} under-replicated partition(s)"
                    + (f" ({offline} without a leader)" if offline else "")
                    + "; missing from the ISR: "
                    + ", ".join(f"broker {b} ({n} partition(s))" for b, n in brokers.items())
                ),
                numbers={
                    "under_replicated_partitions": len(desc),
                    "offline_partitions": offline,
                    **{f"broker_{b}_missing": int(n) for b, n in brokers.items()},
                },
                recommendation=(
                    f"Look at broker {brokers.index[0]} first: its server.log and GC log around the snapshot "
                    "(stopped, paused, disk or network trouble), and add every broker's server.log and "
                    "state-change.log to the bundle to see when it left the ISR."
                )
                if len(brokers)
                else "Add every broker's server.log and state-change.log to the bundle to see who left the ISR and when.",
                evidence=evidence(
                    desc.head(8),
                    text=lambda x: (
                        f"{x['topic']}-{x['partition']} leader {x['leader']} replicas {x['replicas']} isr {x['isr']}"
                    ),
                ),
            )
        ]
    if not len(sh):
        if len(pchg) or len(urp) < 3:
            return []
        # no state-change lines at all: the JMX counts alone, away from the series' start and end
        t0, t1 = urp["ts"].min() + pd.Timedelta(seconds=60), urp["ts"].max() - pd.Timedelta(seconds=60)
        mid = urp[(urp["ts"] > t0) & (urp["ts"] < t1) & (urp["value"] > 0)]
        if len(mid) < 3:
            return []
        hosts = sorted(mid["host"].astype(str).unique())
        return [
            Finding(
                id="isr-shrink",
                severity="high",
                summary=(
                    f"UnderReplicatedPartitions above 0 on {', '.join(hosts)} in {len(mid)} samples (up to "
                    f"{mid['value'].max():.0f}); the bundle holds no state-change lines saying which follower fell out"
                ),
                numbers={
                    "max_under_replicated": float(mid["value"].max()),
                    "samples_above_zero": len(mid),
                    "isr_shrinks_metric": shrinks_metric,
                },
                recommendation="Add server.log and state-change.log of every broker to the bundle to see which follower "
                "left the ISR and why; check that broker's GC log, disk and network.",
                evidence=evidence(
                    mid.head(5).assign(file="", line=pd.NA), text=lambda x: f"UnderReplicatedPartitions={x['value']}"
                ),
            )
        ]
    links = gc_links(bundle)
    owned = set(
        zip(
            failover_owned(bundle, failovers(bundle))["file"].astype(str),
            failover_owned(bundle, failovers(bundle))["line"].astype(int),
        )
    )
    # a node's stalls report the departures they explain (stalls.py), under this id when the node
    # kept its session
    out, stalled, _ = stalls.stall_findings(bundle, "isr-shrink", URP_MBEAN)
    rest = drop_explained(sh, explained_rows(links) | owned | stalled)
    del sh  # (the departures left are ``rest``: not held through the episodes as well)
    if not len(rest):
        return out
    # a departure the lines end right after is not seen back for want of lines, which is no sign that it
    # stayed out: "never rejoined" needs the bundle to go on past it for replica.lag.time.max.ms (30 s)
    # (asked before the episodes are built: on a store it is a query of its own)
    span = bundle.span()
    watched_to = span[1] - pd.Timedelta(seconds=WATCH_AFTER_S) if span else None
    ep = isr_episodes(bundle)
    ep = joined_by_place(ep, rest) if len(ep) else ep
    # back by any source: the logs, JMX UnderReplicatedPartitions at 0, a describe snapshot
    back_by = stalls.recovered_by(bundle, ep, host_of(node_ids(bundle)), URP_MBEAN) if len(ep) else None
    under_min = int(pchg[(pchg["kind"] == "isr_updated") & pchg["under_min_isr"].fillna(False).astype(bool)].shape[0])
    # each departure's (topic, partition) as one code (a missing part: no code), counted per broker
    # below by positions: no copy of a broker's rows, no Python string per row
    place, placed = place_codes(rest)
    # one finding per broker that left (a handful): each pass below is vectorised over its rows
    groups = rest.groupby("node").indices
    for node in sorted(groups):
        pos = groups[node]
        # departures per partition (the groupby sizes of its (topic, partition) pairs)
        parts = np.unique(place[pos][placed[pos]], return_counts=True)[1]
        mine = (ep["node"] == node).fillna(False).to_numpy(bool) if len(ep) else np.zeros(0, bool)
        flapping = int((parts >= FLAP_MIN).sum())
        longest = float(ep["out_s"][mine].max()) if mine.any() else np.nan
        never = (
            int((back_by[mine].isna() & (ep["left"][mine] <= watched_to).fillna(False)).sum())
            if mine.any() and back_by is not None and watched_to is not None
            else 0
        )
        ts = rest["ts"].iloc[pos]
        span = (ts.max() - ts.min()).total_seconds()
        summary = (
            f"Broker {node} left the ISR {len(pos)} times on {len(parts)} partition(s) over {_fmt_s(span)}"
            + (f"; flapping: {flapping} partition(s) lost and regained it {int(parts.max())}x" if flapping else "")
            + (f"; longest time out of the ISR {_fmt_s(longest)}" if longest == longest else "")
            + (f"; {never} departure(s) not seen back in any source (logs, JMX, describe)" if never else "")
            + (f"; {under_min} ISR update(s) under min.insync.replicas" if under_min else "")
        )
        out.append(
            Finding(
                id="isr-shrink",
                severity="high" if (flapping or under_min or never) else "medium",
                summary=summary,
                numbers={
                    "broker": int(node),
                    "shrinks": len(pos),
                    "partitions": len(parts),
                    "flapping_partitions": flapping,
                    "longest_out_of_isr_s": None if longest != longest else round(longest, 1),
                    "never_rejoined": never,
                    "under_min_isr_updates": under_min,
                    "explained_by_gc": sum(1 for lk in links if lk.symptom == "isr_shrink"),
                    "max_under_replicated_jmx": urp_max,
                    "isr_shrinks_jmx": shrinks_metric,
                    "under_replicated_in_describe": len(desc),
                },
                recommendation=(
                    f"Find why broker {node} stops fetching: its GC log (long pauses), CPU steal or a stopped "
                    f"process, disk latency on its log dirs, network to the leaders. replica.lag.time.max.ms "
                    f"(default 30000) is how long a follower may lag before it is dropped; raise it only if "
                    f"the lag is expected (e.g. big batches over a slow link), not to hide a sick broker."
                    + (
                        " A follower that drops out and back repeatedly (flapping) is usually paused or starved, "
                        "not slow: look for pauses every few seconds."
                        if flapping
                        else ""
                    )
                ),
                # the broker's first 8 departures as its rows sorted by time would give them
                evidence=evidence(
                    quoted(
                        bundle, rest.iloc[pos[ts.reset_index(drop=True).sort_values().index[:8]]], "partition_changes"
                    )
                ),
                counted_from=shrink_counts(pchg, rest["row"].to_numpy()[pos], int(node)),
            )
        )
    return out


@detector(
    ids=["controller-failover"],
    needs=["node_events"],
    reads=["files", "gc_pauses", "metrics", "partition_changes", "restarts"],
    checks="the active controller changing after the cluster started (KRaft Becoming the active controller, "
    "ZooKeeper-mode controller elections), the gap without a controller, offline partitions",
)
def detect_controller_failover(bundle) -> list[Finding]:
    fos = failovers(bundle)
    if not fos:
        return []
    # elections a stalled voter set off when it resumed are reported with its stall (stalls.py)
    out, _, started = stalls.stall_findings(bundle, "controller-failover", URP_MBEAN)
    fos = [fo for fo in fos if fo not in started]
    p = partition_changes(bundle)
    ne = node_events(bundle)
    owned = failover_owned(bundle, fos)
    for fo in fos:
        start = (fo.lost_ts or fo.won_ts) - pd.Timedelta(seconds=5)
        end = fo.won_ts + pd.Timedelta(seconds=STORM_S)
        offline = (
            p[
                ((p["ts"] >= start) & (p["ts"] <= end)).to_numpy()
                & ((p["kind"] == "offline").to_numpy() | (p["leader"] == -1).fillna(False).to_numpy())
            ]
            if len(p)
            else p
        )
        off_parts = offline[["topic", "partition"]].drop_duplicates() if len(offline) else offline
        opc = metric_series(bundle, "OfflinePartitionsCount", "Value")
        opc_max = float(opc[(opc["ts"] >= start) & (opc["ts"] <= end)]["value"].max()) if len(opc) else float("nan")
        fenced_old = owned[(owned["kind"] == "fenced") & (owned["about"] == fo.lost)] if len(owned) else owned
        hb = owned[owned["kind"] == "heartbeat_timeout"] if len(owned) else owned
        summary = (
            (
                f"Controller leader re-elected (node {fo.won} kept leadership)"
                if fo.lost is not None and fo.lost == fo.won
                else f"Controller leadership moved from node {fo.lost} to node {fo.won}"
            )
            + (f" (epoch {fo.epoch})" if fo.epoch is not None else "")
            + (f" after {fo.gap_s:.1f} s without an active controller" if fo.gap_s is not None else "")
            + (" during a planned shutdown of the old controller" if fo.planned else "")
            + (f"; {len(off_parts)} partition(s) had no leader" if len(off_parts) else "")
            + (f"; node {fo.lost} was then fenced as a broker" if len(fenced_old) else "")
            + (f"; {hb['about'].nunique()} broker(s) timed out heartbeats meanwhile" if len(hb) else "")
        )
        ev_rows = ne[
            (ne["ts"] >= start)
            & (ne["ts"] <= end)
            & ne["kind"].isin(["controller_active", "controller_renounce", "controller_epoch", "fenced"])
        ]
        ev_rows = ev_rows[(ev_rows["kind"] != "controller_epoch") | (ev_rows["node"] == -1)]
        evid = evidence(quoted(bundle, earliest(ev_rows, 8), "node_events"))
        if len(offline):
            evid += evidence(quoted(bundle, offline.head(4), "partition_changes"))
        out.append(
            Finding(
                id="controller-failover",
                severity="low"
                if fo.planned and not len(off_parts)
                else "high"
                if (len(off_parts) or (fo.gap_s or 0) > 10)
                else "medium",
                summary=summary,
                numbers={
                    "lost": fo.lost,
                    "won": fo.won,
                    "epoch": fo.epoch,
                    "gap_s": None if fo.gap_s is None else round(fo.gap_s, 2),
                    "planned": fo.planned,
                    "offline_partitions": len(off_parts),
                    "offline_partitions_jmx": opc_max,
                    "heartbeat_timeouts": len(hb),
                    "old_controller_fenced": bool(len(fenced_old)),
                    "quorum_leader_described": described_quorum_leader(bundle),
                },
                recommendation=(
                    f"Find why node {fo.lost} stopped leading (its server.log / controller.log just before "
                    f"{(fo.lost_ts or fo.won_ts).isoformat()}: a crash, kill, GC pause or lost network). Run an "
                    "odd number of dedicated controllers (3 or 5) apart from brokers so a broker's trouble does "
                    "not take the quorum leader with it; controller.quorum.election.timeout.ms and "
                    "fetch.timeout.ms bound how fast a new leader is elected."
                ),
                evidence=evid,
            )
        )
    return out


# what detect_broker_fenced reads of a fencing's row and quotes (the message where the table holds it)
_FENCED_COLUMNS = ["ts", "kind", "node", "waited_ms", "level", "host", "file", "line", "message"]


@detector(
    ids=["broker-fenced"],
    needs=["node_events"],
    reads=["files", "gc_pauses", "metrics", "partition_changes", "restarts"],
    checks="brokers fenced or declared failed after losing their session (KRaft heartbeats, ZooKeeper session "
    "time-outs and expiry), outside controlled shutdowns, controller failovers and GC pauses",
)
def detect_broker_fenced(bundle) -> list[Finding]:
    ne = node_events(bundle)
    ids = node_ids(bundle)
    # the rows kept, with only the columns read below (never a copy of every column of them)
    keep = np.flatnonzero(
        ne["kind"]
        .isin(["fenced", "broker_failed", "zk_session_timeout", "zk_session_expired", "heartbeat_timeout"])
        .to_numpy(bool)
    )
    if not len(keep):
        return []
    e = pd.DataFrame({c: ne[c].array.take(keep) for c in _FENCED_COLUMNS if c in ne}, index=ne.index[keep])
    e["about"] = node_col(e, ids)
    e = e[~in_shutdown(bundle, e)]
    # a node that stalled: one finding names the stall and lists what it explains (stalls.py)
    out, stalled, started = stalls.stall_findings(bundle, "broker-fenced", URP_MBEAN)
    owned = failover_owned(bundle, [fo for fo in failovers(bundle) if fo not in started])
    e = drop_explained(
        e, explained_rows(gc_links(bundle)) | set(zip(owned["file"].astype(str), owned["line"].astype(int))) | stalled
    )
    # heartbeat time-outs alone are a symptom of a missing controller, not a fencing
    lost = e[e["kind"] != "heartbeat_timeout"]
    del e  # (a copy of every fencing row: not held through the rest)
    if not len(lost):
        return out
    # seconds from each fencing to the node's next unfencing (NaN: never seen), one as-of join
    unf = np.flatnonzero(((ne["kind"] == "unfenced") & ne["node"].notna() & ne["ts"].notna()).to_numpy(bool))
    unf = pd.DataFrame({"about": ne["node"].array.take(unf).astype("int64"), "back": ne["ts"].array.take(unf)})
    is_fen = lost["kind"].isin(["fenced", "broker_failed"]).to_numpy(bool)
    at = np.flatnonzero(is_fen & lost["ts"].notna().to_numpy(bool) & lost["about"].notna().to_numpy(bool))
    fenced_s = np.full(len(lost), np.nan)
    if len(at) and len(unf):
        fen = pd.DataFrame(
            {"about": lost["about"].to_numpy()[at].astype("int64"), "ts": lost["ts"].array[at], "at": at}
        )
        got = pd.merge_asof(
            fen.sort_values("ts", kind="stable"),
            unf.sort_values("back", kind="stable"),
            left_on="ts",
            right_on="back",
            by="about",
            direction="forward",
            allow_exact_matches=False,
        )
        fenced_s[got["at"].to_numpy()] = (got["back"] - got["ts"]).dt.total_seconds().to_numpy(float, na_value=np.nan)
        del fen, got
    del unf
    # one finding per node (a handful): each pass below is vectorised over its rows
    groups: dict = dict(lost.groupby("about").indices)
    # a broker whose own lines carry no broker id (only its ZooKeeper client's lines) is named by its host
    bare = np.flatnonzero(lost["about"].isna().to_numpy(bool) & _starts(lost["kind"], "zk_"))
    hosts = lost["host"].iloc[bare].astype("string").to_numpy(object)
    groups.update({str(h): bare[p] for h, p in pd.Series(hosts).groupby(hosts).indices.items()})
    for node in sorted(groups, key=lambda k: (isinstance(k, str), k)):
        pos = groups[node]
        who = f"The broker on host {node}" if isinstance(node, str) else f"Broker {node}"
        grp = lost.iloc[pos]
        back = fenced_s[pos[is_fen[pos]]]
        kinds = text_counts(grp["kind"])
        words = {
            "fenced": "fenced by the controller (session timed out)",
            "broker_failed": "declared failed by the controller",
            "zk_session_timeout": "ZooKeeper session time-outs",
            "zk_session_expired": "ZooKeeper session expiries",
        }
        waited = grp["waited_ms"].dropna()
        summary = (
            f"{who} lost its session: "
            + ", ".join(f"{words.get(k, k)} {n}x" for k, n in kinds.items())
            + (f"; unfenced again after {np.nanmax(back):.1f} s" if len(back) and not np.all(np.isnan(back)) else "")
            + (f"; ZooKeeper heard nothing for up to {int(waited.max())} ms" if len(waited) else "")
        )
        zk = kinds.index.str.startswith("zk_").any()
        out.append(
            Finding(
                id="broker-fenced",
                severity="high",
                summary=summary,
                numbers={
                    "broker": None if isinstance(node, str) else int(node),
                    **({"host": node} if isinstance(node, str) else {}),
                    "events": len(grp),
                    **{k: int(n) for k, n in kinds.items()},
                    "max_seconds_fenced": None
                    if not len(back) or np.all(np.isnan(back))
                    else round(float(np.nanmax(back)), 1),
                },
                recommendation=(
                    (
                        f"{who} stopped talking to ZooKeeper long enough to lose its session: check its GC "
                        "log and host (CPU, swap, stopped process) and the network to ZooKeeper; "
                        "zookeeper.session.timeout.ms (18000 since 2.5) is the tolerance."
                        if zk
                        else f"{who} missed heartbeats for broker.session.timeout.ms (9000): check its GC log, "
                        "whether the process was stopped or starved of CPU, and the network to the controllers; "
                        "raise broker.session.timeout.ms only for known, harmless stalls."
                    )
                    + " While fenced it leads no partitions, so producers with acks=all may stall on min.insync.replicas."
                ),
                evidence=evidence(quoted(bundle, earliest(grp, 8), "node_events")),
                counted_from=fenced_counts(ne, grp, node, kinds.index.tolist()),
            )
        )
    return out


def _starts(col: pd.Series, prefix: str) -> np.ndarray:
    """Which rows' text starts with ``prefix`` (False where missing); a categorical column by its codes."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        hit = np.array([str(c).startswith(prefix) for c in col.cat.categories] + [False])
        codes = col.cat.codes.to_numpy()
        return hit[np.where(codes < 0, len(hit) - 1, codes)]
    return col.astype(str).str.startswith(prefix).to_numpy(bool)


@detector(
    ids=["log-dir-failure"],
    needs=["node_events"],
    reads=["files", "partition_changes"],
    checks="log directories taken offline (I/O errors such as No space left on device), brokers halted or shut "
    "down for it, and the partitions that went offline",
)
def detect_log_dir_failure(bundle) -> list[Finding]:
    ne = node_events(bundle)
    ids = node_ids(bundle)
    e = ne[_starts(ne["kind"], "log_dir")].copy()  # by the categories' codes: no text made per row
    if not len(e):
        return []
    e["about"] = node_col(e, ids)
    p = partition_changes(bundle)
    out = []
    # a broker whose lines carry no broker id (one line of an excerpt) is named by its host
    dirs = e["dir"].astype("string").fillna("?")
    bare = e["about"].isna().to_numpy(bool)
    groups = [(k, g, None) for k, g in e[~bare].groupby(["about", dirs[~bare]])]
    groups += [((np.nan, d), g, h) for (h, d), g in e[bare].groupby([e["host"].astype(str)[bare], dirs[bare]])]
    for (node, d), grp, host in groups:
        who = f"The broker on host {host}" if host is not None else f"Broker {node}"
        causes = grp["cause"].dropna().astype(str)
        io = [c for c in causes if not c.startswith(("Error while", "Shutdown broker", "Halting broker"))]
        cause = io[0] if io else (causes.iloc[0] if len(causes) else "not logged")
        parts = set()
        for s in grp["partitions"].dropna():
            parts |= {x for x in str(s).split(",") if x}
        lead = p[(p["kind"] == "offline_dir_leader") & (p["reporter"] == node)] if len(p) and host is None else p[:0]
        parts |= {f"{t}-{q}" for t, q in zip(lead["topic"], lead["partition"])} if len(lead) else set()
        halted = bool(grp["kind"].isin(["log_dir_halt", "log_dir_shutdown"]).any())
        odc = metric_series(bundle, "OfflineLogDirectoryCount", "Value")
        out.append(
            Finding(
                id="log-dir-failure",
                severity="critical" if halted else "high",
                summary=(
                    f"{who} lost log directory {d}: {cause}"
                    + (
                        f"; {len(parts)} partition(s) went offline on it ({', '.join(sorted(parts)[:6])})"
                        if parts
                        else ""
                    )
                    + (
                        "; the broker halted / shut down"
                        if halted
                        else "; the broker kept serving its other directories"
                    )
                ),
                numbers={
                    "broker": int(node) if node == node else None,
                    **({"host": host} if host is not None else {}),
                    "dir": d,
                    "cause": cause,
                    "offline_partitions": len(parts),
                    "halted": halted,
                    "offline_log_dirs_jmx": float(odc["value"].max()) if len(odc) else None,
                },
                recommendation=(
                    (
                        "Free space or grow the volume, then restart the broker: a failed log dir stays offline "
                        "until restart. Alert on disk usage well before full, keep retention.bytes / retention.ms "
                        "within the volume, and spread log.dirs over volumes."
                        if "No space" in cause
                        else "Check the disk and filesystem (dmesg, SMART, mount state), replace or repair it, then "
                        "restart the broker; a failed log dir stays offline until restart."
                    )
                    + " Partitions whose only in-sync replica lived there stay offline until it returns."
                ),
                evidence=evidence(quoted(bundle, earliest(grp, 6), "node_events"))
                + (evidence(quoted(bundle, lead.head(3), "partition_changes")) if len(lead) else []),
            )
        )
    return out


@detector(
    ids=["unclean-election"],
    needs=[],
    reads=["metrics", "partition_changes"],
    checks="unclean leader elections (an out-of-sync replica made leader: data loss), from logs and "
    "UncleanLeaderElectionsPerSec",
)
def detect_unclean(bundle) -> list[Finding]:
    p = partition_changes(bundle)
    u = p[p["kind"] == "unclean"] if len(p) else p
    metric = _count_increase(bundle, "UncleanLeaderElectionsPerSec")
    if not len(u) and metric <= 0:
        return []
    parts = sorted({f"{t}-{q}" for t, q in zip(u["topic"], u["partition"])}) if len(u) else []
    leaders = sorted({int(x) for x in u["leader"].dropna()}) if len(u) else []
    return [
        Finding(
            id="unclean-election",
            severity="critical",
            summary=(
                f"{max(len(u), int(metric))} unclean leader election(s)"
                + (f" on {', '.join(parts[:6])}" if parts else "")
                + (f", new leader(s) {', '.join(map(str, leaders))}" if leaders else "")
                + ": records the old leader had acknowledged are lost (offsets truncated)"
            ),
            numbers={"elections": len(u), "partitions": len(parts), "unclean_elections_jmx": metric},
            recommendation=(
                "Keep unclean.leader.election.enable=false (the default) unless availability matters more "
                "than the data; replication.factor=3 with min.insync.replicas=2 and acks=all avoid needing it. "
                "Tell the producers' owners which partitions and times lost data."
            ),
            evidence=evidence(quoted(bundle, u.head(8), "partition_changes")) if len(u) else [],
            counted_from={"elections": ("partition_changes", "kind == 'unclean'")} if len(u) else {},
        )
    ]
