"""The rebalance counts computed over whole columns (rebalance_storm's summary) give what a plain
walk over the rows gives: the rebalances the lines skip, the busiest window counting them, and the
summary of many groups at once against each group alone."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from kitlib.investigations.consumer_groups import rebalances, windows

W = pd.Timedelta("10min")
T0 = np.datetime64("2026-05-04T10:00:00", "ns")


def _walk_skipped(rows: pd.DataFrame, starts: np.ndarray, window: pd.Timedelta):
    """The rebalances skipped before each start, one row at a time: rows in time, file and line
    order (missing ones last, ties as given), the last report of the group carried along."""

    ts = [None if pd.isna(t) else pd.Timestamp(t) for t in rows["ts"]]
    files = [None if pd.isna(f) else str(f) for f in rows["file"]]
    lines = [None if pd.isna(x) else int(x) for x in rows["line"]]
    gens = [None if pd.isna(g) else int(g) for g in rows["generation"]]

    def key(i):
        return (
            ts[i] is None,
            0 if ts[i] is None else ts[i].value,
            files[i] is None,
            files[i] or "",
            lines[i] is None,
            lines[i] or 0,
        )

    is_start = set(starts.tolist())
    skipped = {}
    since = {}
    last = None  # (generation, ts) of the last report seen
    for i in sorted(range(len(rows)), key=key):
        n, at = 0, pd.NaT
        if last is not None:
            at = last[1]
            if ts[i] is not None and gens[i] is not None and ts[i] - at <= window and gens[i] - last[0] > 0:
                n = gens[i] - last[0]
        skipped[i], since[i] = n, at
        if i not in is_start and gens[i] is not None and ts[i] is not None:
            last = (gens[i], ts[i])
    return [skipped[i] for i in starts], [since[i] for i in starts]


def _coordinator_rows(rng, n, groups=("orders", "billing", "ledger"), files=("b2/server.log", "b1/server.log")):
    """Coordinator lines of several groups, interleaved, with generations that jump (an excerpt),
    repeated times, missing times, generations and line numbers."""
    ts = T0 + np.sort(rng.integers(0, 3 * 3600, n)).astype("timedelta64[s]")
    ts[rng.random(n) < 0.03] = np.datetime64("NaT")
    gen = pd.array(np.cumsum(rng.integers(0, 4, n)), dtype="Int64")
    gen[rng.random(n) < 0.03] = pd.NA
    line = pd.array(rng.integers(1, 50, n), dtype="Int64")  # ties and disorder within a second
    line[rng.random(n) < 0.03] = pd.NA
    kind = rng.choice(["prepare_rebalance", "stabilized", "assignment", "group_empty"], n, p=[0.45, 0.3, 0.2, 0.05])
    return pd.DataFrame(
        {
            "ts": pd.Series(ts).dt.tz_localize("UTC"),
            "source": pd.Categorical(["coordinator"] * n),
            "kind": pd.Categorical(kind),
            "group": pd.array(rng.choice(list(groups), n), dtype="string"),
            "generation": gen,
            "reason": pd.array(
                rng.choice(["Adding new member c-1 with group instance id None", "removing member x on heartbeat"], n),
                dtype="string",
            ),
            "file": pd.Categorical(rng.choice(list(files), n)),
            "line": line,
            "host": "b1",
            "message": "m",
        }
    )


def test_skipped_rebalances_equal_a_walk_over_the_rows():
    rng = np.random.default_rng(7)
    for _ in range(3):
        rows = _coordinator_rows(rng, 400, groups=("g",))
        starts = np.flatnonzero((rows["kind"] == "prepare_rebalance").to_numpy(bool))
        got, since = windows.skipped_rebalances(rows, starts, W)
        want, want_since = _walk_skipped(rows, starts, W)
        assert got.tolist() == want
        assert [pd.Timestamp(s) if not pd.isna(s) else None for s in since] == [
            None if pd.isna(s) else s.tz_localize(None) for s in want_since
        ]
        assert got.sum() > 0  # the excerpt skips some


def _matrix(lo, w, at, frm, n):
    return ((frm[None, :] >= lo[:, None]) & (at[None, :] <= lo[:, None] + w)) @ n


def test_skipped_within_equals_the_window_by_start_matrix():
    rng = np.random.default_rng(3)
    w = np.timedelta64(600, "s")
    for monotone in (True, False):
        at = T0 + np.sort(rng.integers(0, 7200, 300)).astype("timedelta64[s]")
        if monotone:  # as the rows give them: the report before each start, itself in time order
            frm = np.maximum.accumulate(at - rng.integers(0, 900, len(at)).astype("timedelta64[s]"))
        else:  # any order (the matrix, in slices)
            frm = at - rng.integers(0, 900, len(at)).astype("timedelta64[s]")
        n = rng.integers(1, 9, len(at))
        lo = np.unique(np.concatenate([at, frm]))
        perm = rng.permutation(len(at))  # the starts come in any order
        got = windows.skipped_within(lo, w, at[perm], frm[perm], n[perm])
        assert got.tolist() == _matrix(lo, w, at, frm, n).tolist()


def test_summary_of_all_groups_equals_each_group_alone():
    rng = np.random.default_rng(11)
    ge = _coordinator_rows(rng, 3000)
    whole = rebalances.rebalance_summary(ge)
    alone = pd.concat(
        [rebalances.rebalance_summary(ge[ge["group"] == g]) for g in sorted(ge["group"].unique())],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(whole, alone)
    assert whole["skipped_rebalances"].sum() > 0 and len(whole) == 3


def test_busiest_window_of_every_group_at_once_equals_each_group_alone():
    """No generation logged, so nothing skipped and every start churn: each group's busiest 10
    minutes, all groups in one pass, is busiest_window over that group's starts."""
    rng = np.random.default_rng(17)
    ge = _coordinator_rows(rng, 3000, groups=("a", "b", "c", "d"))
    ge["generation"] = pd.array([pd.NA] * len(ge), dtype="Int64")
    whole = rebalances.rebalance_summary(ge)
    starts = ge[ge["kind"] == "prepare_rebalance"]
    want = [windows.busiest_window(starts.loc[starts["group"] == g, "ts"], W) for g in whole["group"]]
    assert whole["busiest_10min"].tolist() == want and whole["skipped_rebalances"].eq(0).all()
    assert len(set(want)) > 1


