"""Consumer lag over time, and Burrow-style window rules that say which partitions are stalled.

Lag snapshots come from two places: ``consumer_lag`` (``kitlib capture``, and ``kitlib capture
--every`` for a history) and ``group_offsets`` (``kafka-consumer-groups --describe`` output,
several snapshots in one file when it was run in a loop, or one per file with the time in the
file's name). :func:`lag_history` puts both in one shape, and the lag chart, the snapshot count
(:func:`snapshot_count`) and the ``consumer-stalled`` finding all read that one history;
:func:`partition_status` applies the rules to each group partition over its last ``window``
snapshots:

- **stalled**: the trailing snapshots all have lag > 0 (at least ``stalled_snapshots`` of them)
  and the committed offset did not move across them. A zero lag earlier in the window does not
  excuse it: a consumer that stopped while caught up and then saw new records is stalled too.
- **lagging** (Burrow's warning): the committed offset moves, but the lag never decreased from
  one snapshot to the next over at least ``min_snapshots`` and ended higher than it began.
- **over-threshold**: the latest lag is above ``max_lag`` and not shrinking (the absolute rule,
  which also works on a single snapshot).
- **ok** otherwise (and for a latest lag of 0).

Example:
    >>> h = pd.DataFrame({"ts": pd.date_range("2026-01-01", periods=4, freq="min", tz="UTC"), "group": "g",
    ...                   "topic": "t", "partition": 0, "committed": [5, 5, 5, 5], "end_offset": [5, 9, 14, 20],
    ...                   "consumer_id": "", "client_id": ""})
    >>> partition_status(h.assign(lag=h["end_offset"] - h["committed"]))["status"].tolist()
    ['stalled']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kitlib import tables

COLUMNS = [
    "ts",
    "group",
    "topic",
    "partition",
    "committed",
    "end_offset",
    "lag",
    "consumer_id",
    "client_id",
    "group_state",
    "source",
    "ts_source",
    "host",
    "file",
    "line",
]


@dataclass(frozen=True)
class LagRules:
    """Window rules (Burrow's defaults where it has one)."""

    window: int = 10  # last snapshots of a partition that are judged
    min_snapshots: int = 3  # fewer snapshots: only the absolute threshold applies
    stalled_snapshots: int = 2  # trailing snapshots with lag > 0 and a frozen commit that make a stall
    max_lag: int = 10_000  # absolute threshold on the latest lag (records)


def lag_history(bundle) -> pd.DataFrame:
    """Every lag snapshot row of the bundle in one shape (:data:`COLUMNS`), sorted by time;
    ``source`` says which table it came from, ``ts_source`` where its time came from
    ('capture', 'content', 'file name'; empty when it has none).

    A row without a time cannot be placed among the timed snapshots of its partition, so it is
    left out when its partition has timed ones (``attrs["untimed_left_out"]`` counts them); a
    partition with no time at all keeps its rows in file and line order."""
    frames = []
    cl = bundle.table("consumer_lag")
    if len(cl):
        frames.append(cl.assign(source="consumer_lag", ts_source="capture"))
    if "group_offsets" in tables.SCHEMAS:
        go = bundle.table("group_offsets")
        if len(go):
            frames.append(
                go.rename(
                    columns={"snapshot_ts": "ts", "current_offset": "committed", "log_end_offset": "end_offset"}
                ).assign(source="group_offsets")
            )
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in COLUMNS})
    out = pd.concat([f.reindex(columns=COLUMNS) for f in frames], ignore_index=True)
    for c in ("partition", "committed", "end_offset", "lag"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype("Int64")
    out["lag"] = out["lag"].fillna(out["end_offset"] - out["committed"])
    out["ts"] = pd.to_datetime(out["ts"], utc=True)
    for c in ("group", "topic", "consumer_id", "client_id", "group_state"):
        out[c] = out[c].astype("string")
    out["ts_source"] = out["ts_source"].astype("string")
    out = out[out["topic"].notna() & out["partition"].notna()]
    key = [out["group"].fillna(""), out["topic"], out["partition"]]
    timed = out["ts"].notna()
    placeable = timed | ~timed.groupby(key).transform("any").astype(bool)
    left_out = int((~placeable).sum())
    out = out[placeable].sort_values(["ts", "group", "topic", "partition", "file", "line"], kind="stable")
    out = out.reset_index(drop=True)
    out.attrs["untimed_left_out"] = left_out
    return out


def snapshot_count(history: pd.DataFrame) -> int:
    """How many snapshots the history holds: its distinct times, and each file whose rows have
    none counted as one snapshot.

    Example:
        >>> h = pd.DataFrame({"ts": pd.to_datetime(["2026-11-23 10:00", "2026-11-23 10:00", None], utc=True),
        ...                   "file": ["cg-1.txt", "cg-1.txt", "notes/cg.txt"]})
        >>> snapshot_count(h)
        2
    """
    if not len(history):
        return 0
    untimed = history["ts"].isna()
    return int(history.loc[~untimed, "ts"].nunique() + history.loc[untimed, "file"].nunique())


STATUS_COLUMNS = [
    "group",
    "topic",
    "partition",
    "status",
    "snapshots",
    "first_ts",
    "last_ts",
    "committed_first",
    "committed_last",
    "end_first",
    "end_last",
    "lag_first",
    "lag_last",
    "lag_max",
    "stalled_since",
    "consumer_id",
    "client_id",
    "file",
    "line",
]


def _judge(p: pd.DataFrame, rules: LagRules) -> dict:
    p = p.tail(rules.window)
    lag = p["lag"].to_numpy(dtype="float64", na_value=np.nan)
    com = p["committed"].to_numpy(dtype="float64", na_value=np.nan)
    end = p["end_offset"].to_numpy(dtype="float64", na_value=np.nan)
    n = len(p)
    last = p.iloc[-1]
    status, since = "ok", pd.NaT
    # trailing run of snapshots with lag > 0
    run = 0
    while run < n and lag[n - 1 - run] > 0:
        run += 1
    run_com = com[n - run :] if run else com[:0]
    if run >= rules.stalled_snapshots and n >= 2 and np.all(run_com == run_com[0]) and not np.isnan(run_com[0]):
        status, since = "stalled", p["ts"].iloc[n - run]
    elif (
        n >= rules.min_snapshots
        and not np.isnan(lag).any()
        and np.nanmax(com) > np.nanmin(com)
        and np.all(np.diff(lag) >= 0)
        and lag[-1] > lag[0]
    ):
        status, since = "lagging", p["ts"].iloc[0]
    elif lag[-1] > rules.max_lag and (n < 2 or lag[-1] >= lag[-2]):
        status = "over-threshold"
    return {
        "group": last["group"],
        "topic": last["topic"],
        "partition": int(last["partition"]),
        "status": status,
        "snapshots": n,
        "first_ts": p["ts"].iloc[0],
        "last_ts": last["ts"],
        "committed_first": com[0],
        "committed_last": com[-1],
        "end_first": end[0],
        "end_last": end[-1],
        "lag_first": lag[0],
        "lag_last": lag[-1],
        "lag_max": np.nanmax(lag) if not np.isnan(lag).all() else np.nan,
        "stalled_since": since,
        "consumer_id": last["consumer_id"],
        "client_id": last["client_id"],
        "file": last.get("file"),
        "line": last.get("line"),
    }


def partition_status(history: pd.DataFrame, rules: LagRules = LagRules()) -> pd.DataFrame:
    """One row per (group, topic, partition): the rule that applies (``status``) and the numbers it
    rests on, over the last ``rules.window`` snapshots. Rows without a lag (no committed offset)
    are left out."""
    h = history[history["lag"].notna()] if len(history) else history
    if not len(h):
        return pd.DataFrame(columns=STATUS_COLUMNS)
    h = h.sort_values("ts", kind="stable")
    rows = [_judge(p, rules) for _, p in h.groupby(["group", "topic", "partition"], dropna=False, sort=True)]
    return pd.DataFrame(rows, columns=STATUS_COLUMNS)


def group_lag(history: pd.DataFrame) -> pd.DataFrame:
    """Total lag per group and topic at every snapshot time (for charts)."""
    if not len(history):
        return pd.DataFrame(columns=["ts", "group", "topic", "lag"])
    return history.groupby(["ts", "group", "topic"], dropna=False)["lag"].sum().astype("float64").reset_index()
