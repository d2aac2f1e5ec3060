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

from kitlib.investigations.cluster_health.analysis import (
    long_pauses,
    node_col,
    node_events,
    node_ids,
    pairs_within,
    shrink_rows,
)

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
    symptom goes to the longest pause that explains it (the first of equals). Vectorised: each
    pause's window of symptom times is found by binary search in the node's sorted symptoms, so
    the work is the number of (pause, symptom) pairs that overlap, not pauses times symptoms."""
    pauses = long_pauses(bundle)
    if not len(pauses):
        return []
    ids = node_ids(bundle)
    ne = node_events(bundle)
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
    sym_ts = sym["ts"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    sym_node = sym["node"].astype("int64").to_numpy()
    best_ms = np.full(len(sym), -np.inf)
    best_pause = np.full(len(sym), -1)
    slack, window = 10**9, int(SYMPTOM_WINDOW_S * 1e9)
    p_ts = pauses["ts"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    p_ms = pauses["duration_ms"].astype("float64").to_numpy()
    p_node = [ids.get(str(h)) for h in pauses["host"].astype(str)]
    p_code = np.array([-1 if x is None else x for x in p_node], np.int64)
    p_start = p_ts - np.round(p_ms * 1e6).astype(np.int64)
    # a symptom at t is explained by a pause on its node with start <= t + 1 s and end >= t - window
    order = np.lexsort((sym_ts, sym_node))
    win_all, pos_all = [], []
    for node in np.unique(p_code[p_code >= 0]):  # one binary search per node, over its pauses at once
        mine = np.flatnonzero(sym_node[order] == node)
        if not len(mine):
            continue
        at = np.flatnonzero(p_code == node)
        w, k = pairs_within(sym_ts[order][mine], p_start[at] - slack, p_ts[at] + window)
        win_all.append(at[w])
        pos_all.append(order[mine][k])
    if win_all:
        pw, ps = np.concatenate(win_all), np.concatenate(pos_all)
        # per symptom: the longest pause, the first of equals (lowest pause index)
        pick = np.lexsort((pw, -p_ms[pw], ps))
        pw, ps = pw[pick], ps[pick]
        first = np.r_[True, ps[1:] != ps[:-1]] if len(ps) else np.zeros(0, bool)
        best_pause[ps[first]] = pw[first]
        best_ms[ps[first]] = p_ms[pw[first]]
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
    rows = pd.MultiIndex.from_arrays([df["file"].astype(str), df["line"].astype("int64")])
    return df[~rows.isin(list(explained))]


def in_shutdown(bundle, df: pd.DataFrame, node_col: str = "about") -> np.ndarray:
    """Rows about a node after its own controlled shutdown (and before it came back)."""
    ne = node_events(bundle)
    out = np.zeros(len(df), bool)
    if not len(ne) or not len(df):
        return out
    # the latest shutdown of the row's node at or before it, and the first unfencing after that
    # shutdown (a later shutdown is never unfenced earlier): two as-of joins, no loop over rows
    # (only the two columns read are taken of the rows kept, never every column of them)
    keyed = (ne["node"].notna() & ne["ts"].notna()).to_numpy(bool)
    cs = np.flatnonzero((ne["kind"] == "controlled_shutdown").to_numpy(bool) & keyed)
    back = np.flatnonzero((ne["kind"] == "unfenced").to_numpy(bool) & keyed)
    if not len(cs):
        return out
    cs = pd.DataFrame({"node": ne["node"].array.take(cs).astype("int64"), "down": ne["ts"].array.take(cs)})
    cs = cs.sort_values("down", kind="stable")
    if len(back):
        up = pd.DataFrame({"node": ne["node"].array.take(back).astype("int64"), "until": ne["ts"].array.take(back)})
        cs = pd.merge_asof(
            cs,
            up.sort_values("until", kind="stable"),
            left_on="down",
            right_on="until",
            by="node",
            direction="forward",
            allow_exact_matches=False,
        )
    else:
        cs["until"] = pd.Series(pd.NaT, index=cs.index, dtype=cs["down"].dtype)
    rows = (df[node_col].notna() & df["ts"].notna()).to_numpy(bool)
    if not rows.any():
        return out
    q = pd.DataFrame({"node": df[node_col].to_numpy()[rows].astype("int64"), "ts": df["ts"].array[rows]})
    q["at"] = np.flatnonzero(rows)
    got = pd.merge_asof(q.sort_values("ts", kind="stable"), cs, left_on="ts", right_on="down", by="node")
    hit = got["down"].notna() & (got["until"].isna() | (got["ts"] <= got["until"]))
    out[got["at"].to_numpy()[hit.to_numpy(bool)]] = True
    return out
