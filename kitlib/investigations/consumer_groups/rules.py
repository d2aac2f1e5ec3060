"""Line rules shared by the client-side extractors: an ordered list of (kind, RE2 pattern with
named groups) run over a whole message column with Arrow's regex kernels, so a long log costs a
few passes of RE2 and no Python per line.

Example:
    >>> import pyarrow as pa
    >>> kinds, cols = classify(pa.array(["Stabilized group g generation 4", "noise"]),
    ...                        [Rule("stabilized", r"Stabilized group (?P<group>\\S+) generation (?P<generation>\\d+)")])
    >>> kinds.tolist(), cols["group"].tolist()
    (['stabilized', None], ['g', None])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_NAMES = re.compile(r"\(\?P<(\w+)>")


@dataclass(frozen=True)
class Rule:
    """One kind of line: ``pattern`` is RE2 (``(?i)`` for case-insensitive) whose named groups
    fill the table's columns of the same name; unnamed groups must be ``(?:...)``."""

    kind: str
    pattern: str

    @property
    def fields(self) -> list[str]:
        return _NAMES.findall(self.pattern)


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
        for f in rule.fields:
            vals = np.array(pc.struct_field(got, f).to_pylist(), dtype=object)
            vals[vals == ""] = None
            cols[f][sel] = vals
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


def to_int(values: np.ndarray) -> list:
    """Object array of digit strings (or None) -> ints (or None)."""
    return [None if v is None else int(v) for v in values]
