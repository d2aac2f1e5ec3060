"""Rule-based extraction: an ordered list of (kind, RE2 pattern with named groups) run over a
whole message column with Arrow's regex kernels, so a long log costs a few passes of RE2 and no
Python per line. An investigation's extractor keeps only its rules and the columns it adds;
selecting the records, matching them and the table's common columns are here.

Example:
    >>> import pyarrow as pa
    >>> kinds, cols = classify(pa.array(["Stabilized group g generation 4", "noise"]),
    ...                        [Rule("stabilized", r"Stabilized group (?P<group>\\S+) generation (?P<generation>\\d+)")])
    >>> kinds.tolist(), cols["group"].tolist()
    (['stabilized', None], ['g', None])
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.extract import _literal, arrow_messages, first_lines, first_rule, quotes

_NAMES = re.compile(r"\(\?P<(\w+)>")
_ALT = re.compile(r"(?<=[A-Za-z_])\d+$")  # group2 -> group

# records a builder reads at once: a larger log is built in slices of this many and put together
SLICE = 65536


@dataclass(frozen=True)
class Layout:
    """One fixed wording of a rule's lines (one log statement of Kafka's), whose fields are read
    by cutting the text at the wording's literal pieces instead of by the rule's regex: a few
    substring searches and copies instead of a capture pass.

    A text is read this way when what follows the first ``lead`` in it matches ``form`` whole:
    every match of the rule's pattern begins with ``lead``, so the first ``lead`` is where the
    rule's match starts when the pattern matches there. ``steps`` then read what follows it:
    each ``(field, end, last)`` takes the text up to the first occurrence of ``end`` (the last,
    when ``last``) as ``field`` (skipped when ``field`` is empty) and goes on after ``end``.
    Whoever writes a layout shows that on every text ``form`` accepts these cuts are the groups
    the rule's pattern captures (each field's characters exclude its ``end``; greedy and lazy
    groups stop where the cut does); the tests check it against the regex on every text they
    hold. Other texts go through the regex."""

    lead: str
    form: str  # RE2 for the text after ``lead`` to its end, with no capturing group and no newline
    steps: tuple[tuple[str, str, bool], ...]

    def cut(self, texts: pa.Array) -> tuple[np.ndarray, dict[str, pa.Array]]:
        """Which ``texts`` this layout reads (boolean mask) and their fields (null where empty,
        as :func:`extract`): in compiled code where it is built (:func:`_compiled_cut`), else
        with Arrow's splits, the same values either way."""
        got = _compiled_cut(self, texts)
        return got if got is not None else self._split(texts)

    def _split(self, texts: pa.Array) -> tuple[np.ndarray, dict[str, pa.Array]]:
        """:meth:`cut` with Arrow's kernels: a split, a list element and an empty test a piece."""
        # one split at the first lead: a text without it is left whole (one piece)
        parts = pc.split_pattern(texts, self.lead, max_splits=1)
        has = np.asarray(pc.equal(pc.list_value_length(parts), 2).to_numpy(zero_copy_only=False), bool)
        if not has.any():
            return has, {}
        rest = pc.list_element(parts if has.all() else parts.filter(pa.array(has)), 1)
        ok = pc.match_substring_regex(rest, "^(?:" + self.form + ")$")
        good = np.asarray(ok.to_numpy(zero_copy_only=False), bool)
        has[has] = good
        if not good.any():
            return has, {}
        if not good.all():
            rest = rest.filter(ok)
        out: dict[str, pa.Array] = {}
        for name, end, last in self.steps:
            if end:
                parts = pc.split_pattern(rest, end, max_splits=1, reverse=last)
                val, rest = pc.list_element(parts, 0), pc.list_element(parts, 1)
            else:
                val = rest
            if name:
                empty = pc.equal(pc.binary_length(val), 0)
                out[name] = pc.if_else(empty, pa.scalar(None, val.type), val) if pc.any(empty).as_py() else val
        return has, out


try:  # the compiled cuts (_cut.c, built by setup.py where a C compiler is found)
    from kitlib.extract import _cut
except ImportError:  # pragma: no cover - an install without a compiler: Arrow's splits
    _cut = None  # type: ignore[assignment]


