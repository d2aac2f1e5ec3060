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
    one row per (file, line); one without is one row per (file, host, ts, text); the first of
    equal rows is kept, evidence before the tables. ``masks`` keeps each query clause's rows for
    the next finding that shares it (see :func:`_selected`)."""
    rows, names = _distinct_rows(f, bundle, masks)
    text = np.array([*names, None], dtype=object)  # a code of -1 reads the last: no text
    line = pd.Series(rows["line"].to_numpy(), dtype="Int64")
    return pd.DataFrame(
        {
            "file": pd.Series(text[rows["file"].to_numpy()], dtype="string"),
            "line": line.where(rows["has_line"].to_numpy()),
            "host": pd.Series(text[rows["host"].to_numpy()], dtype="string"),
            "ts": rows["ts"],
            "text": pd.Series(text[rows["text"].to_numpy()], dtype="string"),
        }
    )


def _distinct_rows(f: Cited, bundle=None, masks: dict | None = None) -> tuple[pd.DataFrame, list[str]]:
    """:func:`extent_rows` with every name as a number: the distinct rows (``file``, ``host`` and
    ``text`` as codes into the names returned, ``text`` -1 for none; ``line`` with ``has_line``;
    ``ts`` in UTC), those with a line number first. Names are coded once per table and per
    finding, so the rows are taken, joined and told apart as numbers, never as text."""
    names: dict[str, int] = {}
    parts: list[pd.DataFrame] = []
    if f.evidence:
        ev = pd.DataFrame(f.evidence, columns=[*_EXTENT_COLUMNS, "text"])
        # a time in evidence is ISO text (what ``plain`` makes of one); a number there is not a time
        is_text = ev["ts"].map(type).eq(str)
        ev["ts"] = pd.to_datetime(ev["ts"].where(is_text), utc=True, errors="coerce", format="ISO8601")
        parts.append(_coded_frame(ev, names))
    if bundle is not None:
        masks = {} if masks is None else masks
        queries: dict[str, list[str]] = {}
        for table, query in f.counted_from.values():
            queries.setdefault(table, []).append(query)
        for table, qs in queries.items():
            frame = _query_frame(bundle, table, qs)
            # a row two of the queries select is one row: their masks joined, taken once
            mask = np.logical_or.reduce([_selected(frame, table, q, masks) for q in qs])
            if mask.any():
                parts.append(_table_part(frame, table, mask, masks, names))
    if not parts:
        return _coded(np.zeros(0, np.int64), np.zeros(0, np.int64), pd.Series([], dtype="datetime64[ns, UTC]")), []
    d = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    del parts
    # the first of equal rows found by position and the rows taken once (a copy of the rows for
    # each step had held five copies of a count of half a million rows at once)
    has_line = d["has_line"].to_numpy()
    keyed, bare = np.flatnonzero(has_line), np.flatnonzero(~has_line)
    keyed = keyed[~_repeated(d["file"].to_numpy()[keyed], d["line"].to_numpy()[keyed])]
    if len(bare):
        bare = bare[~d.iloc[bare].duplicated(["file", "host", "ts", "text"]).to_numpy()]
    return d.take(np.concatenate([keyed, bare])).reset_index(drop=True), list(names)


def _repeated(file: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Which rows repeat an earlier row's ``file`` (codes from 0) and ``line`` (integers):
    ``DataFrame.duplicated`` of the two, on one int64 key made of both where their ranges allow
    (a file's lines counted from the smallest line), else on a frame of the two."""
    if not len(file):
        return np.zeros(0, bool)
    lo, hi = int(line.min()), int(line.max())
    width = hi - lo + 1
    if int(file.max()) < (1 << 62) // width:
        key = file.astype(np.int64) * width + (line - lo)
        return pd.Series(key, copy=False).duplicated().to_numpy()
    return pd.DataFrame({"file": file, "line": line}, copy=False).duplicated().to_numpy()


