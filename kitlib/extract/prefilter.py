"""An exact literal prefilter for the message patterns of :func:`kitlib.extract.select`.

From a regex, :func:`necessary_literals` derives a few literal texts one of which every match
holds; :func:`candidates` then finds, in one compiled pass over an Arrow string array's bytes,
the rows that hold one of them (the only rows the regex can match), so that RE2 runs on those
rows alone. Nothing is guessed: where no such literals can be derived the pattern gets no
prefilter (``None``) and every row is a candidate.

With case-insensitive matching (``(?i)``, anywhere in the pattern) the literals are lower-cased
and the bytes compared ASCII-case-folded; RE2 then also matches a few characters outside ASCII
(U+212A, the Kelvin sign, for ``k``; U+017F, the long s, for ``s``), so a row holding any byte
outside ASCII is always a candidate.

Example:
    >>> necessary_literals(r"Shrinking ISR from (\\d+)|Expanding ISR from (\\d+)")
    Literals(texts=('Expanding ISR from ', 'Shrinking ISR from '), fold=False)
    >>> necessary_literals(r"(?i)rebalanc|heartbeat")
    Literals(texts=('heartbeat', 'rebalanc'), fold=True)
    >>> necessary_literals(r"\\d+ ms|x") is None  # a branch without a literal of 3 characters
    True
    >>> import pyarrow as pa
    >>> lits = necessary_literals(r"(?i)rebalanc|heartbeat")
    >>> candidates(pa.array(["Rebalancing group", "idle", None, "HEARTBEAT", "\\u212a"]), lits).tolist()
    [True, False, False, True, True]
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from itertools import product

import numpy as np
import pyarrow as pa

MIN_LENGTH = 3  # the shortest literal worth a prefilter (bytes)
MAX_SET = 64  # at most this many texts in a set a part of a pattern may match exactly
MAX_CLASS = 8  # a character class of at most this many characters is taken as alternatives
MAX_LITERALS = 512  # a prefilter of more literals than this is not derived
SCORE_CAP = 64  # of two sets of literals, the one whose shortest is longer (up to this) is kept

# what Python's parser reads otherwise than RE2 does (a POSIX class, a repeat without its lower
# bound, which RE2 takes as literal text; verbose mode): such a pattern gets no prefilter
_UNLIKE_RE2 = re.compile(r"\[:|\{,|\(\?[a-zA-Z-]*x")
_FOLD_FLAG = re.compile(r"\(\?[a-zA-Z]*i")


@dataclass(frozen=True)
class Literals:
    """Literal texts one of which every match of a pattern holds; ``fold``: compared with ASCII
    case folded (the texts lower-cased), rows with any byte outside ASCII always candidates."""

    texts: tuple[str, ...]
    fold: bool


@dataclass(frozen=True)
class _Info:
    """What a part of a pattern tells: ``exact`` every text it can match (a small finite set),
    else ``need`` texts one of which each of its matches holds (None: nothing known)."""

    exact: frozenset[str] | None = None
    need: frozenset[str] | None = None

    def needs(self) -> frozenset[str] | None:
        return self.exact if self.exact is not None else self.need


_NOTHING = _Info()
_EMPTY = _Info(exact=frozenset({""}))


def _score(texts: frozenset[str] | None) -> tuple[int, int]:
    """How good a set of necessary texts is as a prefilter: its shortest text (more is better,
    up to ``SCORE_CAP`` bytes: a longer literal is rarer), then the fewer texts the better."""
    if not texts:
        return (-1, 0)
    return (min(SCORE_CAP, min(len(t.encode()) for t in texts)), -len(texts))


def _best(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    return b if _score(b) > _score(a) else a


@functools.lru_cache(maxsize=4096)
def necessary_literals(pattern: str, min_length: int = MIN_LENGTH) -> Literals | None:
    """Literal texts one of which every text ``pattern`` matches holds, each at least
    ``min_length`` bytes long, or None where none can be derived (see the module's docstring)."""
    import re._constants as C  # type: ignore[import-not-found]
    import re._parser as sre  # type: ignore[import-not-found]

    if _UNLIKE_RE2.search(pattern) or not _re2_accepts(pattern):  # (RE2's error stays RE2's to raise)
        return None
    try:
        parsed = sre.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    if parsed.state.flags & C.SRE_FLAG_VERBOSE:
        return None
    # case folded where any part of the pattern turns it on (a scoped (?i:...) too)
    fold = bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE) or bool(_FOLD_FLAG.search(pattern))

    def char(code: int) -> _Info:
        c = chr(code)
        if fold:
            if code >= 0x80:  # (its case folding is RE2's, outside ASCII: no literal)
                return _NOTHING
            c = c.lower()
        return _Info(exact=frozenset({c}))

    def klass(items) -> _Info:
        chars: set[str] = set()
        for op, arg in items:
            if op is C.LITERAL:
                got = char(arg).exact
                if got is None:
                    return _NOTHING
                chars |= got
            elif op is C.RANGE and arg[1] - arg[0] < MAX_CLASS:
                for code in range(arg[0], arg[1] + 1):
                    got = char(code).exact
                    if got is None:
                        return _NOTHING
                    chars |= got
            else:  # a negation, a category (\d, \s, ...), a wide range
                return _NOTHING
        return _Info(exact=frozenset(chars)) if 0 < len(chars) <= MAX_CLASS else _NOTHING

    def seq(items) -> _Info:
        run: frozenset[str] | None = frozenset({""})  # exact texts of the items since the last inexact one
        best: frozenset[str] | None = None
        for op, arg in items:
            info = node(op, arg)
            if info.exact is not None and run is not None and len(run) * len(info.exact) <= MAX_SET:
                run = frozenset(a + b for a, b in product(run, info.exact))
                continue
            best = _best(best, run)
            best = _best(best, info.needs())
            run = info.exact  # (an exact set too big to join starts a run of its own)
        if best is None and run is not None:
            return _Info(exact=run)
        return _Info(need=_best(best, run))

    def alt(branches) -> _Info:
        infos = [seq(b) for b in branches]
        if all(i.exact is not None for i in infos):
            union = frozenset[str]().union(*(i.exact for i in infos if i.exact is not None))
            if len(union) <= MAX_SET:
                return _Info(exact=union)
        needs = [i.needs() for i in infos]
        if any(not n for n in needs):
            return _NOTHING
        return _Info(need=frozenset().union(*needs))  # type: ignore[arg-type]

    def node(op, arg) -> _Info:
        if op is C.LITERAL:
            return char(arg)
        if op is C.IN:
            return klass(arg)
        if op is C.SUBPATTERN:
            return seq(arg[3])
        if op is C.BRANCH:
            return alt(arg[1])
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = arg
            inner = seq(sub)
            if lo == 0:  # (an optional exact part is its texts or nothing)
                return _Info(exact=inner.exact | {""}) if hi == 1 and inner.exact is not None else _NOTHING
            if lo == hi == 1:
                return inner
            return _Info(need=inner.needs())  # (it matches at least once)
        if op is C.AT:
            return _EMPTY  # (an assertion takes no characters)
        return _NOTHING  # any character, a back reference, a look-around, ...

    try:
        info = seq(parsed)
    except RecursionError:
        return None
    texts = info.needs()
    if not texts or len(texts) > MAX_LITERALS or min(len(t.encode()) for t in texts) < min_length:
        return None
    # a text holding another is not needed: the shorter one is found wherever the longer one is
    kept = sorted(t for t in texts if not any(o != t and o in t for o in texts))
    return Literals(tuple(kept), fold)


