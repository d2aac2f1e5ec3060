"""Stalled consumers: the window rules of :mod:`.lag` applied to the lag snapshots say which
group partitions stopped or fall behind. A group in a rebalance storm is left to the
``rebalance-storm`` finding (:mod:`.rebalances`), which says why it stopped.

The finding states the lag in time too (:mod:`.lag_time`, over the same window): how many seconds
of the producers' current output the group is behind (``lag_s``, the largest of its flagged
partitions; unknown when nothing was produced in the window), how long its oldest unconsumed
record has waited (``wait_s``, from the whole history; "at least" when it was already waiting at
the first snapshot), and each flagged partition's state (stalled, no consumers, growing, ...), so
a lag of a million records reads as the minutes it is.
"""

from __future__ import annotations

import pandas as pd

from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.consumer_groups.lag import LagRules, lag_history, partition_status
from kitlib.investigations.consumer_groups.lag_time import lag_times
from kitlib.investigations.consumer_groups.rebalances import (
    STORM_REBALANCES,
    group_rows,
    rebalance_summary,
    stored_reasons,
)


def _fmt_ts(ts, missing: str = "an unknown time") -> str:
    return missing if ts is None or pd.isna(ts) else pd.Timestamp(ts).strftime("%Y-%m-%d %H:%M:%S UTC")


