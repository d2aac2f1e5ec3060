"""Broker and cluster health: which node fell out of the ISR, lost its session or the controller
role, which log directory failed, and whether a GC pause set it off; one timeline across hosts.

Node identity: a host's node id is the id its own lines name most often (``[Partition t-0
broker=3]``, ``[QuorumController id=3]``, ``[BrokerLifecycleManager id=3]``...), else the digits at
the end of the host name (``broker-3`` -> 3); :func:`node_ids` gives the map.

One cause, one finding. A stop-the-world pause explains a symptom on the same node when it is at
least ``LONG_PAUSE_MS`` long and overlaps the window in which the symptom builds up: from
``SYMPTOM_WINDOW_S`` before the symptom (replica.lag.time.max.ms is 30 s, broker sessions time out
after 9 s, ZooKeeper sessions after 18 s) to the symptom itself. The ``gc-pauses`` finding then
names those consequences (the broker left the ISR of N partitions, was fenced...), and ``isr-shrink``
and ``broker-fenced`` report only what no pause explains (nothing at all when everything is
explained). In the same way, a controller failover owns the fencing of the node that lost the
controller role and the heartbeat time-outs of the other brokers while there was no controller.

Example:
    >>> overlaps(pd.Timestamp("2024-05-22 00:00:10", tz="UTC"), 12_000, pd.Timestamp("2024-05-22 00:00:12", tz="UTC"))
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_health import stalls

LONG_PAUSE_MS = 1000  # a pause this long can stall replication or heartbeats
SYMPTOM_WINDOW_S = 35  # a pause ending this long before a symptom may still explain it
PAUSE_SHARE_ALERT = 0.05  # 5 % of wall-clock time in pauses
FLAP_MIN = 3  # the same broker leaving the same partition's ISR this often = flapping
STORM_S = 60  # events of one failover / shrink burst lie within this many seconds
HEAP_FULL = 0.9  # heap still this full after a collection = the heap is too small
URP_MBEAN = "UnderReplicatedPartitions"
HUMONGOUS_MIN = 5  # collections started by humongous allocations: the heap (or region) is too small for the batches


@dataclass(frozen=True)
class Link:
    """A pause on ``host`` (node ``node``) that explains a symptom row of another table."""

    host: str
    node: int | None
    pause_ts: pd.Timestamp
    pause_ms: float
    pause_file: str
    pause_line: int
    symptom: str  # isr_shrink, fenced, zk_session_expired, ...
    symptom_ts: pd.Timestamp
    symptom_file: str
    symptom_line: int


def overlaps(
    pause_end: pd.Timestamp, pause_ms: float, symptom_ts: pd.Timestamp, window_s: float = SYMPTOM_WINDOW_S
) -> bool:
    """Does a pause ending at ``pause_end`` overlap the ``window_s`` seconds before ``symptom_ts``?"""
    start = pause_end - pd.Timedelta(milliseconds=pause_ms)
    return bool(
        start <= symptom_ts + pd.Timedelta(seconds=1) and pause_end >= symptom_ts - pd.Timedelta(seconds=window_s)
    )


# --- identity and shared views ---


def node_ids(bundle) -> dict[str, int]:
    """host -> node id (see the module doc)."""
    out: dict[str, int] = {}
    votes = []
    pc_, ne = bundle.table("partition_changes"), bundle.table("node_events")
    for df in (pc_, ne):
        if len(df) and "reporter" in df:
            own = df[df["reporter"].notna()]
            if len(own):
                votes.append(own[["host", "reporter"]].astype({"host": "string"}))
    if votes:
        v = pd.concat(votes)
        for host, grp in v.groupby("host"):
            out[str(host)] = int(grp["reporter"].mode().iloc[0])
    hosts = set()
    for name in ("files",):
        f = bundle.table(name)
        if len(f):
            hosts |= {str(h) for h in f["host"].dropna().unique()}
    for h in hosts - set(out):
        m = re.search(r"(\d+)$", h)
        if m:
            out[h] = int(m.group(1))
    return out


def _host_of(ids: dict[str, int]) -> dict[int, str]:
    return {v: k for k, v in ids.items()}


def _node_col(df: pd.DataFrame, ids: dict[str, int], col: str = "node") -> pd.Series:
    """The node a row is about: its own column, else the node id of the host that wrote it."""
    by_host = df["host"].astype("string").map(ids)
    if col in df:
        return df[col].astype("Float64").fillna(by_host.astype("Float64")).astype("Int64")
    return by_host.astype("Int64")


def shrink_rows(bundle) -> pd.DataFrame:
    """One row per (ISR shrink, broker that left), with ``node`` = the broker that left."""
    p = bundle.table("partition_changes")
    s = p[p["kind"] == "isr_shrink"].copy()
    if not len(s):
        return s.assign(node=pd.Series(dtype="Int64"))
    s["node"] = s["removed"].astype("string").fillna("").str.split(",")
    s = s.explode("node")
    s = s[s["node"].astype(str).str.strip() != ""]
    s["node"] = s["node"].astype("Int64")
    return s.reset_index(drop=True)


def described_under_replication(bundle) -> pd.DataFrame:
    """Under-replicated partitions in ``kafka-topics --describe`` output (``topic_partitions``), with
    ``missing``: the replicas not in the ISR (replicas a reassignment is still adding left out)."""
    d = bundle.table("topic_partitions")
    if not len(d):
        return d.assign(missing=pd.Series(dtype=object))
    d = d[d["under_replicated"].fillna(False).astype(bool) | d["offline"].fillna(False).astype(bool)].copy()

    def ids(v) -> list[str]:
        return (
            [] if v is None or v is pd.NA or v != v else [x.strip() for x in str(v).split(",") if x.strip().isdigit()]
        )

    d["missing"] = [
        [int(x) for x in ids(r) if x not in ids(i) and x not in ids(a)]
        for r, i, a in zip(d["replicas"], d["isr"], d["adding_replicas"])
    ]
    return d


def long_pauses(bundle, min_ms: float = LONG_PAUSE_MS) -> pd.DataFrame:
    g = bundle.table("gc_pauses")
    if not len(g):
        return g
    return g[g["is_pause"].fillna(False).astype(bool) & (g["duration_ms"] >= min_ms) & g["ts"].notna()]


def gc_links(bundle) -> list[Link]:
    """Every (long pause, symptom on the same node) pair the rule in the module doc accepts; each
    symptom goes to the longest pause that explains it (the first of equals). Vectorised over the
    symptoms: one pass per long pause, of which a bundle holds few."""
    pauses = long_pauses(bundle)
    if not len(pauses):
        return []
    ids = node_ids(bundle)
    ne = bundle.table("node_events")
    symptoms = []
    sh = shrink_rows(bundle)
    if len(sh):
        symptoms.append(sh[["ts", "node", "file", "line"]].assign(symptom="isr_shrink"))
    if len(ne):
        kinds = ["fenced", "broker_failed", "zk_session_timeout", "zk_session_expired", "heartbeat_timeout"]
        e = ne[ne["kind"].isin(kinds)].copy()
        e["node"] = _node_col(e, ids)
        symptoms.append(e[["ts", "node", "file", "line"]].assign(symptom=e["kind"].astype(str)))
    if not symptoms:
        return []
    sym = pd.concat(symptoms, ignore_index=True)
    sym = sym[sym["ts"].notna() & sym["node"].notna()].reset_index(drop=True)
    sym_ts = sym["ts"].to_numpy(dtype="datetime64[ns]")
    sym_node = sym["node"].astype("int64").to_numpy()
    best_ms = np.full(len(sym), -np.inf)
    best_pause = np.full(len(sym), -1)
    slack, window = np.timedelta64(1, "s"), np.timedelta64(int(SYMPTOM_WINDOW_S * 1e9), "ns")
    p_ts = pauses["ts"].to_numpy(dtype="datetime64[ns]")
    p_ms = pauses["duration_ms"].astype("float64").to_numpy()
    p_node = [ids.get(str(h)) for h in pauses["host"].astype(str)]
    for i in range(len(pauses)):
        if p_node[i] is None:
            continue
        start = p_ts[i] - np.timedelta64(int(round(p_ms[i] * 1e6)), "ns")
        hit = (sym_node == p_node[i]) & (start <= sym_ts + slack) & (p_ts[i] >= sym_ts - window) & (p_ms[i] > best_ms)
        best_ms[hit] = p_ms[i]
        best_pause[hit] = i
    # one line may be two symptom rows (a shrink naming two brokers): the longest pause of either wins
    sym = sym.assign(pause=best_pause, pause_ms=best_ms, row=np.arange(len(sym)))[best_pause >= 0]
    sym = sym.sort_values(["pause_ms", "pause", "row"], ascending=[False, True, True], kind="stable")
    sym = sym.drop_duplicates(["file", "line"], keep="first").sort_values(["ts", "row"], kind="stable")
    p = pauses.reset_index(drop=True)
    return [
        Link(
            str(p.at[k, "host"]),
            p_node[k],
            p.at[k, "ts"],
            float(p_ms[k]),
            str(p.at[k, "file"]),
            int(p.at[k, "line"]),
            symptom,
            ts,
            str(file),
            int(line),
        )
        for k, symptom, ts, file, line in zip(sym["pause"], sym["symptom"], sym["ts"], sym["file"], sym["line"])
    ]


def _explained(links: list[Link]) -> set[tuple[str, int]]:
    return {(lk.symptom_file, lk.symptom_line) for lk in links}


def _drop_explained(df: pd.DataFrame, explained: set) -> pd.DataFrame:
    if not len(df) or not explained:
        return df
    keep = [(str(f), int(n)) not in explained for f, n in zip(df["file"], df["line"])]
    return df[np.asarray(keep, bool)]


def metric_series(bundle, name: str, attribute: str | None = None) -> pd.DataFrame:
    """Samples of one metric (MBean key ``name``) per host: ts, host, value."""
    m = bundle.table("metrics")
    if not len(m):
        return pd.DataFrame(columns=["ts", "host", "value"])
    s = m[m["name"].astype("string") == name]
    if attribute:
        s = s[s["attribute"] == attribute]
    return s[["ts", "host", "value"]].sort_values("ts")


def _count_increase(bundle, name: str) -> float:
    s = metric_series(bundle, name, "Count")
    if not len(s):
        return 0.0
    return float(s.groupby("host", observed=True)["value"].agg(lambda v: v.max() - v.min()).sum())


def _fmt_s(x: float | None) -> str:
    return "n/a" if x is None or x != x else (f"{x:.1f} s" if x < 120 else f"{x / 60:.1f} min")


# --- controller failover (also used to fold the fencing it causes) ---


@dataclass(frozen=True)
class Failover:
    lost: int | None
    won: int
    epoch: int | None
    lost_ts: pd.Timestamp | None
    won_ts: pd.Timestamp
    gap_s: float | None
    planned: bool
    file: str
    line: int


def failovers(bundle) -> list[Failover]:
    """Controller leadership moving from one node to another after it had been established."""
    ne = bundle.table("node_events")
    if not len(ne):
        return []
    act = ne[ne["kind"] == "controller_active"].sort_values("ts")
    if len(act) < 2:
        return []
    out = []
    prev = act.iloc[0]
    for _, cur in act.iloc[1:].iterrows():
        window = ne[(ne["ts"] >= prev["ts"]) & (ne["ts"] <= cur["ts"])]
        lost_marks = window[
            ((window["kind"] == "controller_renounce") & (window["node"] == prev["node"]))
            | ((window["kind"] == "controller_epoch") & (window["node"] == -1))
        ]
        lost_ts = lost_marks["ts"].min() if len(lost_marks) else None
        planned = bool(
            len(
                window[
                    (window["kind"] == "controlled_shutdown")
                    & (window["node"] == prev["node"])
                    & (window["ts"] >= cur["ts"] - pd.Timedelta(seconds=STORM_S))
                ]
            )
        )
        out.append(
            Failover(
                lost=None if pd.isna(prev["node"]) else int(prev["node"]),
                won=int(cur["node"]),
                epoch=None if pd.isna(cur["epoch"]) else int(cur["epoch"]),
                lost_ts=lost_ts,
                won_ts=cur["ts"],
                gap_s=(cur["ts"] - lost_ts).total_seconds() if lost_ts is not None else None,
                planned=planned,
                file=str(cur["file"]),
                line=int(cur["line"]),
            )
        )
        prev = cur
    return out


def _described_quorum_leader(bundle) -> int | None:
    """The active controller ``kafka-metadata-quorum describe --status`` last reported, if captured."""
    q = bundle.table("quorum_status")
    if not len(q) or q["leader_id"].isna().all():
        return None
    return int(q.sort_values("snapshot_ts", na_position="first")["leader_id"].dropna().iloc[-1])


def _failover_owned(bundle, fos: list[Failover]) -> pd.DataFrame:
    """Fencing / heartbeat rows a controller failover explains (see the module doc)."""
    ne = bundle.table("node_events")
    if not fos or not len(ne):
        return ne.iloc[0:0]
    ids = node_ids(bundle)
    e = ne[ne["kind"].isin(["fenced", "heartbeat_timeout", "broker_failed"])].copy()
    e["about"] = _node_col(e, ids)
    keep = np.zeros(len(e), bool)
    for fo in fos:
        start = (fo.lost_ts or fo.won_ts) - pd.Timedelta(seconds=STORM_S)
        end = fo.won_ts + pd.Timedelta(seconds=STORM_S)
        inwin = ((e["ts"] >= start) & (e["ts"] <= end)).to_numpy()
        hb = (e["kind"] == "heartbeat_timeout").to_numpy() & (e["ts"] <= fo.won_ts + pd.Timedelta(seconds=5)).to_numpy()
        old = (e["about"] == fo.lost).fillna(False).to_numpy()
        keep |= inwin & (hb | old)
    return e[keep]


def _in_shutdown(bundle, df: pd.DataFrame, node_col: str = "about") -> np.ndarray:
    """Rows about a node after its own controlled shutdown (and before it came back)."""
    ne = bundle.table("node_events")
    out = np.zeros(len(df), bool)
    if not len(ne) or not len(df):
        return out
    cs = ne[ne["kind"] == "controlled_shutdown"]
    back = ne[ne["kind"] == "unfenced"]
    for node, grp in cs.groupby("node"):
        for t in grp["ts"]:
            again = back[(back["node"] == node) & (back["ts"] > t)]["ts"]
            until = again.min() if len(again) else pd.Timestamp.max.tz_localize("UTC")
            out |= ((df[node_col] == node).fillna(False) & (df["ts"] >= t) & (df["ts"] <= until)).to_numpy()
    return out


# --- tables for the notebook ---


def isr_episodes(bundle) -> pd.DataFrame:
    """Each time a broker left a partition's ISR: when, when it rejoined (NaT: not logged), how long,
    and ``back_by``: the rejoin, or else the next shrink naming it again (it was back by then; NaT:
    never seen back). Computed on sorted arrays (one as-of join), not row by row."""
    sh = shrink_rows(bundle)
    cols = ["node", "topic", "partition", "left", "rejoined", "out_s", "back_by", "leader", "file", "line"]
    if not len(sh):
        return pd.DataFrame(columns=cols)
    p = bundle.table("partition_changes")
    # rejoining: 'Expanding ISR ... to' (older brokers) or 'ISR updated to' naming the broker again (3.x)
    ex = p[p["kind"].isin(["isr_expand", "isr_updated"])]
    ex = pd.DataFrame(
        {
            "topic": ex["topic"].astype("string"),
            "partition": ex["partition"].astype("Int64"),
            "node": ex["added"].astype("string").fillna(ex["isr_after"].astype("string")).fillna("").str.split(","),
            "rejoined": ex["ts"],
        }
    ).explode("node")
    ex = ex[ex["node"].astype(str).str.strip() != ""]
    ex = ex.assign(node=ex["node"].astype("Int64")).dropna(subset=["rejoined", "topic", "partition", "node"])
    ep = pd.DataFrame(
        {
            "node": sh["node"].astype("Int64"),
            "topic": sh["topic"].astype("string"),
            "partition": sh["partition"].astype("Int64"),
            "left": sh["ts"],
            "leader": sh["reporter"],
            "file": sh["file"].astype(str),
            "line": sh["line"],
        }
    ).sort_values("left", kind="stable", na_position="last")
    # the next shrink naming the same broker on the same partition proves it was back by then,
    # even when the rejoin itself was not logged
    ep["next_left"] = ep.groupby(["topic", "partition", "node"], dropna=False, sort=False)["left"].shift(-1)
    keyed = ep["left"].notna() & ep["topic"].notna() & ep["partition"].notna() & ep["node"].notna()
    timed = ep[keyed]
    # the first rejoin strictly after the shrink, for the same (topic, partition, broker)
    joined = pd.merge_asof(
        timed.reset_index(),
        ex.sort_values("rejoined", kind="stable"),
        left_on="left",
        right_on="rejoined",
        by=["topic", "partition", "node"],
        direction="forward",
        allow_exact_matches=False,
    ).set_index("index")
    rejoined = joined["rejoined"].reindex(ep.index)
    # a rejoin at or after the next shrink belongs to that later departure
    late = (rejoined >= ep["next_left"]).fillna(False).to_numpy(dtype=bool)
    ep["rejoined"] = rejoined.mask(late)
    ep["out_s"] = (ep["rejoined"] - ep["left"]).dt.total_seconds()
    ep["back_by"] = ep["rejoined"].fillna(ep["next_left"])
    return ep[cols].reset_index(drop=True)


def gc_summary(bundle) -> pd.DataFrame:
    """Per host: pauses, longest, total, share of the logged time spent paused, full GCs, heap."""
    g = bundle.table("gc_pauses")
    cols = [
        "host",
        "node",
        "pauses",
        "pauses_per_min",
        "longest_ms",
        "p99_ms",
        "total_paused_s",
        "span_s",
        "paused_share",
        "full_pauses",
        "humongous",
        "to_space_exhausted",
        "max_heap_after_share",
        "first",
        "last",
    ]
    if not len(g):
        return pd.DataFrame(columns=cols)
    ids = node_ids(bundle)
    rows = []
    for host, grp in g.groupby("host", observed=True):
        p = grp[grp["is_pause"].fillna(False).astype(bool)]
        ts = grp["ts"].dropna()
        span = (ts.max() - ts.min()).total_seconds() if len(ts) > 1 else np.nan
        if span != span and grp["uptime_s"].notna().sum() > 1:
            span = float(grp["uptime_s"].max() - grp["uptime_s"].min())
        occ = (p["heap_after"].astype("Float64") / p["heap_total"].astype("Float64")).dropna()
        rows.append(
            {
                "host": str(host),
                "node": ids.get(str(host)),
                "pauses": len(p),
                "pauses_per_min": len(p) / span * 60 if span and span == span else np.nan,
                "humongous": int(p["cause"].astype("string").str.contains("Humongous", na=False).sum()),
                "longest_ms": float(p["duration_ms"].max()) if len(p) else np.nan,
                "p99_ms": float(p["duration_ms"].quantile(0.99)) if len(p) else np.nan,
                "total_paused_s": float(p["duration_ms"].sum()) / 1000,
                "span_s": span,
                "paused_share": float(p["duration_ms"].sum()) / 1000 / span if span and span == span else np.nan,
                "full_pauses": int(p["kind"].astype(str).str.startswith("Full").sum()),
                "to_space_exhausted": int((grp["kind"].astype(str) == "To-space exhausted").sum()),
                "max_heap_after_share": float(occ.max()) if len(occ) else np.nan,
                "first": ts.min() if len(ts) else pd.NaT,
                "last": ts.max() if len(ts) else pd.NaT,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def per_broker(bundle) -> pd.DataFrame:
    """One row per node: ISR departures, fencing, session loss, controller terms, log-dir failures,
    longest GC pause, restarts, WARN/ERROR records."""
    ids = node_ids(bundle)
    host_of = _host_of(ids)
    ne = bundle.table("node_events")
    ep = isr_episodes(bundle)
    gs = gc_summary(bundle).set_index("host") if len(bundle.table("gc_pauses")) else pd.DataFrame()
    ev = bundle.table("events")
    rs = bundle.table("restarts")
    e = ne.assign(about=_node_col(ne, ids)) if len(ne) else ne
    rows = []
    for node in sorted(set(ids.values())):
        host = host_of.get(node, "")
        mine = e[e["about"] == node] if len(e) else e
        k = mine["kind"].astype(str) if len(mine) else pd.Series(dtype=str)
        rows.append(
            {
                "node": node,
                "host": host,
                "left_isr": int((ep["node"] == node).sum()) if len(ep) else 0,
                "longest_out_of_isr_s": float(ep[ep["node"] == node]["out_s"].max()) if len(ep) else np.nan,
                "fenced": int(k.isin(["fenced", "broker_failed"]).sum()),
                "session_loss": int(k.isin(["zk_session_timeout", "zk_session_expired", "heartbeat_timeout"]).sum()),
                "became_controller": int((k == "controller_active").sum()),
                "log_dir_failures": int(
                    k.isin(["log_dir_error", "log_dir_offline", "log_dir_halt", "log_dir_shutdown"]).sum()
                ),
                "oom": int((k == "oom").sum()),
                "longest_gc_ms": float(gs.loc[host, "longest_ms"]) if host in gs.index else np.nan,
                "paused_share": float(gs.loc[host, "paused_share"]) if host in gs.index else np.nan,
                "restarts": int((rs["host"].astype(str) == host).sum()) if len(rs) else 0,
                "warn": int(((ev["host"].astype(str) == host) & (ev["level"] == "WARN")).sum()) if len(ev) else 0,
                "error": int(((ev["host"].astype(str) == host) & ev["level"].isin(["ERROR", "FATAL"])).sum())
                if len(ev)
                else 0,
            }
        )
    return pd.DataFrame(rows)


LANES = ["controller", "fencing / session", "log dir", "ISR", "leaders", "GC pause", "restart", "OOM"]


def timeline(bundle, min_pause_ms: float = 200) -> pd.DataFrame:
    """Every state change on one clock: ts, host, node, lane, kind, text, file, line."""
    ids = node_ids(bundle)
    parts = []
    ne = bundle.table("node_events")
    if len(ne):
        lane = (
            ne["kind"]
            .astype(str)
            .map(
                lambda k: (
                    "controller"
                    if k.startswith("controller")
                    else "log dir"
                    if k.startswith("log_dir")
                    else "OOM"
                    if k == "oom"
                    else "fencing / session"
                )
            )
        )
        parts.append(
            pd.DataFrame(
                {
                    "ts": ne["ts"],
                    "host": ne["host"].astype(str),
                    "node": _node_col(ne, ids),
                    "lane": lane,
                    "kind": ne["kind"].astype(str),
                    "text": ne["message"].astype(str),
                    "file": ne["file"].astype(str),
                    "line": ne["line"],
                }
            )
        )
    p = bundle.table("partition_changes")
    if len(p):
        q = p[
            p["kind"].isin(
                [
                    "isr_shrink",
                    "isr_expand",
                    "isr_updated",
                    "leader",
                    "offline",
                    "leader_change",
                    "offline_dir_leader",
                    "unclean",
                ]
            )
        ]
        if "isr_updated" in set(q["kind"]):  # the updates that matter: the ones under min ISR
            q = q[(q["kind"] != "isr_updated") | q["under_min_isr"].fillna(False).astype(bool)]
        lane = q["kind"].astype(str).map(lambda k: "ISR" if k.startswith("isr") else "leaders")
        parts.append(
            pd.DataFrame(
                {
                    "ts": q["ts"],
                    "host": q["host"].astype(str),
                    "node": _node_col(q, ids, "reporter"),
                    "lane": lane,
                    "kind": q["kind"].astype(str),
                    "text": q["message"].astype(str),
                    "file": q["file"].astype(str),
                    "line": q["line"],
                }
            )
        )
    g = bundle.table("gc_pauses")
    if len(g):
        q = g[g["is_pause"].fillna(False).astype(bool) & (g["duration_ms"] >= min_pause_ms) & g["ts"].notna()]
        parts.append(
            pd.DataFrame(
                {
                    "ts": q["ts"],
                    "host": q["host"].astype(str),
                    "node": q["host"].astype(str).map(ids).astype("Int64"),
                    "lane": "GC pause",
                    "kind": "gc_pause",
                    "text": q["kind"].astype(str) + " " + q["duration_ms"].round(1).astype(str) + " ms",
                    "file": q["file"].astype(str),
                    "line": q["line"],
                }
            )
        )
    r = bundle.table("restarts")
    if len(r):
        parts.append(
            pd.DataFrame(
                {
                    "ts": r["start_ts"],
                    "host": r["host"].astype(str),
                    "node": r["host"].astype(str).map(ids).astype("Int64"),
                    "lane": "restart",
                    "kind": "restart",
                    "text": "start-up (ready after " + r["duration_s"].round(1).astype(str) + " s)",
                    "file": r["file"].astype(str),
                    "line": r["line"],
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=["ts", "host", "node", "lane", "kind", "text", "file", "line"])
    out = pd.concat([x for x in parts if len(x)], ignore_index=True) if any(len(x) for x in parts) else parts[0]
    return out.sort_values(["ts", "host", "line"], kind="stable").reset_index(drop=True)


SEQUENCE_KINDS = {
    "gc_pause",
    "oom",
    "fenced",
    "broker_failed",
    "zk_session_timeout",
    "zk_session_expired",
    "heartbeat_timeout",
    "controller_active",
    "controller_renounce",
    "log_dir_error",
    "log_dir_offline",
    "log_dir_halt",
    "log_dir_shutdown",
    "isr_shrink",
    "isr_expand",
    "offline",
    "offline_dir_leader",
    "unclean",
    "restart",
}


def outage_sequence(bundle, limit: int = 40) -> pd.DataFrame:
    """The events that tell the story, in order, with bursts of the same kind on the same node folded
    into one row (first time, count): long pauses, session loss, fencing, ISR shrinks, controller
    changes, log-dir failures, offline partitions, restarts."""
    t = timeline(bundle, min_pause_ms=LONG_PAUSE_MS)
    if not len(t):
        return t.assign(count=pd.Series(dtype=int))
    t = t[t["kind"].isin(SEQUENCE_KINDS)].copy()
    # the first controller activation is the cluster starting, not part of an outage
    first_act = t[t["kind"] == "controller_active"].index.min()
    if first_act == first_act and first_act is not None:
        t = t.drop(index=first_act)
    if not len(t):
        return t.assign(count=pd.Series(dtype=int))
    key = t["kind"] + "|" + t["node"].astype(str)
    gap = t["ts"].diff().dt.total_seconds().fillna(1e9)
    new = (key != key.shift()) | (gap > 10)
    t["burst"] = new.cumsum()
    agg = t.groupby("burst").agg(
        ts=("ts", "first"),
        last=("ts", "last"),
        host=("host", "first"),
        node=("node", "first"),
        kind=("kind", "first"),
        count=("kind", "size"),
        text=("text", "first"),
        file=("file", "first"),
        line=("line", "first"),
    )
    return agg.reset_index(drop=True).head(limit)


# --- detectors ---


@detector(
    ids=["gc-pauses"],
    needs=[],
    checks="stop-the-world GC pauses (>= 1 s, full GCs, to-space exhaustion, >= 5 % of time paused, heap "
    "full after GC, humongous-allocation collections) and OutOfMemoryError, "
    "and the ISR departures and session losses they caused",
)
def detect_gc_pauses(bundle) -> list[Finding]:
    g = bundle.table("gc_pauses")
    ne = bundle.table("node_events")
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
        evid += evidence(oom.head(3))
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
    checks="brokers leaving partitions' ISR (Shrinking ISR lines, under-min-isr updates, JMX "
    "UnderReplicatedPartitions / IsrShrinksPerSec), flapping, not explained by a GC pause",
)
def detect_isr_shrink(bundle) -> list[Finding]:
    sh = shrink_rows(bundle)
    pchg = bundle.table("partition_changes")
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
            _failover_owned(bundle, failovers(bundle))["file"].astype(str),
            _failover_owned(bundle, failovers(bundle))["line"].astype(int),
        )
    )
    # a node's stalls report the departures they explain (stalls.py), under this id when the node
    # kept its session
    out, stalled, _ = stalls.stall_findings(bundle, "isr-shrink", URP_MBEAN)
    rest = _drop_explained(sh, _explained(links) | owned | stalled)
    if not len(rest):
        return out
    ep = isr_episodes(bundle)
    ep = ep.merge(rest[["file", "line"]].astype({"file": str}), on=["file", "line"]) if len(ep) else ep
    # back by any source: the logs, JMX UnderReplicatedPartitions at 0, a describe snapshot
    back_by = stalls.recovered_by(bundle, ep, _host_of(node_ids(bundle)), URP_MBEAN) if len(ep) else None
    for node, grp in rest.groupby("node"):
        parts = grp.groupby(["topic", "partition"]).size()
        mine = ep[ep["node"] == node] if len(ep) else ep
        flapping = int((parts >= FLAP_MIN).sum())
        longest = float(mine["out_s"].max()) if len(mine) else np.nan
        never = int(back_by[mine.index].isna().sum()) if len(mine) and back_by is not None else 0
        under_min = int(
            pchg[(pchg["kind"] == "isr_updated") & pchg["under_min_isr"].fillna(False).astype(bool)].shape[0]
        )
        span = (grp["ts"].max() - grp["ts"].min()).total_seconds()
        summary = (
            f"Broker {node} left the ISR {len(grp)} times on {len(parts)} partition(s) over {_fmt_s(span)}"
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
                    "shrinks": len(grp),
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
                evidence=evidence(grp.sort_values("ts").head(8)),
            )
        )
    return out


@detector(
    ids=["controller-failover"],
    needs=["node_events"],
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
    p = bundle.table("partition_changes")
    ne = bundle.table("node_events")
    owned = _failover_owned(bundle, fos)
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
        evid = evidence(ev_rows.sort_values("ts").head(8))
        if len(offline):
            evid += evidence(offline.head(4))
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
                    "quorum_leader_described": _described_quorum_leader(bundle),
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


@detector(
    ids=["broker-fenced"],
    needs=["node_events"],
    checks="brokers fenced or declared failed after losing their session (KRaft heartbeats, ZooKeeper session "
    "time-outs and expiry), outside controlled shutdowns, controller failovers and GC pauses",
)
def detect_broker_fenced(bundle) -> list[Finding]:
    ne = bundle.table("node_events")
    ids = node_ids(bundle)
    e = ne[
        ne["kind"].isin(["fenced", "broker_failed", "zk_session_timeout", "zk_session_expired", "heartbeat_timeout"])
    ].copy()
    if not len(e):
        return []
    e["about"] = _node_col(e, ids)
    e = e[~_in_shutdown(bundle, e)]
    # a node that stalled: one finding names the stall and lists what it explains (stalls.py)
    out, stalled, started = stalls.stall_findings(bundle, "broker-fenced", URP_MBEAN)
    owned = _failover_owned(bundle, [fo for fo in failovers(bundle) if fo not in started])
    e = _drop_explained(
        e, _explained(gc_links(bundle)) | set(zip(owned["file"].astype(str), owned["line"].astype(int))) | stalled
    )
    # heartbeat time-outs alone are a symptom of a missing controller, not a fencing
    lost = e[e["kind"] != "heartbeat_timeout"]
    if not len(lost):
        return out
    unf = ne[ne["kind"] == "unfenced"]
    for node, grp in lost.groupby("about"):
        back = []
        for t in grp[grp["kind"].isin(["fenced", "broker_failed"])]["ts"]:
            nxt = unf[(unf["node"] == node) & (unf["ts"] > t)]["ts"]
            back.append((nxt.min() - t).total_seconds() if len(nxt) else np.nan)
        kinds = grp["kind"].astype(str).value_counts()
        words = {
            "fenced": "fenced by the controller (session timed out)",
            "broker_failed": "declared failed by the controller",
            "zk_session_timeout": "ZooKeeper session time-outs",
            "zk_session_expired": "ZooKeeper session expiries",
        }
        waited = grp["waited_ms"].dropna()
        summary = (
            f"Broker {node} lost its session: "
            + ", ".join(f"{words.get(k, k)} {n}x" for k, n in kinds.items())
            + (f"; unfenced again after {np.nanmax(back):.1f} s" if back and not np.all(np.isnan(back)) else "")
            + (f"; ZooKeeper heard nothing for up to {int(waited.max())} ms" if len(waited) else "")
        )
        zk = kinds.index.str.startswith("zk_").any()
        out.append(
            Finding(
                id="broker-fenced",
                severity="high",
                summary=summary,
                numbers={
                    "broker": int(node),
                    "events": len(grp),
                    **{k: int(n) for k, n in kinds.items()},
                    "max_seconds_fenced": None
                    if not back or np.all(np.isnan(back))
                    else round(float(np.nanmax(back)), 1),
                },
                recommendation=(
                    (
                        f"Broker {node} stopped talking to ZooKeeper long enough to lose its session: check its GC "
                        "log and host (CPU, swap, stopped process) and the network to ZooKeeper; "
                        "zookeeper.session.timeout.ms (18000 since 2.5) is the tolerance."
                        if zk
                        else f"Broker {node} missed heartbeats for broker.session.timeout.ms (9000): check its GC log, "
                        "whether the process was stopped or starved of CPU, and the network to the controllers; "
                        "raise broker.session.timeout.ms only for known, harmless stalls."
                    )
                    + " While fenced it leads no partitions, so producers with acks=all may stall on min.insync.replicas."
                ),
                evidence=evidence(grp.sort_values("ts").head(8)),
            )
        )
    return out


@detector(
    ids=["log-dir-failure"],
    needs=["node_events"],
    checks="log directories taken offline (I/O errors such as No space left on device), brokers halted or shut "
    "down for it, and the partitions that went offline",
)
def detect_log_dir_failure(bundle) -> list[Finding]:
    ne = bundle.table("node_events")
    ids = node_ids(bundle)
    e = ne[ne["kind"].astype(str).str.startswith("log_dir")].copy()
    if not len(e):
        return []
    e["about"] = _node_col(e, ids)
    p = bundle.table("partition_changes")
    out = []
    for (node, d), grp in e.groupby(["about", e["dir"].fillna("?")]):
        causes = grp["cause"].dropna().astype(str)
        io = [c for c in causes if not c.startswith(("Error while", "Shutdown broker", "Halting broker"))]
        cause = io[0] if io else (causes.iloc[0] if len(causes) else "not logged")
        parts = set()
        for s in grp["partitions"].dropna():
            parts |= {x for x in str(s).split(",") if x}
        lead = p[(p["kind"] == "offline_dir_leader") & (p["reporter"] == node)] if len(p) else p
        parts |= {f"{t}-{q}" for t, q in zip(lead["topic"], lead["partition"])} if len(lead) else set()
        halted = bool(grp["kind"].isin(["log_dir_halt", "log_dir_shutdown"]).any())
        odc = metric_series(bundle, "OfflineLogDirectoryCount", "Value")
        out.append(
            Finding(
                id="log-dir-failure",
                severity="critical" if halted else "high",
                summary=(
                    f"Broker {node} lost log directory {d}: {cause}"
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
                evidence=evidence(grp.sort_values("ts").head(6)) + (evidence(lead.head(3)) if len(lead) else []),
            )
        )
    return out


@detector(
    ids=["unclean-election"],
    needs=[],
    checks="unclean leader elections (an out-of-sync replica made leader: data loss), from logs and "
    "UncleanLeaderElectionsPerSec",
)
def detect_unclean(bundle) -> list[Finding]:
    p = bundle.table("partition_changes")
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
            evidence=evidence(u.head(8)) if len(u) else [],
        )
    ]
