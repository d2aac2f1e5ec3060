"""Applying the rules to whole Arrow columns and tables: one pass of the pre-check over a column
(:func:`precheck_hits`: the compiled pre-check, then RE2's :data:`PREFILTER` over what it leaves
in) flags the few values that go through the Python rules (:func:`redact_array`,
:func:`redact_flagged`); pandas Series and frames (:func:`redact_series`, :func:`redact_frame`) and
Arrow tables (:func:`redact_table`); and the name/value tables whose value is masked whole under a
secret's name (:func:`redact_pairs`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.redact.keys import SECRET_WORDS, harmless, is_secret_key
from kitlib.redact.lines import redact_lines
from kitlib.redact.rules import PREFILTER, RULES
from kitlib.redact.text import (
    _GATES,
    _NEEDS_RE2,
    _NOT_PLAIN,
    _PREFILTER_RE2,
    REDACTED,
    _bools,
    redact_text,
    redact_texts,
)

try:  # the compiled pre-check over a column (_precheck.c, built by setup.py where a C compiler is found)
    from kitlib.redact import _precheck as _compiled
except ImportError:  # pragma: no cover - an install without a compiler: RE2 reads every value
    _compiled = None  # type: ignore[assignment]


def _suspects(a: pa.Array) -> np.ndarray | None:
    """One code a value of string array ``a`` from the compiled pre-check (``_precheck.suspects``):
    1 where :data:`PREFILTER` may match the value (a superset of its matches: the tests hold the
    two side by side), 2 where it is not plain ASCII text (as ``_NOT_PLAIN`` finds); None where
    the module is not built or ``a`` is not a plain string array."""
    if _compiled is None or not isinstance(a, pa.Array):
        return None
    large = pa.types.is_large_string(a.type)
    if not (large or pa.types.is_string(a.type)):
        return None
    valid, offsets, data = a.buffers()
    codes = _compiled.suspects(offsets, data if data is not None else b"", valid, a.offset, len(a), large)
    return np.frombuffer(codes, np.uint8)


def precheck_hits(a: pa.Array) -> np.ndarray:
    """The positions of the values of string array ``a`` that :data:`PREFILTER` matches (a null
    never): RE2 runs only over the values the compiled pre-check (:func:`_suspects`) leaves in,
    which in a broker's log are few; the same positions as RE2 over every value.

    Example:
        >>> precheck_hits(pa.array(["ok", "token=abc", None, "ISR updated to 1,2"])).tolist()
        [1]
    """
    codes = _suspects(a) if len(a) else None
    if codes is None:
        return np.flatnonzero(_bools(pc.match_substring_regex(a, PREFILTER)))
    maybe = np.flatnonzero(codes & 1)
    if not len(maybe):
        return maybe
    sub = a if len(maybe) == len(a) else a.take(pa.array(maybe))
    return maybe[_bools(pc.match_substring_regex(sub, PREFILTER))]


def redact_array(arr: pa.Array | pa.ChunkedArray, lines: bool = False):
    """A string (or dictionary of strings) Arrow array with every value redacted. Only values
    the RE2 pre-check flags are handled in Python. ``lines=True`` means consecutive values are
    consecutive lines of one file (the ``unparsed`` table): see :func:`redact_lines`.

    Example:
        >>> redact_array(pa.array(["ok", "token=abc123"])).to_pylist()
        ['ok', 'token=[redacted]']
    """
    if isinstance(arr, pa.ChunkedArray):
        if arr.num_chunks == 1 or not lines:
            olds = arr.chunks  # (each access makes new Python objects: taken once)
            chunks = [redact_array(c, lines) for c in olds]
            if all(new is old for new, old in zip(chunks, olds)):
                return arr  # nothing changed: the caller keeps what it had (no copy made)
            return pa.chunked_array(chunks, arr.type)
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        if not (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
            return arr
        if lines:
            return redact_array(arr.cast(t.value_type), lines).dictionary_encode()
        new_dict = redact_array(arr.dictionary)
        if new_dict is arr.dictionary:
            return arr
        return pa.DictionaryArray.from_arrays(arr.indices, new_dict)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)) or len(arr) == 0 or arr.null_count == len(arr):
        return arr
    if lines:
        return redact_lines(arr)
    hits = precheck_hits(arr)
    if not len(hits):
        return arr
    return redact_flagged(arr, hits)


def redact_flagged(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    """A string Arrow array whose values at positions ``idx`` (those a pre-check flagged, a
    superset of those :data:`PREFILTER` matches) pass the rules; the others are kept as they are.
    Returns ``arr`` itself when nothing changed."""
    if not len(idx):
        return arr
    idx = np.asarray(idx)
    taken = arr if len(idx) == len(arr) else arr.take(pa.array(idx))  # (all flagged: no copy)
    if len(idx) > _OWN_PASS and _repeats(taken):  # few distinct texts: each goes through the rules once
        enc = pc.dictionary_encode(taken)
        values = enc.dictionary
        redone = redact_flagged(values, np.arange(len(values)))
        if redone is values:
            return arr
        mask = np.zeros(len(arr), bool)
        mask[idx] = True
        return pc.replace_with_mask(arr, pa.array(mask), redone.take(enc.indices).cast(arr.type))
    if len(idx) <= _FEW:
        # a block's few flagged texts: each through the rules on its own (0.1-0.2 ms a text)
        # rather than the RE2 passes below, each of which compiles its pattern again (4-6 ms
        # for the lot)
        old = taken.to_pylist()
        new = [None if t is None else redact_text(t) for t in old]
    else:
        # only the values some rule may change go on to :func:`redact_texts` (it handles each
        # value on its own, so the others, which it would hand back as they are, need not go)
        idx, taken = _changeable(idx, taken)
        if not len(idx):
            return arr
        old = taken.to_pylist()
        new = redact_texts(taken)
    if old == new:
        return arr
    mask = np.zeros(len(arr), bool)
    mask[idx] = True
    return pc.replace_with_mask(arr, pa.array(mask), pa.array(new, arr.type))


# up to this many flagged values, :func:`redact_flagged` hands each to :func:`redact_text`
_FEW = 16

# the texts :func:`redact_texts` may change, in one RE2 pass: a plain text it changes matches
# the pre-check, and for some rule both that rule's words and its quick test; so it matches the
# rule's quick test where the rule has one, else one of the rule's words (every rule has one or
# the other). A text that is not plain (or has no RE2 answer) always goes on.
_ANY_RULE = "|".join(
    f"(?:{_GATES[r.name]})" if r.name in _GATES else f"(?:{_NEEDS_RE2[k] or ''})" for k, r in enumerate(RULES)
)


def _changeable(idx: np.ndarray, taken: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """The positions ``idx`` (and their values ``taken``) that :func:`redact_texts` may change:
    every non-null value unless it is plain and no rule may change it (see :data:`_ANY_RULE`)."""
    codes = _suspects(taken)
    if codes is None:
        plain = _bools(pc.invert(pc.match_substring_regex(taken, _NOT_PLAIN)))
    else:
        plain = (codes & 2) == 0
    valid = _bools(pc.is_valid(taken))
    keep = valid & ~plain
    rest = np.flatnonzero(valid & plain)
    if len(rest):
        sub = taken if len(rest) == len(taken) else taken.take(pa.array(rest))
        hit = _bools(pc.match_substring_regex(sub, _ANY_RULE))
        if hit.any():
            rest = rest[hit]
            hit = _bools(pc.match_substring_regex(taken.take(pa.array(rest)), _PREFILTER_RE2))
            keep[rest[hit]] = True
    if keep.all():
        return idx, taken
    at = np.flatnonzero(keep)
    return idx[at], taken.take(pa.array(at))


def pair_columns(table: str) -> tuple[str, str] | None:
    """(key column, value column) of tables whose rows are name/value pairs: a secret's name in
    the key column masks the whole value in the value column."""
    return PAIRS.get(table)


PAIRS = {"configs": ("key", "value"), "metrics": ("attribute", "text")}


def redact_pairs(keys: pa.Array, values: pa.Array) -> pa.Array:
    """``values`` with the whole value masked where ``keys`` names a secret."""
    if len(keys) == 0:
        return values
    kk = keys.cast(keys.type.value_type) if pa.types.is_dictionary(keys.type) else keys
    hit = pc.fill_null(pc.match_substring_regex(kk, rf"(?i){_PREFILTER_KEYS}"), False)
    if not pc.any(hit).as_py():
        return values
    idx = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
    vv = values.cast(values.type.value_type) if pa.types.is_dictionary(values.type) else values
    mask = np.zeros(len(values), bool)
    for i, k, v in zip(idx.tolist(), kk.take(pa.array(idx)).to_pylist(), vv.take(pa.array(idx)).to_pylist()):
        if k is not None and v is not None and is_secret_key(k) and not harmless(v):
            mask[i] = True
    if not mask.any():
        return values
    out = pc.replace_with_mask(vv, pa.array(mask), pa.array([REDACTED] * int(mask.sum()), vv.type))
    return out.dictionary_encode() if pa.types.is_dictionary(values.type) else out


_PREFILTER_KEYS = rf"(?:{SECRET_WORDS.replace('[._-]?', '.?')})|user_"


def redact_series(s, flagged: tuple[pa.Array, np.ndarray] | None = None):
    """A pandas string/categorical/object Series with every value redacted (same dtype; the
    Series itself when nothing changed). ``flagged``: the column's texts as
    :func:`_series_values` gives them and the positions the pre-check flags in them, when already
    known (the pre-check is then not run again)."""
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        if not len(cats) or not (pd.api.types.is_string_dtype(cats.dtype) or cats.dtype == object):
            return s
        if flagged is not None:
            arr = flagged[0]
            new = redact_flagged(arr, flagged[1])
        else:
            arr = pa.array([c if isinstance(c, str) else None for c in cats], pa.string())
            new = redact_array(arr)
        if new is arr:
            return s
        names = new.to_pylist()
        if len(set(names)) == len(names):
            return s.cat.rename_categories(names)
        values = np.array(names + [None], dtype=object)[s.cat.codes.to_numpy()]
        return pd.Series(values, index=s.index, dtype="category")
    if not len(s):
        return s
    if flagged is not None:
        arr = flagged[0]
        new = redact_flagged(arr, flagged[1])
    else:
        try:
            arr = pa.array(s, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed objects: only the str values matter
            vals = [redact_text(v) if isinstance(v, str) else v for v in s.tolist()]
            return pd.Series(vals, index=s.index, dtype=s.dtype)
        new = redact_array(arr)
    if new is arr:
        return s
    return pd.Series(
        new.to_pandas(
            types_mapper={pa.large_string(): pd.StringDtype("pyarrow"), pa.string(): pd.StringDtype("pyarrow")}.get
        ),
        index=s.index,
    ).astype(s.dtype)


def redact_frame(table: str, df):
    """``df`` (a table being stored) with every string value redacted, and the value column of
    name/value tables (:func:`pair_columns`) masked where the name is a secret's. Changes ``df``
    in place and returns it."""
    import pandas as pd

    series = {c: df[c] for c in df.columns}  # (each looked up once: a frame's lookup is not free)
    text = [
        c
        for c, s in series.items()
        if isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(s.dtype) or s.dtype == object
    ]
    values = [_series_values(series[c]) for c in text]
    for col, arr, hits in zip(text, values, _hits(values)):
        if hits is not None and not len(hits):
            continue  # the pre-check flags none of its texts
        s = series[col]
        # the texts checked in one pass with the other columns' go to the rules as flagged there
        new = redact_series(s) if hits is None else redact_series(s, (_flat(arr), hits))
        if new is not s:
            df[col] = new
    pair = pair_columns(table)
    if pair and pair[0] in df.columns and pair[1] in df.columns and len(df):
        k = pa.array(df[pair[0]].astype("string"), from_pandas=True)
        v = pa.array(df[pair[1]].astype("string"), from_pandas=True)
        new = redact_pairs(k, v)
        if new is not v:
            df[pair[1]] = pd.Series(new.to_pylist(), index=df.index, dtype=df[pair[1]].dtype)
    return df


def _series_values(s) -> pa.Array | None:
    """The distinct texts the rules would look at in a pandas column (a categorical's categories),
    as Arrow; None when they do not convert (mixed objects: the column is then always redacted
    value by value)."""
    import pandas as pd

    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        if not (pd.api.types.is_string_dtype(cats.dtype) or cats.dtype == object):
            return pa.array([], pa.string())
        return pa.array([c if isinstance(c, str) else None for c in cats], pa.string())
    try:
        arr = pa.array(s, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return arr if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) else pa.array([], pa.string())


# up to this many values, the columns of one table are pre-checked in one RE2 pass (each pass
# compiles the pre-check again, which costs more than scanning a few thousand short values); of
# those, a column of more than _OWN_PASS values is checked in a pass of its own, as copying its
# texts into the joined piece costs more than compiling the pre-check once more
_BATCH_VALUES = 1 << 16
_OWN_PASS = 1 << 12


def _flagged(arrays: list) -> list[bool]:
    """For each Arrow string array (or dictionary of strings, or None), whether it may hold a
    secret: True where the pre-check flags a value, and for None. Small arrays are checked
    together in one pass; big ones are left to :func:`redact_array`'s own pass (True)."""
    return [h is None or len(h) > 0 for h in _hits(arrays)]


def _hits(arrays: list) -> list[np.ndarray | None]:
    """For each Arrow string array (or dictionary of strings: its dictionary; or None), the
    positions of the values the pre-check flags; None for None and for arrays too big to be
    checked with the others (left to :func:`redact_array`'s own pass). Small arrays are checked
    together in one pass."""
    none = np.zeros(0, np.int64)
    out: list[np.ndarray | None] = [None] * len(arrays)
    batch: list[tuple[int, pa.Array]] = []
    fresh: dict[int, list] = {}  # the values of the small dictionaries with a value not met yet, by position
    for i, a in enumerate(arrays):
        if a is None:
            continue
        if pa.types.is_dictionary(a.type):
            a = _flat(a).dictionary
            if len(a) <= _MEMO_VALUES and (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
                values = a.to_pylist()
                known = [_SEEN.get(v) for v in values]
                if None not in known:
                    out[i] = np.flatnonzero(np.array(known, bool))
                    continue
                fresh[i] = values
        elif len(a) > _BATCH_VALUES or not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
            # not joined into one piece only to be left out (a big array, or no text: times, numbers)
            if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)) or a.null_count == len(a):
                out[i] = none
            continue
        else:
            a = _flat(a)
        if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)) or len(a) == a.null_count:
            out[i] = none  # (empty, or only nulls: a null is never flagged)
        elif len(a) > _OWN_PASS:  # checked on its own: no copy of its texts into the joined piece
            out[i] = _own_hits(a)
        else:
            batch.append((i, a.cast(pa.large_string())))
    if batch:
        both = pa.concat_arrays([a for _, a in batch])
        hit = np.zeros(len(both), bool)
        hit[precheck_hits(both)] = True
        start = 0
        for i, a in batch:
            out[i] = np.flatnonzero(hit[start : start + len(a)])
            start += len(a)
    for i, values in fresh.items():
        got = out[i]
        if got is not None:
            if len(_SEEN) > _MEMO_ENTRIES:
                _SEEN.clear()
            flagged = np.zeros(len(values), bool)
            flagged[got] = True
            _SEEN.update(zip(values, flagged.tolist()))
    return out


