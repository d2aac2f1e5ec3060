"""Each log record's Kafka log statement: the ``template_id`` and ``template_values`` columns of
``events``, matched against the catalogue of :mod:`kitlib.formats.logs.statements`.

Matching is vectorised with Arrow's RE2 kernels, one logger at a time: every template becomes an
anchored regex (its literal text, each slot a lazy wildcard, an optional prefix for Kafka's
``logIdent``/``LogContext`` such as ``[Partition orders-1 broker=3]``, and the end of the record's
first line). The records of a logger are split by halves of that logger's templates, one
``match_substring_regex`` pass per half (a record meets about ``1 + log2(n)`` passes for a
logger with ``n`` templates), the more specific template (more literal text) winning a tie.
Records of a Kafka logger that none of its own templates match (a base class's statement logged
under its subclass's name, a helper handed the caller's logger) are matched against the whole
catalogue in a second round. The values of the slots are then read with one ``extract_regex``
per template found, on demand (:func:`values`).

Where the compiled matcher (``_match.c``) is built, :func:`assign` takes the same steps in it
(:func:`_assign_compiled`): each block's shapes and digit-masked texts are hashed in one pass over
the message bytes, records are grouped by hash, a record is checked against its shape's template
by a search for the template's literal pieces, and new shapes are matched by their key words,
all without Arrow regexes; the tests hold it equal to the Arrow path, record for record.

``template_id`` is a template's *lineage*: when a release drops a template and the next release
of the same logger and level brings one that starts with the same words and holds (nearly) all
of the other's words, the two are one lineage, named by the oldest template's id. So Kafka
0.10's ``Shrinking ISR for partition [{},{}] from {} to {}`` and 3.9's ``Shrinking ISR from {}
to {}. Leader: (...)`` carry the same id; :func:`kitlib.formats.logs.lineage.lineage` gives the mapping.

Example:
    >>> import pyarrow as pa
    >>> t = pa.table({"logger": pa.array(["kafka.cluster.Partition"]).dictionary_encode(),
    ...               "message": pa.array(["[Partition t-0 broker=1] Shrinking ISR from 1,2 to 1"], pa.large_string())})
    >>> annotate(t).column("template_id").to_pylist()
    ['b4abe2983cc0']
    >>> values(t.column("logger"), t.column("message")).to_pylist()
    [['1,2', '1']]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.formats.logs.compiled import TOKEN, patterns

try:  # the compiled matcher (_match.c, built by setup.py where a C compiler is found)
    from kitlib.formats.logs import _match as _C
except ImportError:  # pragma: no cover - an install without a compiler
    _C = None  # type: ignore[assignment]

TEMPLATE_FIELD = pa.field("template_id", pa.dictionary(pa.int32(), pa.string()))
# loggers whose unmatched records are tried against the whole catalogue
KAFKA_LOGGERS = re.compile(r"^(kafka\.|org\.apache\.kafka\.|state\.change\.logger$)")
# text a record is matched on (its first characters; a stack trace past them is not read)
MATCH_CHARS = 4096
_PREFIX = r"^(?:[^\n]*?[\]:,)>] )?"
_END = r"\s*(?:\n|$)"
_SPECIAL = set("\\.^$|?*+()[]{}")
_BLANKS = re.compile(r"\s+")
# characters of a record searched for key words (a logIdent prefix and the first sentence)
KEY_CHARS = 512
# characters of a record that make its shape (records of one shape are matched once)
SHAPE_CHARS = 96
# shapes whose template is remembered between blocks (per process)
MEMO_SIZE = 200_000
_MEMO: dict[tuple[str, str | None] | int, int] = {}  # (logger, shape) -> template; int keys: the compiled path's


def _escape(text: str) -> str:
    out = []
    for part in re.split(r"(\s+)", text):
        if not part:
            continue
        if part.isspace():
            out.append(r"\s+")
        else:
            out.append("".join("\\" + c if c in _SPECIAL else c for c in part))
    return "".join(out)


def template_regex(template: str, capture: bool = False) -> str:
    """The RE2 pattern of a template (slots ``{}``), anchored at the record's start (after an
    optional prefix ending in ``] ``, ``: ``, ``, ``) and at the end of its first line; with
    ``capture`` each slot is a named group ``v0``, ``v1``, ..."""
    pieces = template.split("{}")
    out = [_escape(pieces[0].lstrip())]
    for i, p in enumerate(pieces[1:]):
        out.append(f"(?P<v{i}>.*?)" if capture else "(?:.*?)")
        out.append(_escape(p))
    body = "".join(out)
    if body.endswith(r"\s+"):
        body = body[:-3]
    return "(?s)" + _PREFIX + body + _END


@cache
def _regex(template: str) -> str:
    return template_regex(template)


def candidates(head: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(row, template) pairs whose template's key word is a word of the row's text."""
    p = patterns()
    tokens = pc.split_pattern_regex(head, TOKEN.pattern)
    flat = pc.list_flatten(tokens)
    parent = pc.list_parent_indices(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
    k = pc.index_in(flat, value_set=p.vocab)
    ok = k.is_valid().to_numpy(zero_copy_only=False)
    k = k.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)[ok]
    rows = parent[ok]
    code = np.unique(rows * len(p.vocab) + k)  # a word met twice in a record counts once
    rows, k = code // len(p.vocab), code % len(p.vocab)
    lo, hi = p.key_bounds[k], p.key_bounds[k + 1]
    n = hi - lo
    total = int(n.sum())
    step = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
    return np.repeat(rows, n), p.key_order[np.repeat(lo, n) + step]


