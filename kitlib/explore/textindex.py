"""A trigram index of the stored events' messages, so that a full-text search reads only the parts
of a big store that can hold a hit.

Each row group of ``events.parquet`` is cut into :data:`PARTS` parts of consecutive rows. For every
part the index records which trigrams (three consecutive bytes, letters folded to lower case, the
rest of ASCII in a few classes) its messages hold: per row group, the sorted trigram codes present
and, for each, a 64-bit mask of the parts that hold it. A search for a plain text, or a regular
expression with literal text it cannot match without, needs every trigram of that text in the
same part: the parts that lack one are skipped, the row groups without a candidate part are never
read, and the search itself (:func:`kitlib.explore.query.search`, the same DuckDB query) runs over
the candidate parts only. So the hits are exactly those of a scan of everything: the index only
says where a hit cannot be. A part that holds a byte outside ASCII is always read (a Unicode
``lower()`` can turn such a letter into an ASCII one, as the Kelvin sign becomes ``k``).

The index is built on first use, one row group at a time (a bounded buffer), and kept beside the
store (``<store>/.index/trigrams.npz``, a few MB for 1 GB of logs), never in the bundle; it is
rebuilt when ``events.parquet`` changes (size or modification time). A store written as a folder of
files per host (a Dask ingest) has none: its searches scan everything, as before.

Example:
    >>> codes(b"Abc.")      # 'abc' and 'bc.'
    array([4227, 8422], dtype=int32)
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PARTS = 64  # parts per row group (one bit each in a mask)
BITS = 6  # bits per symbol: a trigram code has 18
MOST = 0.5  # when more than this share of the row groups must be read, the plain scan is as fast
SLICE = 16  # parts handled at a time while building (bounds the buffers to a quarter of a row group)

_LOCK = threading.Lock()


def _table() -> np.ndarray:
    """Byte -> symbol: a-z and A-Z 1-26, digits 27-36, common punctuation 37-62, anything else of
    ASCII 63, bytes past ASCII 0."""
    t = np.full(256, 63, np.uint8)
    t[128:] = 0
    for i, c in enumerate(range(ord("a"), ord("z") + 1)):
        t[c] = t[c - 32] = 1 + i
    for i, c in enumerate(range(ord("0"), ord("9") + 1)):
        t[c] = 27 + i
    for i, ch in enumerate(" .,:;-_=[](){}/\\\"'<>@#+*\t\n"):
        t[ord(ch)] = 37 + i
    return t


SYMBOLS = _table()


def codes(text: bytes) -> np.ndarray:
    """The trigram codes of ``text`` (bytes), in order, duplicates kept."""
    s = SYMBOLS[np.frombuffer(text, np.uint8)].astype(np.int32)
    if len(s) < 3:
        return np.zeros(0, np.int32)
    return (s[:-2] << (2 * BITS)) | (s[1:-1] << BITS) | s[2:]


def needed(text: str) -> np.ndarray:
    """The distinct trigram codes a message must hold to contain ``text`` (in any case), leaving
    out those with a byte past ASCII (see the module doc)."""
    raw = text.encode("utf-8", "surrogatepass")
    sym = SYMBOLS[np.frombuffer(raw, np.uint8)]
    c = codes(raw)
    if not len(c):
        return c
    ascii_only = (sym[:-2] > 0) & (sym[1:-1] > 0) & (sym[2:] > 0)
    return np.unique(c[ascii_only])


def literals(pattern: str) -> list[str]:
    """Runs of literal text that every match of the RE2 ``pattern`` contains (read with Python's
    parser; none when it reads the pattern otherwise than RE2 may, or not at all).

    Example:
        >>> literals(r"Rolled new log segment at offset 9\\d{5} ")
        ['Rolled new log segment at offset 9', ' ']
        >>> literals("fenced|shrinking"), literals("[[:alpha:]]x")
        ([], [])
    """
    if "[:" in pattern or re.search(r"\\[QECpPz]", pattern):
        return []
    try:
        from re import _parser  # type: ignore[attr-defined]  # the standard library's own parser of patterns

        parsed = _parser.parse(pattern)
    except Exception:  # noqa: BLE001 - any pattern Python cannot read: no pruning, the scan still answers
        return []
    out: list[str] = []

    def walk(seq) -> None:
        run: list[str] = []
        for op, arg in seq:
            name = str(op)
            if name == "LITERAL":
                run.append(chr(arg))
                continue
            if run:
                out.append("".join(run))
                run = []
            if name == "SUBPATTERN":
                walk(arg[-1])
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") and arg[0] >= 1:
                walk(arg[2])
        if run:
            out.append("".join(run))

    walk(parsed)
    return out


@dataclass
class Index:
    """The trigram index of one ``events.parquet`` (see the module doc)."""

    starts: np.ndarray  # per row group: its first row in the file (one more entry: the rows in all)
    sets: np.ndarray  # per row group: where its codes and masks start in ``codes``/``masks`` (+ the end)
    codes: np.ndarray  # int32, sorted within each row group
    masks: np.ndarray  # uint64: the parts of the row group holding that code
    always: np.ndarray  # uint64 per row group: parts read whatever the text (bytes past ASCII)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.starts, self.sets, self.codes, self.masks, self.always))

    def parts(self, want: np.ndarray) -> np.ndarray:
        """Per row group, the mask of parts that may hold all trigram codes ``want``."""
        out = np.zeros(len(self.always), np.uint64)
        for g in range(len(self.always)):
            lo, hi = int(self.sets[g]), int(self.sets[g + 1])
            have = self.codes[lo:hi]
            at = np.searchsorted(have, want)
            ok = at < len(have)
            m = np.uint64(0)
            if ok.all() and (have[at] == want).all():
                m = np.bitwise_and.reduce(self.masks[lo:hi][at]) if len(want) else ~np.uint64(0)
            out[g] = m | self.always[g]
        return out


def _part_rows(rows: int) -> int:
    return max(1, -(-rows // PARTS))


def build(path: Path) -> Index:
    """The index of the Parquet file ``path`` (its ``message`` column), one row group at a time."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    starts, sets, all_codes, all_masks, always = [0], [0], [], [], []
    grid = np.zeros((1 << (3 * BITS)) * PARTS, bool)  # code x part (reused: 16 MB)
    for g in range(pf.metadata.num_row_groups):
        col = pf.read_row_group(g, columns=["message"]).column(0).combine_chunks()
        if col.type != _large():
            col = col.cast(_large())
        n = len(col)
        offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + n + 1]
        data = np.frombuffer(col.buffers()[2], np.uint8) if col.buffers()[2] is not None else np.zeros(0, np.uint8)
        step = _part_rows(n)
        bounds = offs[np.minimum(np.arange(0, PARTS + 1) * step, n)]  # byte where each part starts
        grid[:] = False
        past = np.uint64(0)
        for p0 in range(0, PARTS, SLICE):
            lo, hi = int(bounds[p0]), int(bounds[min(p0 + SLICE, PARTS)])
            if hi - lo < 3:
                continue
            sym = SYMBOLS[data[lo:hi]]
            part = np.repeat(
                np.arange(p0, min(p0 + SLICE, PARTS), dtype=np.int64), np.diff(bounds[p0 : p0 + SLICE + 1] - lo)
            )
            for k in np.unique(part[sym == 0]):
                past |= np.uint64(1) << np.uint64(int(k))
            c = (sym[:-2].astype(np.int64) << (2 * BITS)) | (sym[1:-1].astype(np.int64) << BITS) | sym[2:]
            grid[c * PARTS + part[:-2]] = True
            del sym, part, c
        table = grid.reshape(-1, PARTS)
        present = np.flatnonzero(table.any(axis=1))
        bits = np.packbits(table[present], axis=1, bitorder="little").view(np.uint64).ravel()
        all_codes.append(present.astype(np.int32))
        all_masks.append(bits)
        always.append(past)
        starts.append(starts[-1] + n)
        sets.append(sets[-1] + len(present))
    return Index(
        np.array(starts, np.int64),
        np.array(sets, np.int64),
        np.concatenate(all_codes) if all_codes else np.zeros(0, np.int32),
        np.concatenate(all_masks) if all_masks else np.zeros(0, np.uint64),
        np.array(always, np.uint64),
    )


