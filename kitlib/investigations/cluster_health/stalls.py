"""Stalls: a node that stopped for a while (SIGSTOP, a paused VM, a swap storm) and what that
one stop explains.

A frozen broker writes nothing and answers nothing: its JmxTool samples stop (a gap of several
of its usual intervals, with samples on both sides), and when the freeze outlasts
broker.session.timeout.ms the controller fences it. While it is frozen it does not fetch, so the
leaders drop it from their ISRs; when it resumes, a frozen KRaft voter calls an election at once
(Kafka 3.9 has no pre-vote), so the active controller changes, or is re-elected, a few seconds
later. Those are consequences of one cause, and the cluster_health detectors report them as one
finding (see :func:`stall_consequences`); a fencing window that holds a restart of the node is a
crash, not a stall, and is left to the controller-failover and broker-fenced findings as before.

Example:
    >>> gaps = sampling_gaps(pd.DataFrame({"host": ["b2"] * 5, "file": ["jmx.csv"] * 5, "line": range(1, 6),
    ...     "ts": pd.to_datetime(["2026-01-01 00:00:00", "2026-01-01 00:00:01", "2026-01-01 00:00:02",
    ...                           "2026-01-01 00:00:09", "2026-01-01 00:00:10"], utc=True)}))
    >>> gaps[["host", "seconds"]].values.tolist()
    [['b2', 7.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from kitlib.findings import Finding, evidence
from kitlib.investigations.cluster_health.analysis import (
    isr_episodes,
    node_col,
    node_events,
    node_ids,
    quoted,
    shrink_rows,
)
from kitlib.investigations.cluster_health.causes import drop_explained, explained_rows, gc_links
from kitlib.investigations.cluster_health.codes import earliest, text_counts
from kitlib.investigations.cluster_health.failover import failover_owned, failovers

GAP_MIN_S = 3.0  # a sampling gap shorter than this is noise
GAP_FACTOR = 4  # ... or shorter than this many of the host's usual sampling intervals
SESSION_S = 9.0  # broker.session.timeout.ms (default): a fenced node had been silent this long
AFTER_S = 5.0  # ISR shrink lines and the node's own heartbeat time-outs up to this long after it resumes
ELECTION_AFTER_S = 15.0  # a voter that resumes calls an election at once; a leader follows in seconds


@dataclass(frozen=True)
class Stall:
    """One node's stop: when it began and ended, and how it is known."""

    node: int
    host: str
    start: pd.Timestamp
    end: pd.Timestamp
    how: str  # "no JMX answer" and/or "fenced"


@dataclass
class StallStory:
    """One node's stalls and everything they explain (rows of the bundle's tables)."""

    node: int
    host: str
    stalls: list[Stall]
    shrinks: pd.DataFrame  # shrink_rows of this node inside a stall (ISR departures)
    session: pd.DataFrame  # node_events about it: fenced, broker_failed, zk_*, heartbeat_timeout
    failovers: list = field(default_factory=list)  # failover.Failover started by a stall
    failover_rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # rows those failovers own

    @property
    def rows(self) -> set[tuple[str, int]]:
        """(file, line) of every row this story explains."""
        out: set[tuple[str, int]] = set()
        for df in (self.shrinks, self.session, self.failover_rows):
            if len(df):
                out |= set(zip(df["file"].astype(str), df["line"].astype(int)))
        return out


