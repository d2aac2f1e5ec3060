"""Tables derived from log records (commits, configs, cleaner runs, tier-state events, ...).

An extractor names its table, says which records it wants by logger name, and builds its table
from those records. Selection runs on every block of events while a bundle streams in (it only
looks at the few distinct logger names, so it costs nearly nothing); ``build`` runs once at the
end on the selected records, so it may pair or group records across blocks.

Example:
    >>> @extractor("demo_rows", loggers=["kafka.Foo"])
    ... def demo_rows(events):
    ...     return events[["ts", "message", "host", "file", "line"]]
    >>> EXTRACTORS["demo_rows"].wants("kafka.Foo")
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import registry
from kitlib.extract import prefilter

RECORD_ORDER = ("host", "ts", "file", "line")


@dataclass
class Extractor:
    table: str
    build: Callable[[pd.DataFrame], pd.DataFrame]
    loggers: tuple[str, ...] = ()
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    match: Callable[[str], bool] | None = None
    contains: str | None = None  # RE2 pattern the message must match (applied with Arrow)
    blockwise: bool = False  # rows depend on one record each: built block by block as the log streams
    order: tuple[str, ...] = RECORD_ORDER  # how a blockwise table's rows are sorted once its blocks are joined
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def signature(self) -> tuple:
        """What the extractor selects; extractors with the same signature share one selection."""
        return (self.loggers, self.prefixes, self.suffixes, self.match, self.contains, self.blockwise)

    def wants(self, logger: str) -> bool:
        hit = self._cache.get(logger)
        if hit is None:
            hit = (
                logger in self.loggers
                or logger.startswith(self.prefixes or ("\0",))
                or logger.endswith(self.suffixes or ("\0",))
                or bool(self.match and self.match(logger))
            )
            self._cache[logger] = hit
        return hit


EXTRACTORS = registry.EXTRACTORS  # table -> Extractor, filled by extractor()


def extractor(
    table: str,
    loggers: Iterable[str] = (),
    prefixes: Iterable[str] = (),
    suffixes: Iterable[str] = (),
    match: Callable[[str], bool] | None = None,
    contains: str | None = None,
    blockwise: bool = False,
    order: Iterable[str] = RECORD_ORDER,
):
    """Register ``fn(events) -> DataFrame`` as the builder of ``table`` from the records whose
    logger is one of ``loggers``, starts with one of ``prefixes``, ends with one of
    ``suffixes``, or satisfies ``match``; with ``contains`` (a regex), only those of them whose
    message matches it (checked on whole blocks with Arrow, so a chatty logger costs little).
    ``blockwise`` says each row comes from one record alone (no pairing across records): the
    table is then built block by block while the log streams in, and only its rows are kept,
    not the records (a multi-GB request log need not be held); ``order`` is the sort its builder
    gives the rows of one block, applied again when the blocks' rows are put together."""

    def wrap(fn):
        EXTRACTORS[table] = Extractor(
            table, fn, tuple(loggers), tuple(prefixes), tuple(suffixes), match, contains, blockwise, tuple(order)
        )
        return fn

    return wrap


@dataclass(frozen=True)
class BuildError:
    """A table builder that failed (on one block while streaming, or at the end): the table is
    left empty and the rest of the bundle still loads."""

    table: str
    message: str


def groups() -> dict[str, str]:
    """table -> the name its selection is kept under (the first table with the same signature),
    so records two extractors both want (cleaner runs and cleaner events) are held once."""
    registry.load()
    first: dict[tuple, str] = {}
    return {name: first.setdefault(ex.signature, name) for name, ex in EXTRACTORS.items()}


# records of a blockwise group are built in batches of about this many (a builder's regexes are
# compiled once per call: per block of the log that cost more than the matching itself)
BATCH_ROWS = 65536

# a message pattern runs only on the rows holding one of the literals it needs (see
# kitlib.extract.prefilter), where those can be derived from it
PREFILTER = True