def _re2_accepts(pattern: str) -> bool:
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""]), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def candidates(texts: pa.Array, literals: Literals, method: int = -1) -> np.ndarray:
    """Which rows of a string array may match the pattern ``literals`` was derived from (bool
    per row; a null row is not a candidate): those that hold one of its texts (with ``fold``,
    also those holding a byte outside ASCII). Compiled where the kit's C part is built, else
    with Arrow's literal search (``method``: the compiled search to use, see ``_prefilter.scan``;
    -1 the faster there is)."""
    if not len(texts):
        return np.zeros(0, bool)
    if isinstance(texts, pa.ChunkedArray):
        return (
            np.concatenate([candidates(c, literals, method) for c in texts.chunks])
            if texts.num_chunks
            else np.zeros(0, bool)
        )
    if pa.types.is_dictionary(texts.type):
        codes = texts.indices.fill_null(0).to_numpy(zero_copy_only=False)
        valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
        return candidates(texts.dictionary, literals, method)[codes] & valid if len(texts.dictionary) else valid & False
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    table = _compiled(literals)
    if table is None:
        return _arrow_candidates(texts, literals)
    from kitlib.formats.logs import _prefilter  # type: ignore[attr-defined]

    valid, offsets, data = texts.buffers()
    out = np.zeros(len(texts), np.uint8)
    _prefilter.scan(
        table,
        offsets,
        data if data is not None else b"",
        valid,
        texts.offset,
        len(texts),
        pa.types.is_large_string(texts.type),
        out,
        method,
    )
    return out.view(bool)


@functools.lru_cache(maxsize=64)
def _compiled(literals: Literals) -> bytes | None:
    """The compiled search table of ``literals`` (None without the kit's C part)."""
    try:
        from kitlib.formats.logs import _prefilter  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _prefilter.compile([t.encode() for t in literals.texts], literals.fold)


def _arrow_candidates(texts: pa.Array, literals: Literals) -> np.ndarray:
    """:func:`candidates` without the C part: one literal search per text (slower, same rows)."""
    import pyarrow.compute as pc

    hit = np.zeros(len(texts), bool)
    for t in literals.texts:
        got = pc.match_substring(texts, t, ignore_case=literals.fold)
        hit |= np.asarray(got.to_numpy(zero_copy_only=False), bool)
    if literals.fold:
        wide = pc.not_equal(pc.binary_length(texts), pc.utf8_length(texts))
        hit |= np.asarray(wide.to_numpy(zero_copy_only=False), bool)
    return hit