def test_busiest_with_skipped_of_every_group_at_once_equals_each_group_alone():
    """The busiest window of every group whose lines skip rebalances, in one pass, against
    busiest_with_skipped on each group's churn starts alone (with missing times among them)."""
    rng = np.random.default_rng(13)
    n = 2000
    pg = rng.integers(0, 5, n)
    t = (T0 + np.sort(rng.integers(0, 4 * 3600, n)).astype("timedelta64[s]")).astype("datetime64[ns]")
    t[rng.random(n) < 0.02] = np.datetime64("NaT")
    skipped = np.where(rng.random(n) < 0.2, rng.integers(1, 30, n), 0)
    since = np.where(skipped > 0, t - rng.integers(0, 500, n).astype("timedelta64[s]"), np.datetime64("NaT", "ns"))
    skipped[np.isnat(t)] = 0
    since[np.isnat(t)] = np.datetime64("NaT")
    for g in range(5):  # the report before each start in time order, as the rows give them
        mine = np.flatnonzero((pg == g) & (skipped > 0))
        since[mine] = np.maximum.accumulate(since[mine])
    churn = rng.random(n) < 0.8
    gaps = np.array([0, 2, 3, 4])
    got = windows.busiest_with_skipped_groups(gaps, pg, churn, t, skipped, since)
    want = []
    for g in gaps.tolist():
        mine = (pg == g) & churn
        want.append(windows.busiest_with_skipped(pd.Series(t[mine]), W, skipped[mine], since[mine]))
    assert got is not None and got.tolist() == want
    assert max(want) > windows.busiest_window(pd.Series(t[(pg == 0) & churn]), W)  # the skipped ones count