def select(block: pa.Table, picks: Callable[[str], bool] | None = None) -> dict[str, pa.Table]:
    """The records of an events block each selection group wants (see :func:`groups`); only the
    groups ``picks`` takes, when given."""
    col = block.column("logger").combine_chunks()
    if isinstance(col, pa.ChunkedArray):
        col = col.chunk(0) if col.num_chunks else pa.array([], pa.dictionary(pa.int32(), pa.string()))
    values = col.dictionary.to_pylist()
    idx = col.indices.to_numpy(zero_copy_only=False)
    # a block of one chunk (as the stream sends them) taken from as one record batch: Arrow's take
    # on a chunked column costs several times the take on its one array
    whole = block.to_batches()
    batch = whole[0] if len(whole) == 1 else block.combine_chunks().to_batches()[0] if len(block) else None
    message = batch.column("message") if batch is not None else block.column("message")
    out: dict[str, pa.Table] = {}
    for name in set(groups().values()):
        if picks is not None and not picks(name):
            continue
        ex = EXTRACTORS[name]
        want = np.array([ex.wants(v or "") for v in values], bool)
        if not want.any():
            continue
        rows = np.flatnonzero(want[idx])
        if len(rows) and ex.contains:
            lits = prefilter.necessary_literals(ex.contains) if PREFILTER else None
            if lits is not None:  # only the rows holding one of its literals can match: RE2 on them
                if 2 * len(rows) > len(idx):  # (most of the block: searched where it is)
                    rows = rows[prefilter.candidates(message, lits)[rows]]
                else:
                    rows = rows[prefilter.candidates(message.take(pa.array(rows)), lits)]
            if not len(rows):
                pass
            elif lits is None and 2 * len(rows) > len(idx):  # most of the block: matched where it is, not copied
                hit = pc.match_substring_regex(message, ex.contains)
                rows = rows[np.asarray(hit.to_numpy(zero_copy_only=False), bool)[rows]]
            else:  # only their messages copied out and matched; the records taken once, those that match
                texts = message.take(pa.array(rows))
                hit = pc.match_substring_regex(texts, ex.contains)
                rows = rows[np.asarray(hit.to_numpy(zero_copy_only=False), bool)]
        if len(rows):
            out[name] = pa.Table.from_batches([batch.take(pa.array(rows))]) if batch is not None else block.take(rows)
    return out


def build_blockwise(group: str, records: pa.Table) -> tuple[dict[str, pa.Table], list[BuildError]]:
    """Every table of a blockwise selection ``group`` built from some of its records (a batch
    of the log as it streams), as Arrow pieces in the table's one schema; and the builders that
    failed on them (their pieces are left out, the rest still loads)."""
    from kitlib import tables
    from kitlib.events import to_pandas

    frame = to_pandas(records)
    out: dict[str, pa.Table] = {}
    errors: list[BuildError] = []
    for table, g in groups().items():
        if g != group:
            continue
        try:
            out[table] = tables.to_arrow(table, tables.conform(table, EXTRACTORS[table].build(frame)))
        except Exception as e:  # noqa: BLE001 - reported at the end, the rest still loads
            errors.append(BuildError(table, f"{type(e).__name__}: {e}"))
    return out, errors


def iter_build(selected: dict[str, list[pa.Table]], to_pandas):
    """Run every extractor's ``build`` on its selected records (an empty frame when none),
    yielding ``(table, frame, error)`` one table at a time (``error`` is None or a
    :class:`BuildError` naming the builder's exception: the table is then empty and the rest of the bundle still loads). ``selected`` is
    consumed as it goes."""
    from kitlib import tables
    from kitlib.events import EVENTS_SCHEMA

    grp = groups()
    frames: dict[str, pd.DataFrame] = {}
    for name, ex in EXTRACTORS.items():
        g = grp[name]
        if ex.blockwise:  # already built block by block: put the pieces together in record order
            parts = selected.pop(name, None) or []  # kept under the table's own name (select)
            if not parts:
                yield name, tables.empty(name), None
                continue
            # each part was conformed and redacted when its block was built (select)
            df = tables.conform(name, pa.concat_tables(parts, promote_options="permissive").to_pandas(), redact=False)
            del parts
            yield name, df.sort_values(list(ex.order), kind="stable").reset_index(drop=True), None
            continue
        if g not in frames and not selected.get(g) and name in tables.SCHEMAS:
            yield name, tables.empty(name), None  # no records for it: nothing to build from
            continue
        if g not in frames:
            frames.clear()  # extractors sharing a selection are adjacent: keep one frame at a time
            parts = selected.pop(g, [])  # consumed: a spilled (memory-mapped) selection is let go
            t = pa.concat_tables([p.cast(parts[0].schema) for p in parts]) if parts else EVENTS_SCHEMA.empty_table()
            del parts
            # sorted in Arrow (host and file by name), so that pandas holds one copy of the records
            keys = [(k, "ascending") for k in ("host", "ts", "file", "line")]
            plain = t.select(["host", "ts", "file", "line"])
            plain = plain.cast(
                pa.schema(
                    [pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in plain.schema]
                )
            )
            if not _in_order(plain):  # the records of one log mostly are (the sort is stable)
                t = t.take(pc.sort_indices(plain, sort_keys=keys))
            del plain
            frames[g] = to_pandas(t)
            del t
        try:
            df = ex.build(frames[g])
            yield name, (tables.conform(name, df) if name in tables.SCHEMAS else df), None
        except Exception as e:  # noqa: BLE001 - reported, the rest of the bundle still loads
            yield (
                name,
                (tables.empty(name) if name in tables.SCHEMAS else pd.DataFrame()),
                BuildError(name, f"{type(e).__name__}: {e}"),
            )