def _large():
    import pyarrow as pa

    return pa.large_string()


def events_file(bundle) -> Path | None:
    """The store's single ``events.parquet`` (None in memory, or for a store of folders)."""
    store = bundle.__dict__.get("store")
    if store is None or not bundle.lazy("events"):
        return None
    f = Path(store) / "events.parquet"
    return f if f.is_file() else None


def index_of(bundle) -> Index | None:
    """The trigram index of the bundle's stored events: read from the store, else built and kept
    there (in memory when the store cannot be written); None without a single events file."""
    f = events_file(bundle)
    if f is None:
        return None
    st = f.stat()
    stamp = np.array([st.st_size, st.st_mtime_ns], np.int64)
    got = bundle.__dict__.get("_text_index")
    if got is not None and (got[0] == stamp).all():
        return got[1]
    saved = Path(bundle.store) / ".index" / "trigrams.npz"
    with _LOCK:
        got = bundle.__dict__.get("_text_index")  # built by another thread meanwhile
        if got is not None and (got[0] == stamp).all():
            return got[1]
        idx = None
        if saved.is_file():
            try:
                with np.load(saved) as z:
                    if (z["stamp"] == stamp).all():
                        idx = Index(z["starts"], z["sets"], z["codes"], z["masks"], z["always"])
            except (OSError, ValueError, KeyError):
                idx = None
        if idx is None:
            idx = build(f)
            try:
                saved.parent.mkdir(parents=True, exist_ok=True)
                tmp = saved.with_name(f"trigrams.{os.getpid()}.tmp.npz")
                np.savez(
                    tmp,
                    stamp=stamp,
                    starts=idx.starts,
                    sets=idx.sets,
                    codes=idx.codes,
                    masks=idx.masks,
                    always=idx.always,
                )
                os.replace(tmp, saved)
            except OSError:
                pass  # a read-only store: the index lives as long as the bundle object
        bundle.__dict__["_text_index"] = (stamp, idx)
        return idx


