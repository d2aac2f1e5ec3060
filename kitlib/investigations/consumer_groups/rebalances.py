"""Rebalance storms: a consumer group rebalancing over and over, counted from the group
coordinator's lines, with the consumers' own lines (poll timeouts, failed commits) saying why.

Example:
    >>> busiest_window(pd.Series(pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:01",
    ...                                            "2026-01-01 00:30"], utc=True)), pd.Timedelta("10min"))
    2
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.consumer_groups.lag import lag_history, partition_status

STORM_WINDOW = pd.Timedelta("10min")
STORM_REBALANCES = 4  # rebalances of one group within STORM_WINDOW that make a storm
# a member id: client id, '-', UUID. RE2, for Arrow: the class is Python's \S spelled out (RE2's
# \S knows ASCII blanks only)
_NOT_BLANK = r"[^\s\x0b\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
_MEMBER = _NOT_BLANK + r"*-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def busiest_window(times: pd.Series, window: pd.Timedelta) -> int:
    """The largest number of ``times`` that fall within one ``window``."""
    t = np.sort(times.dropna().to_numpy(dtype="datetime64[ns]"))
    if not len(t):
        return 0
    ends = np.searchsorted(t, t + np.timedelta64(window.value, "ns"), side="right")
    return int((ends - np.arange(len(t))).max())


def skipped_rebalances(rows: pd.DataFrame, starts: np.ndarray, window: pd.Timedelta) -> tuple[np.ndarray, np.ndarray]:
    """For each rebalance start (``starts``: positions in ``rows``, whose ``generation`` is the old
    generation it leaves), the rebalances the lines skip just before it: its old generation minus
    the last generation the coordinator reported before it (in time, then file and line order),
    when that report came within ``window`` (the skipped rebalances then fall inside it); 0
    otherwise. A whole log skips none; lines cut out of a longer one (an excerpt) may skip many.
    Returns the counts and the time of that last report (NaT where none).

    Example:
        >>> t = pd.to_datetime(["2022-01-07 11:19:15", "2022-01-07 11:19:15", "2022-01-07 11:20:05", "2022-01-07 11:40:00"])
        >>> r = pd.DataFrame({"ts": t, "file": "b", "line": [1, 2, 9, 10], "generation": [138896, 138897, 138902, 138950]})
        >>> skipped_rebalances(r, np.array([0, 2, 3]), pd.Timedelta("10min"))[0].tolist()  # the last: no report near
        [0, 5, 0]
    """
    is_start = np.zeros(len(rows), bool)
    is_start[starts] = True
    d = pd.DataFrame(
        {
            "ts": rows["ts"].to_numpy(),
            "file": rows["file"].astype("string").to_numpy(object),
            "line": rows["line"].to_numpy(),
            "gen": pd.to_numeric(rows["generation"], errors="coerce").astype("float64").to_numpy(),
            "start": is_start,
        }
    ).sort_values(["ts", "file", "line"], kind="stable")
    seen = ~d["start"] & d["gen"].notna() & d["ts"].notna()
    last_gen = d["gen"].where(seen).ffill().shift()
    last_ts = d["ts"].where(seen).ffill().shift()
    gap = (d["gen"] - last_gen).to_numpy(float)
    near = ((d["ts"] - last_ts) <= window).to_numpy(bool)
    out = pd.Series(np.where(near & (gap > 0), gap, 0).astype(np.int64), index=d.index).sort_index()
    since = last_ts.sort_index().to_numpy(dtype="datetime64[ns]")
    return out.to_numpy()[starts], since[starts]


def busiest_with_skipped(times: pd.Series, window: pd.Timedelta, skipped: np.ndarray, since: np.ndarray) -> int:
    """:func:`busiest_window` counting, beside the rebalances logged, those the lines skip
    (:func:`skipped_rebalances`): a window counts a start's skipped rebalances only when it holds
    both the start and the report before it (so they surely fall inside it)."""
    if not (skipped > 0).any():
        return busiest_window(times, window)
    t = np.sort(times.dropna().to_numpy(dtype="datetime64[ns]"))
    w = np.timedelta64(window.value, "ns")
    gap = skipped > 0
    at, frm, n = times.to_numpy(dtype="datetime64[ns]")[gap], since[gap], skipped[gap]
    lo = np.unique(np.concatenate([t, frm]))  # a busiest window can start at a start or at such a report
    logged = np.searchsorted(t, lo + w, side="right") - np.searchsorted(t, lo, side="left")
    holds = (frm[None, :] >= lo[:, None]) & (at[None, :] <= lo[:, None] + w)
    return int((logged + (holds * n[None, :]).sum(axis=1)).max())


def reason_patterns(reasons: pd.Series) -> pd.Series:
    """Rebalance reasons with member ids taken out, so reasons can be counted; "(not logged)"
    where a rebalance gave none. One RE2 pass over the column (Arrow), not a Python call a row.

    Example:
        >>> reason_patterns(pd.Series(["removing member c-1-0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10 on "
        ...                            "heartbeat expiration", None])).tolist()
        ['removing member <member> on heartbeat expiration', '(not logged)']
    """
    arr = pa.array(reasons.astype("string").astype(object).where(reasons.notna(), None), pa.large_string())
    out = pc.replace_substring_regex(arr, pattern=_MEMBER, replacement="<member>")
    return pd.Series(out.fill_null("(not logged)").to_pylist(), index=reasons.index, dtype=object)


def churn_mask(prepares: pd.DataFrame, empty_generations: pd.Series) -> np.ndarray:
    """Which rebalances are churn: not a member joining an empty group (old generation 0, or one
    the group was empty at) and not the last member leaving (the group is empty at the next
    generation). A single consumer started and stopped twice makes four rebalances and no churn."""
    old = prepares["generation"].astype("float64").to_numpy()
    empty = set(empty_generations.dropna().astype(int).tolist())
    from_empty = (old == 0) | np.isin(old, list(empty))
    to_empty = np.isin(old + 1, list(empty))
    return ~from_empty & ~to_empty


CLIENT_SPAN_SLACK = pd.Timedelta("60s")  # a client file's lines this close to a group's rebalances may be its


def client_groups(group_events: pd.DataFrame) -> pd.DataFrame:
    """Client lines that name no group (kafka-python's poll timeout and failed commits, for
    instance) get a group: the one the other client lines of the same file name, when they name
    exactly one (a consumer's log is usually one consumer's); else, for a file none of whose
    lines names a group, the only group the coordinators saw rebalancing while that file's client
    lines were written (give or take a minute). A file that fits several groups is left without.
    Vectorised over files and groups (a frame of each), not a Python call per line."""
    ge = group_events
    if not len(ge):
        return ge
    # by position (a caller's frame may repeat index labels)
    client = (ge["source"].astype("string") == "client").fillna(False).to_numpy(bool)
    # (the arrays themselves: a tz-aware column's to_numpy() would make one Timestamp object a row)
    group = pd.Series(ge["group"].astype("string").array, dtype="string")
    file = pd.Series(ge["file"].astype("string").array, dtype="string")
    ts = pd.Series(ge["ts"].array, dtype=ge["ts"].dtype)
    has = group.notna().to_numpy(bool)
    named = pd.DataFrame({"file": file[client & has], "group": group[client & has]}).drop_duplicates()
    one = named.groupby("file")["group"].agg(["first", "size"])
    fill = file.map(one.loc[one["size"] == 1, "first"]).astype("string")
    missing = client & ~has & fill.isna().to_numpy(bool)
    if missing.any():
        # files whose lines name no group at all: the group rebalancing during their span
        spans = pd.DataFrame({"file": file[missing], "ts": ts[missing]})
        spans = spans[~spans["file"].isin(named["file"])].groupby("file")["ts"].agg(["min", "max"]).dropna()
        prep = (ge["kind"].astype("string") == "prepare_rebalance").fillna(False).to_numpy(bool) & has
        runs = pd.DataFrame({"group": group[prep], "ts": ts[prep]}).groupby("group")["ts"].agg(["min", "max"])
        if len(spans) and len(runs.dropna()):
            pairs = spans.reset_index().merge(runs.dropna().reset_index(), how="cross", suffixes=("_file", "_group"))
            fits = pairs[
                (pairs["min_group"] <= pairs["max_file"] + CLIENT_SPAN_SLACK)
                & (pairs["max_group"] >= pairs["min_file"] - CLIENT_SPAN_SLACK)
            ]
            only = fits.groupby("file")["group"].agg(["first", "size"])
            fill = fill.fillna(file.map(only.loc[only["size"] == 1, "first"]).astype("string"))
    take = client & ~has & fill.notna().to_numpy(bool)
    if not take.any():
        return ge
    out = ge.copy()
    out["group"] = pd.array(group.where(~take, fill), dtype="string")
    return out


def client_files(group_events: pd.DataFrame, group: str) -> list[str]:
    """The files whose client lines :func:`client_groups` gave ``group`` without naming it."""
    return client_files_by_group(group_events).get(group, [])


def client_files_by_group(group_events: pd.DataFrame) -> dict[str, list[str]]:
    """:func:`client_files` of every group at once (one :func:`client_groups` pass): group -> files."""
    ge = group_events
    if not len(ge):
        return {}
    raw = ge["group"].astype("string")
    done = client_groups(ge)
    took = raw.isna().to_numpy(bool) & done["group"].notna().to_numpy(bool)
    if not took.any():
        return {}
    pairs = pd.DataFrame(
        {"group": done["group"].astype("string").to_numpy()[took], "file": ge["file"].astype(str).to_numpy()[took]}
    ).drop_duplicates()
    return {str(g): sorted(f.tolist()) for g, f in pairs.groupby("group", sort=True)["file"]}


CLIENT_BURST = pd.Timedelta("10s")  # client rejoins this close together are one rebalance


def rebalance_kind(group_events: pd.DataFrame) -> str:
    """The kind of row that starts a rebalance: the coordinator's ``prepare_rebalance``, or, in a
    bundle without any coordinator line (only clients' logs), a client ``rejoining``."""
    src = group_events["source"].astype("string") if len(group_events) else pd.Series([], dtype="string")
    return "prepare_rebalance" if (src == "coordinator").any() or not len(src) else "rejoining"


def _first_of_bursts(ts: pd.Series, group: pd.Series, mask: np.ndarray) -> np.ndarray:
    """Of the rows in ``mask``, those that start a burst: no earlier row of the same group within
    :data:`CLIENT_BURST` (one rebalance logged by every member, or twice by one)."""
    out = np.zeros(len(ts), bool)
    at = np.flatnonzero(mask)
    if not len(at):
        return out
    d = pd.DataFrame({"g": group.to_numpy()[at], "t": ts.to_numpy()[at], "i": at}).sort_values(["g", "t"])
    gap = d["t"].diff()
    new = (d["g"] != d["g"].shift()).to_numpy(bool) | (gap > CLIENT_BURST).to_numpy(bool)
    out[d["i"].to_numpy()[new]] = True
    return out


def rebalance_summary(group_events: pd.DataFrame) -> pd.DataFrame:
    """Per group: rebalances started (and how many were churn, see :func:`churn_mask`), the busiest
    10 minutes of churn, generations reached, members
    removed or left, the client-side symptoms and the most frequent reasons."""
    cols = [
        "group",
        "rebalances",
        "churn_rebalances",
        "busiest_10min",
        "first",
        "last",
        "generation_first",
        "generation_last",
        "generations_per_min",
        "skipped_rebalances",
        "members_failed",
        "members_left",
        "new_members",
        "poll_timeouts",
        "commit_failures",
        "top_reasons",
    ]
    ge = client_groups(group_events)
    if not len(ge):
        return pd.DataFrame(columns=cols)
    start = rebalance_kind(ge)
    named = ge[ge["group"].notna()]
    # the few columns the counts need, numpy-backed (a group's rows are taken once per column, and
    # an Arrow-backed take costs a millisecond), the kind as a category (compared by its codes)
    slim = pd.DataFrame(
        {
            "kind": named["kind"].astype("string").astype("category"),
            "generation": named["generation"],
            "ts": named["ts"],
            "file": named["file"],
            "line": named["line"],
            "reason": named["reason"].astype("string").astype(object),
        },
        index=named.index,
    )
    is_prep = (slim["kind"] == start).to_numpy(bool).copy()
    if start == "rejoining":  # the members of one group rejoin together: one rebalance per burst
        is_prep &= _first_of_bursts(slim["ts"], named["group"].astype("string"), is_prep)
    slim["starts"] = is_prep
    slim["pattern"] = None
    slim.loc[is_prep, "pattern"] = reason_patterns(named.loc[is_prep, "reason"])
    rows = []
    for g, rows_g in slim.groupby(named["group"].astype("string").astype(object), sort=True):
        k = rows_g["kind"]
        prep = rows_g[rows_g["starts"].to_numpy(bool)]
        if not len(prep):
            continue
        is_churn = churn_mask(prep, rows_g.loc[k == "group_empty", "generation"])
        churn = prep[is_churn]
        # rebalances the generation numbers show but the lines skip (an excerpt): coordinator lines only
        skipped, since = (
            skipped_rebalances(rows_g, np.flatnonzero(rows_g["starts"].to_numpy(bool)), STORM_WINDOW)
            if start == "prepare_rebalance"
            else (np.zeros(len(prep), np.int64), np.full(len(prep), np.datetime64("NaT"), "datetime64[ns]"))
        )
        gens = rows_g.loc[k.isin(["prepare_rebalance", "stabilized", "assignment", "joined"]), "generation"].dropna()
        first, last = rows_g["ts"].min(), rows_g["ts"].max()
        minutes = max((last - first).total_seconds() / 60, 1 / 60)
        reasons = prep["pattern"].value_counts()
        rows.append(
            {
                "group": g,
                "rebalances": len(prep),
                "churn_rebalances": len(churn),
                "busiest_10min": busiest_with_skipped(churn["ts"], STORM_WINDOW, skipped[is_churn], since[is_churn]),
                "first": first,
                "last": last,
                "generation_first": int(gens.min()) if len(gens) else None,
                "generation_last": int(gens.max()) if len(gens) else None,
                "generations_per_min": round(float(gens.max() - gens.min()) / minutes, 2) if len(gens) else 0.0,
                "skipped_rebalances": int(skipped[is_churn].sum()),
                "members_failed": int((k == "member_failed").sum()),
                "members_left": int((k == "member_left").sum()),
                # a new member shows as an unknown-member join and as the reason of the rebalance it starts
                "new_members": int(
                    max(
                        (k == "unknown_member_join").sum(),
                        prep["reason"].str.contains("Adding new member", na=False, regex=False).sum(),
                    )
                ),
                "poll_timeouts": int((k == "poll_timeout").sum()),
                "commit_failures": int((k == "commit_failed").sum()),
                "top_reasons": "; ".join(f"{r} ({n}x)" for r, n in reasons.head(3).items()),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _storm_advice(s: pd.Series, reasons: str) -> str:
    low = reasons.lower()
    steps = []
    if s["poll_timeouts"] or "poll" in low or "leavegroup" in low:
        steps.append(
            "members leave because processing a batch takes longer than max.poll.interval.ms: raise "
            "max.poll.interval.ms above the slowest batch, or lower max.poll.records so a batch finishes in "
            "time (and move slow work off the polling thread)"
        )
    if s["members_failed"] or "heartbeat expiration" in low:
        steps.append(
            "members miss heartbeats for session.timeout.ms: look for GC pauses, CPU starvation or network "
            "trouble on the consumers; raise session.timeout.ms (keep heartbeat.interval.ms at a third of it "
            "or less)"
        )
    if s["new_members"] >= 3:
        steps.append(
            "new member ids keep joining (restarts or rolling deploys): use static membership "
            "(group.instance.id per instance, session.timeout.ms longer than a restart) and the "
            "CooperativeStickyAssignor so a restart does not move every partition"
        )
    if not steps:
        steps.append(
            "see the reasons on the coordinator's lines; static membership (group.instance.id) and the "
            "CooperativeStickyAssignor make each rebalance cheaper"
        )
    return "; ".join(steps) + "."


@detector(
    ids=["rebalance-storm"],
    needs=["group_events"],
    checks=f"a consumer group rebalancing {STORM_REBALANCES}+ times within {int(STORM_WINDOW.total_seconds() // 60)}"
    " minutes (group coordinator lines)",
)
def rebalance_storm(bundle) -> list[Finding]:
    ge = client_groups(bundle.table("group_events"))
    out = []
    summary = rebalance_summary(ge)
    status = partition_status(lag_history(bundle))
    group = ge["group"].astype("string").astype(object)
    by_group = group.groupby(group).indices  # group -> positions of its rows
    kind = ge["kind"].astype("string").astype("category")
    files_of = client_files_by_group(bundle.table("group_events"))
    start_kind = rebalance_kind(ge)
    for _, s in summary[summary["busiest_10min"] >= STORM_REBALANCES].iterrows():
        g = s["group"]
        behind = status[(status["group"].astype("string") == g) & (status["status"] != "ok")] if len(status) else status
        lag_note = (
            f"; meanwhile {len(behind)} partition(s) stopped or fell behind, lag {int(behind['lag_last'].sum()):,}"
            if len(behind)
            else ""
        )
        at = by_group[g]
        k = kind.iloc[at]
        # the rows shown are picked by position (only they are taken out of the whole table): some
        # of every kind the numbers count, so each count cites rows of its own
        shown = ge.iloc[
            np.concatenate(
                [
                    at[(k == kd).to_numpy(bool)][:3]
                    for kd in ("member_failed", "member_left", "poll_timeout", "commit_failed")
                ]
                + [at[(k == start_kind).to_numpy(bool)][:6], at[(k == "stabilized").to_numpy(bool)][-2:]]
            )
        ].sort_values("ts")
        # where each count comes from: group_events rows, the group's own or its clients' files
        files = files_of.get(g, [])
        mine = f"(group == {g!r} or (group.isna() and file in {files!r}))" if files else f"group == {g!r}"
        counted_from = {
            key: ("group_events", f"kind == {kd!r} and {mine}")
            for key, kd in (
                ("rebalances", start_kind),
                ("members_failed", "member_failed"),
                ("members_left", "member_left"),
                ("poll_timeouts_in_client_logs", "poll_timeout"),
                ("commit_failures_in_client_logs", "commit_failed"),
            )
        }
        out.append(
            Finding(
                "rebalance-storm",
                "high" if s["busiest_10min"] >= 2 * STORM_REBALANCES else "medium",
                f"Consumer group {g} rebalanced {s['rebalances']} times"
                + (
                    f" in these lines and {s['skipped_rebalances']} more their generation numbers skip"
                    if s["skipped_rebalances"]
                    else ""
                )
                + f" (up to {s['busiest_10min']} in 10 minutes, "
                f"generation {s['generation_first']} -> {s['generation_last']}); "
                f"{s['members_failed']} members removed after missing heartbeats, {s['members_left']} left" + lag_note,
                numbers={
                    "group": g,
                    "rebalances": int(s["rebalances"]),
                    "busiest_10min": int(s["busiest_10min"]),
                    **({"skipped_rebalances": int(s["skipped_rebalances"])} if s["skipped_rebalances"] else {}),
                    "generations_per_min": s["generations_per_min"],
                    "members_failed": int(s["members_failed"]),
                    "members_left": int(s["members_left"]),
                    "poll_timeouts_in_client_logs": int(s["poll_timeouts"]),
                    "commit_failures_in_client_logs": int(s["commit_failures"]),
                    "reasons": s["top_reasons"],
                    "partitions_behind": len(behind),
                    # a bundle of clients' logs only: which clients saw it
                    **(
                        {"clients": ", ".join(sorted(ge["client_id"].iloc[at].dropna().astype(str).unique()))}
                        if start_kind == "rejoining"
                        else {}
                    ),
                    "first": s["first"],
                    "last": s["last"],
                },
                recommendation=_storm_advice(s, s["top_reasons"]),
                evidence=evidence(shown),
                counted_from=counted_from,
            )
        )
    return out