def _in_order(keys: pa.Table) -> bool:
    """Whether the rows of ``keys`` (no nulls) already come in ascending order of its columns,
    compared as a tuple, from one comparison of each column with itself shifted by one row."""
    if keys.num_rows < 2 or any(c.null_count for c in keys.columns):
        return keys.num_rows < 2
    tied = None  # rows equal to the row before them on the columns so far
    for col in keys.columns:
        a, b = col.slice(1), col.slice(0, len(col) - 1)
        down = pc.less(a, b)
        if pc.any(down if tied is None else pc.and_(tied, down)).as_py():
            return False
        same = pc.equal(a, b)
        tied = same if tied is None else pc.and_(tied, same)
    return True


# --- vectorised helpers for builders: Arrow's regex kernels (RE2) over a whole message column ---


def arrow_messages(events: pd.DataFrame, rows: np.ndarray | None = None) -> pa.Array:
    """The ``message`` column (only ``rows``, when given) as one Arrow large_string array, with
    no Python string made and no copy of the rows left out."""
    col = pa.array(events["message"].astype("string").array, pa.large_string())
    if rows is not None:
        col = col.take(pa.array(rows, pa.int64()))
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def first_lines(messages: pa.Array) -> pa.Array:
    """Each message up to its first newline (stack traces and statistics blocks cut off).

    Example:
        >>> first_lines(pa.array(["a\\nb\\nc", "d", None])).to_pylist()
        ['a', 'd', None]
    """
    multi = _has_newline(messages)
    if multi is None:  # not a plain string array: the regex on every text
        return pc.replace_substring_regex(messages, pattern=r"\n[\s\S]*", replacement="")
    if not multi.any():
        return messages  # one line each (most of a broker log): nothing to cut
    mask = pa.array(multi)
    cut = pc.replace_substring_regex(messages.filter(mask), pattern=r"\n[\s\S]*", replacement="")
    return pc.replace_with_mask(messages, mask, cut)


# what a derived table's ``message`` holds of its record's: the first line, this many characters at most
QUOTE_CHARS = 500


def quotes(first: pa.Array) -> pa.Array:
    """First lines (:func:`first_lines`) as a derived table keeps them: :data:`QUOTE_CHARS`
    characters at most (sliced only when a text is longer than that in bytes: a character is at
    least one byte, so shorter texts are kept whole).

    Example:
        >>> [len(t) for t in quotes(pa.array(["é" * 600, "short"])).to_pylist()]
        [500, 5]
    """
    longest = pc.max(pc.binary_length(first)).as_py() if len(first) else None
    if (longest or 0) > QUOTE_CHARS:
        return pc.utf8_slice_codeunits(first, 0, QUOTE_CHARS)
    return first


try:  # the compiled cuts (_cut.c, built by setup.py where a C compiler is found): its newline search
    from kitlib.extract import _cut
except ImportError:  # pragma: no cover - an install without a compiler: numpy finds them
    _cut = None  # type: ignore[assignment]