def _compiled_cut(layout: Layout, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, dict[str, pa.Array]] | None:
    """:meth:`Layout.cut` with its splits in compiled code: the text after the first lead in one
    pass, the layout's form checked with RE2 (Arrow) as before, then every piece of the texts
    that fit in one more pass. None where the module is not built or ``texts`` is not a string
    array (Arrow's splits then)."""
    if _cut is None:
        return None
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    large = pa.types.is_large_string(texts.type)
    if not (large or pa.types.is_string(texts.type)):
        return None
    n = len(texts)
    valid, offsets, data = texts.buffers()
    has_bytes, rest_offsets, rest_data, rows = _cut.lead(
        offsets, data if data is not None else b"", valid, texts.offset, n, large, layout.lead.encode()
    )
    has = np.frombuffer(has_bytes, np.bool_).copy()
    if not rows:
        return has, {}
    rest = pa.Array.from_buffers(pa.large_string(), rows, [None, pa.py_buffer(rest_offsets), pa.py_buffer(rest_data)])
    ok = pc.match_substring_regex(rest, "^(?:" + layout.form + ")$")
    good = np.asarray(ok.to_numpy(zero_copy_only=False), bool)
    has[has] = good
    if not good.any():
        return has, {}
    if not good.all():
        rest = rest.filter(ok)
    _, rest_offsets_buf, rest_data_buf = rest.buffers()
    steps = [(end.encode(), last, bool(name)) for name, end, last in layout.steps]
    data_buf = rest_data_buf if rest_data_buf is not None else b""  # (Arrow has none for texts all empty)
    pieces, missing = _cut.steps(rest_offsets_buf, data_buf, None, rest.offset, len(rest), True, steps)
    if missing:  # (what Arrow's list element says of a piece its split did not find)
        raise ValueError(f"layout {layout.lead!r}: a text its form accepts lacks a piece's end")
    out: dict[str, pa.Array] = {}
    kept = [name for name, _, _ in layout.steps if name]
    for name, (o, d, v, nulls) in zip(kept, pieces):
        buffers = [pa.py_buffer(v) if nulls else None, pa.py_buffer(o), pa.py_buffer(d)]
        field = pa.Array.from_buffers(pa.large_string(), len(rest), buffers, null_count=nulls)
        out[name] = field if large else field.cast(texts.type)
    return has, out


@dataclass(frozen=True)
class Rule:
    """One kind of line: ``pattern`` is RE2 (``(?i)`` for case-insensitive) whose named groups
    fill the table's columns of the same name; unnamed groups must be ``(?:...)``. RE2 names a
    group once per pattern: in another alternative of the same pattern, ``group2`` fills
    ``group`` too (a trailing digit is dropped)."""

    kind: str
    pattern: str
    layouts: tuple[Layout, ...] = ()  # fixed wordings whose fields a split reads (see :class:`Layout`)

    @property
    def groups(self) -> list[str]:
        return _NAMES.findall(self.pattern)

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys(_ALT.sub("", g) for g in self.groups))


def logger_keywords(*words: str, empty: bool = True, exclude: Sequence[str] = ("kafka.request.logger",)):
    """A logger test for :func:`kitlib.extract.extractor`'s ``match``: the logger contains one of
    ``words`` (case-insensitive), or is empty (a layout without a logger) when ``empty``."""
    low = tuple(w.lower() for w in words)
    skip = frozenset(exclude)

    def match(logger: str) -> bool:
        if logger in skip:
            return False
        if not logger:
            return empty
        lg = logger.lower()
        return any(w in lg for w in low)

    return match


