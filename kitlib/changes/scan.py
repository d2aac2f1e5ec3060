"""A window found when none is given: the span (whole time bins, at most half the bundle) where
the rate of WARN and ERROR records, or the count of one template against its share of all
records, departs most from the rest (Kulldorff's scan statistic over 120 time bins).
:func:`find_window_sql` counts on the DuckDB view ``ev`` of :func:`kitlib.changes.changes`;
:func:`find_window` is the same on an Arrow table of records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.changes.keys import describe, plain


def _scan(counts: np.ndarray, expect_share: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Kulldorff's Poisson log-likelihood ratio of each span ``[i, j)`` of bins, per row of
    ``counts`` (rows: series; columns: bins), against each bin's expected share of a row's total;
    spans where the series is below its expectation score -1."""
    cum = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    ecum = np.r_[0.0, np.cumsum(expect_share)]
    total = cum[:, -1:]
    inside = cum[:, j] - cum[:, i]
    expect = total * (ecum[j] - ecum[i])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.where(inside > 0, inside * np.log(inside / expect), 0.0) + np.where(
            total - inside > 0, (total - inside) * np.log((total - inside) / (total - expect)), 0.0
        )
    return np.where(inside > expect, np.nan_to_num(llr), -1.0)


def find_window(t: pa.Table, bins: int = 120, codes: np.ndarray | None = None) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The span (whole time bins, at most half of them) where the rate of WARN/ERROR records, or
    the count of one template against its share of all records (``codes``: each record's
    template), departs most from the rest (Kulldorff's scan statistic, the larger of the two)."""
    allts = t.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
    timed = allts > 0
    if timed.sum() < 2:
        raise ValueError("too few timed records to find a window")
    ts = allts[timed]
    lo, hi = int(ts.min()), int(ts.max()) + 1
    width = max((hi - lo) / bins, 1.0)
    b = np.minimum(((ts - lo) / width).astype(np.int64), bins - 1)
    level = plain(t.column("level"))
    bad = pc.is_in(level, value_set=pa.array(["WARN", "ERROR", "FATAL"])).to_numpy(zero_copy_only=False)[timed]
    alln = np.bincount(b, minlength=bins).astype(float)
    mat = None
    if codes is not None:
        c = codes[timed]
        used, c = np.unique(c, return_inverse=True)
        n = np.bincount(c)
        some = np.flatnonzero(n >= 3)[:2000]  # templates seen at least three times
        if len(some):
            pick = np.isin(c, some)
            row = np.searchsorted(some, c[pick])
            mat = np.bincount(row * bins + b[pick], minlength=len(some) * bins).reshape(len(some), bins)
    return _pick_span(lo, width, alln, np.bincount(b[bad], minlength=bins).astype(float), mat)


def _pick_span(lo: int, width: float, alln: np.ndarray, badn: np.ndarray, mat: np.ndarray | None, why=None):
    """The span of :func:`find_window` from the counts per time bin: of all records (``alln``), of
    the WARN/ERROR ones (``badn``) and of each template considered (rows of ``mat``). ``why``, a
    list, gets what picked it: -1 for the WARN/ERROR rate, else the row of ``mat``."""
    bins = len(alln)
    i, j = np.triu_indices(bins + 1, 1)
    keep = (j - i) <= bins // 2
    i, j = i[keep], j[keep]
    best = _scan(badn[None, :], np.full(bins, 1.0 / bins), i, j)[0]
    bad_best, per_row = best, None
    if mat is not None and len(mat):
        per_row = _scan(mat.astype(float), alln / alln.sum(), i, j)
        best = np.maximum(best, per_row.max(axis=0))
    k = int(np.argmax(best))
    if why is not None:
        why.append(-1 if per_row is None or bad_best[k] >= per_row[:, k].max() else int(np.argmax(per_row[:, k])))

    def ms(x: float) -> pd.Timestamp:
        return pd.Timestamp(int(x), unit="ms", tz="UTC")

    return ms(lo + i[k] * width), ms(lo + j[k] * width)


def find_window_sql(con, lo: int, hi: int, bins: int = 120) -> tuple[pd.Timestamp, pd.Timestamp, str]:
    """:func:`find_window` on the view ``ev`` of :func:`kitlib.changes._connect`: the records counted per key and
    time bin by DuckDB (the templates considered are those of :func:`find_window`, in the order
    they first appear); with what picked the span, in words."""
    width = max((hi - lo) / bins, 1.0)
    per = con.execute(
        f"select key, case when t > 0 then least(cast(floor((t - {lo}) / ?::double) as bigint), {bins - 1}) end as b, "
        "count(*) as n, count(*) filter (where level in ('WARN', 'ERROR', 'FATAL')) as bad, min(ord) as o "
        "from ev group by all",
        [width],
    ).df()
    first = per.groupby("key", sort=False)["o"].min()
    timed = per[per["b"].notna()]
    tb = timed["b"].to_numpy(np.int64)
    alln = np.bincount(tb, weights=timed["n"].to_numpy(float), minlength=bins)
    badn = np.bincount(tb, weights=timed["bad"].to_numpy(float), minlength=bins)
    seen = timed.groupby("key", sort=False)["n"].sum()
    seen = seen[first[seen.index].sort_values(kind="stable").index]  # the order keys first appear
    some = seen.index[seen.to_numpy() >= 3][:2000]  # templates seen at least three times
    mat = None
    if len(some):
        pick = timed[timed["key"].isin(some)]
        row = pd.Index(some).get_indexer(pick["key"])
        mat = np.bincount(
            row * bins + pick["b"].to_numpy(np.int64), weights=pick["n"].to_numpy(float), minlength=len(some) * bins
        ).reshape(len(some), bins)
    why: list[int] = []
    span = _pick_span(lo, width, alln, badn, mat, why)
    if why[0] < 0:
        reason = "the rate of WARN and ERROR records departs most from the rest there"
    else:
        reason = f"the count of `{describe(str(some[why[0]]))}` departs most from its share of the log there"
    return span[0], span[1], reason + f" (scan statistic over {bins} time bins, spans up to half the bundle)"
