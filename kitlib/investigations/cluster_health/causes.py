"""What explains a symptom, so that one cause makes one finding: a long GC pause on the same node,
or the node's own controlled shutdown (a controller failover's share is in ``failover.py``, a
stalled node's in ``stalls.py``).

A stop-the-world pause explains a symptom on the same node when it is at least ``LONG_PAUSE_MS``
long and overlaps the window in which the symptom builds up: from ``SYMPTOM_WINDOW_S`` before the
symptom (replica.lag.time.max.ms is 30 s, broker sessions time out after 9 s, ZooKeeper sessions
after 18 s) to the symptom itself. The ``gc-pauses`` finding then names those consequences (the
broker left the ISR of N partitions, was fenced...), and ``isr-shrink`` and ``broker-fenced``
report only what no pause explains (nothing at all when everything is explained). In the same
way, a controller failover owns the fencing of the node that lost the controller role and the
heartbeat time-outs of the other brokers while there was no controller.

Example:
    >>> overlaps(pd.Timestamp("2024-05-22 00:00:10", tz="UTC"), 12_000, pd.Timestamp("2024-05-22 00:00:12", tz="UTC"))
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kitlib.investigations.cluster_health.analysis import long_pauses, node_col, node_ids, shrink_rows

SYMPTOM_WINDOW_S = 35  # a pause ending this long before a symptom may still explain it


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
        e["node"] = node_col(e, ids)
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


def explained_rows(links: list[Link]) -> set[tuple[str, int]]:
    return {(lk.symptom_file, lk.symptom_line) for lk in links}


def drop_explained(df: pd.DataFrame, explained: set) -> pd.DataFrame:
    if not len(df) or not explained:
        return df
    keep = [(str(f), int(n)) not in explained for f, n in zip(df["file"], df["line"])]
    return df[np.asarray(keep, bool)]


def in_shutdown(bundle, df: pd.DataFrame, node_col: str = "about") -> np.ndarray:
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
