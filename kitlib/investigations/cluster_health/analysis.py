"""Broker and cluster health, the views of the bundle's tables the notebook shows and the
detectors read: which node a host is, who left which ISR and when (episodes), GC per host, one row
per broker, and every state change on one timeline. The detectors are in ``detectors.py``; what
explains a symptom in ``causes.py`` (GC pauses, controlled shutdowns) and ``failover.py``
(controller failovers), a stalled node in ``stalls.py``.

Node identity: a host's node id is the id its own lines name most often (``[Partition t-0
broker=3]``, ``[QuorumController id=3]``, ``[BrokerLifecycleManager id=3]``...), else the digits at
the end of the host name (``broker-3`` -> 3); :func:`node_ids` gives the map.

Example:
    >>> host_of({"broker-1": 1, "broker-2": 2})
    {1: 'broker-1', 2: 'broker-2'}
"""

from __future__ import annotations

import re
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.bundle import Bundle
from kitlib.investigations.cluster_health.codes import arrow_text, host_ids, text_codes, text_values

LONG_PAUSE_MS = 1000  # a pause this long can stall replication or heartbeats


# --- identity and shared views ---

# what the models and detectors read of the two big tables: every column but the text, which only
# the few rows a finding quotes need (:func:`quoted`); on an ingest output the text is never read whole
NODE_COLUMNS = [
    "ts", "kind", "node", "reporter", "epoch", "dir", "partitions", "cause", "waited_ms", "level", "host", "file", "line",
]  # fmt: skip
CHANGE_COLUMNS = [
    "ts", "kind", "topic", "partition", "reporter", "leader", "epoch", "isr_before", "isr_after", "removed", "added",
    "under_min_isr", "level", "host", "file", "line",
]  # fmt: skip


# their text columns of few values (a few causes, directories, topics and ISR lists over millions of
# rows), which the models hold as categories: on the dense incident's 2.7 M rows, 105 MB as text and
# about 8 as codes
NODE_CATEGORIES = ("cause", "dir", "partitions")
CHANGE_CATEGORIES = ("topic", "isr_before", "isr_after", "removed", "added")


def node_events(bundle) -> pd.DataFrame:
    """``node_events`` as the models read it: :data:`NODE_COLUMNS` at least (the whole table where
    it is held whole), rows as :meth:`~kitlib.bundle.Bundle.table` gives them, with
    :data:`NODE_CATEGORIES` as categories."""
    return bundle.columns("node_events", NODE_COLUMNS, NODE_CATEGORIES)


def partition_changes(bundle) -> pd.DataFrame:
    """``partition_changes`` as the models read it: :data:`CHANGE_COLUMNS` at least, with
    :data:`CHANGE_CATEGORIES` as categories."""
    return bundle.columns("partition_changes", CHANGE_COLUMNS, CHANGE_CATEGORIES)


def quoted(bundle, rows: pd.DataFrame, name: str) -> pd.DataFrame:
    """``rows`` of table ``name`` (read by :func:`node_events` or :func:`partition_changes`, or made
    from them) with the ``message`` of the log line each one comes from (by file and line): only
    these rows' text is read. Rows that have it already come back as they are."""
    if "message" in rows.columns or not len(rows):
        return rows
    part = bundle.columns(name, ["file", "line"])
    want = pd.MultiIndex.from_arrays([rows["file"].astype(str), rows["line"].astype("Int64")])
    lines = part["line"].isin(want.get_level_values(1).dropna()).fillna(False).to_numpy(bool)
    at = np.flatnonzero(lines)
    keys = pd.MultiIndex.from_arrays([part["file"].iloc[at].astype(str), part["line"].iloc[at].astype("Int64")])
    at = at[keys.isin(want)]
    got = bundle.rows_at(name, at, ["file", "line", "message"])
    text = pd.Series(
        got["message"].array, index=pd.MultiIndex.from_arrays([got["file"].astype(str), got["line"].astype("Int64")])
    )
    text = text[~text.index.duplicated()]
    return rows.assign(message=text.reindex(want).array)


def node_ids(bundle) -> dict[str, int]:
    """host -> node id (see the module doc). Several detectors ask: on a :class:`~kitlib.bundle.Bundle`
    the map is computed once while the frames it is read from are the same (held weakly, so a table
    the bundle lets go is not kept alive by it)."""
    frames = (partition_changes(bundle), node_events(bundle), bundle.table("files"))
    if not isinstance(bundle, Bundle):
        return _node_ids(*frames)
    # kept as the memo's other answers are, (frames held, answer), holding no frame
    refs, got = bundle.memo.get(_NODE_IDS, ((), ((), None)))[1]
    if got is None or not all(ref() is df for ref, df in zip(refs, frames, strict=True)):
        got = _node_ids(*frames)
        bundle.memo[_NODE_IDS] = ((), (tuple(weakref.ref(df) for df in frames), got))
    return dict(got)


