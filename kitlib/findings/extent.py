"""How much evidence a finding rests on (:class:`Extent`): the distinct rows it cites in its
evidence or counts through ``counted_from``, measured once per finding by
:func:`kitlib.findings.triage` (:func:`evidence_extent`), with each query clause's rows kept for
the next finding of the same detector."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from kitlib.findings.values import plain


class Cited(Protocol):
    """What an extent is measured from: a finding's evidence rows and the (table, query) its
    numbers count (:class:`kitlib.findings.Finding`)."""

    evidence: list[dict]
    counted_from: dict[str, tuple[str, str]]


_EXTENT_COLUMNS = ["file", "line", "host", "ts"]


@dataclass(frozen=True)
class Extent:
    """How much evidence a finding rests on: the distinct rows it cites or counts (``lines`` with a
    file and line, ``other`` without one, such as JMX samples or rows of a describe snapshot), the
    hosts and files they come from, and the time from the first to the last of them.

    Example:
        >>> e = Extent(lines=14, other=0, hosts=("broker-1", "broker-2"), files=3,
        ...            first=pd.Timestamp("2026-11-23 12:40:41Z"), last=pd.Timestamp("2026-11-23 12:43:41Z"))
        >>> e.text()
        'rests on 14 lines from 2 hosts (3 files) over 3 min, 2026-11-23 12:40:41 → 12:43:41 UTC'
        >>> e.to_dict()["span_s"], Extent(1, 0, ("b1",), 1, None, None).text()
        (180.0, 'rests on 1 line from host b1, no time stamp')
    """

    lines: int
    other: int
    hosts: tuple[str, ...]
    files: int
    first: pd.Timestamp | None
    last: pd.Timestamp | None

    @property
    def records(self) -> int:
        return self.lines + self.other

    @property
    def span_s(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        return float((self.last - self.first).total_seconds())

    def to_dict(self) -> dict:
        """The shape ``kitlib triage --json`` prints under ``extent``."""
        return {
            "records": self.records,
            "lines": self.lines,
            "other": self.other,
            "hosts": list(self.hosts),
            "files": self.files,
            "first": plain(self.first),
            "last": plain(self.last),
            "span_s": self.span_s,
        }

    def text(self) -> str:
        """One short line for a reader: ``rests on 14 lines from 2 hosts (3 files) over 3 min, ...``."""

        def n(k: int, word: str) -> str:
            return f"{k:,} {word}{'' if k == 1 else 's'}"

        what = []
        if self.lines or not self.other:
            what.append(n(self.lines, "line"))
        if self.other:
            what.append(n(self.other, "record") + " without a line number")
        out = "rests on " + " and ".join(what)
        if len(self.hosts) == 1:
            out += f" from host {self.hosts[0]}"
        elif self.hosts:
            out += f" from {len(self.hosts)} hosts"
        if self.files > 1:
            out += f" ({self.files} files)"
        span = self.span_s
        if span is None or self.first is None or self.last is None:
            return out + ", no time stamp"
        lo, hi = self.first.tz_convert("UTC"), self.last.tz_convert("UTC")
        if span < 1:
            return out + f", at {_day(lo)} {_clock(lo)} UTC"
        end = _clock(hi) if _day(lo) == _day(hi) else f"{_day(hi)} {_clock(hi)}"
        return out + f" over {_duration(span)}, {_day(lo)} {_clock(lo)} → {end} UTC"


def _day(t: pd.Timestamp) -> str:
    # from the fields, since strftime refuses years before 1
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}"


def _clock(t: pd.Timestamp) -> str:
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def _duration(secs: float) -> str:
    """A span as a reader says it: ``45 s``, ``3 min``, ``2.5 h``, ``3.0 days``."""
    if secs < 120:
        return f"{secs:.1f} s" if secs < 10 else f"{secs:.0f} s"
    if secs < 7200:
        return f"{secs / 60:.0f} min"
    if secs < 3 * 86400:
        return f"{secs / 3600:.1f} h"
    return f"{secs / 86400:.1f} days"


def extent_rows(f: Cited, bundle=None, masks: dict | None = None) -> pd.DataFrame:
    """The distinct rows ``f`` rests on (file, line, host, ts; ts in UTC): its evidence rows and,
    with ``bundle``, every row its ``counted_from`` queries select. A row with a line number is
    one row per (file, line); one without is one row per (file, host, ts, text). ``masks`` keeps
    each query clause's rows for the next finding that shares it (see :func:`_selected`)."""
    parts = _extent_parts(f, bundle, masks)
    return pd.concat(parts, ignore_index=True) if isinstance(parts, tuple) else parts