# whether the pre-check flags each value of the small dictionaries met so far (a log's blocks
# repeat their logger, host and file names, in another order in each block): each block's RE2
# pass compiled the pre-check again (about 0.8 ms) to check a few dozen names it had checked in
# every block before. A null is never flagged (the pass fills its null with False).
_MEMO_VALUES = 4096
_MEMO_ENTRIES = 1 << 16
_SEEN: dict[str | None, bool] = {None: False}


def _own_hits(a: pa.Array) -> np.ndarray:
    """The positions of the values of string array ``a`` the pre-check flags, in one pass over
    its values or, when a sample shows few distinct ones (a group, state or partition column
    of a derived table), over its distinct values only (one hash pass and a lookup instead of
    a regex run per value)."""
    if not _repeats(a):
        return precheck_hits(a)
    enc = pc.dictionary_encode(a)
    flagged = np.zeros(len(enc.dictionary), bool)
    flagged[precheck_hits(enc.dictionary)] = True
    if not flagged.any():
        return np.zeros(0, np.int64)
    codes = np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False), np.int64)
    return np.flatnonzero(np.r_[flagged, False][codes])


def _repeats(a: pa.Array) -> bool:
    """Whether a sample of ``a``'s values shows each about _REPEATS times or more."""
    sample = a.take(pa.array(np.linspace(0, len(a) - 1, _SAMPLE).astype(np.int64))).to_pylist()
    return len(set(sample)) <= _SAMPLE // _REPEATS