def wanted(query) -> np.ndarray | None:
    """The trigram codes a hit of ``query`` (a :class:`kitlib.explore.query.Query`) must hold; None
    when its text gives none (no text, or a pattern without literal text of three bytes)."""
    if not query.text:
        return None
    pieces = literals(query.text) if query.regex else [query.text]
    got = [needed(p) for p in pieces]
    got = [g for g in got if len(g)]
    return np.unique(np.concatenate(got)) if got else None


def candidates(bundle, query, columns: list[str]):
    """The stored events that may match ``query``: an Arrow table of ``columns`` over the
    candidate parts only, or None when the index cannot narrow the search (no index, no trigram,
    or most row groups to read: then the plain scan answers)."""
    want = wanted(query)
    if want is None:
        return None
    idx = index_of(bundle)
    if idx is None:
        return None
    masks = idx.parts(want)
    groups = np.flatnonzero(masks)
    if len(groups) > MOST * len(masks):
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = events_file(bundle)
    assert f is not None
    pf = pq.ParquetFile(f)
    schema = pf.schema_arrow
    pieces = []
    for g in groups:
        t = pf.read_row_group(int(g), columns=columns)
        step = _part_rows(t.num_rows)
        m = int(masks[g])
        k = 0
        while k < PARTS:  # runs of consecutive candidate parts, one slice each
            if not (m >> k) & 1:
                k += 1
                continue
            j = k
            while j < PARTS and (m >> j) & 1:
                j += 1
            lo, hi = k * step, min(j * step, t.num_rows)
            if lo < hi:
                pieces.append(t.slice(lo, hi - lo))
            k = j
    if not pieces:
        return pa.table({c: pa.array([], schema.field(c).type) for c in columns})
    return pa.concat_tables(pieces)