def _verify(texts: pa.Array, rows: np.ndarray, tmpl: np.ndarray, out: np.ndarray) -> None:
    """Set ``out[row]`` to the first template (in order of specificity) of its candidates that
    its text matches, one regex pass per candidate template."""
    if len(rows) == 0:
        return
    p = patterns()
    order = np.lexsort((rows, tmpl))
    rows, tmpl = rows[order], tmpl[order]
    cut = np.flatnonzero(np.diff(tmpl)) + 1
    for r, t in zip(np.split(rows, cut), tmpl[np.r_[0, cut]]):
        r = r[out[r] < 0]
        if len(r) == 0:
            continue
        hit = pc.match_substring_regex(texts.take(pa.array(r)), _regex(p.templates[t]))
        out[r[np.asarray(hit.to_numpy(zero_copy_only=False), bool)]] = t


def _codes(logger: pa.Array) -> tuple[list[str], np.ndarray]:
    if isinstance(logger, pa.ChunkedArray):  # a block's one chunk as it is, not copied
        logger = logger.chunk(0) if logger.num_chunks == 1 else logger.combine_chunks()
    if not pa.types.is_dictionary(logger.type):
        logger = pc.dictionary_encode(logger)
    names = [x or "" for x in logger.dictionary.to_pylist()]
    if logger.indices.null_count == 0 and logger.dictionary.null_count == 0:  # the common case: as they are
        return names, logger.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    codes = logger.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return names, np.where(logger.is_null().to_numpy(zero_copy_only=False), len(names), codes)


def _assign(names: list[str], codes: np.ndarray, message: pa.Array) -> np.ndarray:
    p = patterns()
    out = np.full(len(message), -1, np.int64)
    known = np.array([p.loggers.get(x, -1) for x in names] + [-1], np.int64)
    kafka = np.array([bool(KAFKA_LOGGERS.match(x)) for x in names] + [False], bool)
    glog = known[codes]
    sel = np.flatnonzero((glog >= 0) | kafka[codes])
    if len(sel) == 0:
        return out
    rows, tmpl = candidates(pc.utf8_slice_codeunits(message.take(pa.array(sel)), 0, KEY_CHARS))
    rows = sel[rows]
    texts = _head(message)
    own = np.isin(glog[rows] * len(p.templates) + tmpl, p.pairs) & (glog[rows] >= 0)
    _verify(texts, rows[own], tmpl[own], out)
    rest = ~own & (out[rows] < 0) & kafka[codes[rows]]
    _verify(texts, rows[rest], tmpl[rest], out)
    return out