def sampling_gaps(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per (host, file) of samples: the gaps between consecutive sample times longer than
    ``GAP_MIN_S`` and ``GAP_FACTOR`` times that file's median interval; ``start`` is the last
    sample before, ``end`` the first after (its line is the evidence). Vectorised (a groupby
    shift), whatever the number of samples."""
    cols = ["host", "file", "start", "end", "seconds", "line"]
    if not len(metrics):
        return pd.DataFrame(columns=cols)
    t = metrics[["host", "file", "ts", "line"]].dropna(subset=["ts"])
    t = t.astype({"host": "string", "file": "string"}).drop_duplicates(["host", "file", "ts"])
    t = t.sort_values(["host", "file", "ts"], kind="stable")
    prev = t.groupby(["host", "file"], sort=False)["ts"].shift()
    step = (t["ts"] - prev).dt.total_seconds()
    usual = step.groupby([t["host"], t["file"]], sort=False).transform("median")
    gap = (step > np.maximum(GAP_MIN_S, GAP_FACTOR * usual)).fillna(False).to_numpy(bool)
    out = pd.DataFrame(
        {
            "host": t["host"][gap].astype(str),
            "file": t["file"][gap].astype(str),
            "start": prev[gap],
            "end": t["ts"][gap],
            "seconds": step[gap].round(3),
            "line": t["line"][gap],
        }
    )
    return out.reset_index(drop=True)


def _restart_inside(restarts: pd.DataFrame, host: pd.Series, start: pd.Series, end: pd.Series) -> np.ndarray:
    """For each window: does a start-up of its host begin inside it (a crash, not a stall)?"""
    hit = np.zeros(len(host), bool)
    if not len(restarts) or not len(host):
        return hit
    w = pd.DataFrame({"host": host.astype(str).to_numpy(), "start": start.to_numpy(), "end": end.to_numpy()})
    w["w"] = np.arange(len(w))
    r = pd.DataFrame({"host": restarts["host"].astype(str), "at": restarts["start_ts"]}).dropna()
    both = w.merge(r, on="host")
    inside = both[(both["at"] >= both["start"]) & (both["at"] <= both["end"])]
    hit[inside["w"].to_numpy(int)] = True
    return hit


def stalls(bundle, ids: dict[str, int]) -> list[Stall]:
    """Every stall of every node, overlapping windows of one node merged: JMX sampling gaps of
    its host, widened by a fencing that overlaps one (from ``SESSION_S`` before the fencing to
    the unfencing that follows); windows that hold a start-up of the node's host are left out
    (a crash and restart, not a stall)."""
    gaps = sampling_gaps(bundle.table("metrics"))
    if not len(gaps):  # a fencing counts only where it overlaps a sampling gap of its host (below)
        return []
    parts = [pd.DataFrame({"host": gaps["host"], "start": gaps["start"], "end": gaps["end"], "how": "no JMX answer"})]
    ne = node_events(bundle)
    if len(ne):
        host_of = {v: k for k, v in ids.items()}
        # ... so only the fencings and unfencings of nodes whose host has a gap are read, and only
        # the columns used
        gapped = set(gaps["host"].astype(str))
        near = ne["node"].isin([n for n, h in host_of.items() if h in gapped])
        ne = ne[["ts", "kind", "node"]][near.fillna(False).to_numpy(bool) & ne["node"].notna().to_numpy(bool)]
        fen = ne[ne["kind"].isin(["fenced", "broker_failed"])]
        fen = fen[fen["node"].notna()].sort_values("ts")
        unf = ne[(ne["kind"] == "unfenced") & ne["node"].notna()].sort_values("ts")
        if len(fen):
            back = pd.merge_asof(
                pd.DataFrame({"ts": fen["ts"], "node": fen["node"].astype("int64")}),
                pd.DataFrame({"back": unf["ts"], "node": unf["node"].astype("int64"), "at": unf["ts"]}),
                left_on="ts",
                right_on="at",
                by="node",
                direction="forward",
            )
            parts.append(
                pd.DataFrame(
                    {
                        "host": back["node"].map(host_of),
                        "start": back["ts"] - pd.Timedelta(seconds=SESSION_S),
                        "end": back["back"].fillna(back["ts"]),
                        "how": "fenced",
                    }
                ).dropna(subset=["host"])
            )
    if not parts:
        return []
    w = pd.concat(parts, ignore_index=True)
    w = w[w["host"].astype(str).isin(ids)]
    w = w[~_restart_inside(bundle.table("restarts"), w["host"], w["start"], w["end"])]
    # a fencing alone may be a lost network, not a stop: it counts only where it overlaps a
    # sampling gap of the same host (the process answered nothing)
    jmx = w[w["how"] == "no JMX answer"]
    fen = w[w["how"] == "fenced"].reset_index(drop=True)
    if len(fen):
        pairs = fen.assign(f=np.arange(len(fen))).merge(jmx, on="host", suffixes=("", "_gap"))
        hit = pairs[(pairs["start"] <= pairs["end_gap"]) & (pairs["end"] >= pairs["start_gap"])]["f"].unique()
        w = pd.concat([jmx, fen.iloc[np.sort(hit)]], ignore_index=True)
    if not len(w):
        return []
    # merge overlapping windows of one host: a new run starts where a window begins after every
    # earlier window of that host has ended
    w = w.sort_values(["host", "start"], kind="stable").reset_index(drop=True)
    reach = w.groupby("host")["end"].cummax().groupby(w["host"]).shift()
    run = ((w["start"] > reach) | reach.isna()).cumsum()
    merged = w.groupby(run).agg(
        host=("host", "first"),
        start=("start", "min"),
        end=("end", "max"),
        how=("how", lambda s: " and ".join(sorted(set(s)))),
    )
    return [
        Stall(int(ids[str(h)]), str(h), s, e, how)
        for h, s, e, how in zip(merged["host"], merged["start"], merged["end"], merged["how"])
    ]


def in_windows(ts: pd.Series, starts: list, ends: list) -> np.ndarray:
    """Which of ``ts`` fall in any ``[starts[i], ends[i]]`` (vectorised over ``ts``)."""
    hit = np.zeros(len(ts), bool)
    t = ts.to_numpy(dtype="datetime64[ns]")
    for a, b in zip(starts, ends):
        hit |= (t >= np.datetime64(a.tz_convert(None), "ns")) & (t <= np.datetime64(b.tz_convert(None), "ns"))
    return hit


def recovered_by(bundle, episodes: pd.DataFrame, host_of: dict[int, str], urp_mbean: str) -> pd.Series:
    """For each ISR departure (``isr_episodes`` rows), when some source shows the follower back:
    the rejoin or next departure the logs hold (``back_by``), else the first JMX
    UnderReplicatedPartitions sample of the leader's host at 0 after it left (every partition
    that leader leads fully replicated again), else the first ``kafka-topics --describe``
    snapshot after it left with the broker in that partition's ISR. NaT: no source shows it back."""
    if not len(episodes):
        return pd.Series(dtype="datetime64[ns, UTC]")
    back = episodes["back_by"].copy()
    todo = back.isna() & episodes["left"].notna()
    if not todo.any():
        return back
    m = bundle.table("metrics")
    if len(m):
        urp = m[(m["name"].astype("string") == urp_mbean) & (m["attribute"].astype("string") == "Value")]
        zero = urp[(urp["value"] == 0) & urp["ts"].notna()]
        if len(zero):
            leader = episodes.loc[todo, "leader"].astype("Float64").astype("Int64")
            q = episodes[todo].assign(leader_host=leader.map(host_of).astype("string"))
            q = q.dropna(subset=["leader_host"]).reset_index()
            if len(q):
                got = pd.merge_asof(
                    q.sort_values("left"),
                    pd.DataFrame({"leader_host": zero["host"].astype("string"), "healed": zero["ts"]}).sort_values(
                        "healed"
                    ),
                    left_on="left",
                    right_on="healed",
                    by="leader_host",
                    direction="forward",
                    allow_exact_matches=False,
                ).set_index("index")
                back = back.fillna(got["healed"].reindex(back.index))
    todo = back.isna() & episodes["left"].notna()
    d = bundle.table("topic_partitions")
    if todo.any() and len(d) and d["snapshot_ts"].notna().any():
        snap = pd.DataFrame(
            {
                "topic": d["topic"].astype("string"),
                "partition": d["partition"].astype("Int64"),
                "node": d["isr"].astype("string").fillna("").str.split(","),
                "seen": d["snapshot_ts"],
            }
        ).explode("node")
        snap = snap[snap["node"].astype(str).str.strip().str.isdigit()]
        snap = snap.assign(node=snap["node"].astype("int64")).dropna(subset=["seen", "topic", "partition"])
        q = episodes[todo].dropna(subset=["topic", "partition", "node"]).reset_index()
        if len(q) and len(snap):
            got = pd.merge_asof(
                q.astype({"topic": "string", "partition": "Int64", "node": "int64"}).sort_values("left"),
                snap.astype({"topic": "string", "partition": "Int64"}).sort_values("seen"),
                left_on="left",
                right_on="seen",
                by=["topic", "partition", "node"],
                direction="forward",
                allow_exact_matches=False,
            ).set_index("index")
            back = back.fillna(got["seen"].reindex(back.index))
    return back


