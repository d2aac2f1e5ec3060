"""Windows of a group's rebalances: the busiest stretch of a given length, and the rebalances a
group's lines skip (generations that jumped) counted into it; each for one group or for many
groups at once on one time axis.

Example:
    >>> busiest_window(pd.Series(pd.to_datetime(["2026-01-01 00:00", "2026-01-01 00:01",
    ...                                            "2026-01-01 00:30"], utc=True)), pd.Timedelta("10min"))
    2
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STORM_WINDOW = pd.Timedelta("10min")


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
    skipped, since = skipped_of_starts(order_keys(rows), is_start, np.zeros(len(rows), np.int64), window)
    return skipped[starts], since[starts]


def order_keys(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """The columns :func:`skipped_of_starts` reads, as plain numpy arrays: times (ns, UTC), file as
    integer codes in the order its text sorts, line and generation as floats (NaN where missing)."""
    return {
        "ts": rows["ts"].to_numpy(dtype="datetime64[ns]"),
        "file": text_order(rows["file"]),
        "line": pd.to_numeric(rows["line"], errors="coerce").astype("float64").to_numpy(),
        "gen": pd.to_numeric(rows["generation"], errors="coerce").astype("float64").to_numpy(),
    }


def text_order(col: pd.Series) -> np.ndarray:
    """Integer codes that sort as the column's values sort as text, missing ones last: the
    distinct values are sorted, never every row's text made."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        names = np.asarray([str(c) for c in col.cat.categories], dtype=object)
        codes = col.cat.codes.to_numpy()
    else:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        names = np.asarray([str(u) for u in uniques], dtype=object)
    rank = np.empty(len(names), np.int64)
    rank[np.argsort(names, kind="stable")] = np.arange(len(names))
    return np.where(codes < 0, len(names), rank[np.maximum(codes, 0)] if len(names) else 0)


def skipped_of_starts(keys: dict[str, np.ndarray], start: np.ndarray, group: np.ndarray, window: pd.Timedelta):
    """:func:`skipped_rebalances` of every row at once, each group (``group``: integer codes) on
    its own: the rows sorted by group, time, file and line (missing last, ties in row order), the
    last report before each row carried forward by a running maximum of positions, and the
    counts put back in row order. Returns (skipped per row, time of that report per row)."""
    ts, gen, line = keys["ts"], keys["gen"], keys["line"]
    t_na, l_na = np.isnat(ts), np.isnan(line)
    # np.lexsort: last key first; every sort is stable, so ties keep the rows' order, and a key
    # the same on every row (one file, no time or line missing, one group) orders nothing: left out
    sort_keys = [np.where(l_na, 0, line), l_na, keys["file"], np.where(t_na, 0, ts.view(np.int64)), t_na, group]
    order = np.lexsort([k for k in sort_keys if len(k) and k.min() != k.max()] or [np.zeros(len(ts), np.int8)])
    # the row-long temporaries go as soon as they are used (a broker's group lines can be millions)
    del t_na, l_na, sort_keys
    ts_s, gen_s, grp_s = ts[order], gen[order], group[order]
    seen = ~start[order]
    seen &= ~np.isnan(gen_s)
    seen &= ~np.isnat(ts_s)
    last = np.where(seen, np.arange(len(order)), -1)
    del seen
    np.maximum.accumulate(last, out=last)
    prev = np.empty(len(order), np.int64)  # the last report strictly before each row
    prev[:1] = -1
    prev[1:] = last[:-1]
    del last
    has = prev >= 0
    has[has] = grp_s[prev[has]] == grp_s[has]  # of the row's own group
    del grp_s
    np.maximum(prev, 0, out=prev)
    last_gen = np.where(has, gen_s[prev], np.nan)
    last_ts = np.where(has, ts_s[prev], np.datetime64("NaT", "ns"))
    del prev, has
    with np.errstate(invalid="ignore"):
        gen_s -= last_gen  # the gap
        del last_gen
        near = (ts_s - last_ts) <= np.timedelta64(window.value, "ns")
        del ts_s
        near &= gen_s > 0
        counts = np.where(near, gen_s, 0).astype(np.int64)
    del near, gen_s
    skipped = np.empty(len(order), np.int64)
    since = np.empty(len(order), "datetime64[ns]")
    skipped[order] = counts
    since[order] = last_ts
    return skipped, since


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
    return int((logged + skipped_within(lo, w, at, frm, n)).max())