def _without_digits(texts: pa.Array) -> pa.Array:
    """The texts with their ASCII digits left out: one pass of numpy over the bytes (a tenth of
    what RE2's replace costs)."""
    texts = texts.cast(pa.large_string())
    if texts.offset:
        texts = pa.concat_arrays([texts])  # a fresh array, its offsets from 0
    off = np.frombuffer(texts.buffers()[1], np.int64)[: len(texts) + 1]
    data = texts.buffers()[2]
    raw = np.frombuffer(data, np.uint8)[off[0] : off[-1]] if data is not None else np.zeros(0, np.uint8)
    digit = (raw >= 48) & (raw <= 57)
    at = np.flatnonzero(digit)  # digits are few: their positions, not a running count of every byte
    new_off = (off - off[0]) - np.searchsorted(at, off - off[0])
    return pa.LargeStringArray.from_buffers(
        len(texts), pa.py_buffer(new_off), pa.py_buffer(raw[~digit].tobytes()), texts.buffers()[0], texts.null_count
    )


def _head(texts: pa.Array) -> pa.Array:
    """The first :data:`MATCH_CHARS` characters of each text (the texts themselves when none is
    longer in bytes, the common case: no slicing pass)."""
    if len(texts) == 0 or (pc.max(pc.binary_length(texts)).as_py() or 0) <= MATCH_CHARS:
        return texts
    return pc.utf8_slice_codeunits(texts, 0, MATCH_CHARS)


