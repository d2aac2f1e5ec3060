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

Trigrams say little about numbers: a part of a thousand log lines holds nearly every trigram of
digits, so ``offset 4242`` or ``offset 9\\d{5} `` would still read every part. So the index also
keeps, per part, a Bloom filter of *number keys*: for every run of ASCII digits in a message, the
four bytes before it (folded to lower case) with its first four digits, and the same four bytes
with its first digit and its length. A search whose text holds a run of digits right after four
bytes of literal text that end in a non-digit needs the first key in the part, and the second too
when the text fixes the run's length (``4242 ``, or ``9\\d{5} `` in a pattern). A Bloom filter may
say "maybe" for a key it never saw, never "no" for one it did, so the hits stay those of a scan.

Reading one part of a row group costs the whole row group's message column, so the build also
writes the searched columns again, one Arrow record batch per part, compressed
(``<store>/.index/parts.arrow``, somewhat bigger than ``events.parquet``): a search reads only the
parts that can hold a hit.

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
VERSION = 3  # of the saved index: 2 added the number keys and a copy of the parts, 3 made it Arrow IPC
BLOOM = 1 << 16  # bits of the number-key Bloom filter of one part (8 KB; two bits set per key)
SEARCHED = ["host", "ts", "file", "line", "level", "logger", "message"]  # the columns a search reads
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
LOWER = np.arange(256, dtype=np.uint8)
LOWER[ord("A") : ord("Z") + 1] += 32  # ASCII letters folded; every other byte kept


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over uint64 values (wrapping arithmetic)."""
    x = np.asarray(x).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _hash(before, digits, length, sized: bool) -> np.ndarray:
    """Hashed number keys (see the module doc): ``before`` the four folded bytes ahead of a run
    of digits packed big-endian, ``digits`` its first four digits packed the same way (zeros past
    its end), ``length`` its length; ``sized``: the key of its first digit and its length."""
    b = np.asarray(before).astype(np.uint64) << np.uint64(32)
    d = np.asarray(digits).astype(np.uint64)
    n = np.asarray(length).astype(np.int64)
    if sized:
        return _mix(
            b | ((d >> np.uint64(24)) << np.uint64(8)) | np.minimum(n, 255).astype(np.uint64) | np.uint64(1 << 31)
        )
    return _mix(b ^ d ^ (np.minimum(n, 4).astype(np.uint64) << np.uint64(56)))


def _bits(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two Bloom bits of hashed keys ``h``."""
    m = np.uint64(BLOOM - 1)
    return (h & m).astype(np.int64), ((h >> np.uint64(32)) & m).astype(np.int64)