def classify(texts: pa.Array, rules: Sequence[Rule]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The kind of each text (first rule that matches; None for none) and every named field of
    every rule as an object array (None where absent)."""
    which, fields = classify_arrow(texts, rules)
    return _kinds(which, rules), {f: _objects(v) for f, v in fields.items()}


def classify_arrow(texts: pa.Array, rules: Sequence[Rule]) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """:func:`classify` with the index of the rule each text matched (-1 for none) instead of
    the kind, and the fields kept as Arrow string arrays (null where absent): each rule's
    groups are read only from the texts that rule took, and put in place with one take per
    field, so no Python string is made."""
    n = len(texts)
    which = _first_match(texts, rules)
    names = sorted({f for r in rules for f in r.fields})
    pieces: dict[str, list[pa.Array]] = {f: [] for f in names}
    where = {f: np.full(n, -1, np.int64) for f in names}
    for i, rule in enumerate(rules):
        sel = np.flatnonzero(which == i)
        if not len(sel) or not rule.fields:
            continue
        for at, got in _read(texts if len(sel) == n else texts.take(pa.array(sel)), rule):
            for f, vals in got.items():
                where[f][sel[at]] = sum(len(x) for x in pieces[f]) + np.arange(len(at))
                pieces[f].append(vals)
    out = {}
    for f in names:
        pos = where[f]
        if not pieces[f]:
            out[f] = pa.nulls(n, pa.large_string())
            continue
        total = sum(len(x) for x in pieces[f])
        if total == n and len(pieces[f]) == 1:  # one rule took every text: its fields are in place
            out[f] = pieces[f][0].cast(pa.large_string())
            continue
        pos[pos < 0] = total  # the one null put after the pieces
        col = pa.concat_arrays([x.cast(pa.large_string()) for x in pieces[f]] + [pa.nulls(1, pa.large_string())])
        out[f] = col.take(pa.array(pos))
    return which, out


def _read(texts: pa.Array, rule: Rule) -> list[tuple[np.ndarray, dict[str, pa.Array]]]:
    """The fields of ``rule`` in ``texts`` (all of which it matched), in parts: (the indexes of
    some texts, their fields). The texts one of the rule's layouts accepts are cut by it, the
    rest go through the rule's regex."""
    left = np.arange(len(texts))
    out = []
    for layout in rule.layouts:
        if not len(left):
            break
        ok, got = layout.cut(texts if len(left) == len(texts) else texts.take(pa.array(left)))
        if ok.any():
            out.append((left[ok], got))
            left = left[~ok]
    if len(left):
        out.append((left, extract(texts if len(left) == len(texts) else texts.take(pa.array(left)), rule.pattern)))
    return out


def _kinds(which: np.ndarray, rules: Sequence[Rule]) -> np.ndarray:
    """The kind of the rule of each index (None for -1), as an object array."""
    return np.array([r.kind for r in rules] + [None], dtype=object)[np.where(which < 0, len(rules), which)]


def extract(texts: pa.Array, pattern: str) -> dict[str, pa.Array]:
    """Every field of ``pattern``'s named groups in each text (see :attr:`Rule.fields`: an
    alternative's ``group2`` fills what ``group`` left empty), as Arrow strings, null where the
    text does not match or the group is empty.

    Example:
        >>> got = extract(pa.array(["joined g1", "left g2", "x"]), r"joined (?P<group>\\S+)|left (?P<group2>\\S+)")
        >>> got["group"].to_pylist()
        ['g1', 'g2', None]
    """
    groups = _NAMES.findall(pattern)
    if not groups:
        return {}
    # RE2 reads the groups of an unanchored pattern much faster when told the match starts after
    # the shortest run of any characters: the same leftmost match, found in one anchored pass
    got = pc.extract_regex(texts, "^(?s:.*?)(?:" + pattern + ")")
    out: dict[str, pa.Array] = {}
    for g in groups:
        vals = pc.struct_field(got, g)
        vals = pc.if_else(pc.equal(vals, ""), pa.scalar(None, vals.type), vals)
        if pc.any(pc.invert(pc.is_valid(got))).as_py():  # a text the pattern does not match
            vals = pc.if_else(pc.is_valid(got), vals, pa.scalar(None, vals.type))
        f = _ALT.sub("", g)
        out[f] = vals if f not in out else pc.coalesce(vals, out[f])
    return out


def _objects(values: pa.Array) -> np.ndarray:
    """Arrow strings -> an object array (None for null)."""
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)


def _first_match(texts: pa.Array, rules: Sequence[Rule]) -> np.ndarray:
    """Index of the first rule each text matches (-1 for none), in about 1 + log2(len(rules))
    regex passes per text (see :func:`kitlib.extract.first_rule`)."""
    return first_rule(texts, [r.pattern for r in rules])


@dataclass
class Matches:
    """The records some rule matched, in record order: the records themselves (index from 0),
    their first lines, the kind of the rule each matched and every named field of every rule
    (``fields``: Arrow strings, null where absent; ``cols``: the same as object arrays)."""

    events: pd.DataFrame
    first: pa.Array
    kinds: np.ndarray
    fields: dict[str, pa.Array]
    which: np.ndarray  # index of the rule each record matched (of the rules given to match)

    def __len__(self) -> int:
        return len(self.kinds)

    @functools.cached_property
    def cols(self) -> dict[str, np.ndarray]:
        return {k: _objects(v) for k, v in self.fields.items()}

    def frame(self, columns: dict) -> pd.DataFrame:
        """The table: the record's time, then ``columns``, then its level, first line (500
        characters at most), host, file and line. A column may be an Arrow array (strings
        stay in Arrow)."""
        ev = self.events
        first = quotes(self.first)
        return pd.DataFrame(
            {
                "ts": ev["ts"],
                **{k: _pandas(v) for k, v in columns.items()},
                "level": _labels(ev["level"]),
                "message": pd.array(first, dtype=pd.StringDtype("pyarrow")),
                "host": _labels(ev["host"]),
                "file": _labels(ev["file"]),
                "line": ev["line"],
            }
        )