_NODE_IDS = (__name__, "node_ids")


def _node_ids(pc_: pd.DataFrame, ne: pd.DataFrame, files: pd.DataFrame) -> dict[str, int]:
    # votes: how often each host's own lines name each reporter id, counted by one grouping per
    # table on its (categorical) columns, never by converting every row's host
    counts = []
    for df in (pc_, ne):
        if len(df) and "reporter" in df:
            own = df["reporter"].notna().to_numpy(bool)
            if own.any():
                n = df.loc[own, ["host", "reporter"]].groupby(["host", "reporter"], observed=True, sort=False).size()
                counts.append(
                    pd.DataFrame(
                        {
                            "host": n.index.get_level_values(0).astype(str),
                            "reporter": n.index.get_level_values(1).astype("int64"),
                            "n": n.to_numpy(np.int64),
                        }
                    )
                )
    out: dict[str, int] = {}
    if counts:
        v = pd.concat(counts, ignore_index=True).groupby(["host", "reporter"], as_index=False)["n"].sum()
        # the id named most often; on a tie the lowest (as Series.mode orders its answers)
        v = v.sort_values(["host", "n", "reporter"], ascending=[True, False, True], kind="stable")
        v = v.drop_duplicates("host")
        out = dict(zip(v["host"].tolist(), (int(r) for r in v["reporter"].tolist()), strict=True))
    hosts = {str(h) for h in files["host"].dropna().unique()} if len(files) else set()
    for h in hosts - set(out):
        m = re.search(r"(\d+)$", h)
        if m:
            out[h] = int(m.group(1))
    return out


def host_of(ids: dict[str, int]) -> dict[int, str]:
    return {v: k for k, v in ids.items()}


def node_col(df: pd.DataFrame, ids: dict[str, int], col: str = "node") -> pd.Series:
    """The node a row is about: its own column, else the node id of the host that wrote it."""
    by_host = host_ids(df["host"], ids)
    if col in df:
        return df[col].astype("Float64").fillna(by_host).astype("Int64")
    return by_host.astype("Int64")


