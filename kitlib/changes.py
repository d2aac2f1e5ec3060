"""What changed in a time window: the log statements new in it, gone from it, or whose rate rose or
fell beyond chance, against a baseline (by default the rest of the bundle), overall and per host.

Each record is counted under its Kafka log statement (``events.template_id``, the catalogue taken
from Kafka's source). Records no statement matches (plugins, applications, other software) are
grouped by their *pattern*: the first line with every token that holds a digit, every path and
every dotted host name masked as ``<*>``, prefixed by the logger; that is computed with RE2 over
the whole message column, so they take part in the same comparison.

The test: under "nothing changed", a template keeps its share of the log, so of its ``n``
records the window holds binomial(n, p), ``p`` the window's share of all records compared (of the
time, when one side has no records). The log-likelihood ratio (G) of the observed split against
that is compared with the chi-square(1) quantile of ``alpha / K`` (Bonferroni over the K templates
tested; ``alpha`` 0.01 by default). A change is *new* when the baseline holds none of it, *gone*
when the window holds none, else *rose* or *fell*; what rose comes first, then what fell, each
ranked by G.

Without a window, :func:`find_window` picks the span (at most half the bundle) where the rate of
WARN and ERROR records, or the count of one template, departs most from the rest (Kulldorff's
scan statistic over 120 time bins).

Example:
    >>> g = g_statistic(np.array([8, 0, 5]), np.array([0, 40, 45]), 0.1)
    >>> [round(float(x), 1) for x in g]
    [36.8, 8.4, 0.0]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.bundle import Bundle
from kitlib.formats.logs import matching
from kitlib.formats.logs import statements as st
from kitlib.window import utc

ALPHA = 0.01
# a token holding a digit, a path, a dotted host name: the variable parts of a line
MASK = r"[\w.:/@=+-]*[0-9][\w.:/@=+-]*|(?:/[\w.@+-]+)+|\b(?:[A-Za-z][\w-]*\.){2,}[A-Za-z][\w-]*\b"
FIRST_LINE_CHARS = 240
EXAMPLES = 2
COLUMNS = ["ts", "level", "logger", "host", "file", "line", "message", "template_id"]


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


def parse_span(text: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """``START..END`` (ISO times, naive = UTC) as two UTC Timestamps."""
    start, sep, end = text.partition("..")
    if not sep or not start.strip() or not end.strip():
        raise ValueError(f"a window is START..END (ISO times), not {text!r}")
    lo, hi = utc(start.strip()), utc(end.strip())
    if hi <= lo:
        raise ValueError(f"window {text!r} ends before it starts")
    return lo, hi


@dataclass
class Changes:
    """The result: the window and baseline compared, the threshold, and the changes overall
    (``overall``) and per host (``per_host``), each ranked by G."""

    window: tuple[pd.Timestamp, pd.Timestamp]
    baseline: tuple[pd.Timestamp, pd.Timestamp] | None  # None: everything outside the window
    share: float  # the window's share of the time compared
    threshold: float  # G above which a change is beyond chance
    tested: int
    records: tuple[int, int]  # records in the window, in the baseline
    overall: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_host: pd.DataFrame = field(default_factory=pd.DataFrame)
    found_window: bool = False

    def to_dict(self) -> dict:
        def rows(df: pd.DataFrame) -> list[dict]:
            out = []
            for r in df.to_dict("records"):
                out.append({k: (v.isoformat() if isinstance(v, pd.Timestamp) else v) for k, v in r.items()})
            return out

        return {
            "window": [t.isoformat() for t in self.window],
            "window_found": self.found_window,
            "baseline": [t.isoformat() for t in self.baseline] if self.baseline else "rest of the bundle",
            "share": self.share,
            "test": f"G (log-likelihood ratio) against binomial(n, share); beyond chance when G > {self.threshold:.2f} "
            f"(alpha {ALPHA} / {self.tested} templates)",
            "records": {"window": self.records[0], "baseline": self.records[1]},
            "changes": rows(self.overall),
            "per_host": rows(self.per_host),
        }


def _records(bundle: Bundle) -> pa.Table:
    df = bundle.select("events", COLUMNS)
    if "template_id" not in df.columns:
        df["template_id"] = pd.Series(pd.NA, index=df.index, dtype="string")
    t = pa.Table.from_pandas(df[COLUMNS], preserve_index=False).combine_chunks()
    return t.set_column(0, "ts", t.column("ts").cast(pa.timestamp("ms", tz="UTC")))


def _plain(col) -> pa.Array:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.cast(pa.string()) if not pa.types.is_string(col.type) else col


def keys(t: pa.Table) -> pa.Array:
    """Each record's key: ``t:<template id>`` or ``p:<logger> <masked first line>`` (the first line
    is cut and masked only for the records without a template)."""
    tid = _plain(t.column("template_id"))
    out = pc.binary_join_element_wise("t", tid, ":")
    none = np.asarray(pc.is_null(tid).to_numpy(zero_copy_only=False), bool)
    if not none.any():
        return out
    rows = pa.array(np.flatnonzero(none))
    msg = pc.utf8_slice_codeunits(_plain(t.column("message")).take(rows), 0, FIRST_LINE_CHARS)
    first = pc.replace_substring_regex(msg, r"\n[\s\S]*", "")
    masked = pc.replace_substring_regex(first, MASK, "<*>")
    logger = pc.fill_null(_plain(t.column("logger")).take(rows), "")
    pattern = pc.binary_join_element_wise(logger, masked, " ")
    pattern = pc.binary_join_element_wise("p", pattern, ":")
    # scatter the patterns into the rows without a template
    pos = np.arange(len(tid))
    pos[none] = len(tid) + np.arange(int(none.sum()))
    return pa.concat_arrays([out.cast(pa.string()), pattern.cast(pa.string())]).take(pa.array(pos))


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
    level = _plain(t.column("level"))
    bad = pc.is_in(level, value_set=pa.array(["WARN", "ERROR", "FATAL"])).to_numpy(zero_copy_only=False)[timed]
    i, j = np.triu_indices(bins + 1, 1)
    keep = (j - i) <= bins // 2
    i, j = i[keep], j[keep]
    alln = np.bincount(b, minlength=bins).astype(float)
    best = _scan(np.bincount(b[bad], minlength=bins)[None, :].astype(float), np.full(bins, 1.0 / bins), i, j)[0]
    if codes is not None:
        c = codes[timed]
        used, c = np.unique(c, return_inverse=True)
        n = np.bincount(c)
        some = np.flatnonzero(n >= 3)[:2000]  # templates seen at least three times
        if len(some):
            pick = np.isin(c, some)
            row = np.searchsorted(some, c[pick])
            mat = np.bincount(row * bins + b[pick], minlength=len(some) * bins).reshape(len(some), bins)
            best = np.maximum(best, _scan(mat.astype(float), alln / alln.sum(), i, j).max(axis=0))
    k = int(np.argmax(best))

    def ms(x: float) -> pd.Timestamp:
        return pd.Timestamp(int(x), unit="ms", tz="UTC")

    return ms(lo + i[k] * width), ms(lo + j[k] * width)


def changes(
    bundle: Bundle,
    window: tuple | str | None = None,
    baseline: tuple | str | None = None,
    alpha: float = ALPHA,
    top: int = 20,
) -> Changes:
    """The log statements (and patterns) that changed in ``window`` against ``baseline`` (default:
    every record outside the window), overall and per host; see the module's description."""
    t = _records(bundle)
    found = window is None
    if isinstance(window, str):
        window = parse_span(window)
    if isinstance(baseline, str):
        baseline = parse_span(baseline)
    if window is None:
        window = find_window(t, codes=pc.dictionary_encode(keys(t)).indices.to_numpy(zero_copy_only=False))
    ws, we = utc(window[0]), utc(window[1])
    ts = t.column("ts").cast(pa.int64()).to_numpy(zero_copy_only=False)
    timed = ts > 0
    ms = lambda x: int(x.value // 1_000_000)
    lo, hi = (int(ts[timed].min()), int(ts[timed].max()) + 1) if timed.any() else (0, 1)

    def clip(x: int) -> int:
        return max(lo, min(hi, x))

    in_w = timed & (ts >= ms(ws)) & (ts < ms(we))
    tw = clip(ms(we)) - clip(ms(ws))
    if baseline is not None:
        bs, be = utc(baseline[0]), utc(baseline[1])
        in_b = timed & (ts >= ms(bs)) & (ts < ms(be)) & ~in_w
        overlap = max(0, min(clip(ms(be)), clip(ms(we))) - max(clip(ms(bs)), clip(ms(ws))))
        tb = clip(ms(be)) - clip(ms(bs)) - overlap
    else:
        in_b = timed & ~in_w
        tb = (hi - lo) - tw
    tw, tb = max(tw, 1), max(tb, 1)
    n_w, n_b = int(in_w.sum()), int(in_b.sum())
    # the window's share of the records compared: a template's count in the window is tested
    # against its share of the log (its rate relative to all records), so a window that is
    # busier or quieter as a whole does not make every template change
    share = n_w / (n_w + n_b) if n_w and n_b else tw / (tw + tb)
    keep = in_w | in_b
    t = t.filter(pa.array(keep))
    in_w = in_w[keep]
    key = pc.dictionary_encode(keys(t))
    names = key.dictionary.to_pylist()
    code = key.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    k = len(names)
    a = np.bincount(code[in_w], minlength=k)
    b = np.bincount(code[~in_w], minlength=k)
    g = g_statistic(a, b, share)
    tested = int(((a + b) > 0).sum())
    crit = chi2_isf(alpha / max(tested, 1))
    hosts = pc.dictionary_encode(_plain(t.column("host")))
    hnames = hosts.dictionary.to_pylist()
    hcode = hosts.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    nh = len(hnames)
    ah = np.bincount(code[in_w] * nh + hcode[in_w], minlength=k * nh).reshape(k, nh)
    bh = np.bincount(code[~in_w] * nh + hcode[~in_w], minlength=k * nh).reshape(k, nh)
    gh = g_statistic(ah, bh, share)
    tested_h = int(((ah + bh) > 0).sum())
    crit_h = chi2_isf(alpha / max(tested_h, 1))
    result = Changes((ws, we), (utc(baseline[0]), utc(baseline[1])) if baseline else None, share, crit, tested,
                     (int(in_w.sum()), int((~in_w).sum())), found_window=found)  # fmt: skip
    # with no record on one side there is no mix to compare (an empty window is no evidence)
    sig = np.flatnonzero(g > crit) if n_w and n_b else np.zeros(0, np.int64)
    rising = a[sig] > (a[sig] + b[sig]) * share
    sig = sig[np.lexsort((-g[sig], ~rising))][:top]  # what rose first, then what fell; each by G
    result.overall = _rows(t, names, code, in_w, sig, a, b, g, ah, bh, hnames, share)
    hk, hh = np.nonzero(gh > crit_h) if n_w and n_b else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    order = np.argsort(-gh[hk, hh], kind="stable")[: top * 2]
    result.per_host = pd.DataFrame(
        {
            "host": [hnames[h] for h in hh[order]],
            "key": [names[x] for x in hk[order]],
            "kind": [_kind(ah[x, h], bh[x, h], share) for x, h in zip(hk[order], hh[order])],
            "window": ah[hk[order], hh[order]],
            "baseline": bh[hk[order], hh[order]],
            "g": np.round(gh[hk[order], hh[order]], 1),
        }
    )
    result.per_host.insert(2, "template", [_describe(x) for x in result.per_host["key"]])
    return result


def _kind(a: int, b: int, share: float) -> str:
    if b == 0:
        return "new"
    if a == 0:
        return "gone"
    return "rose" if a > (a + b) * share else "fell"


@dataclass(frozen=True)
class _Text:
    template: str
    logger: str
    level: str
    first: str
    last: str


def _catalogue_text() -> dict[str, _Text]:
    """Lineage id -> the newest wording of it (typed), its logger, level and the releases spanned."""
    cat = st.load()
    fam = matching.lineage(cat)
    pos = {r: i for i, r in enumerate(cat.releases)}
    out: dict[str, tuple[int, _Text]] = {}
    first: dict[str, int] = {}
    for s in cat.statements:
        if not s.releases:
            continue
        f = fam[s.id]
        first[f] = min(first.get(f, 1 << 30), pos[s.first])
        if f not in out or pos[s.last] > out[f][0]:
            out[f] = (pos[s.last], _Text(s.typed(), s.logger, s.level, s.first, s.last))
    return {f: _Text(v.template, v.logger, v.level, cat.releases[first[f]], v.last) for f, (_, v) in out.items()}


_TEXT: dict[str, _Text] = {}


def _describe(key: str) -> str:
    if key.startswith("t:"):
        if not _TEXT:
            _TEXT.update(_catalogue_text())
        tid = key[2:]
        got = _TEXT.get(tid)
        return got.template if got else tid
    return key[2:]


def _rows(t, names, code, in_w, sig, a, b, g, ah, bh, hnames, share) -> pd.DataFrame:
    cols = [
        "kind", "template", "template_id", "logger", "level", "window", "baseline", "g", "p", "hosts",
        "first", "last", "examples", "values", "releases",
    ]  # fmt: skip
    if len(sig) == 0:
        return pd.DataFrame(columns=cols)
    want = np.isin(code, sig)
    idx = np.flatnonzero(want)
    sub = t.take(pa.array(idx))
    sub_code, sub_w = code[idx], in_w[idx]
    df = pd.DataFrame(
        {
            "code": sub_code,
            "in_w": sub_w,
            "ts": sub.column("ts").to_pandas(),
            "level": _plain(sub.column("level")).to_pandas(),
            "logger": _plain(sub.column("logger")).to_pandas(),
            "file": _plain(sub.column("file")).to_pandas(),
            "line": sub.column("line").to_pandas(),
            "host": _plain(sub.column("host")).to_pandas(),
        }
    )
    first_line = pc.utf8_slice_codeunits(
        pc.replace_substring_regex(_plain(sub.column("message")), r"\n[\s\S]*", ""), 0, 200
    )
    df["text"] = first_line.to_pandas()
    if not _TEXT:
        _TEXT.update(_catalogue_text())
    out = []
    for c in sig:
        kind = _kind(int(a[c]), int(b[c]), share)
        side = df[(df["code"] == c) & (df["in_w"] == (kind != "gone"))].sort_values("ts", kind="stable")
        key = names[c]
        tid = key[2:] if key.startswith("t:") else ""
        text = _TEXT.get(tid)
        counts = ah[c] if kind != "gone" else bh[c]
        hosts = {hnames[h]: int(counts[h]) for h in np.argsort(-counts, kind="stable") if counts[h]}
        ex = side.head(EXAMPLES)
        out.append(
            {
                "kind": kind,
                "template": text.template if text else key[2:],
                "template_id": tid,
                "logger": str(side["logger"].mode().iloc[0]) if len(side) else "",
                "level": str(side["level"].mode().iloc[0]) if len(side) else "",
                "window": int(a[c]),
                "baseline": int(b[c]),
                "g": round(float(g[c]), 1),
                "p": float(chi2_sf(float(g[c]))),
                "hosts": hosts,
                "first": side["ts"].min() if len(side) else None,
                "last": side["ts"].max() if len(side) else None,
                "examples": [f"{f}:{ln}: {x}" for f, ln, x in zip(ex["file"], ex["line"], ex["text"])],
                "values": _changed_values(t, code, in_w, c, share) if tid else [],
                "releases": f"{text.first}..{text.last}" if text else "",
            }
        )
    return pd.DataFrame(out, columns=cols)


def _changed_values(t: pa.Table, code: np.ndarray, in_w: np.ndarray, c: int, share: float, limit: int = 20000):
    """The slot values of template key ``c`` whose window count departs most from what the
    baseline predicts: up to three (slot, value, window count, baseline count)."""
    rows = np.flatnonzero(code == c)[:limit]
    vals = matching.values(t.column("logger").take(pa.array(rows)), t.column("message").take(pa.array(rows)))
    if vals.null_count == len(vals):
        return []
    lens = pc.list_value_length(vals).fill_null(0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(vals)
    slot = np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)
    w = np.repeat(in_w[rows], lens)
    df = pd.DataFrame({"slot": slot, "value": flat.to_pandas(), "w": w})
    grp = df.groupby(["slot", "value"], sort=False)["w"].agg(["sum", "count"])
    grp["baseline"] = grp["count"] - grp["sum"]
    ratio = share / (1 - share) if share < 1 else 1.0
    grp["score"] = (grp["sum"] - grp["baseline"] * ratio).abs()
    top = grp.sort_values("score", ascending=False).head(3)
    return [
        {"slot": int(s), "value": str(v)[:80], "window": int(r["sum"]), "baseline": int(r["baseline"])}
        for (s, v), r in top.iterrows()
    ]


def changes_text(res: Changes, rows: int = 15) -> str:
    """The changes as text for a terminal."""
    base = f"{res.baseline[0]}..{res.baseline[1]}" if res.baseline else "the rest of the bundle"
    how = " (found: where the WARN/ERROR rate departs most)" if res.found_window else ""
    lines = [
        f"window {res.window[0]}..{res.window[1]}{how}; baseline {base}",
        f"records: {res.records[0]:,} in the window, {res.records[1]:,} in the baseline (the window's share "
        f"{res.share:.3f}); beyond chance: G > {res.threshold:.1f} (alpha {ALPHA} over {res.tested} templates)",
    ]
    if not len(res.overall):
        lines.append("no template changed beyond chance")
        return "\n".join(lines)
    for r in res.overall.head(rows).itertuples():
        hosts = ", ".join(f"{h} ({n})" for h, n in list(r.hosts.items())[:4])
        lines.append("")
        lines.append(f"{r.kind.upper():5} {r.template}")
        lines.append(
            f"      {r.logger} {r.level}; window {r.window}, baseline {r.baseline}; G {r.g}; hosts {hosts}; "
            f"{r.first}..{r.last}" + (f"; releases {r.releases}" if r.releases else "")
        )
        for v in r.values:
            lines.append(
                f"      slot {v['slot']} = {v['value']}: {v['window']} in the window, {v['baseline']} in the baseline"
            )
        for e in r.examples:
            lines.append(f"      {e}")
    return "\n".join(lines)