def _extent_parts(f: Cited, bundle=None, masks: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | pd.DataFrame:
    """:func:`extent_rows` as its rows with a line number and those without (not joined: a count
    reads them apart), or the empty frame when ``f`` rests on no row."""
    ev = pd.DataFrame(f.evidence, columns=[*_EXTENT_COLUMNS, "text"]) if f.evidence else None
    parts = []
    if ev is not None:
        # a time in evidence is ISO text (what ``plain`` makes of one); a number there is not a time
        is_text = ev["ts"].map(type).eq(str)
        ev["ts"] = pd.to_datetime(ev["ts"].where(is_text), utc=True, errors="coerce", format="ISO8601")
        parts.append(ev)
    if bundle is not None:
        masks = {} if masks is None else masks
        queries: dict[str, list[str]] = {}
        for table, query in f.counted_from.values():
            queries.setdefault(table, []).append(query)
        for table, qs in queries.items():
            frame = _query_frame(bundle, table, qs)
            # a row two of the queries select is one row: their masks joined, its four columns taken once
            mask = np.logical_or.reduce([_selected(frame, table, q, masks) for q in qs])
            if mask.any():
                parts.append(_table_part(frame, table, mask, masks))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in [*_EXTENT_COLUMNS, "text"]})
    # each part's names as text and its line numbers first, so the parts join in those dtypes (a
    # table's categorical names and integer lines joined with the evidence's objects were made
    # objects, then converted row by row)
    parts = [d if d.attrs.get(_READY) else _as_extent(d) for d in parts]
    d = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    has_line = d["line"].notna()
    keyed = d[has_line].drop_duplicates(["file", "line"])
    bare = d[~has_line].astype({"text": "string"}).drop_duplicates(["file", "host", "ts", "text"])
    return keyed, bare


_READY = "kitlib_extent_ready"


def _as_extent(d: pd.DataFrame) -> pd.DataFrame:
    """``d``'s names as text and its line numbers as nullable integers (what a part is joined in)."""
    return d.assign(file=_text(d["file"]), host=_text(d["host"]), line=_line_numbers(d["line"]))


def _table_part(frame: pd.DataFrame, table: str, mask: np.ndarray, masks: dict) -> pd.DataFrame:
    """The rows of ``frame`` that ``mask`` selects, as an extent's part (its four columns, ``text``
    None). When the table has the four columns and its times are already times, they are converted
    once for the whole table (kept in ``masks``) and each finding takes its rows of them: every
    step is one value at a time, so the rows taken are the same as those converted alone."""
    cols = [c for c in _EXTENT_COLUMNS if c in frame.columns]
    if (
        len(cols) < len(_EXTENT_COLUMNS)
        or not frame.columns.is_unique
        or not pd.api.types.is_datetime64_any_dtype(frame["ts"].dtype)
    ):
        got = frame.loc[mask, cols]
        got = got.reindex(columns=_EXTENT_COLUMNS).assign(text=None)
        got["ts"] = pd.to_datetime(got["ts"], utc=True, errors="coerce")
        return got
    key = (table, ("extent-columns",))
    hit = masks.get(key)
    if hit is None or hit[0] is not frame:
        whole = frame[_EXTENT_COLUMNS].assign(text=None)
        whole["ts"] = pd.to_datetime(whole["ts"], utc=True, errors="coerce")
        hit = masks[key] = (frame, _as_extent(whole))
    got = hit[1].take(np.flatnonzero(mask))
    got.attrs[_READY] = True
    return got