def _coded(file: np.ndarray, host: np.ndarray, ts: pd.Series, line=None, has_line=None, text=None) -> pd.DataFrame:
    """A coded part (see :func:`_distinct_rows`); no ``line`` is no line number, no ``text`` none."""
    n = len(file)
    return pd.DataFrame(
        {
            "file": file,
            "host": host,
            "line": np.zeros(n, np.int64) if line is None else line,
            "has_line": np.zeros(n, bool) if has_line is None else has_line,
            "ts": ts.reset_index(drop=True),
            "text": np.full(n, -1, np.int64) if text is None else text,
        }
    )


def _numbered(texts: list[str], names: dict[str, int]) -> np.ndarray:
    """Each of ``texts`` (distinct) as its code in ``names``, a name new to it added."""
    return np.array([names.setdefault(t, len(names)) for t in texts], dtype=np.int64)


def _codes_of(s: pd.Series, names: dict[str, int]) -> np.ndarray:
    """``s`` (text with no missing value) as codes into ``names``, each distinct text looked up once."""
    codes, uniques = pd.factorize(s.to_numpy(dtype=object))
    return _numbered(uniques.tolist(), names)[codes]


def _coded_frame(d: pd.DataFrame, names: dict[str, int]) -> pd.DataFrame:
    """A part's rows (evidence, or a table's rows taken whole) coded: names as text first, missing
    ones "" (:func:`_text`), then numbered; line numbers as :func:`_line_numbers` reads them."""
    lines = _line_numbers(d["line"])
    has_text = "text" in d.columns and d["text"].notna().any()
    text = _codes_of(d["text"].where(d["text"].notna(), "").astype(str), names) if has_text else None
    if text is not None:
        text[d["text"].isna().to_numpy()] = -1
    return _coded(
        _codes_of(_text(d["file"]), names),
        _codes_of(_text(d["host"]), names),
        d["ts"],
        lines.fillna(0).to_numpy(dtype=np.int64),
        lines.notna().to_numpy(),
        text,
    )


def _table_part(frame: pd.DataFrame, table: str, mask: np.ndarray, masks: dict, names: dict[str, int]) -> pd.DataFrame:
    """The rows of ``frame`` that ``mask`` selects, coded as an extent's part (``text`` none). When
    the table has the four columns and its times are already times, the table's names are coded
    and its line numbers and times converted once (kept in ``masks``) and each finding takes its
    rows of them: every step is one value at a time, so the rows taken are the same as those
    converted alone."""
    cols = [c for c in _EXTENT_COLUMNS if c in frame.columns]
    if (
        len(cols) < len(_EXTENT_COLUMNS)
        or not frame.columns.is_unique
        or not pd.api.types.is_datetime64_any_dtype(frame["ts"].dtype)
    ):
        got = frame.loc[mask, cols].reindex(columns=_EXTENT_COLUMNS)
        got["ts"] = pd.to_datetime(got["ts"], utc=True, errors="coerce")
        return _coded_frame(got, names)
    key = (table, ("extent-columns",))
    hit = masks.get(key)
    if hit is None or hit[0] is not frame:
        hit = masks[key] = (frame, _TableCodes.of(frame))
    codes: _TableCodes = hit[1]
    at = np.flatnonzero(mask)
    return _coded(
        _numbered(codes.files, names)[codes.file[at]],
        _numbered(codes.hosts, names)[codes.host[at]],
        codes.ts.take(at),
        codes.line[at],
        codes.has_line[at],
    )