def _digits_as_zero(texts: pa.Array) -> pa.Array:
    """The texts with every ASCII digit written as ``0`` (same lengths, same offsets)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = texts.cast(pa.large_string())
    if texts.offset:
        texts = pa.concat_arrays([texts])
    off = np.frombuffer(texts.buffers()[1], np.int64)[: len(texts) + 1]
    data = texts.buffers()[2]
    raw = memoryview(data)[off[0] : off[-1]].tobytes().translate(_ZERO) if data is not None else b""
    return pa.LargeStringArray.from_buffers(
        len(texts), pa.py_buffer(off - off[0]), pa.py_buffer(raw), texts.buffers()[0], texts.null_count
    )


_ZERO = bytes(range(48)) + b"0" * 10 + bytes(range(58, 256))  # byte -> byte, each ASCII digit -> "0"
_DIGIT = re.compile(r"[0-9]")


@cache
def _with_digits() -> np.ndarray:
    """Which templates hold an ASCII digit of their own (and one more entry, False)."""
    return np.array([_DIGIT.search(t) is not None for t in patterns().templates] + [False], bool)


def _still_match(distinct: pa.Array, code: np.ndarray, tmpl: np.ndarray, texts: pa.Array) -> np.ndarray:
    """Whether each text (``texts[i]``, or ``distinct[code[i]]`` with its digits written as ``0``)
    matches its template ``tmpl[i]``.

    A template's pattern tells no ASCII digit from another unless its own text holds one (its
    literal characters, ``\\s``, the prefix's ``[^\\n]`` and the slots' ``.`` each take all ten or
    none), so for such templates each distinct masked text is tried once per template and the answer
    given to all its records; the few templates with digits see every text as it is."""
    p = patterns()
    ok = np.zeros(len(code), bool)
    digits = _with_digits()
    plain = np.flatnonzero(~digits[tmpl])
    m = len(distinct) + 1
    pair, inv = np.unique(tmpl[plain] * m + code[plain], return_inverse=True)
    ptmpl, ptext = pair // m, pair % m
    pok = np.zeros(len(pair), bool)
    cut = np.flatnonzero(np.diff(ptmpl)) + 1
    for pos in np.split(np.arange(len(pair)), cut):
        if len(pos):
            hit = pc.match_substring_regex(distinct.take(pa.array(ptext[pos])), _regex(p.templates[ptmpl[pos[0]]]))
            pok[pos] = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
    ok[plain] = pok[inv.reshape(-1)]
    rest = np.flatnonzero(digits[tmpl])
    if len(rest):
        order = rest[np.argsort(tmpl[rest], kind="stable")]
        cut = np.flatnonzero(np.diff(tmpl[order])) + 1
        for pos in np.split(order, cut):
            hit = pc.match_substring_regex(texts.take(pa.array(pos)), _regex(p.templates[tmpl[pos[0]]]))
            ok[pos] = np.asarray(hit.to_numpy(zero_copy_only=False), bool)
    return ok


def assign(logger: pa.Array, message: pa.Array) -> np.ndarray:
    """Template index per record (-1 for none): the templates of the record's own logger first,
    then, for a Kafka logger's records still without one, those of every logger.

    Records are matched once per *shape* (logger and the first :data:`SHAPE_CHARS` characters with
    digits left out); every other record of a shape is then checked against its shape's template
    in one regex pass per template, and the few that fail are matched on their own.

    The texts are first told apart with their digits written as ``0`` (a storm's records differ
    mostly in numbers: about one in nine is distinct in the generated log); shapes are cut from
    the distinct texts only, and the check against a shape's template is made once per distinct
    text (see :func:`_still_match`), the answer broadcast back to every record."""
    if isinstance(message, pa.ChunkedArray):
        message = message.combine_chunks()
    if len(message) and _compiled():
        return _assign_compiled(logger, message)
    return _assign_arrow(logger, message)


def _long_prefix(texts: pa.Array) -> np.ndarray:
    """Whether each text opens with a bracketed prefix (``[LogLoader partition=..., dir=...] ``)
    that leaves less than half of the shape's characters to the sentence after it."""
    head = pc.utf8_slice_codeunits(texts, 0, SHAPE_CHARS + 2)
    end = pc.find_substring(head, "] ").fill_null(-1).to_numpy(zero_copy_only=False)
    starts = pc.starts_with(head, "[").fill_null(False).to_numpy(zero_copy_only=False)
    return starts & (end + 2 > SHAPE_CHARS // 2)


def _may_have_long_prefix(data: np.ndarray, off: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Which texts ``rows`` (their bytes ``data[off[r]:off[r + 1]]``) :func:`_long_prefix` may
    find a long prefix in: those opening with "[" and without "] " at a byte offset of at most
    ``SHAPE_CHARS // 2 - 2`` (an earlier "] " is the first one found, which ends the prefix too
    soon). Read from the first bytes of each text only (in C), so the few left are checked by Arrow."""
    rows = np.ascontiguousarray(rows, np.int64)
    width = SHAPE_CHARS // 2  # bytes that hold a "] " starting at offset SHAPE_CHARS // 2 - 2
    return np.frombuffer(_C.prefixes(np.ascontiguousarray(off, np.int64), data, rows, width), np.bool_)


def _assign_arrow(logger: pa.Array, message: pa.Array) -> np.ndarray:
    """:func:`assign` with Arrow's kernels only (where the compiled matcher is not built; the
    reference it is tested against)."""
    n = len(message)
    if n == 0:
        return np.full(0, -1, np.int64)
    if isinstance(message, pa.ChunkedArray):
        message = message.combine_chunks()
    names, codes = _codes(logger)
    head = _head(message)
    enc = pc.dictionary_encode(_digits_as_zero(head))
    distinct = enc.dictionary
    valid = enc.indices.is_valid().to_numpy(zero_copy_only=False)
    tcode = enc.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    tcode[~valid] = len(distinct)  # a null message: a shape of its own (None)
    senc = pc.dictionary_encode(_without_digits(pc.utf8_slice_codeunits(distinct, 0, SHAPE_CHARS)))
    shape_names = senc.dictionary.to_pylist() + [None]
    shape = np.append(senc.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(shape_names) - 1)[tcode]
    key = shape * (len(names) + 1) + codes
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    # shapes met in earlier blocks keep their template (one lookup per distinct shape)
    keys = list(zip([names[c] if c < len(names) else "" for c in codes[first]], [shape_names[c] for c in shape[first]]))
    rep = np.array([_MEMO.get(k, -2) for k in keys], np.int64)
    new = np.flatnonzero(rep == -2)
    if len(new):
        rep[new] = _assign(names, codes[first[new]], message.take(pa.array(first[new])))
        if len(_MEMO) > MEMO_SIZE:
            _MEMO.clear()
        _MEMO.update(zip([keys[i] for i in new], rep[new].tolist()))
    out = rep[inv]
    # the other records of each shape, checked against their shape's template
    others = np.ones(n, bool)
    others[first] = False
    rows = np.flatnonzero(others & (out >= 0))
    bad = np.zeros(n, bool)
    bad[rows[~valid[rows]]] = True  # a null text matches nothing
    rows = rows[valid[rows]]
    if len(rows):
        bad[rows] = ~_still_match(distinct, tcode[rows], out[rows], head.take(pa.array(rows)))
    redo = np.flatnonzero(bad)
    if len(redo):
        out[redo] = _assign(names, codes[redo], message.take(pa.array(redo)))
    # a Kafka logger's record left without a template by its shape, whose logIdent prefix takes up
    # most of the shape (one such shape may hold several sentences): each distinct (logger, masked
    # text) not matched on its own yet is
    alone = np.zeros(n, bool)
    alone[first[new]] = True
    alone[redo] = True
    kafka = np.array([bool(KAFKA_LOGGERS.match(x)) for x in names] + [False], bool)[codes]
    retry = np.flatnonzero(~alone & (out < 0) & valid & kafka)
    retry = retry[_long_prefix(head.take(pa.array(retry)))] if len(retry) else retry
    if len(retry):
        _, one, back = np.unique(tcode[retry] * (len(names) + 1) + codes[retry], return_index=True, return_inverse=True)
        out[retry] = _assign(names, codes[retry[one]], message.take(pa.array(retry[one])))[back.reshape(-1)]
    return out


def pieces(template: str) -> list[bytes]:
    """A template as the compiled matcher reads it: its text between slots, UTF-8, each run of
    blanks a zero byte (``\\s+``), written as :func:`template_regex` writes its pattern (the first
    piece without leading blanks, the last without trailing ones)."""
    out = []
    for i, part in enumerate(template.split("{}")):
        text = part.lstrip() if i == 0 else part
        out.append(_BLANKS.sub("\0", text).encode())
    if out[-1].endswith(b"\0"):
        out[-1] = out[-1][:-1]
    return out


@cache
def _compiled() -> bool:
    """Whether the compiled matcher is there, with the catalogue loaded into it (once per process).
    ``KITLIB_TEMPLATE_C=0`` leaves it out (the Arrow path, to compare)."""
    if _C is None or os.environ.get("KITLIB_TEMPLATE_C", "").strip().lower() in ("0", "false", "no"):
        return False
    if not hasattr(_C, "lookup"):  # a build older than this module: the Arrow path
        return False
    p = patterns()
    progs = [pieces(t) for t in p.templates]
    if any("\0" in t for t in p.templates):  # a zero byte of its own: not a program the matcher can read
        return False
    _C.load(progs, [w.encode() for w in p.vocab.to_pylist()], np.ascontiguousarray(p.key_order, np.int64),
            np.ascontiguousarray(p.key_bounds, np.int64), np.ascontiguousarray(p.pairs, np.int64),
            len(p.templates))  # fmt: skip
    return True


_NAMES: dict[str, int] = {}  # logger name -> a number, for the compiled path's memo keys
# the memo of shapes the compiled matcher's remembered texts were checked against, and its size
# then: a memo replaced or emptied since (by its own limit, or by a caller) empties them too
_TIED: list = [None, 0]


@dataclass(frozen=True)
class _Loggers:
    """What the compiled path needs of a block's logger names (the last entry: a null logger)."""

    glog: np.ndarray  # the catalogue's logger index, -1 for none
    kafka: np.ndarray  # 1 for a Kafka logger (its unmatched records tried against the whole catalogue)
    name: np.ndarray  # the name's number in _NAMES


