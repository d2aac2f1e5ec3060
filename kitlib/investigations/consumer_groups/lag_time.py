"""Consumer lag in time: for each group and partition, the lag in records and in seconds, a state,
and when the lag is shrinking, how long until it is gone.

It takes the lag history of :func:`.lag.lag_history` (kit captures and ``kafka-consumer-groups
--describe`` snapshots in one shape) and, per partition, compares the first and the last of its
last ``window`` timed snapshots. The ``consumer-stalled`` finding (:mod:`.stalled`) states the lag
in seconds and the state from here; the cluster_config notebook shows the table:

- ``produce_rate`` = Δ log-end offset / Δt, ``consume_rate`` = Δ committed offset / Δt (records/s);
- ``lag_s`` = latest lag / produce_rate: how many seconds of the producers' current output the
  group is behind (unknown when nothing was produced between the snapshots);
- state: **caught up** (lag 0), **no consumers** (lag and no member: the group is Empty, or the
  describe output shows no consumer for the partition), **stalled** (committed offset did not
  move), **draining** (lag went down), **growing** (lag went up), **steady** (commits move and the
  lag stays the same), or **one snapshot** (no trend yet);
- ``clear_s`` (draining only) = latest lag / (consume_rate − produce_rate);
- ``wait_s``: how long the oldest record the group has not consumed has been in the log, over
  the whole history: the time the log end passed the latest committed offset, interpolated
  between the two snapshots around it (as Kafka Lag Exporter reads its offset-to-time table),
  until the latest snapshot. It needs no produce rate, so it holds when producers stopped too;
  when the log end was already past the committed offset at the first snapshot it is a lower
  bound (``wait_at_least`` True).

Example:
    >>> h = pd.DataFrame({"ts": pd.to_datetime([0, 60], unit="s", utc=True), "group": "g", "topic": "t",
    ...     "partition": 0, "committed": [1000, 4000], "end_offset": [7000, 8200], "lag": [6000, 4200],
    ...     "consumer_id": "c-1", "group_state": "Stable", "source": "consumer_lag", "file": "f", "line": [1, 2]})
    >>> r = lag_times(h).iloc[0]
    >>> r["state"], float(r["produce_rate"]), float(r["lag_s"]), float(r["clear_s"])
    ('draining', 20.0, 210.0, 140.0)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = [
    "group",
    "topic",
    "partition",
    "state",
    "snapshots",
    "first_ts",
    "last_ts",
    "lag",
    "lag_first",
    "produce_rate",
    "consume_rate",
    "lag_s",
    "clear_s",
    "wait_s",
    "wait_at_least",
    "consumer_id",
    "file",
    "line",
]


def lag_times(history: pd.DataFrame, window: int = 5) -> pd.DataFrame:
    """One row per group partition (:data:`COLUMNS`) over its last ``window`` timed snapshots."""
    h = history[history["ts"].notna() & history["lag"].notna()] if len(history) else history
    if not len(h):
        return pd.DataFrame(columns=COLUMNS)
    key = ["group", "topic", "partition"]
    h = h.assign(group=h["group"].astype("string").fillna("")).sort_values("ts", kind="stable")
    full = h
    h = h.groupby(key, sort=False).tail(window)
    g = h.groupby(key, sort=True)
    first, last = g.first(), g.last()
    # .last() skips missing values: the latest row's own member and state are what count
    tail = h.drop_duplicates(key, keep="last").set_index(key).reindex(last.index)
    out = pd.DataFrame(index=last.index)
    out["snapshots"] = g.size()
    out["first_ts"], out["last_ts"] = first["ts"], last["ts"]
    out["lag"] = tail["lag"].astype("float64")
    out["lag_first"] = first["lag"].astype("float64")
    dt = (out["last_ts"] - out["first_ts"]).dt.total_seconds()
    d_end = tail["end_offset"].astype("float64") - first["end_offset"].astype("float64")
    d_com = tail["committed"].astype("float64") - first["committed"].astype("float64")
    out["produce_rate"] = (d_end / dt).where(dt > 0)
    out["consume_rate"] = (d_com / dt).where(dt > 0)
    out["lag_s"] = (out["lag"] / out["produce_rate"]).where(out["produce_rate"] > 0)
    out.loc[out["lag"] == 0, "lag_s"] = 0.0
    member = tail["consumer_id"].astype("string").str.strip()
    no_member = member.isna() | member.isin(["", "-"])
    state_text = tail["group_state"].astype("string") if "group_state" in tail else pd.Series(pd.NA, index=tail.index)
    from_describe = tail["source"].astype("string") == "group_offsets" if "source" in tail else False
    empty = state_text.eq("Empty").fillna(False) | (from_describe & no_member)
    conds = [
        out["lag"] == 0,
        empty.astype(bool) & (out["lag"] > 0),
        out["snapshots"] < 2,
        d_com == 0,
        out["lag"] < out["lag_first"],
        out["lag"] > out["lag_first"],
    ]
    out["state"] = np.select(
        conds, ["caught up", "no consumers", "one snapshot", "stalled", "draining", "growing"], "steady"
    )
    net = out["consume_rate"] - out["produce_rate"]
    out["clear_s"] = (out["lag"] / net).where((out["state"] == "draining") & (net > 0))
    out["consumer_id"] = tail["consumer_id"]
    out["file"], out["line"] = tail["file"], tail["line"]
    wait = oldest_wait(full)
    out["wait_s"] = wait["wait_s"].reindex(out.index)
    out["wait_at_least"] = wait["wait_at_least"].reindex(out.index).fillna(False).astype(bool)
    out.loc[out["lag"] == 0, "wait_s"] = 0.0
    return out.reset_index()[COLUMNS]


def oldest_wait(history: pd.DataFrame) -> pd.DataFrame:
    """Per group partition (index group, topic, partition): ``wait_s``, the seconds from when the
    log end passed the latest committed offset to the latest snapshot, and ``wait_at_least``
    (it had passed it before the first snapshot)."""
    key = ["group", "topic", "partition"]
    h = history.sort_values("ts", kind="stable")
    last = h.groupby(key, sort=True).last()
    committed = h[key].merge(last["committed"].rename("c_last").reset_index(), on=key, how="left")["c_last"]
    end = h["end_offset"].astype("float64").to_numpy()
    past = end > committed.astype("float64").to_numpy()
    h = h.assign(past=past, end=end, c_last=committed.to_numpy())
    g = h.groupby(key, sort=False)
    h["prev_ts"], h["prev_end"] = g["ts"].shift(), g["end"].shift()
    first_past = h[h["past"]].groupby(key, sort=True).head(1).set_index(key)
    step = (first_past["end"] - first_past["prev_end"]).where(first_past["prev_end"].notna())
    frac = ((first_past["c_last"].astype("float64") + 1 - first_past["prev_end"]) / step).clip(0, 1)
    span = (first_past["ts"] - first_past["prev_ts"]).dt.total_seconds()
    passed = first_past["prev_ts"] + pd.to_timedelta(frac * span, unit="s")
    at_least = first_past["prev_ts"].isna()
    passed = passed.where(~at_least, first_past["ts"])
    out = pd.DataFrame(index=last.index)
    out["wait_s"] = (last["ts"] - passed.reindex(out.index)).dt.total_seconds()
    out["wait_at_least"] = at_least.reindex(out.index)
    return out


def group_summary(times: pd.DataFrame) -> pd.DataFrame:
    """Per group and topic: partitions per state, total lag, the largest lag in seconds and the
    longest time to clear."""
    if not len(times):
        return pd.DataFrame(columns=["group", "topic", "partitions", "lag", "max_lag_s", "max_clear_s", "states"])
    g = times.groupby(["group", "topic"])
    out = g.agg(
        partitions=("partition", "size"), lag=("lag", "sum"), max_lag_s=("lag_s", "max"), max_clear_s=("clear_s", "max")
    )
    states = times.groupby(["group", "topic", "state"]).size().rename("n").reset_index()
    states["text"] = states["state"] + " " + states["n"].astype(str)
    out["states"] = states.groupby(["group", "topic"])["text"].agg(", ".join)
    return out.reset_index()