@pytest.mark.slow
def test_busiest_window_with_skipped_grows_with_its_starts():
    """Every start after a gap in the generations (an excerpt of a storm): twice the starts cost
    about twice the time (a window-by-start matrix cost four times)."""
    rng = np.random.default_rng(5)

    def case(n):
        at = T0 + np.sort(rng.integers(0, 86400, n)).astype("timedelta64[s]")
        frm = np.maximum.accumulate(at - rng.integers(1, 120, n).astype("timedelta64[s]"))
        return pd.Series(at), rng.integers(1, 5, n), frm

    def best(args):
        out = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            windows.busiest_with_skipped(args[0], W, args[1], args[2])
            out = min(out, time.perf_counter() - t)
        return max(out, 0.002)

    small, big = case(20_000), case(40_000)
    assert best(big) < 3 * best(small)


@pytest.mark.parametrize("sort", [False, True])
def test_groups_factorized_by_codes_equal_the_groups_text_factorized(sort):
    """A categorical group column (as a store reads it) factorized by its codes gives the codes,
    names and types that factorizing its text gives: missing groups, unused and unsorted
    categories, text beyond ASCII, no row at all."""
    rng = np.random.default_rng(11)
    groups = ["orders-b", "orders-a", "zahlungsläufe", "Orders", "g-10", "g-2", ""]
    for _ in range(200):
        vals = [None if rng.random() < 0.15 else str(rng.choice(groups)) for _ in range(int(rng.integers(0, 40)))]
        cats = list(dict.fromkeys([v for v in vals if v is not None] + ["never-seen"]))
        rng.shuffle(cats)
        col = pd.Series(pd.Categorical(vals, categories=cats))
        want_codes, want_names = pd.factorize(col.astype("string"), sort=sort)
        codes, names = rebalances.text_factorized(col, sort=sort)
        assert codes.dtype == want_codes.dtype and np.array_equal(codes, want_codes)
        assert names.dtype == want_names.dtype and names.equals(want_names)


def test_the_reasons_read_apart_give_the_summary_the_column_gives():
    """rebalance_summary of rows without their reasons, each rebalance start's reason read by its
    place (stored_reasons on an ingest output), is the summary of the rows with the column: the
    same top reasons and counts, groups filled from client lines and rows without a group alike."""
    rng = np.random.default_rng(23)
    ge = _coordinator_rows(rng, 4000)
    ge.loc[rng.random(len(ge)) < 0.05, "group"] = pd.NA  # rows that name no group are left out
    ge["reason"] = pd.array(
        rng.choice(
            [
                "Adding new member c-1-0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10 with group instance id None",
                "Adding new member c-2-1f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10 with group instance id None",
                "removing member x on heartbeat expiration",
                None,
            ],
            len(ge),
        ),
        dtype="string",
    )
    asked: list[np.ndarray] = []

    def reasons(at: np.ndarray) -> pd.Series:
        asked.append(at)
        return ge["reason"].iloc[at].reset_index(drop=True)

    want = rebalances.rebalance_summary(ge)
    got = rebalances.rebalance_summary(ge.drop(columns=["reason"]), reasons)
    pd.testing.assert_frame_equal(got, want)
    assert "<member>" in " ".join(want["top_reasons"]) and "(not logged)" in " ".join(want["top_reasons"])
    starts = np.flatnonzero((ge["kind"] == "prepare_rebalance").to_numpy(bool) & ge["group"].notna().to_numpy(bool))
    assert len(asked) == 1 and asked[0].tolist() == starts.tolist()  # only the starts' reasons were read
