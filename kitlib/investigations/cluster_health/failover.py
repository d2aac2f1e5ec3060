"""Controller failover: the active controller moving from one node to another after the cluster
started, and the fencing and heartbeat time-outs it explains (the node that lost the role fenced
as a broker, the other brokers timing out heartbeats while there was no controller).

Example:
    >>> class Empty:
    ...     def columns(self, name, names, categories=()):
    ...         return pd.DataFrame(columns=names)
    >>> failovers(Empty())
    []
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kitlib.investigations.cluster_health.analysis import node_col, node_events, node_ids, pairs_within

STORM_S = 60  # events of one failover / shrink burst lie within this many seconds


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
    ne = node_events(bundle)
    if not len(ne):
        return []
    act = ne[ne["kind"] == "controller_active"].sort_values("ts")
    if len(act) < 2:
        return []
    # each activation against the one before it, all at once: the first sign the previous
    # controller lost the role (its own renouncing, or an epoch line naming no leader) inside
    # [previous, this], and whether the previous one shut down within STORM_S before this one
    prev_node = act["node"].to_numpy()[:-1]
    prev_ts = pd.Series(act["ts"].array[:-1])
    cur = act.iloc[1:]
    cur_ts = pd.Series(cur["ts"].array)
    keyed = prev_ts.notna().to_numpy(bool) & cur_ts.notna().to_numpy(bool)
    known = keyed & pd.notna(prev_node)
    lost_ts = pd.Series(pd.NaT, index=prev_ts.index, dtype=prev_ts.dtype)
    epoch_marks = ne.loc[(ne["kind"] == "controller_epoch") & (ne["node"] == -1).fillna(False), "ts"]
    epochs = pd.DatetimeIndex(epoch_marks.dropna()).sort_values()
    if len(epochs) and keyed.any():
        i = epochs.searchsorted(prev_ts[keyed], side="left")
        first = pd.Series(epochs[np.minimum(i, len(epochs) - 1)])
        ok = (i < len(epochs)) & (first.to_numpy() <= cur_ts[keyed].to_numpy())
        lost_ts[np.flatnonzero(keyed)[ok]] = first[ok].to_numpy()
    planned = np.zeros(len(prev_ts), bool)
    if known.any():
        q = pd.DataFrame(
            {"node": prev_node[known].astype("int64"), "ts": prev_ts[known].array, "cur": cur_ts[known].array}
        )
        q["at"] = np.flatnonzero(known)

        def marks(kind: str) -> pd.DataFrame:
            m = ne[(ne["kind"] == kind) & ne["node"].notna() & ne["ts"].notna()]
            return pd.DataFrame({"node": m["node"].astype("int64").to_numpy(), "mark": m["ts"].array}).sort_values(
                "mark", kind="stable"
            )

        ren = pd.merge_asof(
            q.sort_values("ts", kind="stable"),
            marks("controller_renounce"),
            left_on="ts",
            right_on="mark",
            by="node",
            direction="forward",
        )
        ren = ren[(ren["mark"] <= ren["cur"]).fillna(False).to_numpy(bool)]
        at = ren["at"].to_numpy()
        lost_ts[at] = lost_ts[at].where(lost_ts[at] <= ren["mark"].to_numpy(), ren["mark"].to_numpy())
        down = pd.merge_asof(
            q.sort_values("cur", kind="stable"),
            marks("controlled_shutdown"),
            left_on="cur",
            right_on="mark",
            by="node",
            direction="backward",
        )
        hit = (down["mark"] >= down["ts"]) & (down["mark"] >= down["cur"] - pd.Timedelta(seconds=STORM_S))
        planned[down["at"].to_numpy()[hit.fillna(False).to_numpy(bool)]] = True
    out = []
    for j, (won, epoch, won_ts, file, line) in enumerate(
        zip(cur["node"], cur["epoch"], cur["ts"], cur["file"], cur["line"])
    ):
        lost, lts = prev_node[j], lost_ts.iloc[j]
        lts = None if pd.isna(lts) else lts
        out.append(
            Failover(
                lost=None if pd.isna(lost) else int(lost),
                won=int(won),
                epoch=None if pd.isna(epoch) else int(epoch),
                lost_ts=lts,
                won_ts=won_ts,
                gap_s=(won_ts - lts).total_seconds() if lts is not None else None,
                planned=bool(planned[j]),
                file=str(file),
                line=int(line),
            )
        )
    return out


def described_quorum_leader(bundle) -> int | None:
    """The active controller ``kafka-metadata-quorum describe --status`` last reported, if captured."""
    q = bundle.table("quorum_status")
    if not len(q) or q["leader_id"].isna().all():
        return None
    return int(q.sort_values("snapshot_ts", na_position="first")["leader_id"].dropna().iloc[-1])


def failover_owned(bundle, fos: list[Failover]) -> pd.DataFrame:
    """Fencing / heartbeat rows a controller failover explains (see the module doc)."""
    ne = node_events(bundle)
    if not fos or not len(ne):
        return ne.iloc[0:0]
    ids = node_ids(bundle)
    e = ne[ne["kind"].isin(["fenced", "heartbeat_timeout", "broker_failed"])].copy()
    e["about"] = node_col(e, ids)
    keep = np.zeros(len(e), bool)
    # the rows inside each failover's window, by binary search on the sorted times (the work is
    # the rows found, not failovers times rows)
    timed = np.flatnonzero(e["ts"].notna().to_numpy(bool))
    ts = e["ts"].to_numpy(dtype="datetime64[ns]").view(np.int64)[timed]
    order = np.argsort(ts, kind="stable")
    ns = 10**9
    since = pd.Series([fo.lost_ts or fo.won_ts for fo in fos], dtype=e["ts"].dtype)
    won_at = pd.Series([fo.won_ts for fo in fos], dtype=e["ts"].dtype)
    dated = since.notna().to_numpy(bool) & won_at.notna().to_numpy(bool)  # a failover without a time owns nothing
    lo = np.where(dated, since.to_numpy(dtype="datetime64[ns]").view(np.int64) - STORM_S * ns, 1)
    won = np.where(dated, won_at.to_numpy(dtype="datetime64[ns]").view(np.int64), 0)
    w, k = pairs_within(ts[order], lo, np.where(dated, won + STORM_S * ns, 0))
    rows = timed[order][k]
    hb = (e["kind"] == "heartbeat_timeout").to_numpy(bool)[rows] & (ts[order][k] <= won[w] + 5 * ns)
    lost = np.array([-(2**62) if fo.lost is None else fo.lost for fo in fos], np.int64)
    about = e["about"].astype("float64").to_numpy()[rows]
    keep[rows[hb | (about == lost[w])]] = True
    return e[keep]