_LOGGERS: dict[tuple[str, ...], _Loggers] = {}  # a block's logger names -> what is read of them


_NAME_INFO: dict[str, tuple[int, int, int]] = {}  # a logger name -> its catalogue index, Kafka flag, number


def _name_info(name: str) -> tuple[int, int, int]:
    got = _NAME_INFO.get(name)
    if got is None:
        got = _NAME_INFO[name] = (patterns().loggers.get(name, -1), int(bool(KAFKA_LOGGERS.match(name))),
                                  _NAMES.setdefault(name, len(_NAMES)))  # fmt: skip
    return got


def _loggers(names: list[str]) -> _Loggers:
    """:class:`_Loggers` of a block's logger names, worked out once per distinct list of names
    (blocks of one log mostly share it), each name once per process."""
    key = tuple(names)
    got = _LOGGERS.get(key)
    if got is None:
        info = np.array([_name_info(x) for x in names] + [(-1, 0, _name_info("")[2])], np.int64).reshape(-1, 3)
        got = _Loggers(np.ascontiguousarray(info[:, 0]), info[:, 1].astype(np.uint8), info[:, 2].astype(np.uint64))
        if len(_LOGGERS) > 1000:
            _LOGGERS.clear()
        _LOGGERS[key] = got
    return got


def _assign_compiled(logger: pa.Array, message: pa.Array) -> np.ndarray:
    """:func:`assign` with the compiled matcher: the same steps, decisions and memo as
    :func:`_assign_arrow`, so the same templates. A shape is a 64-bit hash of its characters (made
    in C), each record is checked against its shape's template by a search for the template's
    literal pieces (in C, on the text as it is: that is what the check per text with digits as 0
    amounts to), and records are matched on their own by their key words in C. No Arrow regex,
    no pass over the texts in Python.

    Texts met in earlier blocks are looked up first (in C, by logger and a hash of the text with
    digits as 0): a remembered text takes its template without its shape being hashed or the text
    checked again. A text is remembered only where every text with that hash and logger gets the
    same template from the steps above for as long as the memo of shapes keeps its shape: it was
    checked against its shape's template, which has no digit of its own (it cannot tell texts with
    the same hash apart), or its shape has no template and no later step matches it alone. Both
    memos are emptied together.

    A remembered text still counts for its shape's first record (the record a new shape is matched
    on, the one not checked against the shape's template); past that, only the texts not
    remembered (about one in seven of a block of the generated log) are worked on.

    All of it is one compiled call a block (``_match.block``): both memos live in C (the memo of
    shapes emptied past :data:`MEMO_SIZE` shapes, as the dict was), and :data:`_MEMO` holds only a
    mark, so that a caller replacing or emptying it empties the compiled memos too. Every text is
    hashed, but the memo of texts is looked up, a shape made and a text kept for later blocks once
    per distinct text of the block (its hash and logger: about one record in eight of the generated
    log); the shapes are grouped over the distinct texts in order of their first records, which
    gives each shape the same first record as grouping every record does."""
    n = len(message)
    text = message if message.type == pa.large_string() else message.cast(pa.large_string())
    off = np.frombuffer(text.buffers()[1], np.int64)[text.offset : text.offset + n + 1]
    data = text.buffers()[2] if text.buffers()[2] is not None else b""
    flags = (
        None if text.null_count == 0 else np.ascontiguousarray(text.is_valid().to_numpy(zero_copy_only=False), np.uint8)
    )
    names, codes = _codes(logger)
    lg = _loggers(names)
    if _TIED[0] is not _MEMO or len(_MEMO) < _TIED[1]:
        _C.forget()
    _MEMO[-1] = -1  # the mark (no shape's key is negative)
    _TIED[:] = [_MEMO, len(_MEMO)]
    raw = _C.block(
        off, data, SHAPE_CHARS, np.ascontiguousarray(codes, np.int64), lg.glog, lg.kafka, lg.name, flags, MEMO_SIZE
    )
    return np.frombuffer(raw, np.int64)