def _has_newline(texts: pa.Array) -> np.ndarray | None:
    """Which texts hold a newline, from one scan of the array's bytes (None for an array that
    is not a plain string array)."""
    if not isinstance(texts, pa.Array) or not len(texts):
        return None
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        return None
    valid, obuf, dbuf = texts.buffers()
    if _cut is not None:  # one memchr over each row's bytes, in compiled code
        large = pa.types.is_large_string(texts.type)
        found = _cut.newlines(obuf, dbuf if dbuf is not None else b"", valid, texts.offset, len(texts), large)
        return np.frombuffer(found, np.bool_)
    width = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    offsets = np.frombuffer(obuf, width)[texts.offset : texts.offset + len(texts) + 1].astype(np.int64)
    if dbuf is None:
        return np.zeros(len(texts), bool)
    data = np.frombuffer(dbuf, np.uint8)[offsets[0] : offsets[-1]]
    at = np.flatnonzero(data == 10) + offsets[0]
    out = np.zeros(len(texts), bool)
    out[np.searchsorted(offsets, at, side="right") - 1] = True
    return out


def first_match(texts: pa.Array, patterns: list[str]) -> np.ndarray:
    """Index of the first pattern that matches each text (-1 for none).

    Example:
        >>> first_match(pa.array(["b here", "a and b", "none"]), ["a", "b"]).tolist()
        [1, 0, -1]
    """
    out = np.full(len(texts), -1, dtype=np.int16)
    for i in range(len(patterns) - 1, -1, -1):
        hit = pc.match_substring_regex(texts, patterns[i]).to_numpy(zero_copy_only=False)
        out[np.asarray(hit, dtype=bool)] = i
    return out


def groups_of(texts: pa.Array, pattern: str) -> list[list]:
    """The capture groups of ``pattern`` in each text, as one list per group (None where the text
    does not match or the group did not take part). Unnamed groups are fine.

    Example:
        >>> groups_of(pa.array(["Cleaner 0: log t-1", "x"]), r"Cleaner (\\d+): log (\\S+)")
        [['0', None], ['t-1', None]]
    """
    import re

    k = iter(range(10_000))
    named = re.sub(r"(?<!\\)\((?!\?)", lambda m: f"(?P<g{next(k)}>", pattern)
    named = re.sub(r"\(\?P<(\w+)>", lambda m: m.group(0) if m.group(1).startswith("g") else f"(?P<{m.group(1)}>", named)
    names = re.findall(r"\(\?P<(\w+)>", named)
    if not names or not len(texts):
        return [[None] * len(texts) for _ in names]
    got = pc.extract_regex(texts, "^(?s:.*?)(?:" + named + ")")  # one forward pass (see group_arrays)
    ok = pc.is_valid(got)
    out = []
    for n in names:
        vals = pc.struct_field(got, n)
        out.append(pc.if_else(pc.and_(ok, pc.not_equal(vals, "")), vals, pa.scalar(None, vals.type)).to_pylist())
    return out


def group_arrays(texts: pa.Array, pattern: str) -> list[pa.Array]:
    """:func:`groups_of` as Arrow string arrays, one per capture group (null where the text does
    not match or the group is empty or did not take part): no Python object per row.

    Example:
        >>> [a.to_pylist() for a in group_arrays(pa.array(["Cleaner 0: log t-1", "x"]), r"Cleaner (\\d+): log (\\S+)")]
        [['0', None], ['t-1', None]]
    """
    names = _group_names(pattern)
    if not names:
        return []
    if not len(texts):
        return [pa.array([], pa.string()) for _ in names]
    return _fields(_captures(texts, pattern), names)


def _named(pattern: str) -> str:
    """``pattern`` with its unnamed groups named g0, g1, ... (in order)."""
    k = iter(range(10_000))
    return re.sub(r"(?<!\\)\((?!\?)", lambda m: f"(?P<g{next(k)}>", pattern)


def _group_names(pattern: str) -> list[str]:
    return re.findall(r"\(\?P<(\w+)>", _named(pattern))


def _captures(texts: pa.Array, pattern: str) -> pa.Array:
    """One Arrow extraction of ``pattern``'s groups from each text (a null struct where it does not
    match): anchored behind a lazy prefix, the same leftmost match and groups as a search, found in
    one forward pass (Arrow's unanchored extraction costs about 1.6x as much)."""
    return pc.extract_regex(texts, "^(?s:.*?)(?:" + _named(pattern) + ")")


def _fields(got: pa.Array, names: list[str]) -> list[pa.Array]:
    """The groups of an extraction (:func:`_captures`), null where empty or absent."""
    out = []
    for n in names:
        v = pc.struct_field(got, n)
        out.append(pc.if_else(pc.not_equal(v, ""), v, pa.scalar(None, v.type)))
    return out