def _text(s: pd.Series) -> pd.Series:
    """``s`` as text (``string``), a missing value as "". A categorical column is turned into text
    once per category and spread by its codes, not row by row."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = pd.array([str(c) for c in s.cat.categories] + [""], dtype="string")
        codes = s.cat.codes.to_numpy()
        return pd.Series(cats.take(np.where(codes < 0, len(cats) - 1, codes)), index=s.index)
    return s.astype("string").fillna("")


def _query_frame(bundle, table: str, queries: list[str]) -> pd.DataFrame:
    """Table ``table`` of ``bundle`` with at least the columns ``queries`` name and the four an
    extent reads (:meth:`~kitlib.bundle.Bundle.columns`): a big stored table's text is never read
    for a count. The whole table when a query is not plain Python (backticks), or names the index
    and the columns do not come numbered from 0."""
    names = set(_EXTENT_COLUMNS)
    for q in queries:
        try:
            names |= {n.id for n in ast.walk(ast.parse(q.strip(), mode="eval")) if isinstance(n, ast.Name)}
        except SyntaxError:
            return bundle.table(table)
    columns = getattr(bundle, "columns", None)
    if columns is None:
        return bundle.table(table)
    frame = columns(table, sorted(names))
    if "index" in names and not isinstance(frame.index, pd.RangeIndex):
        # the index a query names is the whole table's: the same as the columns' when both number
        # the rows from 0 (what a stored table is read as)
        return bundle.table(table)
    return bundle.table(table) if frame.index.name is not None and frame.index.name in names else frame


_I64 = np.iinfo(np.int64)


def _line_number(v) -> int | None:
    """One value as a line number: an integral number (or its text) within int64, else None
    (NaN, infinities, ``10**400``, a time, a flag)."""
    if isinstance(v, str):
        try:
            v = float(v) if any(c in v for c in ".eEnN") else int(v)
        except ValueError:
            return None
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    if isinstance(v, (float, np.floating)) and not (math.isfinite(v) and float(v).is_integer()):
        return None
    return int(v) if _I64.min <= v <= _I64.max else None


def _line_numbers(s: pd.Series) -> pd.Series:
    """``s`` as nullable Int64 line numbers, NA where a value is not one (see :func:`_line_number`).
    A table's integer or float column is converted as a whole; anything else (the values of a
    finding's evidence dicts, a handful of rows) one value at a time."""
    if pd.api.types.is_signed_integer_dtype(s.dtype):
        return s.astype("Int64")
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype="float64", na_value=np.nan)
        ok = np.isfinite(v) & (np.floor(v) == v) & (np.abs(v) < 2.0**63)
        out = pd.Series(pd.array(np.where(ok, v, 0).astype(np.int64), dtype="Int64"), index=s.index)
        return out.mask(~ok)
    return pd.Series([_line_number(v) for v in s], index=s.index, dtype="Int64")


def _conjuncts(query: str) -> list[str]:
    """The clauses a query's top-level ``and`` joins, as text (the whole query when it has none or
    is not Python syntax, such as one with backticks). pandas reads ``and`` as Python does."""
    q = query.strip()
    try:
        body = ast.parse(q, mode="eval").body
    except SyntaxError:
        return [q]
    if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And):
        parts = [ast.get_source_segment(q, v) for v in body.values]
        if all(parts):
            return [p for p in parts if p]
    return [q]