def labels(values) -> pd.Categorical:
    """``values`` (a categorical Series, or an array of strings and None) as the categorical
    :func:`kitlib.tables.conform` makes of a ``category`` column (see :func:`categorical`), from
    codes: a categorical's own, or one hash pass over the values.

    Example:
        >>> list(labels(np.array(["b", None, "a", "b"], dtype=object)).categories)
        ['a', 'b']
    """
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        return categorical(np.asarray(values.cat.codes.to_numpy(), np.int64), values.cat.categories)
    codes, names = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=True)
    return categorical(np.asarray(codes, np.int64), names)


def categorical(codes: np.ndarray, names) -> pd.Categorical:
    """The values ``names[codes]`` (-1: missing; a name may repeat) as the categorical
    :func:`kitlib.tables.conform` makes of a ``category`` column: its categories the names
    present, sorted, as strings; conform keeps it as it is, so no string is converted per row.

    Example:
        >>> c = categorical(np.array([1, -1, 0, 1]), ["coordinator", "client"])
        >>> list(c.categories), c.codes.tolist()
        (['client', 'coordinator'], [0, -1, 1, 0])
    """
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(names)))
    present = pd.Series(np.asarray(names, dtype=object)[used], dtype="object").astype("string")
    cats = present.astype("category").cat.categories  # sorted as conform's astype sorts them
    remap = np.full(len(names) + 1, -1, np.int64)  # (the last: a missing value stays missing)
    remap[used] = cats.get_indexer(present)
    return pd.Categorical.from_codes(remap[codes], dtype=pd.CategoricalDtype(cats, ordered=False))


def _labels(col: pd.Series):
    """A record's level, host or file column for a table: :func:`labels` of a categorical, the
    column as strings otherwise."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return labels(col)
    return col.astype("string")


def _pandas(values):
    """An Arrow column as a pandas array (strings as the tables' ``string`` dtype, integers as
    ``Int64``); anything else as given."""
    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    if pa.types.is_integer(values.type):
        data = np.asarray(pc.fill_null(values, 0).to_numpy(zero_copy_only=False), np.int64)
        return pd.arrays.IntegerArray(data, np.asarray(pc.is_null(values).to_numpy(zero_copy_only=False), bool))
    return pd.array(values.cast(pa.large_string()), dtype=pd.StringDtype("pyarrow"))


def match(events: pd.DataFrame, rules: Sequence[Rule], whole: Collection[str] = ()) -> Matches:
    """The records of ``events`` whose first line one of ``rules`` matches (the first rule that
    does gives the kind). The records no rule took are tried again on their whole message with
    the rules of the kinds in ``whole`` (a line that sits in a stack trace under a generic first
    line), their fields filling only what the first pass left empty."""
    msgs = arrow_messages(events)
    first = first_lines(msgs)
    which, cols = classify_arrow(first, rules)
    rest = np.flatnonzero(which < 0) if whole else np.zeros(0, np.int64)
    if len(rest):
        again = np.array([i for i, r in enumerate(rules) if r.kind in whole], np.int64)
        w2, c2 = classify_arrow(msgs.take(pa.array(rest)), [rules[i] for i in again])
        took = np.flatnonzero(w2 >= 0)
        if len(took):
            which[rest[took]] = again[w2[took]]
            mask = np.zeros(len(which), bool)
            mask[rest[took]] = True
            for f, vals in c2.items():  # a record no rule took had no field: the second pass fills it
                cols[f] = pc.replace_with_mask(cols[f], pa.array(mask), vals.take(pa.array(took)))
    keep = np.flatnonzero(which >= 0)
    at = pa.array(keep)
    every = len(keep) == len(which)  # nothing to leave out: no copy
    return Matches(
        events.iloc[keep].reset_index(drop=True),
        first if every else first.take(at),
        _kinds(which[keep], rules),
        cols if every else {k: v.take(at) for k, v in cols.items()},
        which[keep],
    )


def in_slices(build: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``build`` run on at most ``SLICE`` records at a time, the pieces put together in order (the
    regex kernels' intermediate arrays stay small however long the log)."""

    @functools.wraps(build)
    def run(events: pd.DataFrame) -> pd.DataFrame:
        if len(events) > SLICE:
            return pd.concat(
                _same_categories([build(events.iloc[i : i + SLICE]) for i in range(0, len(events), SLICE)]),
                ignore_index=True,
            )
        return build(events)

    return run


