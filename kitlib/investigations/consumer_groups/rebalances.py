"""Rebalance storms: a consumer group rebalancing over and over, counted from the group
coordinator's lines, with the consumers' own lines (poll timeouts, failed commits) saying why.

Windows and skipped generations are counted in ``windows``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.consumer_groups.lag import lag_history, partition_status
from kitlib.investigations.consumer_groups.windows import (
    STORM_WINDOW,
    busiest_with_skipped,
    busiest_with_skipped_groups,
    order_keys,
    skipped_of_starts,
)

STORM_REBALANCES = 4  # rebalances of one group within STORM_WINDOW that make a storm
# a member id: client id, '-', UUID. RE2, for Arrow: the class is Python's \S spelled out (RE2's
# \S knows ASCII blanks only)
_NOT_BLANK = r"[^\s\x0b\x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
_MEMBER = _NOT_BLANK + r"*-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def reason_patterns(reasons: pd.Series) -> pd.Series:
    """Rebalance reasons with member ids taken out, so reasons can be counted; "(not logged)"
    where a rebalance gave none. One RE2 pass over the column (Arrow), not a Python call a row.

    Example:
        >>> reason_patterns(pd.Series(["removing member c-1-0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10 on "
        ...                            "heartbeat expiration", None])).tolist()
        ['removing member <member> on heartbeat expiration', '(not logged)']
    """
    out = pc.replace_substring_regex(_arrow_text(reasons), pattern=_MEMBER, replacement="<member>")
    return pd.Series(out.fill_null("(not logged)").to_numpy(zero_copy_only=False), index=reasons.index, dtype=object)


def _start_reasons(reasons: pd.Series, at: np.ndarray) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """For the rows at positions ``at`` of the reason column: the code of each row's
    :func:`reason_patterns` pattern, the distinct patterns (Arrow) they stand for, and whether
    the reason names a member being added. Worked out on the column's distinct reasons, not on
    a copy of the rows' text: the column is encoded once (codes and the distinct reasons), and
    only the distinct reasons are matched and, where they name a member, rewritten."""
    txt = _arrow_text(reasons)
    enc = (txt.combine_chunks() if txt.num_chunks != 1 else txt.chunk(0)).dictionary_encode()
    del txt
    codes = enc.indices.take(pa.array(at, pa.int64()))
    distinct = enc.dictionary
    del enc
    # a reason naming a member being added (null: no reason)
    add = pc.match_substring(distinct, "Adding new member").take(codes).fill_null(False).to_numpy(zero_copy_only=False)
    if pc.any(pc.match_substring_regex(distinct, _MEMBER)).as_py():  # member ids to take out: then patterns may merge
        pat = pc.replace_substring_regex(distinct, pattern=_MEMBER, replacement="<member>").dictionary_encode()
        codes = pat.indices.take(codes)
        distinct = pat.dictionary
    # a rebalance that gave no reason: its own pattern, shared with a reason that reads so
    missing = pc.index(distinct, "(not logged)").as_py()
    if missing < 0 and codes.null_count:
        missing = len(distinct)
        distinct = pa.concat_arrays([distinct, pa.array(["(not logged)"], distinct.type)])
    out = codes.fill_null(max(missing, 0)).to_numpy(zero_copy_only=False).astype(np.int64)
    return out, distinct, np.asarray(add, bool)


def _arrow_text(col: pd.Series) -> pa.ChunkedArray:
    """A text column as Arrow strings (missing values null), without a Python object a row."""
    got = pa.array(col.astype(pd.StringDtype("pyarrow")).array)
    return got if isinstance(got, pa.ChunkedArray) else pa.chunked_array([got])


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
    client = _is(ge["source"], "client")
    if not client.any():  # coordinator lines only: every line names its group
        return ge
    # only the client lines' values are made (a broker's group lines can be millions); the arrays
    # themselves: a tz-aware column's to_numpy() would make one Timestamp object a row
    at = np.flatnonzero(client)
    group = pd.Series(ge["group"].iloc[at].astype("string").array, dtype="string")
    file = pd.Series(ge["file"].iloc[at].astype("string").array, dtype="string")
    ts = pd.Series(ge["ts"].iloc[at].array, dtype=ge["ts"].dtype)
    has = group.notna().to_numpy(bool)
    named = pd.DataFrame({"file": file[has], "group": group[has]}).drop_duplicates()
    one = named.groupby("file")["group"].agg(["first", "size"])
    fill = file.map(one.loc[one["size"] == 1, "first"]).astype("string")
    missing = ~has & fill.isna().to_numpy(bool)
    if missing.any():
        # files whose lines name no group at all: the group rebalancing during their span
        spans = pd.DataFrame({"file": file[missing], "ts": ts[missing]})
        spans = spans[~spans["file"].isin(named["file"])].groupby("file")["ts"].agg(["min", "max"]).dropna()
        prep = np.flatnonzero(_is(ge["kind"], "prepare_rebalance") & ge["group"].notna().to_numpy(bool))
        runs = (
            pd.DataFrame(
                {
                    "group": pd.Series(ge["group"].iloc[prep].astype("string").array, dtype="string"),
                    "ts": pd.Series(ge["ts"].iloc[prep].array, dtype=ge["ts"].dtype),
                }
            )
            .groupby("group")["ts"]
            .agg(["min", "max"])
        )
        if len(spans) and len(runs.dropna()):
            pairs = spans.reset_index().merge(runs.dropna().reset_index(), how="cross", suffixes=("_file", "_group"))
            fits = pairs[
                (pairs["min_group"] <= pairs["max_file"] + CLIENT_SPAN_SLACK)
                & (pairs["max_group"] >= pairs["min_file"] - CLIENT_SPAN_SLACK)
            ]
            only = fits.groupby("file")["group"].agg(["first", "size"])
            fill = fill.fillna(file.map(only.loc[only["size"] == 1, "first"]).astype("string"))
    take = ~has & fill.notna().to_numpy(bool)
    if not take.any():
        return ge
    out = ge.copy()
    filled = pd.Series(ge["group"].astype("string").array, dtype="string")
    filled.iloc[at[take]] = fill.to_numpy(dtype=object)[take]
    out["group"] = pd.array(filled, dtype="string")
    return out


def client_files(group_events: pd.DataFrame, group: str) -> list[str]:
    """The files whose client lines :func:`client_groups` gave ``group`` without naming it."""
    return client_files_by_group(group_events).get(group, [])


def client_files_by_group(group_events: pd.DataFrame) -> dict[str, list[str]]:
    """:func:`client_files` of every group at once (one :func:`client_groups` pass): group -> files."""
    ge = group_events
    if not len(ge):
        return {}
    return _files_by_group(ge, client_groups(ge))


def _files_by_group(ge: pd.DataFrame, done: pd.DataFrame) -> dict[str, list[str]]:
    """:func:`client_files_by_group` of ``ge`` given ``done``, its :func:`client_groups`."""
    if done is ge:  # no row was given a group
        return {}
    took = ge["group"].isna().to_numpy(bool) & done["group"].notna().to_numpy(bool)
    if not took.any():
        return {}
    at = np.flatnonzero(took)
    pairs = pd.DataFrame(
        {
            "group": done["group"].iloc[at].astype("string").to_numpy(),
            "file": ge["file"].iloc[at].astype(str).to_numpy(),
        }
    ).drop_duplicates()
    return {str(g): sorted(f.tolist()) for g, f in pairs.groupby("group", sort=True)["file"]}


CLIENT_BURST = pd.Timedelta("10s")  # client rejoins this close together are one rebalance


def rebalance_kind(group_events: pd.DataFrame) -> str:
    """The kind of row that starts a rebalance: the coordinator's ``prepare_rebalance``, or, in a
    bundle without any coordinator line (only clients' logs), a client ``rejoining``."""
    if not len(group_events):
        return "prepare_rebalance"
    return "prepare_rebalance" if _is(group_events["source"], "coordinator").any() else "rejoining"


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


SUMMARY_COLUMNS = [
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


def rebalance_summary(group_events: pd.DataFrame, reasons: Reasons | None = None) -> pd.DataFrame:
    """Per group: rebalances started (and how many were churn, see :func:`churn_mask`), the busiest
    10 minutes of churn, generations reached, members
    removed or left, the client-side symptoms and the most frequent reasons. ``group_events``
    without its ``reason`` column: ``reasons`` reads the reasons of the rows that start a
    rebalance (see :func:`stored_reasons`)."""
    return _summary(client_groups(group_events), reasons)


# the reasons of the rows at some positions of group_events (ascending), as text
Reasons = Callable[[np.ndarray], pd.Series]


def stored_reasons(bundle) -> Reasons:
    """Reads the ``reason`` of the ``group_events`` rows at some positions, and only of those: a
    big stored table's reasons are as many as its rows, and the text of them all, held through a
    rebalance count, was its largest part (on the dense incident, 110 MB of a 540 MB process)."""
    return lambda at: bundle.rows_at("group_events", at, ["reason"])["reason"]


_SUMMARY_KINDS = (
    "group_empty",
    "member_failed",
    "member_left",
    "unknown_member_join",
    "poll_timeout",
    "commit_failed",
    "prepare_rebalance",
    "stabilized",
    "assignment",
    "joined",
    "rejoining",
)


def _is(col: pd.Series, value: str) -> np.ndarray:
    """Which rows of ``col`` are ``value`` (False where missing): on a categorical column by its
    codes, so no row's text is made."""
    return _kind_masks(col, (value,))[value]


def text_factorized(values: pd.Series, sort: bool = False) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(values.astype("string"), sort=sort)``: each row's code (-1 where missing) and
    the distinct texts. A categorical column is factorized by its codes and only its distinct
    names are made text (a million group lines made into strings took 0.14 s, twice a storm
    detector's run).

    Example:
        >>> codes, names = text_factorized(pd.Series(["b", None, "a", "b"], dtype="category"), sort=True)
        >>> codes.tolist(), names.tolist()
        ([1, -1, 0, 1], ['a', 'b'])
    """
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return pd.factorize(values.astype("string"), sort=sort)
    raw = values.cat.codes.to_numpy()
    named = raw >= 0
    codes = np.full(len(raw), -1, np.int64)
    first, seen = pd.factorize(raw[named])  # in the order the names first appear
    codes[named] = first
    names = pd.Index(values.cat.categories.take(seen).astype("string"))
    if sort:
        order = np.argsort(names.to_numpy(dtype=object), kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        codes[named] = rank[first]
        names = names[order]
    return codes, names


def _kind_masks(kind: pd.Series, kinds) -> dict[str, np.ndarray]:
    """Which rows are of each kind in ``kinds`` (a boolean array each): on a categorical column
    by its codes, so no row's text is made."""
    if isinstance(kind.dtype, pd.CategoricalDtype):
        codes = kind.cat.codes.to_numpy()
        names = [str(c) for c in kind.cat.categories]
        return {kd: np.isin(codes, [i for i, n in enumerate(names) if n == kd]) for kd in kinds}
    txt = kind.astype("string")
    return {kd: (txt == kd).fillna(False).to_numpy(bool) for kd in kinds}


def _summary(ge: pd.DataFrame, reasons: Reasons | None = None) -> pd.DataFrame:
    """:func:`rebalance_summary` of rows whose groups :func:`client_groups` already filled in.
    Every step runs once over the whole table (kinds by category codes, the skipped rebalances
    of every group in one sort, the counts per group by one bincount each, the busiest window of
    every group in one sort); only a group whose lines skip rebalances is looked at on its own."""
    if not len(ge):
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    start = rebalance_kind(ge)
    has = ge["group"].notna().to_numpy(bool)
    named = ge[has] if not has.all() else ge
    masks = _kind_masks(named["kind"], _SUMMARY_KINDS)
    is_prep = masks[start].copy()
    if start == "rejoining":  # the members of one group rejoin together: one rebalance per burst
        is_prep &= _first_of_bursts(named["ts"], named["group"].astype("string"), is_prep)
    gcodes, gnames = text_factorized(named["group"], sort=True)
    gcodes = gcodes.astype(np.int64)
    ng = len(gnames)
    gen = pd.to_numeric(named["generation"], errors="coerce").astype("float64").to_numpy()
    ts_col = named["ts"]
    ts = ts_col.to_numpy(dtype="datetime64[ns]")
    ts_na = np.isnat(ts)
    t_ns = ts.astype(np.int64)
    prep_at = np.flatnonzero(is_prep)
    pg = gcodes[prep_at]  # the group of each rebalance start
    if "reason" in named.columns or reasons is None:
        pat_code, pat_names, adding = _start_reasons(named["reason"], prep_at)
    else:  # only the rebalance starts' reasons, read by their place in the table
        in_table = np.flatnonzero(has)[prep_at] if named is not ge else prep_at
        pat_code, pat_names, adding = _start_reasons(reasons(in_table), np.arange(len(prep_at)))
    # rebalances the generation numbers show but the lines skip (an excerpt): coordinator lines
    # only; the rows that neither start a rebalance nor report a generation change nothing there
    if start == "prepare_rebalance":
        keep = np.flatnonzero(is_prep | (~np.isnan(gen) & ~ts_na))
        sub = named[["ts", "file", "line", "generation"]]
        keys = order_keys(sub.iloc[keep] if len(keep) < len(sub) else sub)
        del sub
        skip_k, since_k = skipped_of_starts(keys, is_prep[keep], gcodes[keep], STORM_WINDOW)
        del keys
        at_prep = np.searchsorted(keep, prep_at)
        skipped, since = skip_k[at_prep], since_k[at_prep]
        del skip_k, since_k
    else:
        skipped = np.zeros(len(prep_at), np.int64)
        since = np.full(len(prep_at), np.datetime64("NaT"), "datetime64[ns]")
    # churn (see churn_mask), each start against the generations its own group was empty at
    old = gen[prep_at]
    e_at = np.flatnonzero(masks["group_empty"] & ~np.isnan(gen))
    empty = pd.MultiIndex.from_arrays([gcodes[e_at], np.trunc(gen[e_at])])
    from_empty = (old == 0) | pd.MultiIndex.from_arrays([pg, old]).isin(empty)
    to_empty = pd.MultiIndex.from_arrays([pg, old + 1]).isin(empty)
    is_churn = ~from_empty & ~to_empty

    def per_group(mask: np.ndarray | None, codes: np.ndarray = gcodes) -> np.ndarray:
        return np.bincount(codes[mask] if mask is not None else codes, minlength=ng)

    rebalances = per_group(None, pg)
    # the busiest STORM_WINDOW of each group's churn: sorted by group and time, each start's
    # window ends where the sort of (group, time + window) puts it among the starts
    c_at = np.flatnonzero(is_churn & ~np.isnat(ts[prep_at]))
    cg, ct = pg[c_at], t_ns[prep_at][c_at]
    o = np.lexsort((ct, cg))
    cg, ct = cg[o], ct[o]
    busiest = np.zeros(ng, np.int64)
    span = int(ct.max()) - int(ct.min()) + STORM_WINDOW.value + 1 if len(ct) else 0
    if len(ct) and ng * span < 2**62:  # each group's times on a stretch of one axis: one search
        key = cg * span + (ct - ct.min())
        ends = np.searchsorted(key, key + STORM_WINDOW.value, side="right")
        np.maximum.at(busiest, cg, ends - np.arange(len(ct)))
        del key, ends
    elif len(ct):
        qg, qt = cg, ct + STORM_WINDOW.value
        both = np.lexsort((np.r_[np.zeros(len(ct), np.int8), np.ones(len(qt), np.int8)], np.r_[ct, qt], np.r_[cg, qg]))
        is_q = both >= len(ct)
        ends = np.cumsum(~is_q)[is_q]  # starts at or before each query, in query order (sorted alike)
        ends = ends[np.argsort(both[is_q], kind="stable")]
        np.maximum.at(busiest, cg, ends - np.arange(len(ct)))
    sk_churn = np.where(is_churn, skipped, 0)
    skipped_sum = np.bincount(pg, weights=sk_churn, minlength=ng).astype(np.int64)
    gaps = np.flatnonzero(skipped_sum > 0)
    if len(gaps):  # lines cut out of a longer log: counted with the skipped ones
        got = busiest_with_skipped_groups(gaps, pg, is_churn, ts[prep_at], skipped, since)
        if got is None:  # times too far apart to set the groups side by side: one group at a time
            ts_prep = ts[prep_at]
            for j in gaps.tolist():
                mine = (pg == j) & is_churn
                busiest[j] = busiest_with_skipped(pd.Series(ts_prep[mine]), STORM_WINDOW, skipped[mine], since[mine])
        else:
            busiest[gaps] = got
    # first and last time of each group's rows
    # (a row at each group's earliest and latest time: the smallest and largest per group, no sort)
    v_at = np.flatnonzero(~ts_na)
    vg, vt = gcodes[v_at], t_ns[v_at]
    has_t = np.bincount(vg, minlength=ng) > 0
    lo_at = hi_at = np.zeros(ng, np.int64)  # read only where has_t
    if len(vg):
        t_lo = np.full(ng, np.iinfo(np.int64).max)
        t_hi = np.full(ng, np.iinfo(np.int64).min)
        np.minimum.at(t_lo, vg, vt)
        np.maximum.at(t_hi, vg, vt)
        lo_at, hi_at = np.zeros(ng, np.int64), np.zeros(ng, np.int64)
        at_lo = np.flatnonzero(vt == t_lo[vg])
        lo_at[vg[at_lo]] = v_at[at_lo]
        at_hi = np.flatnonzero(vt == t_hi[vg])
        hi_at[vg[at_hi]] = v_at[at_hi]
    del vg, vt
    # generations reached
    in_gens = masks["prepare_rebalance"] | masks["stabilized"] | masks["assignment"] | masks["joined"]
    in_gens &= ~np.isnan(gen)
    n_gens = per_group(in_gens)
    g_min = np.full(ng, np.inf)
    g_max = np.full(ng, -np.inf)
    np.minimum.at(g_min, gcodes[in_gens], gen[in_gens])
    np.maximum.at(g_max, gcodes[in_gens], gen[in_gens])
    # the three most frequent reasons of each group (ties: first seen first)
    pair, seen, count = np.unique(pg * max(len(pat_names), 1) + pat_code, return_index=True, return_counts=True)
    rg, rp = pair // max(len(pat_names), 1), pair % max(len(pat_names), 1)
    o = np.lexsort((seen, -count, rg))
    rg, rp, count = rg[o], rp[o], count[o]
    rank = np.arange(len(rg)) - np.searchsorted(rg, rg, side="left")  # place within its group
    top: dict[int, list[str]] = {}
    shown_names = pat_names.take(pa.array(rp[rank < 3])).to_pylist()  # 3 a group
    for g, r, n in zip(rg[rank < 3].tolist(), shown_names, count[rank < 3].tolist()):
        top.setdefault(g, []).append(f"{r} ({n}x)")

    shown = np.flatnonzero(rebalances > 0)
    first, last = [], []
    for j in shown.tolist():  # one value a group (not a row): kept as the column's own Timestamps
        if has_t[j]:
            first.append(ts_col.iloc[lo_at[j]])
            last.append(ts_col.iloc[hi_at[j]])
        else:
            first.append(ts_col.iloc[np.flatnonzero(gcodes == j)].min())
            last.append(first[-1])
    gf = [int(g_min[j]) if n_gens[j] else None for j in shown.tolist()]
    gl = [int(g_max[j]) if n_gens[j] else None for j in shown.tolist()]
    per_min = []
    for k, j in enumerate(shown.tolist()):
        if n_gens[j]:
            minutes = max((last[k] - first[k]).total_seconds() / 60, 1 / 60)
            per_min.append(round(float(g_max[j] - g_min[j]) / minutes, 2))
        else:
            per_min.append(0.0)
    rows = {
        "group": [str(gnames[j]) for j in shown.tolist()],
        "rebalances": rebalances[shown].tolist(),
        "churn_rebalances": per_group(is_churn, pg)[shown].tolist(),
        "busiest_10min": busiest[shown].tolist(),
        "first": first,
        "last": last,
        "generation_first": gf,
        "generation_last": gl,
        "generations_per_min": per_min,
        "skipped_rebalances": skipped_sum[shown].tolist(),
        "members_failed": per_group(masks["member_failed"])[shown].tolist(),
        "members_left": per_group(masks["member_left"])[shown].tolist(),
        # a new member shows as an unknown-member join and as the reason of the rebalance it starts
        "new_members": np.maximum(per_group(masks["unknown_member_join"]), per_group(adding, pg))[shown].tolist(),
        "poll_timeouts": per_group(masks["poll_timeout"])[shown].tolist(),
        "commit_failures": per_group(masks["commit_failed"])[shown].tolist(),
        "top_reasons": ["; ".join(top.get(j, [])) for j in shown.tolist()],
    }
    return pd.DataFrame([dict(zip(rows, v)) for v in zip(*rows.values())], columns=SUMMARY_COLUMNS)


# what the rebalance counts read of group_events (the text of a line only for the rows shown)
GROUP_COLUMNS = ["ts", "source", "kind", "group", "generation", "client_id", "reason", "host", "file", "line"]
# what the counts read (the client ids only name the clients of a storm seen in clients' logs
# alone: read for that storm's rows then; on the 1 GB mix, most of the read's cost; the reasons
# only for the rows that start a rebalance, by :func:`stored_reasons`)
COUNTED_COLUMNS = [c for c in GROUP_COLUMNS if c not in ("client_id", "reason")]
# held as categories (a few groups over a million lines: on the dense incident 16 MB as text, 1 as codes)
GROUP_CATEGORIES = ("group",)


def group_rows(bundle, also: list[str] | None = None, *, counted: bool = False) -> pd.DataFrame:
    """The ``group_events`` rows with at least the columns :func:`rebalance_summary` and
    :func:`rebalance_storm` read (:data:`GROUP_COLUMNS`, and ``also``; with ``counted``,
    :data:`COUNTED_COLUMNS`, what the counts read; the group as a category): on a big stored table,
    not its text. What earlier reads left free in Arrow's pool goes back to the system first, and
    what this one left after it (:meth:`~kitlib.bundle.Bundle.columns`): on a 16-host fleet's
    million group lines, about 200 MB a notebook's kernel would otherwise keep."""
    columns = getattr(bundle, "columns", None)
    if not callable(columns):
        return bundle.table("group_events")
    _give_back()  # what earlier reads left free in Arrow's pool, before the biggest read here
    base = COUNTED_COLUMNS if counted else GROUP_COLUMNS
    return columns("group_events", base + [c for c in also or [] if c not in base], GROUP_CATEGORIES)


def _give_back() -> None:
    """Hand the memory Arrow's pool keeps free (decoded Parquet pages, temporaries) back to the
    system, so that the numpy and pandas arrays made next do not land on top of it."""
    pa.default_memory_pool().release_unused()


def _shown_rows(bundle, ge: pd.DataFrame, picks: dict[str, np.ndarray]) -> dict[str, pd.DataFrame]:
    """Group -> its rows of ``ge`` at positions ``picks[group]``, with their ``message``: read in one
    scan for every group, and only for these rows, when ``ge`` came without the text."""
    if "message" in ge.columns or not picks:
        return {g: ge.iloc[at] for g, at in picks.items()}
    every = np.unique(np.concatenate(list(picks.values())))
    text = bundle.rows_at("group_events", every, ["message"])["message"]
    out = {}
    for g, at in picks.items():
        rows = ge.iloc[at]
        out[g] = rows.assign(message=pd.Series(text.array.take(np.searchsorted(every, at)), index=rows.index))
    return out


def _client_ids(bundle, ge: pd.DataFrame, at: np.ndarray) -> pd.Series:
    """The ``client_id`` of the rows of ``ge`` at positions ``at``: read for those rows alone when
    ``ge`` came without it."""
    if "client_id" in ge.columns:
        return ge["client_id"].iloc[at]
    return bundle.rows_at("group_events", np.sort(at), ["client_id"])["client_id"]


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
    reads=["consumer_lag", "group_offsets"],
    checks=f"a consumer group rebalancing {STORM_REBALANCES}+ times within {int(STORM_WINDOW.total_seconds() // 60)}"
    " minutes (group coordinator lines)",
)
def rebalance_storm(bundle) -> list[Finding]:
    raw = group_rows(bundle, counted=True)
    ge = client_groups(raw)
    out = []
    summary = _summary(ge, stored_reasons(bundle))
    status = partition_status(lag_history(bundle))
    # group -> positions of its rows (in table order), and the kinds shown as masks over all rows
    codes, names = text_factorized(ge["group"])
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(-1, len(names) + 1))
    by_group = {str(n): order[bounds[j + 1] : bounds[j + 2]] for j, n in enumerate(names)}
    files_of = _files_by_group(raw, ge)
    start_kind = rebalance_kind(ge)
    shown_kinds = ("member_failed", "member_left", "poll_timeout", "commit_failed", "stabilized")
    masks = _kind_masks(ge["kind"], (*shown_kinds, start_kind))
    storms = summary[summary["busiest_10min"] >= STORM_REBALANCES]
    # the rows shown are picked by position (only they are taken out of the whole table): some
    # of every kind the numbers count, so each count cites rows of its own
    picks = {}
    for g in storms["group"]:
        at = by_group[g]
        picks[g] = np.concatenate(
            [at[masks[kd][at]][:3] for kd in ("member_failed", "member_left", "poll_timeout", "commit_failed")]
            + [at[masks[start_kind][at]][:6], at[masks["stabilized"][at]][-2:]]
        )
    shown_of = _shown_rows(bundle, ge, picks)
    for _, s in storms.iterrows():
        g = s["group"]
        behind = status[(status["group"].astype("string") == g) & (status["status"] != "ok")] if len(status) else status
        lag_note = (
            f"; meanwhile {len(behind)} partition(s) stopped or fell behind, lag {int(behind['lag_last'].sum()):,}"
            if len(behind)
            else ""
        )
        at = by_group[g]
        shown = shown_of[g].sort_values("ts")
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
                        {"clients": ", ".join(sorted(_client_ids(bundle, ge, at).dropna().astype(str).unique()))}
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