def _row_mask(frame: pd.DataFrame, expr: str) -> pd.Series | None:
    """``frame.eval(expr)`` when that is one flag per row, else None. Given the columns ``expr``
    names only, and the index only when it names that (``DataFrame.eval`` makes a Series of the
    index for every call, a copy of it each time)."""
    try:
        names = {n.id for n in ast.walk(ast.parse(expr.strip(), mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return _checked(frame.eval(expr, engine="python"), frame)
    if names & {"index", frame.index.name}:
        return _checked(frame[[c for c in frame.columns if c in names]].eval(expr, engine="python"), frame)
    columns = {c: frame[c] for c in frame.columns if c in names}
    return _checked(pd.eval(expr, engine="python", parser="pandas", resolvers=(columns,)), frame)


def _equal_mask(frame: pd.DataFrame, table: str, expr: str, masks: dict) -> pd.Series | None:
    """``frame.eval(expr)`` for a clause ``column == 'text'`` on a text or categorical column, from
    the column's codes (:func:`pandas.factorize`, made once per column and kept in ``masks``): a
    detector's findings mostly differ in such a clause (the group, the host), and comparing every
    row's text for each was most of an extent's cost. None for any other clause. pandas reads
    ``==`` against a text as ``isin``: equal values only, a missing value never."""
    try:
        body = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (
        isinstance(body, ast.Compare)
        and len(body.ops) == 1
        and isinstance(body.ops[0], ast.Eq)
        and isinstance(body.left, ast.Name)
        and isinstance(body.comparators[0], ast.Constant)
        and isinstance(body.comparators[0].value, str)
    ):
        return None
    name, value = body.left.id, body.comparators[0].value
    if name in ("index", frame.index.name) or not frame.columns.is_unique or name not in frame.columns:
        return None
    col = frame[name]
    if not (isinstance(col.dtype, (pd.CategoricalDtype, pd.StringDtype)) or col.dtype == object):
        return None
    key = (table, ("codes", name))
    hit = masks.get(key)
    if hit is None or hit[0] is not frame:
        codes, uniques = pd.factorize(col)
        where: dict = {}
        for i, u in enumerate(np.asarray(uniques, dtype=object).tolist()):
            if isinstance(u, str):
                where.setdefault(u, i)
        hit = masks[key] = (frame, codes, where)
    at = hit[2].get(value)
    m = np.zeros(len(frame), bool) if at is None else hit[1] == at
    return pd.Series(m, index=frame.index)


def _checked(m, frame: pd.DataFrame) -> pd.Series | None:
    ok = isinstance(m, pd.Series) and len(m) == len(frame) and pd.api.types.is_bool_dtype(m.dtype)
    return m if ok else None


def _selected(frame: pd.DataFrame, table: str, query: str, masks: dict) -> np.ndarray:
    """Which rows of ``frame`` (table ``table``) ``query`` selects, as ``frame.query(query,
    engine="python")`` does, as a boolean array. Each clause of the query's top-level ``and`` is
    evaluated once per table and kept in ``masks`` for the next query that shares it: one
    detector's findings mostly differ in one clause (the group, the host) and share the others."""
    # each clause kept as plain flags, a missing one False: for ``and`` the same as pandas' joining
    # the clauses (a missing one is missing or False) and then taking a missing one as False
    got: np.ndarray | None = None
    for part in _conjuncts(query):
        key = (table, part)
        hit = masks.get(key)
        if hit is None or hit[0] is not frame:
            m = _equal_mask(frame, table, part, masks)
            m = _row_mask(frame, part) if m is None else m
            if m is None:  # a clause that means nothing on its own: the query as a whole
                got = None
                break
            hit = masks[key] = (frame, m.fillna(False).to_numpy(dtype=bool))
        got = hit[1] if got is None else got & hit[1]
    if got is not None:
        return got
    whole = _row_mask(frame, query)
    if whole is None:  # not a mask at all: the rows the query returns, by position
        picked = frame.reset_index(drop=True).query(query, engine="python").index
        return np.isin(np.arange(len(frame)), picked)
    return whole.fillna(False).to_numpy(dtype=bool)


def evidence_extent(f: Cited, bundle=None, masks: dict | None = None) -> Extent:
    """How much evidence ``f`` rests on (:class:`Extent`), from :func:`extent_rows`. The one place
    an extent is measured: :func:`triage` calls it with the bundle for every finding, and one
    ``masks`` for all the findings of a detector."""
    parts = _extent_parts(f, bundle, masks)
    # the rows with a line number and those without, read apart (not joined into one frame)
    frames = [d for d in (parts if isinstance(parts, tuple) else (parts,)) if len(d)]
    lines = sum(int(d["line"].notna().sum()) for d in frames)
    # the distinct names first, so Python sees each once rather than every row
    hosts = tuple(sorted({str(h) for d in frames for h in d["host"].unique() if h != ""}))
    files = len({x for d in frames for x in d["file"].unique() if x != ""})
    ts = [t for t in (d["ts"].dropna() for d in frames) if len(t)]
    first = min(pd.Timestamp(t.min()) for t in ts) if ts else None
    last = max(pd.Timestamp(t.max()) for t in ts) if ts else None
    return Extent(lines, sum(len(d) for d in frames) - lines, hosts, files, first, last)