def _same_categories(parts: list[pd.DataFrame]) -> list[pd.DataFrame]:
    """``parts`` with each column that is categorical in all of them given the same categories
    (those of any part, sorted as :func:`categorical` sorts them), so that they stay categorical
    when put together (pandas joins categoricals of different categories as objects)."""
    if len(parts) < 2:
        return parts
    for col in parts[0].columns:
        dtypes = [p[col].dtype for p in parts if col in p.columns]
        if len(dtypes) < len(parts) or not all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            continue
        if all(d == dtypes[0] for d in dtypes):
            continue
        names = pd.Series(np.concatenate([np.asarray(d.categories, dtype=object) for d in dtypes]), dtype="object")
        cats = names.astype("string").astype("category").cat.categories
        for p in parts:
            p[col] = p[col].cat.set_categories(cats)
    return parts


def field_of(texts: pa.Array, pattern: str, name: str) -> np.ndarray:
    """The named group ``name`` of ``pattern`` in each text, as an object array (None where the
    text does not match or the group is empty).

    Example:
        >>> field_of(pa.array(["[Producer clientId=p1] x", "y"]), r"clientId=(?P<client>[^\\]]+)", "client").tolist()
        ['p1', None]
    """
    got = pc.extract_regex(texts, pattern)
    vals = np.array(pc.struct_field(got, name).to_pylist(), dtype=object) if len(texts) else np.zeros(0, object)
    vals[vals == ""] = None
    return vals


def to_int(values: np.ndarray) -> list:
    """Object array of digit strings (or None) -> ints (or None)."""
    return [None if v is None else int(v) for v in values]


def ints(values: pa.Array) -> pa.Array | list:
    """Arrow digit strings (or null) -> int64 (or null); a number too big for 64 bits keeps the
    whole column as Python ints (see :func:`to_int`).

    Example:
        >>> ints(pa.array(["7", None, "-1"])).to_pylist()
        [7, None, -1]
    """
    try:
        return pc.cast(values, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return to_int(_objects(values))


def fields_of(texts: pa.Array, pattern: str) -> dict[str, pa.Array]:
    """Every named group of ``pattern`` in each text, as Arrow strings (null where the text does
    not match or the group is empty); unlike :func:`extract`, ``group2`` stays its own field.

    Example:
        >>> fields_of(pa.array(["[Producer clientId=p1] x", "y"]), r"clientId=(?P<client>[^\\]]+)")["client"].to_pylist()
        ['p1', None]
    """
    got = pc.extract_regex(texts, pattern)
    ok = pc.is_valid(got)
    out = {}
    for g in _NAMES.findall(pattern):
        vals = pc.struct_field(got, g)
        out[g] = pc.if_else(pc.and_(ok, pc.not_equal(vals, "")), vals, pa.scalar(None, vals.type))
    return out


def fields_where(texts: pa.Array, pattern: str, literals: Sequence[str]) -> dict[str, pa.Array]:
    """:func:`fields_of`, read only from the texts holding one of ``literals`` (every match of
    ``pattern`` holds one; the caller shows it): the others, often all of them, cost one plain
    substring search instead of a regex extraction, and their fields are null.

    Example:
        >>> fields_where(pa.array(["[Producer clientId=p1] x", "y"]), r"clientId=(?P<client>[^\\]]+)",
        ...              ["clientId="])["client"].to_pylist()
        ['p1', None]
    """
    if not literals:
        return fields_of(texts, pattern)
    # (RE2 finds a literal much faster than Arrow's plain substring search; one literal a pass,
    # as an alternation of them is not searched as quickly)
    some = None
    for lit in literals:
        hit = pc.fill_null(pc.match_substring_regex(texts, _literal(lit)), False)
        some = hit if some is None else pc.or_(some, hit)
    if pc.all(some).as_py():
        return fields_of(texts, pattern)
    names = _NAMES.findall(pattern)
    if not pc.any(some).as_py():
        return {g: pa.nulls(len(texts), texts.type) for g in names}
    got = fields_of(texts.filter(some), pattern)
    return {g: pc.replace_with_mask(pa.nulls(len(texts), texts.type), some, got[g].cast(texts.type)) for g in names}
