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

from kitlib.extract import arrow_messages, first_lines

_NAMES = re.compile(r"\(\?P<(\w+)>")
_ALT = re.compile(r"(?<=[A-Za-z_])\d+$")  # group2 -> group

# records a builder reads at once: a larger log is built in slices of this many and put together
SLICE = 65536


@dataclass(frozen=True)
class Rule:
    """One kind of line: ``pattern`` is RE2 (``(?i)`` for case-insensitive) whose named groups
    fill the table's columns of the same name; unnamed groups must be ``(?:...)``. RE2 names a
    group once per pattern: in another alternative of the same pattern, ``group2`` fills
    ``group`` too (a trailing digit is dropped)."""

    kind: str
    pattern: str

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
    n = len(texts)
    which = _first_match(texts, rules)
    kinds = np.array([r.kind for r in rules] + [None], dtype=object)[np.where(which < 0, len(rules), which)]
    fields = sorted({f for r in rules for f in r.fields})
    cols = {f: np.full(n, None, object) for f in fields}
    for i, rule in enumerate(rules):
        sel = np.flatnonzero(which == i)
        if not len(sel) or not rule.fields:
            continue
        got = pc.extract_regex(texts.take(pa.array(sel)), rule.pattern)
        for g in rule.groups:
            vals = np.array(pc.struct_field(got, g).to_pylist(), dtype=object)
            vals[vals == ""] = None
            f = _ALT.sub("", g)
            cols[f][sel] = np.where(vals == None, cols[f][sel], vals)  # noqa: E711 - an alternative's fields fill the gaps
    return kinds, cols


def _first_match(texts: pa.Array, rules: Sequence[Rule]) -> np.ndarray:
    """Index of the first rule each text matches (-1 for none). Each rule runs only on the texts
    no earlier rule took, so with the common kinds first most lines cost one or two regex passes."""
    n = len(texts)
    which = np.full(n, -1, dtype=np.int16)
    for i, rule in enumerate(rules):
        todo = np.flatnonzero(which < 0)
        if not len(todo):
            break
        sub = texts if len(todo) == n else texts.take(pa.array(todo))
        ok = np.asarray(pc.match_substring_regex(sub, rule.pattern).to_numpy(zero_copy_only=False), bool)
        which[todo[ok]] = i
    return which


@dataclass
class Matches:
    """The records some rule matched, in record order: the records themselves (index from 0),
    their first lines, the kind of the rule each matched and every named field of every rule
    (object arrays, None where absent)."""

    events: pd.DataFrame
    first: pa.Array
    kinds: np.ndarray
    cols: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.kinds)

    def frame(self, columns: dict) -> pd.DataFrame:
        """The table: the record's time, then ``columns``, then its level, first line (500
        characters at most), host, file and line."""
        ev = self.events
        return pd.DataFrame(
            {
                "ts": ev["ts"],
                **columns,
                "level": ev["level"].astype("string"),
                "message": pd.array(pc.utf8_slice_codeunits(self.first, 0, 500), dtype=pd.StringDtype("pyarrow")),
                "host": ev["host"].astype("string"),
                "file": ev["file"].astype("string"),
                "line": ev["line"],
            }
        )


def match(events: pd.DataFrame, rules: Sequence[Rule], whole: Collection[str] = ()) -> Matches:
    """The records of ``events`` whose first line one of ``rules`` matches (the first rule that
    does gives the kind). The records no rule took are tried again on their whole message with
    the rules of the kinds in ``whole`` (a line that sits in a stack trace under a generic first
    line), their fields filling only what the first pass left empty."""
    msgs = arrow_messages(events)
    first = first_lines(msgs)
    kinds, cols = classify(first, rules)
    rest = np.flatnonzero(kinds == None) if whole else np.zeros(0, np.int64)  # noqa: E711
    if len(rest):
        k2, c2 = classify(msgs.take(pa.array(rest)), [r for r in rules if r.kind in whole])
        kinds[rest] = k2
        for f, vals in c2.items():
            cols[f][rest] = np.where(vals == None, cols[f][rest], vals)  # noqa: E711
    keep = np.flatnonzero(kinds != None)  # noqa: E711 - elementwise on an object array
    return Matches(
        events.iloc[keep].reset_index(drop=True),
        first.take(pa.array(keep)),
        kinds[keep],
        {k: v[keep] for k, v in cols.items()},
    )


def in_slices(build: Callable[[pd.DataFrame], pd.DataFrame]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """``build`` run on at most ``SLICE`` records at a time, the pieces put together in order (the
    regex kernels' intermediate arrays stay small however long the log)."""

    @functools.wraps(build)
    def run(events: pd.DataFrame) -> pd.DataFrame:
        if len(events) > SLICE:
            return pd.concat(
                [build(events.iloc[i : i + SLICE]) for i in range(0, len(events), SLICE)], ignore_index=True
            )
        return build(events)

    return run


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