@detector(
    ids=["consumer-stalled"],
    needs=[],
    reads=["consumer_lag", "group_offsets"],
    checks="lag snapshots: committed offsets frozen while lag > 0, lag never decreasing, lag over "
    f"{LagRules().max_lag:,} records",
)
def consumer_stalled(bundle, rules: LagRules | None = None) -> list[Finding]:
    rules = rules or LagRules()
    history = lag_history(bundle)
    if not len(history):
        return []
    status = partition_status(history, rules)
    bad = status[status["status"] != "ok"]
    if not len(bad):
        return []
    times = lag_times(history, rules.window).set_index(["group", "topic", "partition"])
    # a group in a rebalance storm stops and falls behind because of it: rebalance-storm says so
    storms = rebalance_summary(group_rows(bundle, counted=True), stored_reasons(bundle))
    storming = set(storms.loc[storms["busiest_10min"] >= STORM_REBALANCES, "group"])
    bad = bad[~bad["group"].astype("string").isin(storming)]
    out = []
    for g, rows in bad.groupby(bad["group"].astype("string").fillna(""), sort=True):
        stalled = rows[rows["status"] == "stalled"]
        lagging = rows[rows["status"] == "lagging"]
        over = rows[rows["status"] == "over-threshold"]
        worst = stalled if len(stalled) else lagging if len(lagging) else over
        topics = ", ".join(sorted(worst["topic"].astype(str).unique()))
        total = int(rows["lag_last"].sum())
        owners = worst["consumer_id"].dropna()
        owners = owners[~owners.astype(str).str.strip().isin(["", "-"])]
        name = g or "(group not named in the tool's output)"
        if len(stalled):
            since = stalled["stalled_since"].min()
            summary = (
                f"Consumer group {name} stopped consuming {topics}: committed offsets frozen on "
                f"{len(stalled)} partition(s) since {_fmt_ts(since)} while lag grew to {total:,}"
            )
            severity = "high"
            fix = (
                "The committed offsets do not move while records arrive. "
                + (
                    "No member owns these partitions: the consumer process stopped or left the group; restart it "
                    "and find out why it stopped. "
                    if not len(owners)
                    else "A member still owns them, so it is alive but not making progress: look at its processing "
                    "thread (stuck on a call, a poison record, paused partitions) and its log around the time "
                    "the offsets froze. "
                )
                + "If it reads with isolation.level=read_committed, a hanging transaction holds the last stable "
                "offset: check the transaction-timeouts finding and PartitionsWithLateTransactionsCount."
            )
        elif len(lagging):
            summary = (
                f"Consumer group {name} is falling behind on {topics}: lag never decreased over "
                f"{int(lagging['snapshots'].max())} snapshots on {len(lagging)} partition(s), now {total:,}"
            )
            severity = "medium"
            fix = (
                "The group consumes, but slower than producers write: add consumers (up to the partition count), "
                "raise max.poll.records / fetch.max.bytes if each poll is small, or speed up processing."
            )
        else:
            summary = (
                f"Consumer group {name} has {total:,} records of lag on {topics} (over the "
                f"{rules.max_lag:,}-record threshold) and it is not shrinking"
            )
            severity = "medium"
            fix = "Lag above the threshold: check that the group has members and keeps up with the producers."
        ev_rows = history[
            (history["group"].astype("string").fillna("") == g)
            & history.set_index(["topic", "partition"]).index.isin(list(zip(worst["topic"], worst["partition"])))
        ]
        ev_rows = pd.concat(
            [ev_rows.groupby(["topic", "partition"]).head(1), ev_rows.groupby(["topic", "partition"]).tail(1)]
        )
        ev_rows = ev_rows.drop_duplicates().sort_values(["topic", "partition", "ts"])
        in_time = times.reindex(
            pd.MultiIndex.from_arrays(
                [pd.Series([g] * len(worst), dtype="string"), worst["topic"].astype("string"), worst["partition"]]
            )
        )
        lag_s = in_time["lag_s"].max()
        wait_s = in_time["wait_s"].max()
        at_least = bool(in_time.loc[in_time["wait_s"] == wait_s, "wait_at_least"].any()) if pd.notna(wait_s) else False
        states = in_time["state"].dropna().value_counts()
        if pd.notna(lag_s):
            summary += f", about {_duration(float(lag_s))} of the producers' current output"
        if pd.notna(wait_s) and wait_s > 0:
            summary += (
                f"; its oldest unconsumed record has waited {'at least ' if at_least else ''}{_duration(float(wait_s))}"
            )
        state = _group_state(bundle, history, g)
        if state:
            summary += f" (group {state})"
        out.append(
            Finding(
                "consumer-stalled",
                severity,
                summary,
                numbers={
                    "group": name,
                    "stalled_partitions": len(stalled),
                    "lagging_partitions": len(lagging),
                    "over_threshold_partitions": len(over),
                    "total_lag": total,
                    "snapshots": int(rows["snapshots"].max()),
                    "members_owning": ", ".join(sorted(set(owners.astype(str)))) or "none",
                    "first_snapshot": rows["first_ts"].min(),
                    "last_snapshot": rows["last_ts"].max(),
                    "lag_s": round(float(lag_s), 1) if pd.notna(lag_s) else None,
                    "wait_s": round(float(wait_s), 1) if pd.notna(wait_s) else None,
                    "wait_at_least": at_least,
                    "lag_state": ", ".join(f"{k} {v}" for k, v in states.items()) or "unknown",
                },
                recommendation=fix,
                evidence=evidence(
                    ev_rows,
                    lambda r: (
                        f"{_fmt_ts(r['ts'], '(no time)')} {r['group']} {r['topic']}-{r['partition']}: "
                        f"committed {r['committed']}, log end {r['end_offset']}, "
                        f"lag {r['lag']}"
                    ),
                ),
            )
        )
    return out


def _duration(seconds: float) -> str:
    """A lag in seconds as people say it: 45 s, 12.5 min, 3.2 h, 2.1 days."""
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"


def _group_state(bundle, history: pd.DataFrame, group: str) -> str:
    """The group's state at the last snapshot: from the lag rows (captures) or the describe tool's
    --state rows and notes ('has no active members'); empty when unknown."""
    h = history[history["group"].astype("string").fillna("") == group]
    st = h["group_state"].dropna() if "group_state" in h else h.iloc[0:0]
    if len(st):
        return f"state {st.iloc[-1]}"
    from kitlib import tables

    if "group_states" in tables.SCHEMAS:
        gs = bundle.table("group_states")
        gs = gs[gs["group"].astype("string").fillna("") == group] if len(gs) else gs
        if len(gs):
            last = gs.iloc[-1]
            return str(last["note"]) if pd.notna(last["note"]) else f"state {last['state']}"
    return ""