def id_lists(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Broker-id lists ("1,3") read as one Arrow pass: the position of the row each id comes from,
    and the ids (empty items left out), in row order.

    Example:
        >>> [a.tolist() for a in id_lists(pd.Series(["1,3", None, "2"], dtype="string"))]
        [[0, 0, 2], [1, 3, 2]]
    """
    return _id_lists(arrow_text(values))


def _id_lists(values) -> tuple[np.ndarray, np.ndarray]:
    """:func:`id_lists` of an Arrow string array (a null: no ids), read ``ID_ROWS`` rows at a time
    (the lists and their pieces of one slice held at once, not of every row)."""
    if isinstance(values, pa.ChunkedArray):  # the rows' positions are counted in one piece
        values = values.combine_chunks()
    got_rows, got_ids = [np.zeros(0, np.int32)], [np.zeros(0, np.int64)]
    for start in range(0, len(values), ID_ROWS):
        parts = pc.split_pattern(pc.fill_null(values.slice(start, ID_ROWS), ""), ",")
        flat = pc.utf8_trim_whitespace(pc.list_flatten(parts))
        rows = np.asarray(pc.list_parent_indices(parts).to_numpy(zero_copy_only=False), np.int64)
        del parts
        keep = np.asarray(pc.not_equal(flat, "").to_numpy(zero_copy_only=False), bool)
        ids = np.asarray(pc.cast(flat.filter(pa.array(keep)), pa.int64()).to_numpy(zero_copy_only=False), np.int64)
        got_rows.append((rows[keep] + start).astype(np.int32))  # (a row's place: four bytes)
        got_ids.append(ids)
    return np.concatenate(got_rows), np.concatenate(got_ids)


ID_ROWS = 1 << 17  # rows of id lists read in one slice


def pairs_within(sorted_ts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (window, position) pair with ``lo[w] <= sorted_ts[pos] <= hi[w]``, found by binary
    search on the sorted times: the work is the number of pairs, never windows times rows.

    Example:
        >>> [a.tolist() for a in pairs_within(np.array([1, 2, 5]), np.array([0, 4]), np.array([2, 9]))]
        [[0, 0, 1], [0, 1, 2]]
    """
    a = np.searchsorted(sorted_ts, lo, side="left")
    b = np.searchsorted(sorted_ts, hi, side="right")
    n = np.maximum(b - a, 0)
    win = np.repeat(np.arange(len(lo)), n)
    first = np.repeat(a - np.concatenate([[0], np.cumsum(n)[:-1]]), n) if len(n) else np.zeros(0, np.int64)
    return win, first + np.arange(int(n.sum()))


def shrink_rows(bundle, columns: list[str] | None = None, *, positions: bool = False) -> pd.DataFrame:
    """One row per (ISR shrink, broker that left), with ``node`` = the broker that left; with
    ``columns``, only those of the table's columns (and ``node``); with ``positions``, ``row`` too:
    the row's position in :func:`partition_changes`."""
    p = partition_changes(bundle)
    at = np.flatnonzero((p["kind"] == "isr_shrink").to_numpy(bool))
    if not len(at):
        s = p.iloc[at] if columns is None else p[columns].iloc[at]
        s = s.assign(node=pd.Series(dtype="Int64"))
        return s.assign(row=pd.Series(dtype="int64")) if positions else s
    rows, ids = id_lists(p["removed"].iloc[at])
    at = at[rows]
    out = (  # with columns, each taken alone (no copy of them over every row first)
        p.iloc[at].reset_index(drop=True)
        if columns is None
        else pd.DataFrame({c: p[c].array.take(at) for c in columns}, index=pd.RangeIndex(len(at)))
    )
    out["node"] = pd.array(ids, dtype="Int64")
    if positions:
        out["row"] = at
    return out


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


def metric_series(bundle, name: str, attribute: str | None = None) -> pd.DataFrame:
    """Samples of one metric (MBean key ``name``) per host: ts, host, value."""
    m = bundle.table("metrics")
    if not len(m):
        return pd.DataFrame(columns=["ts", "host", "value"])
    s = m[m["name"].astype("string") == name]
    if attribute:
        s = s[s["attribute"] == attribute]
    return s[["ts", "host", "value"]].sort_values("ts")


# --- tables for the notebook ---


def isr_episodes(bundle) -> pd.DataFrame:
    """Each time a broker left a partition's ISR: when, when it rejoined (NaT: not logged), how long,
    and ``back_by``: the rejoin, or else the next shrink naming it again (it was back by then; NaT:
    never seen back). Computed on sorted arrays (one as-of join), not row by row."""
    cols = ["node", "topic", "partition", "left", "rejoined", "out_s", "back_by", "leader", "file", "line"]
    p = partition_changes(bundle)
    # the rows of shrink_rows, as positions in the table: only the columns below are copied out
    gone = np.flatnonzero((p["kind"] == "isr_shrink").to_numpy(bool)) if len(p) else np.zeros(0, np.int64)
    rows, left_ids = id_lists(p["removed"].iloc[gone]) if len(gone) else (gone, gone)
    gone = gone[rows]
    del rows
    if not len(gone):
        return pd.DataFrame(columns=cols)
    ts = p["ts"].to_numpy("datetime64[ns]")
    # the departures in time order (stable, a missing time last), as sort_values orders them, so
    # that the frame is built once in that order: its index the rows' places before the sort
    order = np.argsort(ts[gone], kind="stable")  # NaT sorts last, in its rows' order
    gone, left_ids = gone[order], left_ids[order]
    ep = pd.DataFrame(
        {
            "node": pd.array(left_ids, dtype="Int64"),
            "topic": p["topic"].iloc[gone].astype("string").array,
            "partition": p["partition"].iloc[gone].astype("Int64").array,
            "left": p["ts"].iloc[gone].array,
            "leader": p["reporter"].iloc[gone].array,
            "file": text_values(p["file"].iloc[gone]),
            "line": p["line"].iloc[gone].array,
        },
        index=pd.Index(order),
    )
    del order
    # (topic, partition, broker) as one int64, for the rejoins and the departures alike (a missing
    # part is a value of its own): grouping and joining on it is joining on the three columns;
    # the topic as Arrow's dictionary code of its name (int32, no Python string per row)
    topic = text_codes(p["topic"])
    part = p["partition"].astype("Int64").array
    part_v, part_na = part.to_numpy(np.int64, na_value=0), np.asarray(part.isna(), bool)
    del part
    # rejoining: 'Expanding ISR ... to' (older brokers) or 'ISR updated to' naming the broker again
    # (3.x); only rows with a topic, a partition and a time can rejoin, taken in time order (stable)
    # before their id lists are split, so that the ids come out in the order the join needs
    at = np.flatnonzero(p["kind"].isin(["isr_expand", "isr_updated"]).to_numpy(bool))
    at = at[(topic[at] >= 0) & ~part_na[at] & ~np.isnat(ts[at])]
    at = at[np.argsort(ts[at], kind="stable")]
    del ts
    # (topic, partition) per row first (a few thousand codes), then with the broker per id
    (place_ex, _), (place_ep, ep_gap) = int_keys(
        ((topic[at], None), (topic[gone], topic[gone] < 0)),
        ((part_v[at], None), (part_v[gone], part_na[gone])),
    )
    del topic, part_v, part_na, gone
    # the ids added, else the ISR after: only the rejoins' rows, joined in Arrow
    rows, ids = _id_lists(pc.coalesce(arrow_text(p["added"].iloc[at]), arrow_text(p["isr_after"].iloc[at])))
    (ex_key, _), (ep_key, _) = int_keys(((place_ex[rows], None), (place_ep, None)), ((ids, None), (left_ids, None)))
    del place_ex, place_ep, ids, left_ids
    # only the rejoins of a (topic, partition, broker) that left are kept (the join is by key)
    kept = np.isin(ex_key, ep_key)
    ex = pd.DataFrame({"key": ex_key[kept], "rejoined": p["ts"].array.take(at[rows[kept]])})
    del ex_key, at, rows, kept
    ep["key"] = ep_key
    # the next shrink naming the same broker on the same partition proves it was back by then,
    # even when the rejoin itself was not logged
    ep["next_left"] = ep.groupby("key", sort=False)["left"].shift(-1)
    keyed = ep["left"].notna().to_numpy(bool) & ~ep_gap
    timed = ep[["left", "key"]][keyed]
    # the first rejoin strictly after the shrink, for the same (topic, partition, broker)
    joined = pd.merge_asof(
        timed.reset_index(),
        ex,
        left_on="left",
        right_on="rejoined",
        by="key",
        direction="forward",
        allow_exact_matches=False,
    ).set_index("index")
    del timed, ex
    rejoined = joined["rejoined"].reindex(ep.index)
    # a rejoin at or after the next shrink belongs to that later departure
    late = (rejoined >= ep["next_left"]).fillna(False).to_numpy(dtype=bool)
    ep["rejoined"] = rejoined.mask(late)
    ep["out_s"] = (ep["rejoined"] - ep["left"]).dt.total_seconds()
    ep["back_by"] = ep["rejoined"].fillna(ep["next_left"])
    return ep[cols].reset_index(drop=True)


def int_keys(*parts: tuple) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """One int64 key per row of two row sets from their integer columns (each part: the column's
    (values, missing) in the first set, then in the second), equal where every column is equal (a
    missing value is a value of its own), and whether any part of the row is missing; for the first
    set, then the second. Each column counts from its smallest value (no hashing); a key that could
    outgrow 62 bits is first numbered anew by its distinct values. A missing flag of None: nothing
    missing in that column of that set."""
    keys = [np.zeros(len(parts[0][i][0]), np.int64) for i in (0, 1)]
    missing = [np.zeros(len(k), bool) for k in keys]
    room = 1
    for part in parts:
        # the values in their own integer dtype (int32 codes are not widened: the key is int64)
        values = [np.asarray(v) if np.asarray(v).dtype.kind == "i" else np.asarray(v, np.int64) for v, _ in part]
        gaps = [
            np.zeros(len(v), bool) if p[1] is None else np.asarray(p[1], bool)
            for v, p in zip(values, part, strict=True)
        ]
        there = [~na for na in gaps]
        if any(t.any() for t in there):
            lo = min(int(v.min(initial=np.iinfo(v.dtype).max, where=t)) for v, t in zip(values, there, strict=True))
            hi = max(int(v.max(initial=np.iinfo(v.dtype).min, where=t)) for v, t in zip(values, there, strict=True))
        else:
            lo = hi = 0
        del there
        if hi - lo > 1 << 30:  # a wide range: the values' ranks among both sets instead
            uniq = np.unique(np.concatenate([v[~na] for v, na in zip(values, gaps, strict=True)]))
            values = [np.searchsorted(uniq, v) for v in values]
            lo, hi = 0, len(uniq) - 1
        width = hi - lo + 2
        if room * width > 1 << 62:  # the key so far numbered anew by its distinct values
            uniq, back = np.unique(np.concatenate(keys), return_inverse=True)
            keys = [back[: len(keys[0])].astype(np.int64), back[len(keys[0]) :].astype(np.int64)]
            room = len(uniq)
        for i in (0, 1):
            missing[i] |= gaps[i]
            keys[i] *= width
            keys[i] += values[i]
            keys[i] += 1 - lo
            keys[i][gaps[i]] -= values[i][gaps[i]].astype(np.int64) + (1 - lo)  # a missing value: code 0
        room *= width
    return (keys[0], missing[0]), (keys[1], missing[1])


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
    hosts = host_of(ids)
    ne = node_events(bundle)
    ep = isr_episodes(bundle)
    gs = gc_summary(bundle).set_index("host") if len(bundle.table("gc_pauses")) else pd.DataFrame()
    # only the WARN/ERROR/FATAL records' host and level: on a store the log is never read whole
    ev = bundle.select("events", ["host", "level"], level=["WARN", "ERROR", "FATAL"])
    rs = bundle.table("restarts")
    e = ne.assign(about=node_col(ne, ids)) if len(ne) else ne
    # WARN and ERROR records per host, counted once (not a pass over every event per node)
    level = ev["level"].astype("string") if len(ev) else pd.Series(dtype="string")
    host_ev = ev["host"].astype(str) if len(ev) else pd.Series(dtype=str)
    warn_by = host_ev[(level == "WARN").fillna(False).to_numpy(bool)].value_counts()
    error_by = host_ev[level.isin(["ERROR", "FATAL"]).fillna(False).to_numpy(bool)].value_counts()
    rows = []
    for node in sorted(set(ids.values())):
        host = hosts.get(node, "")
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
                "warn": int(warn_by.get(host, 0)),
                "error": int(error_by.get(host, 0)),
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
        kinds = ne["kind"].astype(str)
        # one lane per distinct kind, then a table lookup (not a Python call per row)
        lane = kinds.map(
            {
                k: (
                    "controller"
                    if k.startswith("controller")
                    else "log dir"
                    if k.startswith("log_dir")
                    else "OOM"
                    if k == "oom"
                    else "fencing / session"
                )
                for k in kinds.unique()
            }
        )
        parts.append(
            pd.DataFrame(
                {
                    "ts": ne["ts"],
                    "host": ne["host"].astype(str),
                    "node": node_col(ne, ids),
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
        kinds = q["kind"].astype(str)
        lane = kinds.map({k: "ISR" if k.startswith("isr") else "leaders" for k in kinds.unique()})
        parts.append(
            pd.DataFrame(
                {
                    "ts": q["ts"],
                    "host": q["host"].astype(str),
                    "node": node_col(q, ids, "reporter"),
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


def joined_by_place(ep: pd.DataFrame, rest: pd.DataFrame) -> pd.DataFrame:
    """``ep.merge(rest[["file", "line"]], on=["file", "line"])`` (files compared as text, a missing
    line equal to a missing line): each row of ``ep`` in order, as many times as ``rest`` holds its
    (file, line), taken by position from integer keys rather than by a join on Python strings."""
    files, names = pd.factorize(text_values(rest["file"]))
    # ``ep``'s files by their few distinct names (no text made for each of its rows)
    codes, theirs = pd.factorize(ep["file"])
    at = np.append(pd.Index(names).get_indexer(text_values(pd.Series(theirs))), -1)[codes]
    lines = [pd.array(df["line"], dtype="Int64") for df in (rest, ep)]
    (mine, _), (theirs, _) = int_keys(
        ((files, np.zeros(len(files), bool)), (np.maximum(at, 0), np.zeros(len(at), bool))),
        *[((lines[0].to_numpy(np.int64, na_value=0), np.asarray(lines[0].isna(), bool)),
           (lines[1].to_numpy(np.int64, na_value=0), np.asarray(lines[1].isna(), bool)))],
    )  # fmt: skip
    keys, counts = np.unique(mine, return_counts=True)
    pos = np.minimum(np.searchsorted(keys, theirs), max(len(keys) - 1, 0))
    times = np.where((at >= 0) & (keys[pos] == theirs), counts[pos], 0) if len(keys) else np.zeros(len(ep), np.int64)
    if (times == 1).all() and ep.index.equals(pd.RangeIndex(len(ep))):  # every row once: ``ep`` as it is, no copy
        return ep
    return ep.iloc[np.repeat(np.arange(len(ep)), times)].reset_index(drop=True)


def place_codes(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """One int64 per row equal where (topic, partition) are equal, and whether both are there."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, bool)
    topic = text_codes(rows["topic"])
    part = rows["partition"].astype("Int64").array
    placed = (topic >= 0) & ~np.asarray(part.isna(), bool)
    (key, _), _ = int_keys(
        ((topic, topic < 0), (topic[:0], np.zeros(0, bool))),
        ((part.to_numpy(np.int64, na_value=0), ~placed), (topic[:0], np.zeros(0, bool))),
    )
    return key, placed