def rule_groups(
    texts: pa.Array, pattern: str, rows: np.ndarray, found: list[tuple[np.ndarray, pa.Array]] | None = None
) -> tuple[np.ndarray, list[pa.Array]]:
    """The capture groups of ``pattern`` (as :func:`group_arrays`) in the ``rows`` of ``texts``
    whose first rule it is, reusing the extractions :func:`first_rule_by_wording` made of some of
    them (``found``: its ``captures`` for this pattern): only the other rows are matched again.
    Returns the rows in the order of the groups (those found first, then the rest in order)."""
    names = _group_names(pattern)
    found = found or []
    if not found:
        return rows, group_arrays(texts.take(pa.array(rows, pa.int64())), pattern)
    done = np.concatenate([r for r, _ in found])
    rest = np.setdiff1d(rows, done, assume_unique=True)
    parts = [g for _, g in found]
    if len(rest):
        parts.append(_captures(texts.take(pa.array(rest, pa.int64())), pattern))
    got = pa.concat_arrays(parts)
    return np.concatenate([done, rest]), (_fields(got, names) if names else [])


def first_rule(texts: pa.Array, patterns: list[str]) -> np.ndarray:
    """:func:`first_match` (index of the first pattern each text matches, -1 for none) in few
    regex passes: each pattern is tried only on the texts no earlier pattern matched (the
    texts are copied out only when many of them are done with, not once per pattern), and when
    a sample of the texts shows many that no pattern matches, one pass of all the patterns
    joined sets those aside first (a joined pattern costs a few single ones: RE2 cannot skip
    ahead to a literal it must find) and the last pattern is then not tried at all.

    Example:
        >>> first_rule(pa.array(["b here", "a and b", "none"]), ["a", "b"]).tolist()
        [1, 0, -1]
    """
    out = np.full(len(texts), -1, dtype=np.int16)
    if not len(texts) or not patterns:
        return out
    rows = np.arange(len(texts))
    known = False  # every text left matches one of the patterns
    if len(patterns) > JOIN_COST and len(texts) >= 2 * SAMPLE:
        sample = np.linspace(0, len(texts) - 1, SAMPLE).astype(np.int64)
        unmatched = int((_in_turn(texts.take(pa.array(sample)), patterns, np.arange(SAMPLE), False)[0] < 0).sum())
        if unmatched * len(patterns) > JOIN_COST * SAMPLE:  # the joined pass saves more than it costs
            joined = "|".join(f"(?:{_UNNAMED.sub('(?:', p)})" for p in patterns)
            try:
                hit = hits(texts, joined)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # patterns RE2 cannot join
                hit = None
            if hit is not None:
                rows = rows[hit]
                texts = texts if len(rows) == len(out) else texts.filter(pa.array(hit))
                known = True
    which, rows = _in_turn(texts, patterns, rows, known)
    out[rows] = which
    return out


# a joined pattern costs about this many single ones; a sample of this many texts tells whether
# it pays (see first_rule)
JOIN_COST = 3
SAMPLE = 2048

# at most this many wording groups: the texts holding no pattern's key are found group by group, where
# needed, rather than in a pass over every text first (see first_rule_by_wording)
LAZY_GROUPS = 256

# a named group, made plain so that patterns naming the same group can be joined in one regex
_UNNAMED = re.compile(r"(?<!\\)\(\?P<\w+>")


def hits(texts: pa.Array, pattern: str) -> np.ndarray:
    """Whether each text matches ``pattern`` somewhere (bool per text). Where literals every
    match must hold can be derived from it (:mod:`kitlib.extract.prefilter`), RE2 runs only on
    the texts holding one of them: a builder's rules each take a pass over their texts, and most
    texts hold none of a rule's words."""
    lits = prefilter.necessary_literals(pattern) if PREFILTER and len(texts) >= PREFILTER_ROWS else None
    if lits is None:
        return _regex_hits(texts, pattern)
    cand = prefilter.candidates(texts, lits)
    rows = np.flatnonzero(cand)
    if 2 * len(rows) > len(texts):  # most of them: matched where they are, not copied
        return _regex_hits(texts, pattern) & cand
    out = np.zeros(len(texts), bool)
    if len(rows):
        out[rows] = _regex_hits(texts.take(pa.array(rows)), pattern)
    return out