def number_runs(data: np.ndarray, offs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The runs of ASCII digits in the messages ``data`` (folded bytes) cut at ``offs``: the byte
    each starts at, the four bytes before it (in its own message; zeros before the message's
    start) and its first four digits, both packed big-endian, and its length."""
    n = len(data)
    isd = (data >= 48) & (data <= 57)
    if not isd.any():
        z = np.zeros(0, np.int64)
        return z, z, z, z
    first = np.zeros(n + 1, bool)
    first[np.minimum(offs, n)] = True  # where a message starts (and the end)
    cut = first[:n]
    prev = np.concatenate([[False], isd[:-1]]) & ~cut
    starts = np.flatnonzero(isd & ~prev)
    nxt = np.concatenate([isd[1:], [False]]) & ~first[1:]
    ends = np.flatnonzero(isd & ~nxt)
    length = ends - starts + 1
    row_start = offs[np.searchsorted(offs, starts, "right") - 1]
    before = np.zeros(len(starts), np.int64)
    for k in range(4, 0, -1):  # the byte k before the run, the farthest first
        pos = starts - k
        before = (before << 8) | np.where(pos >= row_start, data[np.maximum(pos, 0)], 0)
    digits = np.zeros(len(starts), np.int64)
    for k in range(4):
        digits = (digits << 8) | np.where(k < length, data[np.minimum(starts + k, n - 1)], 0)
    return starts, before, digits, length


_DIGIT = "\\d"  # a token of :func:`_tokens`: one ASCII digit the pattern leaves open


def _tokens(text: str, regex: bool) -> list[list[str]]:
    """Runs of tokens (a character, or :data:`_DIGIT`) every match holds in this order: the whole
    text, or a pattern's consecutive top-level literal characters and digit classes (a fixed
    number of them, ``\\d{5}``); a run ends at anything else."""
    if not regex:
        return [list(text)]
    if "[:" in text or re.search(r"\\[QECpPz]", text):
        return []
    try:
        from re import _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(text)
    except Exception:  # noqa: BLE001 - a pattern Python cannot read: no number keys
        return []

    def digit(item) -> bool:
        op, arg = item
        if str(op) != "IN" or len(arg) != 1:
            return False
        o, a = arg[0]
        return (str(o) == "CATEGORY" and str(a) == "CATEGORY_DIGIT") or (str(o) == "RANGE" and tuple(a) == (48, 57))

    out: list[list[str]] = [[]]
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out[-1].append(chr(arg))
        elif digit((op, arg)):
            out[-1].append(_DIGIT)
        elif (
            name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
            and arg[0] == arg[1] <= 64
            and len(arg[2]) == 1
            and digit(arg[2][0])
        ):
            out[-1].extend([_DIGIT] * arg[0])
        else:
            out.append([])
    return [r for r in out if r]


def _is_digit(t: str) -> bool:
    return t == _DIGIT or "0" <= t <= "9"


def number_keys(text: str, regex: bool = False) -> np.ndarray:
    """The hashed number keys a message must hold to match ``text`` (see the module doc).

    Example:
        >>> len(number_keys("offset 4242")), len(number_keys("offset 4242 ")), len(number_keys("set 42"))
        (1, 2, 0)
        >>> len(number_keys(r"at offset 9\\d{5} in", regex=True)), len(number_keys(r"offset 9\\d+", regex=True))
        (1, 0)
    """
    got = []
    for seq in _tokens(text, regex):
        i = 0
        while i < len(seq):
            if not _is_digit(seq[i]) or (i and _is_digit(seq[i - 1])):
                i += 1
                continue
            j = i
            while j < len(seq) and _is_digit(seq[j]):
                j += 1
            ctx, run, closed = seq[max(0, i - 4) : i], seq[i:j], j < len(seq)
            i = j
            if len(ctx) < 4 or any(c == _DIGIT or not c.isascii() for c in ctx):
                continue
            before = int.from_bytes(bytes(LOWER[np.frombuffer("".join(ctx).encode(), np.uint8)]), "big")
            head = run[:4]
            if len(head) == 4 and _DIGIT not in head or (closed and _DIGIT not in head):
                digits = int.from_bytes("".join(head).encode().ljust(4, b"\0"), "big")
                got.append(_hash(before, digits, len(run), sized=False))
            if closed and run[0] != _DIGIT:
                got.append(_hash(before, ord(run[0]) << 24, len(run), sized=True))
    return np.unique(np.array(got, np.uint64)) if got else np.zeros(0, np.uint64)


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
    blooms: np.ndarray | None = None  # uint8 (BLOOM / 8, row groups * PARTS): number keys, a column per part
    copied: np.ndarray | None = None  # per part (row group * PARTS + part): its batch in parts.arrow, -1 if empty

    @property
    def nbytes(self) -> int:
        arrays = (self.starts, self.sets, self.codes, self.masks, self.always, self.blooms, self.copied)
        return sum(a.nbytes for a in arrays if a is not None)

    def parts(self, want: np.ndarray, keys: np.ndarray | None = None) -> np.ndarray:
        """Per row group, the mask of parts that may hold all trigram codes ``want`` and all hashed
        number keys ``keys``."""
        out = np.zeros(len(self.always), np.uint64)
        for g in range(len(self.always)):
            lo, hi = int(self.sets[g]), int(self.sets[g + 1])
            have = self.codes[lo:hi]
            at = np.searchsorted(have, want)
            ok = at < len(have)
            m = np.uint64(0)
            if ok.all() and (have[at] == want).all():
                m = np.bitwise_and.reduce(self.masks[lo:hi][at]) if len(want) else ~np.uint64(0)
            out[g] = m
        if keys is not None and len(keys) and self.blooms is not None:
            hold = np.ones(self.blooms.shape[1], bool)
            for b in _bits(np.asarray(keys, np.uint64)):
                for bit in b:  # one row of the filters: a bit of every part, a few pages read
                    hold &= (self.blooms[bit >> 3] >> (bit & 7)) & 1 == 1
            out &= np.packbits(hold.reshape(-1, PARTS), axis=1, bitorder="little").view(np.uint64).ravel()
        return out | self.always


def _part_rows(rows: int) -> int:
    return max(1, -(-rows // PARTS))


def build(path: Path, copy: Path | None = None) -> Index:
    """The index of the Parquet file ``path`` (its ``message`` column), one row group at a time;
    with ``copy``, the searched columns are written there too, one row group per part."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    groups = pf.metadata.num_row_groups
    starts, sets, all_codes, all_masks, always = [0], [0], [], [], []
    blooms = np.zeros((BLOOM // 8, groups * PARTS), np.uint8)
    copied = np.full(groups * PARTS, -1, np.int64)
    grid = np.zeros((1 << (3 * BITS)) * PARTS, bool)  # code x part (reused: 16 MB)
    keyed = np.zeros((PARTS, BLOOM), bool)  # part x Bloom bit (reused: 4 MB)
    writer = None
    if copy is not None:
        import pyarrow as pa

        fields = [pf.schema_arrow.field(c) for c in SEARCHED]
        plain = pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in fields])
        # one file-wide schema: a part's own dictionaries would not fit an IPC file, their values do
        writer = pa.ipc.new_file(str(copy), plain, options=pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", 1)))
    written = 0
    try:
        for g in range(groups):
            table = pf.read_row_group(g, columns=SEARCHED if writer is not None else ["message"])
            col = table.column("message").combine_chunks()
            if col.type != _large():
                col = col.cast(_large())
            n = len(col)
            offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + n + 1]
            data = np.frombuffer(col.buffers()[2], np.uint8) if col.buffers()[2] is not None else np.zeros(0, np.uint8)
            step = _part_rows(n)
            bounds = offs[np.minimum(np.arange(0, PARTS + 1) * step, n)]  # byte where each part starts
            grid[:] = False
            keyed[:] = False
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
                # number keys of this slice's messages (whole messages: parts end between messages)
                rows = np.arange(p0 * step, min((p0 + SLICE) * step, n) + 1)
                folded = LOWER[data[lo:hi]]
                at, before, digits, length = number_runs(folded, offs[rows] - lo)
                if len(at):
                    part_of = (p0 * step + np.searchsorted(offs[rows] - lo, at, "right") - 1) // step
                    for h in (_hash(before, digits, length, False), _hash(before, digits, length, True)):
                        for bit in _bits(h):
                            keyed[part_of, bit] = True
                del folded, at, before, digits, length
            blooms[:, g * PARTS : (g + 1) * PARTS] = np.packbits(keyed, axis=1, bitorder="little").T
            table_bits = grid.reshape(-1, PARTS)
            present = np.flatnonzero(table_bits.any(axis=1))
            bits = np.packbits(table_bits[present], axis=1, bitorder="little").view(np.uint64).ravel()
            all_codes.append(present.astype(np.int32))
            all_masks.append(bits)
            always.append(past)
            starts.append(starts[-1] + n)
            sets.append(sets[-1] + len(present))
            if writer is not None:
                for k in range(PARTS):
                    lo_row, hi_row = k * step, min((k + 1) * step, n)
                    if lo_row < hi_row:
                        piece = table.slice(lo_row, hi_row - lo_row).cast(plain).combine_chunks()
                        writer.write_batch(piece.to_batches()[0])
                        copied[g * PARTS + k] = written
                        written += 1
            del table, col
    finally:
        if writer is not None:
            writer.close()
    return Index(
        np.array(starts, np.int64),
        np.array(sets, np.int64),
        np.concatenate(all_codes) if all_codes else np.zeros(0, np.int32),
        np.concatenate(all_masks) if all_masks else np.zeros(0, np.uint64),
        np.array(always, np.uint64),
        blooms,
        copied if copy is not None else None,
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


def ready(events: Path) -> bool:
    """Whether the store of ``events`` (its ``events.parquet``) holds an index of this version
    built from the file as it is now (else the first search builds one)."""
    saved = events.parent / ".index" / "trigrams.npz"
    try:
        st = events.stat()
        with np.load(saved) as z:
            return int(z["version"]) == VERSION and (z["stamp"] == [st.st_size, st.st_mtime_ns]).all()
    except (OSError, ValueError, KeyError):
        return False


def _load(saved: Path, stamp: np.ndarray) -> Index | None:
    """The index saved at ``saved`` when it is of this version and of ``events.parquet`` as it is."""
    try:
        with np.load(saved) as z:
            if int(z["version"]) != VERSION or not (z["stamp"] == stamp).all():
                return None
            copied = z["copied"]
            idx = Index(z["starts"], z["sets"], z["codes"], z["masks"], z["always"])
        idx.blooms = np.load(saved.with_name("numbers.npy"), mmap_mode="r")  # read from disk as probed
        if len(copied) and saved.with_name("parts.arrow").is_file():  # else the row groups are read
            idx.copied = copied
        return idx
    except (OSError, ValueError, KeyError):
        return None


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
    folder = Path(bundle.store) / ".index"
    saved = folder / "trigrams.npz"
    with _LOCK:
        got = bundle.__dict__.get("_text_index")  # built by another thread meanwhile
        if got is not None and (got[0] == stamp).all():
            return got[1]
        idx = _load(saved, stamp) if saved.is_file() else None
        if idx is None:
            tag = f"{os.getpid()}.{threading.get_ident()}"
            copy = folder / f"parts.{tag}.tmp.arrow"
            (folder / "parts.parquet").unlink(missing_ok=True)  # the copy of version 2
            try:
                folder.mkdir(parents=True, exist_ok=True)
                idx = build(f, copy)
            except OSError:  # a read-only store: no copy of the parts, the index lives in memory
                copy.unlink(missing_ok=True)
                idx = build(f)
            try:
                if idx.copied is not None:
                    os.replace(copy, folder / "parts.arrow")
                blooms = folder / f"numbers.{tag}.tmp.npy"
                np.save(blooms, np.asarray(idx.blooms))
                os.replace(blooms, folder / "numbers.npy")
                tmp = folder / f"trigrams.{tag}.tmp.npz"
                np.savez(
                    tmp,
                    version=VERSION,
                    stamp=stamp,
                    starts=idx.starts,
                    sets=idx.sets,
                    codes=idx.codes,
                    masks=idx.masks,
                    always=idx.always,
                    copied=idx.copied if idx.copied is not None else np.zeros(0, np.int64),
                )
                os.replace(tmp, saved)
                idx = _load(saved, stamp) or idx  # the Bloom filters then stay on disk, read as probed
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
    or most of the store to read: then the plain scan answers)."""
    want = wanted(query)
    keys = number_keys(query.text, query.regex) if query.text else np.zeros(0, np.uint64)
    if want is None and not len(keys):
        return None
    idx = index_of(bundle)
    if idx is None:
        return None
    masks = idx.parts(np.zeros(0, np.int32) if want is None else want, keys)
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = events_file(bundle)
    assert f is not None
    if idx.copied is not None and set(columns) <= set(SEARCHED):
        part = np.unpackbits(masks.view(np.uint8), bitorder="little").astype(bool)
        rgs = idx.copied[part[: len(idx.copied)]]
        rgs = rgs[rgs >= 0]
        if len(rgs) > MOST * max(1, int((idx.copied >= 0).sum())):
            return None
        reader = pa.ipc.open_file(pa.OSFile(str(Path(f).parent / ".index" / "parts.arrow")))
        if not len(rgs):
            return reader.schema.empty_table().select(columns)
        return pa.Table.from_batches([reader.get_batch(int(r)) for r in rgs], schema=reader.schema).select(columns)
    groups = np.flatnonzero(masks)
    if len(groups) > MOST * len(masks):
        return None
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