def skipped_within(lo: np.ndarray, w: np.timedelta64, at: np.ndarray, frm: np.ndarray, n: np.ndarray) -> np.ndarray:
    """For each window ``[lo, lo + w]``, the sum of ``n`` over the rebalance starts it holds with
    their report before (``frm >= lo`` and ``at <= lo + w``). Ordered by start time, the reports
    before the starts come in time order too (each is the last report before its start), so the
    starts a window holds are one run of that order: two binary searches and a running sum per
    window, not a window-by-start matrix. Should the two orders disagree, the matrix is summed
    in slices of windows (same result, bounded memory).

    Example:
        >>> ts = lambda *m: np.array([np.datetime64("2026-01-01T00:00") + np.timedelta64(x, "m") for x in m])
        >>> skipped_within(ts(0, 5), np.timedelta64(10, "m"), ts(3, 12), ts(1, 6), np.array([2, 7])).tolist()
        [2, 7]
    """
    order = np.lexsort((frm, at))
    at, frm, n = at[order], frm[order], n[order]
    if len(frm) < 2 or bool((frm[1:] >= frm[:-1]).all()):
        sums = np.concatenate([[0], np.cumsum(n)])
        first = np.searchsorted(frm, lo, side="left")  # starts whose report is at or after lo
        last = np.searchsorted(at, lo + w, side="right")  # starts at or before lo + w
        return np.where(last > first, sums[last] - sums[np.minimum(first, last)], 0)
    out = np.zeros(len(lo), np.int64)
    step = max(1, 2**22 // max(len(at), 1))
    for i in range(0, len(lo), step):  # slices of windows; each slice one matrix operation
        part = lo[i : i + step]
        holds = (frm[None, :] >= part[:, None]) & (at[None, :] <= part[:, None] + w)
        out[i : i + step] = (holds * n[None, :]).sum(axis=1)
    return out


def busiest_with_skipped_groups(gaps, pg, is_churn, t_prep, skipped, since) -> np.ndarray | None:
    """:func:`busiest_with_skipped` of the churn starts of each group in ``gaps`` at once: each
    group's times moved to a stretch of its own on one axis (group rank times a span longer than
    all the times plus a window), so that no window reaches another group's stretch and one pass
    of sorted searches serves them all. None when the stretches would not fit in 64 bits."""
    w = STORM_WINDOW.value
    rank = np.full(int(pg.max(initial=-1)) + 1, -1, np.int64)
    rank[gaps] = np.arange(len(gaps))
    sel = np.flatnonzero(is_churn & (rank[pg] >= 0) & ~np.isnat(t_prep))
    g, t = rank[pg[sel]], t_prep[sel].view(np.int64)
    gap = skipped[sel] > 0
    frm = since[sel][gap].view(np.int64)
    both = np.concatenate([t, frm])
    if not len(both):
        return np.zeros(len(gaps), np.int64)
    base, span = int(both.min()), int(both.max()) - int(both.min()) + w + 1
    if len(gaps) * span >= 2**62:
        return None
    key = g * span + (t - base)
    key_frm = g[gap] * span + (frm - base)
    key_at = key[gap]
    o = np.lexsort((key_frm, key_at))
    if bool((key_frm[o][1:] < key_frm[o][:-1]).any()):  # see skipped_within: then a group at a time
        return None
    starts = np.sort(key)
    lo = np.concatenate([starts, key_frm])  # a window can start at a start or at a report
    lo.sort()
    lo = lo[np.r_[True, lo[1:] != lo[:-1]]]  # distinct (a sort and a comparison: cheaper than np.unique here)
    logged = np.searchsorted(starts, lo + w, side="right") - np.searchsorted(starts, lo, side="left")
    as_time = "datetime64[ns]"
    extra = skipped_within(
        lo.view(as_time), np.timedelta64(w, "ns"), key_at.view(as_time), key_frm.view(as_time), skipped[sel][gap]
    )
    out = np.zeros(len(gaps), np.int64)
    np.maximum.at(out, lo // span, logged + extra)
    return out