def _values(texts: pa.Array, template: str) -> pa.Array:
    """The slots' values of texts known to match ``template``, as a list<string> array."""
    n, k = len(texts), template.count("{}")
    if k == 0:
        return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], pa.string()))
    s = pc.extract_regex(texts, template_regex(template, capture=True))
    fields = [s.field(i).cast(pa.string()) for i in range(k)]
    flat = pa.concat_arrays(fields)
    order = (np.arange(n)[:, None] + np.arange(k)[None, :] * n).ravel()
    return pa.ListArray.from_arrays(pa.array(np.arange(0, n * k + 1, k, dtype=np.int32)), flat.take(pa.array(order)))


def annotate(events: pa.Table) -> pa.Table:
    """``events`` with the ``template_id`` column (null where no template of the catalogue
    matches); an events table that has it is returned as it is."""
    if "template_id" in events.column_names:
        return events
    if os.environ.get("KITLIB_TEMPLATE_IDS", "").strip().lower() in ("0", "false", "no"):
        # matching off (to measure what it costs): the column is there, all null
        return events.append_column(TEMPLATE_FIELD, pa.nulls(events.num_rows, TEMPLATE_FIELD.type))
    msg = events.column("message")
    if isinstance(msg, pa.ChunkedArray):  # a block's one chunk is taken as it is, not copied
        msg = msg.chunk(0) if msg.num_chunks == 1 else msg.combine_chunks()
    found = assign(events.column("logger"), msg)
    p = patterns()
    used = np.flatnonzero(np.bincount(found + 1, minlength=len(p.templates) + 1)[1:])
    lineages = sorted({p.ids[t] for t in used})
    at = {x: i for i, x in enumerate(lineages)}
    lut = np.full(len(p.templates) + 1, -1, np.int32)
    for t in used:
        lut[t] = at[p.ids[t]]
    code = lut[found]  # -1 -> the last entry, -1
    valid = code >= 0
    nulls = len(code) - int(np.count_nonzero(valid))
    bits = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    index = pa.Array.from_buffers(pa.int32(), len(code), [bits, pa.py_buffer(code)], null_count=nulls)
    # every index is one of the lineages' by construction: not checked again
    tid = pa.DictionaryArray.from_arrays(index, pa.array(lineages, pa.string()), safe=False)
    return events.append_column(TEMPLATE_FIELD, tid)


def values(logger: pa.Array, message: pa.Array) -> pa.Array:
    """The values in the slots of each record's template, in order, as a ``list<string>`` array
    (null where no template matches): one ``extract_regex`` per template found, on demand (:func:`values`). Read on demand
    (by :mod:`kitlib.changes`), not stored in ``events``: at ingest it cost 20-50 us a record."""
    if isinstance(message, pa.ChunkedArray):
        message = message.combine_chunks()
    n = len(message)
    found = assign(logger, message)
    p = patterns()
    texts = _head(message)
    order = np.argsort(found, kind="stable")
    cut = np.flatnonzero(np.diff(found[order])) + 1
    pieces, where = [], []
    for rows in np.split(order, cut):
        if len(rows) and found[rows[0]] >= 0:
            pieces.append(_values(texts.take(pa.array(rows)), p.templates[found[rows[0]]]))
            where.append(rows)
    pieces.append(pa.array([None], pa.list_(pa.string())))
    allv = pa.concat_arrays(pieces)
    pos = np.full(n, len(allv) - 1, np.int64)
    if where:
        got = np.concatenate(where)
        pos[got] = np.arange(len(got))
    return allv.take(pa.array(pos))
