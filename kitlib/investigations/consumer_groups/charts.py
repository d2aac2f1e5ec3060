"""Charts for the consumer-groups notebook: lag per group and partition over time with the
group's rebalances on the same time axis, and the transactions' timeline.

Example:
    >>> from kitlib.investigations.consumer_groups import charts
    >>> charts.lag_and_rebalances(history, bundle.group_events)     # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from kitlib.display import HTML, bin_time, step_text

GROUP_KINDS = (
    "prepare_rebalance",
    "stabilized",
    "member_failed",
    "member_left",
    "unknown_member_join",
    "static_member_replaced",
    "poll_timeout",
    "commit_failed",
    "session_expired",
    "heartbeat_rebalancing",
)


def _naive(ts: pd.Series) -> pd.Series:
    return pd.to_datetime(ts, utc=True).dt.tz_localize(None)


def _per(step: pd.Timedelta | None) -> str:
    """The title's note on binned data ("" when every row is drawn)."""
    return "" if step is None else f" ({step_text(step)} buckets)"


def _lag_chart(history: pd.DataFrame, x: alt.X):
    d = pd.DataFrame(
        {
            "ts": _naive(history["ts"]),
            "group": history["group"].astype("string").fillna(""),
            "partition": (history["topic"].astype("string") + "-" + history["partition"].astype("string")),
            "lag": history["lag"].astype("float64"),
            "committed": history["committed"].astype("float64"),
            "end_offset": history["end_offset"].astype("float64"),
        }
    )
    d, step = bin_time(d, "ts", ["group", "partition"], {"lag": "max", "committed": "max", "end_offset": "max"})
    what = "snapshots" if step is None else f"highest per {step_text(step)} bucket"
    return (
        alt.Chart(d, name="lag")
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("lag:Q", title="lag (records)"),
            color=alt.Color("partition:N", title="topic-partition"),
            strokeDash=alt.StrokeDash("group:N", title="group"),
            tooltip=["group:N", "partition:N", "ts:T", "committed:Q", "end_offset:Q", "lag:Q"],
        )
        .properties(width=640, height=200, title=f"Lag per group and partition ({what})")
    )


def _events_chart(group_events: pd.DataFrame, x: alt.X):
    ge = group_events[group_events["kind"].astype("string").isin(GROUP_KINDS) & group_events["group"].notna()]
    d = pd.DataFrame(
        {
            "ts": _naive(ge["ts"]),
            "group": ge["group"].astype("string"),
            "kind": ge["kind"].astype("string"),
            "source": ge["source"].astype("string"),
            "generation": ge["generation"].astype("float64"),
            "member": ge["member"].astype("string"),
            "where": ge["file"].astype("string") + ":" + ge["line"].astype("string"),
        }
    )
    d, step = bin_time(d, "ts", ["group", "kind", "source"], {"generation": "max"}, count="events")
    tooltip = ["ts:T", "group:N", "kind:N", "generation:Q"] + (
        ["member:N", "where:N"] if step is None else ["events:Q"]
    )
    return (
        alt.Chart(d, name="group_events")
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=alt.Y("group:N", title=None),
            color=alt.Color("kind:N", title="event"),
            shape=alt.Shape("source:N", title="logged by"),
            tooltip=tooltip,
        )
        .properties(
            width=640, height=alt.Step(28), title="Rebalances, members removed and client symptoms" + _per(step)
        )
    )


def lag_and_rebalances(history: pd.DataFrame, group_events: pd.DataFrame):
    """Lag snapshots (top) and group events (bottom) on one shared time axis. Snapshots without
    a time (none in the file nor in its name) cannot be drawn on it: the chart says how many."""
    untimed = int(history["ts"].isna().sum()) if len(history) else 0
    timed = history[history["ts"].notna()] if untimed else history
    has_lag, has_events = len(timed) > 0, len(group_events) > 0
    if not has_lag and not has_events:
        note = (
            f"{untimed} lag snapshot rows carry no time (no time line in their file, no stamp in its name), "
            "so they are not drawn; the status table judges them in file order."
            if untimed
            else "No lag snapshots and no group coordinator lines in this bundle."
        )
        return HTML(f"<p><i>{note}</i></p>", note)
    x = alt.X("ts:T", title="time (UTC)")
    lag_chart = _lag_chart(timed, x) if has_lag else None
    if lag_chart is not None and untimed:
        lag_chart = lag_chart.properties(
            title=f"Lag per group and partition (snapshots; {untimed} rows without a time not drawn)"
        )
    charts = ([lag_chart] if lag_chart is not None else []) + ([_events_chart(group_events, x)] if has_events else [])
    return charts[0] if len(charts) == 1 else alt.vconcat(*charts).resolve_scale(x="shared", color="independent")


def generations(group_events: pd.DataFrame):
    """Each group's generation over time (a staircase that climbs fast is a storm)."""
    ge = group_events[group_events["kind"].astype("string").eq("stabilized")] if len(group_events) else group_events
    if not len(ge):
        return HTML("<p><i>No stabilized generations in this bundle.</i></p>", "No generations.")
    d = pd.DataFrame(
        {
            "ts": _naive(ge["ts"]),
            "group": ge["group"].astype("string"),
            "generation": ge["generation"].astype("float64"),
            "members": ge["members"].astype("float64"),
        }
    )
    d, step = bin_time(d, "ts", ["group"], {"generation": "max", "members": "last"})
    return (
        alt.Chart(d, name="generations")
        .mark_line(point=True, interpolate="step-after")
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("generation:Q", title="generation"),
            color="group:N",
            tooltip=["ts:T", "group:N", "generation:Q", "members:Q"],
        )
        .properties(width=640, height=200, title="Group generation over time" + _per(step))
    )


def transactions(txn_events: pd.DataFrame):
    """Transaction coordinator and producer events per transactional id."""
    te = txn_events[txn_events["kind"].astype("string").ne("loaded")] if len(txn_events) else txn_events
    if not len(te):
        return HTML("<p><i>No transaction lines in this bundle.</i></p>", "No transaction events.")
    d = pd.DataFrame(
        {
            "ts": _naive(te["ts"]),
            "id": te["transactional_id"].astype("string").fillna("(partition leader)"),
            "kind": te["kind"].astype("string"),
            "epoch": te["epoch"].astype("float64"),
            "where": te["file"].astype("string") + ":" + te["line"].astype("string"),
        }
    )
    d, step = bin_time(d, "ts", ["id", "kind"], {"epoch": "max"}, count="events")
    tooltip = ["ts:T", "id:N", "kind:N", "epoch:Q"] + (["where:N"] if step is None else ["events:Q"])
    return (
        alt.Chart(d, name="transactions")
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("ts:T", title="time (UTC)"),
            y=alt.Y("id:N", title="transactional id"),
            color=alt.Color("kind:N", title="event"),
            tooltip=tooltip,
        )
        .properties(
            width=640,
            height=alt.Step(28),
            title="Transactions: producer ids, rollbacks on timeout, fencing" + _per(step),
        )
    )