def stall_stories(bundle) -> list[StallStory]:
    """Per node that stalled: the ISR departures, session losses and controller elections its
    stalls explain (module doc), GC-explained rows left to the gc-pauses finding. Nodes whose
    stalls explain nothing are left out."""
    ids = node_ids(bundle)
    found = stalls(bundle, ids)
    if not found:
        return []
    gc = explained_rows(gc_links(bundle))
    sh = shrink_rows(bundle)
    ne = node_events(bundle)
    sess = ne[
        ne["kind"].isin(["fenced", "broker_failed", "zk_session_timeout", "zk_session_expired", "heartbeat_timeout"])
    ]
    sess = sess.assign(about=node_col(sess, ids)) if len(sess) else sess.assign(about=pd.Series(dtype="Int64"))
    fos = failovers(bundle)
    slack = pd.Timedelta(seconds=1)
    out = []
    for node in sorted({st.node for st in found}):
        mine = [st for st in found if st.node == node]
        starts = [st.start - slack for st in mine]
        ends = [st.end + pd.Timedelta(seconds=AFTER_S) for st in mine]
        shr = (
            sh[(sh["node"] == node).fillna(False).to_numpy(bool) & in_windows(sh["ts"], starts, ends)]
            if len(sh)
            else sh
        )
        ses = (
            sess[(sess["about"] == node).fillna(False).to_numpy(bool) & in_windows(sess["ts"], starts, ends)]
            if len(sess)
            else sess
        )
        started = [
            fo
            for fo in fos
            if any(
                st.start - slack <= (fo.lost_ts or fo.won_ts) <= st.end + pd.Timedelta(seconds=ELECTION_AFTER_S)
                for st in mine
            )
        ]
        owned = failover_owned(bundle, started) if started else ne.iloc[0:0]
        if gc:
            shr, ses = drop_explained(shr, gc), drop_explained(ses, gc)
        if not len(shr) and not len(ses) and not started:
            continue
        out.append(StallStory(node, mine[0].host, mine, shr, ses, started, owned))
    return out


