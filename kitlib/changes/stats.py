"""The test :func:`kitlib.changes.changes` applies to each template: under "nothing changed", a
template keeps its share of the log, so of its ``n`` records the window holds binomial(n, p), ``p``
the window's share of all records compared. The log-likelihood ratio (G, :func:`g_statistic`) of
the observed split against that is compared with the chi-square(1) quantile of ``alpha / K``
(:func:`chi2_isf`, Bonferroni over the K templates tested). Where either side expects fewer than
five records, the chi-square approximation overstates a handful of lines, so there the exact
binomial tail (:func:`exact_tail`) must be under ``alpha / K`` as well (:func:`beyond_chance`).

Example:
    >>> g = g_statistic(np.array([8, 0, 5]), np.array([0, 40, 45]), 0.1)
    >>> [round(float(x), 1) for x in g]
    [36.8, 8.4, 0.0]
"""

from __future__ import annotations

import math

import numpy as np


def chi2_isf(q: float) -> float:
    """The x with P(chi-square(1) > x) = q (bisection on erfc)."""
    lo, hi = 0.0, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.erfc(math.sqrt(mid / 2)) > q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def chi2_sf(x: float) -> float:
    """P(chi-square(1) > x)."""
    return math.erfc(math.sqrt(max(x, 0.0) / 2))


def g_statistic(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """G of window counts ``a`` and baseline counts ``b`` against the share ``p`` of the window."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    n = a + b
    ea, eb = n * p, n * (1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = np.where(a > 0, a * np.log(a / ea), 0.0)
        tb = np.where(b > 0, b * np.log(b / eb), 0.0)
    return np.maximum(2 * (ta + tb), 0.0)


EXACT_BELOW = 5.0  # expected count on either side under which the exact binomial tail decides
EXACT_MAX_N = 4096  # records of one template up to which the exact tail is computed


def exact_tail(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """One-sided exact binomial p-value of window counts ``a`` out of ``a + b`` at window share
    ``p``: P(X >= a) when the window holds more than its share, else P(X <= a). NaN where it is
    not computed (more than :data:`EXACT_MAX_N` records). Vectorised over a log-factorial table.

    >>> [round(float(x), 4) for x in exact_tail(np.array([3, 0]), np.array([1, 10]), 0.05)]
    [0.0005, 0.5987]
    """
    a = np.asarray(a, np.int64)
    n = a + np.asarray(b, np.int64)
    out = np.full(len(a), np.nan)
    ok = np.flatnonzero((n <= EXACT_MAX_N) & (n > 0))
    if not len(ok) or not 0.0 < p < 1.0:
        return out
    top = int(n[ok].max())
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1)))])
    k = np.arange(top + 1)
    for start in range(0, len(ok), 256):  # bounded memory: 256 rows of at most 4,097 terms
        idx = ok[start : start + 256]
        nn, aa = n[idx][:, None], a[idx][:, None]
        valid = k[None, :] <= nn
        kk = np.minimum(k[None, :], nn)
        logpmf = logfact[nn] - logfact[kk] - logfact[nn - kk] + kk * math.log(p) + (nn - kk) * math.log1p(-p)
        pmf = np.where(valid, np.exp(logpmf), 0.0)
        upper = aa > nn * p
        tail = np.where(upper, k[None, :] >= aa, k[None, :] <= aa) & valid
        out[idx] = np.minimum((pmf * tail).sum(axis=1), 1.0)
    return out


def beyond_chance(a: np.ndarray, b: np.ndarray, p: float, g: np.ndarray, crit: float, q: float) -> np.ndarray:
    """G over its chi-square threshold, and, where a side expects fewer than
    :data:`EXACT_BELOW` records (the chi-square approximation is loose there and overstates a
    handful of lines), the exact binomial tail under ``q`` too."""
    hit = g > crit
    n = a + b
    small = hit & (np.minimum(n * p, n * (1 - p)) < EXACT_BELOW) & (n <= EXACT_MAX_N)
    if small.any():
        flat = np.flatnonzero(small.ravel())
        tail = exact_tail(np.ravel(a)[flat], np.ravel(b)[flat], p)
        keep = hit.ravel().copy()
        keep[flat] = tail < q
        hit = keep.reshape(hit.shape)
    return hit