# fewer texts than this are matched by RE2 alone (deriving a pattern's literals is not worth it)
PREFILTER_ROWS = 256


def _regex_hits(texts: pa.Array, pattern: str) -> np.ndarray:
    return np.asarray(pc.match_substring_regex(texts, pattern).to_numpy(zero_copy_only=False), bool)


def _in_turn(texts: pa.Array, patterns: list[str], rows: np.ndarray, known: bool) -> tuple[np.ndarray, np.ndarray]:
    """The first of ``patterns`` each of ``texts`` matches (-1 for none), tried in turn on the
    texts left, and ``rows`` (the text each answer is for) as given; ``known``: each text
    matches one of them (the last is then not tried)."""
    which = np.full(len(texts), -1, dtype=np.int16)
    left = np.ones(len(texts), bool)  # of the texts in ``cur``, those no pattern took yet
    at = np.arange(len(texts))  # the position in ``which`` of each text in ``cur``
    cur = texts
    for i, p in enumerate(patterns):
        if known and i == len(patterns) - 1:
            which[at[left]] = i
            break
        hit = hits(cur, p)
        hit &= left
        if hit.any():
            which[at[hit]] = i
            left &= ~hit
            if not left.any():
                break
            if 2 * int(left.sum()) < len(left):  # most of them done with: copy out the rest
                cur, at = cur.filter(pa.array(left)), at[left]
                left = np.ones(len(at), bool)
    return which, rows


def literal_keys(pattern: str) -> tuple[str, ...]:
    """Literal texts one of which every match of ``pattern`` holds (the longest run of plain
    characters the pattern always takes; one per branch of a pattern that is an alternation at
    its top), or ``()`` when the pattern has no such run."""
    import re._parser as sre  # type: ignore[import-not-found]

    def flat(items) -> list:  # a group without flags or repeat is its items in line
        out = []
        for op, arg in items:
            if op is sre.SUBPATTERN and not arg[1] and not arg[2]:
                out.extend(flat(arg[3]))
            else:
                out.append((op, arg))
        return out

    def runs(items) -> list[str]:
        out: list[str] = []
        cur = ""
        for op, arg in flat(items):
            if op is sre.LITERAL:
                cur += chr(arg)
            else:
                out.append(cur)
                cur = ""
        return [r for r in [*out, cur] if r]

    parsed = list(sre.parse(pattern))
    if len(parsed) == 1 and parsed[0][0] is sre.BRANCH:
        each = [max(runs(b), key=len, default="") for b in parsed[0][1][1]]
        return tuple(each) if all(each) else ()
    best = max(runs(parsed), key=len, default="")
    return (best,) if best else ()


def _literal(text: str) -> str:
    """``text`` as a regex matching it literally (RE2 and Python alike)."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def _value_codes(col: pd.Series) -> np.ndarray:
    """Integer codes of a column's values (-1: missing), without a Python object per row."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes.to_numpy(), np.int64)
    return np.asarray(pd.factorize(col, use_na_sentinel=True)[0], np.int64)


def wording_codes(events: pd.DataFrame) -> np.ndarray:
    """Which wording each record is, as far as the ingest tells (its template id, else its
    logger): records of one code are classified together (:func:`first_rule_by_wording`)."""
    logger = _value_codes(events["logger"]) if "logger" in events else np.zeros(len(events), np.int64)
    if "template_id" not in events:
        return logger
    tid = _value_codes(events["template_id"])
    return np.where(tid >= 0, tid, tid.max(initial=-1) + 1 + logger)


def may_match_earlier(texts: pa.Array, patterns: list[str], keys: list[tuple[str, ...]], r: int) -> np.ndarray:
    """Which of ``texts`` (each matched by ``patterns[r]``) may match an earlier pattern too, so
    that the first pattern each matches is not settled by ``r``: an earlier pattern whose literal
    key is part of one of ``r``'s (or holds it) is tried itself; the others only by their keys
    (a text holding none of them matches none of them).

    Example:
        >>> may_match_earlier(pa.array(["a x", "b x"]), ["a", "x"], [("a",), ("x",)], 1).tolist()
        [True, False]
    """
    doubt = np.zeros(len(texts), bool)
    others: list[str] = []
    for j in range(r):
        if any(kj in kr for kj in keys[j] for kr in keys[r]):  # it holds j's key: try j
            doubt |= hits(texts, patterns[j])
        else:
            others += keys[j]
    if others:
        doubt |= hits(texts, "|".join(_literal(k) for k in sorted(set(others))))
    return doubt