def election_words(fo) -> str:
    """One controller election in words: moved, or re-elected when the same node won again."""
    epoch = f" at epoch {fo.epoch}" if fo.epoch is not None else ""
    if fo.lost is not None and fo.lost == fo.won:
        return f"leader re-elected (node {fo.won} kept leadership){epoch}"
    return f"moved from node {fo.lost} to node {fo.won}{epoch}"


def _between(column: str, starts: list, ends: list) -> str:
    """A pandas query clause: ``column`` inside any of the windows."""
    return (
        "("
        + " or ".join(
            f"({column} >= '{a.isoformat()}' and {column} <= '{b.isoformat()}')" for a, b in zip(starts, ends)
        )
        + ")"
    )


def stall_finding(bundle, story: StallStory, finding_id: str, urp_mbean: str) -> Finding:
    """The one finding of a node's stalls: what stopped, for how long, and every consequence with
    its evidence (ISR departures and whether each came back by any source, the session it lost,
    the controller elections it set off)."""
    node, st = story.node, story.stalls
    secs = np.array([(s.end - s.start).total_seconds() for s in st])
    how = " and ".join(sorted({w for s in st for w in s.how.split(" and ")}))
    parts = [
        f"Broker {node} stalled {len(st)} time(s) for "
        + (
            f"{secs.min():.1f} to {secs.max():.1f} s ({secs.sum():.1f} s in all; "
            if len(st) > 1
            else f"{secs[0]:.1f} s ("
        )
        + f"seen as: {how.replace(' and ', ', ')})"
    ]
    numbers: dict = {"broker": node, "stalls": len(st), "longest_stall_s": round(float(secs.max()), 1)}
    ses = story.session
    lost = ses[ses["kind"] != "heartbeat_timeout"] if len(ses) else ses
    kinds = text_counts(lost["kind"]) if len(lost) else pd.Series(dtype=int)
    if len(kinds):
        words = {
            "fenced": "fenced by the controller (session timed out)",
            "broker_failed": "declared failed by the controller",
            "zk_session_timeout": "ZooKeeper session time-outs",
            "zk_session_expired": "ZooKeeper session expiries",
        }
        ne = node_events(bundle)
        unf = ne[(ne["kind"] == "unfenced") & (ne["node"] == node).fillna(False)].sort_values("ts")
        fen = lost[lost["kind"].isin(["fenced", "broker_failed"])].sort_values("ts")
        back = (
            pd.merge_asof(
                fen[["ts"]],
                unf[["ts"]].rename(columns={"ts": "back"}),
                left_on="ts",
                right_on="back",
                direction="forward",
            )
            if len(fen) and len(unf)
            else pd.DataFrame({"ts": [], "back": []})
        )
        out_s = (back["back"] - back["ts"]).dt.total_seconds().dropna() if len(back) else pd.Series(dtype=float)
        parts.append(
            "lost its session: "
            + ", ".join(f"{words.get(k, k)} {n}x" for k, n in kinds.items())
            + (f"; unfenced again after {out_s.max():.1f} s" if len(out_s) else "")
        )
        numbers.update({"events": len(lost), **{k: int(n) for k, n in kinds.items()}})
        numbers["max_seconds_fenced"] = round(float(out_s.max()), 1) if len(out_s) else None
    conseq = []
    sh = story.shrinks
    if len(sh):
        ep = isr_episodes(bundle)
        ep = ep.merge(sh[["file", "line"]].astype({"file": str}).drop_duplicates(), on=["file", "line"])
        ep = ep[ep["node"] == node]
        back_by = recovered_by(bundle, ep, {v: k for k, v in node_ids(bundle).items()}, urp_mbean)
        never = int(back_by.isna().sum())
        longest = float(ep["out_s"].max()) if len(ep) else float("nan")
        n_parts = sh[["topic", "partition"]].drop_duplicates().shape[0]
        conseq.append(
            f"it left the ISR {len(sh)} times on {n_parts} partition(s)"
            + (f" (longest {longest:.1f} s out)" if longest == longest else "")
            + (f", {never} departure(s) not seen back in any source" if never else ", all back")
        )
        numbers.update(
            isr_shrinks=len(sh),
            isr_partitions=n_parts,
            longest_out_of_isr_s=None if longest != longest else round(longest, 1),
            never_rejoined=never,
        )
    if story.failovers:
        conseq.append(
            f"{len(story.failovers)} controller election(s) right after it resumed: "
            + "; ".join(election_words(fo) for fo in story.failovers)
        )
        numbers["elections"] = len(story.failovers)
        hb = story.failover_rows
        hb = hb[hb["kind"] == "heartbeat_timeout"] if len(hb) else hb
        if len(hb):
            numbers["heartbeat_timeouts_meanwhile"] = len(hb)
    summary = "; ".join(parts) + (". Consequences: " + "; ".join(conseq) if conseq else "")
    starts = [s.start - pd.Timedelta(seconds=1) for s in st]
    ends = [s.end + pd.Timedelta(seconds=AFTER_S) for s in st]
    counted_from = {}
    if len(sh):
        counted_from["isr_shrinks"] = (
            "partition_changes",
            f"kind == 'isr_shrink' and removed.str.contains('(?:^|,){node}(?:,|$)', na=False) and "
            + _between("ts", starts, ends),
        )
    if len(lost):
        counted_from["events"] = (
            "node_events",
            f"kind in {sorted(set(kinds.index))!r} and node == {node} and " + _between("ts", starts, ends),
        )
    gaps = sampling_gaps(bundle.table("metrics"))
    gaps = gaps[gaps["host"] == story.host] if len(gaps) else gaps
    evid = (
        evidence(
            gaps.assign(ts=gaps["end"]).head(4),
            text=lambda r: (
                f"first JMX sample after {r['seconds']:.1f} s without one ({r['start'].isoformat()} to {r['end'].isoformat()})"
            ),
        )
        if len(gaps)
        else []
    )
    evid += evidence(quoted(bundle, earliest(lost, 4), "node_events")) if len(lost) else []
    evid += evidence(quoted(bundle, earliest(sh, 8), "partition_changes")) if len(sh) else []
    if story.failovers:
        ne = node_events(bundle)
        won = pd.DataFrame({"file": [fo.file for fo in story.failovers], "line": [fo.line for fo in story.failovers]})
        mine = ne[ne["line"].isin(won["line"]).fillna(False).to_numpy(bool)]  # a few rows made plain, not the table
        evid += evidence(
            quoted(bundle, mine.astype({"file": str}).merge(won, on=["file", "line"]).head(4), "node_events")
        )
    return Finding(
        id=finding_id,
        severity="high",
        summary=summary,
        numbers=numbers,
        recommendation=(
            f"Broker {node} stopped, not slowed: nothing came from it for seconds at a time. Find what froze it "
            "(a stopped or suspended process, a paused VM or container, swap, a GC pause its GC log would show, CPU "
            "throttling); everything listed here follows from that. Leaders drop a follower that fetches nothing "
            "for replica.lag.time.max.ms, the controller fences a broker silent for broker.session.timeout.ms, and "
            "a combined broker+controller voter that resumes calls a controller election: run controllers apart "
            "from brokers so a frozen broker cannot move the quorum leader."
        ),
        evidence=evid,
        counted_from=counted_from,
    )


def story_id(story: StallStory) -> str:
    """The finding id a node's stalls are reported under: ``broker-fenced`` when it lost its
    session in one, else ``isr-shrink`` when it left ISRs, else ``controller-failover``."""
    ses = story.session
    if len(ses) and (ses["kind"] != "heartbeat_timeout").any():
        return "broker-fenced"
    return "isr-shrink" if len(story.shrinks) else "controller-failover"


def stall_findings(bundle, finding_id: str, urp_mbean: str) -> tuple[list[Finding], set[tuple[str, int]], list]:
    """The stall findings reported under ``finding_id``, the (file, line) rows every stall story
    explains (whatever its id: no other finding may report them again), and the controller
    failovers the stalls set off."""
    stories = stall_stories(bundle)
    rows: set[tuple[str, int]] = set()
    started = []
    for s in stories:
        rows |= s.rows
        started += s.failovers
    found = [stall_finding(bundle, s, finding_id, urp_mbean) for s in stories if story_id(s) == finding_id]
    return found, rows, started