@dataclass(frozen=True)
class _TableCodes:
    """A table's four extent columns made once: file and host as codes into their distinct texts
    (``files``, ``hosts``), line numbers with ``has_line``, times in UTC."""

    file: np.ndarray
    files: list[str]
    host: np.ndarray
    hosts: list[str]
    line: np.ndarray
    has_line: np.ndarray
    ts: pd.Series

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _TableCodes:
        def names(s: pd.Series) -> tuple[np.ndarray, list[str]]:
            # a missing name reads as "" (as :func:`_text` makes it): the code after the others
            codes, uniques = pd.factorize(s)
            texts = [*_text(pd.Series(uniques)).tolist(), ""]
            # (four bytes a row: a table's files and hosts are few)
            return np.where(codes < 0, len(texts) - 1, codes).astype(np.int32), texts

        file, files = names(frame["file"])
        host, hosts = names(frame["host"])
        col = frame["line"]
        if isinstance(col.dtype, pd.Int64Dtype):  # read as it is held: no copy of the column
            arr = col.array
            has_line = ~arr._mask
            line = np.where(has_line, arr._data, 0)
        else:
            lines = _line_numbers(col)
            line, has_line = lines.fillna(0).to_numpy(dtype=np.int64), lines.notna().to_numpy()
            del lines
        # (taken from by position: the table's own index kept, not a copy numbered anew)
        ts = pd.to_datetime(frame["ts"], utc=True, errors="coerce")
        return cls(file, files, host, hosts, line, has_line, ts)


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
    # the columns as the models read them, text or categories alike: a query chooses the same rows
    frame = columns(table, sorted(names), held_as_is=True)
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
    """How much evidence ``f`` rests on (:class:`Extent`): the rows of :func:`extent_rows`, counted
    from their codes. The one place an extent is measured: :func:`triage` calls it with the bundle
    for every finding, and one ``masks`` for all the findings of a detector."""
    rows, names = _distinct_rows(f, bundle, masks)
    lines = int(rows["has_line"].sum())
    text = np.array(names + [""], dtype=object)
    hosts = tuple(sorted({h for h in text[np.unique(rows["host"].to_numpy())].tolist() if h != ""}))
    files = sum(1 for x in text[np.unique(rows["file"].to_numpy())].tolist() if x != "")
    ts = rows["ts"].dropna()
    first = pd.Timestamp(ts.min()) if len(ts) else None
    last = pd.Timestamp(ts.max()) if len(ts) else None
    return Extent(lines, len(rows) - lines, hosts, files, first, last)


# rows a base query selects beyond those a count names that :func:`exact_query` leaves out one by
# one (by file and line); beyond this many the count says no query
EXCLUDED_MOST = 200


def exact_query(frame: pd.DataFrame, rows, base: str, most: int = EXCLUDED_MOST) -> str | None:
    """A pandas query (for ``counted_from``) that selects exactly the rows of ``frame`` at
    positions ``rows``, the rows a finding's number counts: ``base``, with the rows it selects
    beyond those left out by file and line (a detector that drops rows a stall, a GC pause or a
    controlled shutdown explains counts fewer than its kind and node select). ``frame`` is the
    table as the query will be run on it (same rows, same order; ``file`` and ``line`` among its
    columns). None when no such query is made: ``base`` misses a counted row, a row is counted
    twice, more than ``most`` rows would be left out, or a row left out shares its file and line
    with a counted one. The query is checked on ``frame`` before it is handed back.

    Example:
        >>> t = pd.DataFrame({"kind": ["a", "a", "b", "a"], "file": ["f"] * 4, "line": [1, 2, 3, 4]})
        >>> exact_query(t, [0, 3], "kind == 'a'")
        "kind == 'a' and not ((file == 'f' and line in [2]))"
    """
    at = np.asarray(rows, dtype=np.int64)
    want = np.zeros(len(frame), bool)
    want[at] = True
    if int(want.sum()) != len(at):
        return None
    base_mask = _row_mask(frame, base)
    if base_mask is None:
        return None
    base_rows = base_mask.fillna(False).to_numpy(dtype=bool)
    if (want & ~base_rows).any():
        return None
    extra = np.flatnonzero(base_rows & ~want)
    if not len(extra):
        return base
    if len(extra) > most:
        return None
    files = frame["file"].iloc[extra].astype("string")
    lines = pd.to_numeric(frame["line"].iloc[extra], errors="coerce")
    if files.isna().any() or lines.isna().any():
        return None
    left: dict[str, list[int]] = {}
    for f, n in zip(files.tolist(), lines.astype("int64").tolist()):
        left.setdefault(f, []).append(n)
    out = (
        base
        + " and not ("
        + " or ".join(f"(file == {f!r} and line in {sorted(set(n))!r})" for f, n in left.items())
        + ")"
    )
    got = _row_mask(frame, out)
    if got is None or not np.array_equal(got.fillna(False).to_numpy(dtype=bool), want):
        return None
    return out