def first_rule_by_wording(
    texts: pa.Array,
    patterns: list[str],
    keys: list[tuple[str, ...]],
    hint: np.ndarray,
    captures: dict[int, list[tuple[np.ndarray, pa.Array]]] | None = None,
) -> np.ndarray:
    """Index of the first of ``patterns`` each text matches (-1: none), as
    :func:`first_rule` gives it, without trying every pattern on every text.

    A text holding none of the patterns' literal ``keys`` (:func:`literal_keys`) matches none
    (one pass over all texts; with few ``hint`` codes, one over each group whose first text no
    pattern matches, and over what a group leaves over). The rest is taken by groups of one ``hint`` code (one wording, as a rule): the
    pattern the group's first text matches is tried on the group at once, and a text it matches
    is that pattern's unless it may match an earlier one too (it holds that pattern's key, or
    its key is part of this one's: then that pattern is tried). What a group leaves over is
    taken the same way; texts that match nothing so found, or may match an earlier pattern, are
    tried on every pattern in order.

    With ``captures`` (a dict), a group's pass of its pattern extracts that pattern's groups
    (:func:`_captures`) rather than only matching it, and ``captures[r]`` collects ``(rows,
    extraction)`` of the texts so found to be pattern ``r``'s: :func:`rule_groups` then matches
    only the other texts of each pattern again."""
    out = np.full(len(texts), -1, dtype=np.int16)
    if not len(texts):
        return out
    if not all(keys):
        return first_rule(texts, patterns)
    any_key = "|".join(_literal(k) for k in sorted({k for ks in keys for k in ks}))
    # few groups (a template id each): the texts without a key are set aside group by group, only
    # in a group whose first text no pattern matches (a group of one rule's wording is spared it)
    lazy = len(np.unique(hint)) <= LAZY_GROUPS
    cand = np.arange(len(texts)) if lazy else np.flatnonzero(hits(texts, any_key))
    order = cand[np.argsort(hint[cand], kind="stable")]
    starts = np.flatnonzero(np.r_[True, hint[order][1:] != hint[order][:-1]])
    groups = np.split(order, starts[1:]) if len(order) else []
    todo = []
    for group in groups:
        left = np.sort(group)
        keyed = not lazy  # every text in ``left`` holds a key
        for _ in range(len(patterns) + 1):  # a new pattern each time round (or the keys once)
            if not len(left):
                break
            sample = texts[int(left[0])].as_py()
            r = -1 if sample is None else next((i for i, p in enumerate(patterns) if re.search(p, sample)), -1)
            if r < 0:
                if keyed:
                    break
                left = left[hits(texts.take(pa.array(left)), any_key)]  # (those without match nothing)
                keyed = True
                continue
            part = texts if len(left) == len(texts) else texts.take(pa.array(left))
            if captures is None:
                hit = hits(part, patterns[r])
            else:  # (a text the extraction does not match gets a null struct: as hits says)
                got = _captures(part, patterns[r])
                hit = np.asarray(pc.is_valid(got).to_numpy(zero_copy_only=False), bool)
            if not hit[0]:  # (Python's and Arrow's regexes disagree on it): in order, below
                todo.append(left[:1])
                left = left[1:]
                continue
            mine, left = left[hit], left[~hit]
            sub = texts if len(mine) == len(texts) else texts.take(pa.array(mine))
            doubt = may_match_earlier(sub, patterns, keys, r)
            todo.append(mine[doubt])
            out[mine[~doubt]] = r
            if captures is not None and not doubt.all():
                at = np.flatnonzero(hit)
                at = at if not doubt.any() else at[~doubt]
                kept = got if len(at) == len(got) else got.take(pa.array(at))
                captures.setdefault(r, []).append((mine[~doubt], kept))
        if not keyed and len(left):
            left = left[hits(texts.take(pa.array(left)), any_key)]
        todo.append(left)
    rest = np.sort(np.concatenate(todo)) if todo else np.zeros(0, np.int64)
    if len(rest):
        out[rest] = first_rule(texts.take(pa.array(rest)), patterns)
    return out
