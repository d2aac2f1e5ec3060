"""Controller failover: the active controller moving from one node to another after the cluster
started, and the fencing and heartbeat time-outs it explains (the node that lost the role fenced
as a broker, the other brokers timing out heartbeats while there was no controller).

Example:
    >>> class Empty:
    ...     def table(self, name):
    ...         return pd.DataFrame()
    >>> failovers(Empty())
    []
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kitlib.investigations.cluster_health.analysis import node_col, node_ids

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


def described_quorum_leader(bundle) -> int | None:
    """The active controller ``kafka-metadata-quorum describe --status`` last reported, if captured."""
    q = bundle.table("quorum_status")
    if not len(q) or q["leader_id"].isna().all():
        return None
    return int(q.sort_values("snapshot_ts", na_position="first")["leader_id"].dropna().iloc[-1])


def failover_owned(bundle, fos: list[Failover]) -> pd.DataFrame:
    """Fencing / heartbeat rows a controller failover explains (see the module doc)."""
    ne = bundle.table("node_events")
    if not fos or not len(ne):
        return ne.iloc[0:0]
    ids = node_ids(bundle)
    e = ne[ne["kind"].isin(["fenced", "heartbeat_timeout", "broker_failed"])].copy()
    e["about"] = node_col(e, ids)
    keep = np.zeros(len(e), bool)
    for fo in fos:
        start = (fo.lost_ts or fo.won_ts) - pd.Timedelta(seconds=STORM_S)
        end = fo.won_ts + pd.Timedelta(seconds=STORM_S)
        inwin = ((e["ts"] >= start) & (e["ts"] <= end)).to_numpy()
        hb = (e["kind"] == "heartbeat_timeout").to_numpy() & (e["ts"] <= fo.won_ts + pd.Timedelta(seconds=5)).to_numpy()
        old = (e["about"] == fo.lost).fillna(False).to_numpy()
        keep |= inwin & (hb | old)
    return e[keep]