# a column of more than _OWN_PASS values whose sample of _SAMPLE holds each value about _REPEATS
# times or more is checked on its distinct values (see _own_hits)
_SAMPLE = 512
_REPEATS = 4


def _flat(a):
    """An Arrow array in one piece (a chunked array's chunks joined; its one chunk as it is)."""
    if isinstance(a, pa.ChunkedArray):
        return a.chunk(0) if a.num_chunks == 1 else a.combine_chunks()
    return a


# columns a parser already passed through these rules itself, on its worker threads (the log4j
# parser redacts each block's messages in parallel; doing it again on the main thread would only
# cost time)
REDACTED_BY_PARSER = {"events": ("message",)}


def redact_table(table: str, t: pa.Table, skip: tuple[str, ...] = ()) -> pa.Table:
    """An Arrow table (streamed to Parquet) with every string column redacted, like
    :func:`redact_frame`; columns in ``skip`` are left as they are."""
    cols = []
    changed = False
    maybe = _flagged([None if f.name in skip else col for f, col in zip(t.schema, t.columns)])
    for f, col, m in zip(t.schema, t.columns, maybe):
        new = redact_array(col) if m and f.name not in skip else col
        changed |= new is not col
        cols.append(new)
    pair = pair_columns(table)
    if pair and pair[0] in t.column_names and pair[1] in t.column_names and t.num_rows:
        i, j = t.column_names.index(pair[0]), t.column_names.index(pair[1])
        k = cols[i].combine_chunks() if isinstance(cols[i], pa.ChunkedArray) else cols[i]
        v = cols[j].combine_chunks() if isinstance(cols[j], pa.ChunkedArray) else cols[j]
        new = redact_pairs(k, v)
        if new is not v:
            cols[j], changed = new, True
    if not changed:
        return t
    return pa.Table.from_arrays(cols, schema=t.schema)
