"""Sparse line offsets of a bundle's plain files, so that the lines around a hit deep in a big
file are read from a nearby point instead of from the start of the file.

For a plain (uncompressed, not archived) file the index holds the byte offset where line
``1 + k * step`` starts, for every ``k`` (``step`` = :data:`STEP`: one offset per 4,096 lines,
8 bytes each: 2 KB for a 1 GB log of five million lines). It is built on first use by one pass
over the file's bytes (newlines found with numpy, no per-line Python) and kept beside the
bundle's store (``<store>/.index/lines/``) when the bundle was opened on an ingest output or on
the kit's cache, else in memory for the life of the process; never in the bundle. A file that
changed (size or modification time) gets a new index.

Compressed files and members of archives cannot be read from the middle: they have no index
and are read from their start as before. So are files the readers re-encode (UTF-16) or whose
lines end with a lone CR (their newlines are not the file's bytes).

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.log"
    >>> _ = p.write_bytes(b"".join(b"line %d\\n" % i for i in range(1, 10)))
    >>> offsets(p, step=4).tolist()   # where lines 1, 5 and 9 start
    [0, 28, 56]
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

STEP = 4096  # one offset every this many lines
READ = 8 * 1024 * 1024  # bytes read at a time while indexing
PROBE = 64 * 1024  # the first bytes that tell a UTF-16 file or one whose lines end with a lone CR

_MEMO: dict[tuple, np.ndarray | None] = {}  # (path, size, mtime ns, step) -> offsets (bundles without a store)


def offsets(path: str | os.PathLike, step: int = STEP) -> np.ndarray | None:
    """Byte offsets where lines ``1, 1 + step, 1 + 2 step, ...`` of the plain file ``path``
    start; None for a file that cannot be read from the middle as the readers read it (UTF-16,
    lines ending with a lone CR, compressed)."""
    from kitlib.sources.decompress import MAGIC

    found = [np.zeros(1, np.int64)]
    seen = 0  # newlines before the current block
    pos = 0
    with open(path, "rb") as fh:
        head = fh.read(PROBE)
        if head.startswith((b"\xff\xfe", b"\xfe\xff")) or any(head.startswith(m) for m in MAGIC):
            return None
        if b"\r" in head and b"\n" not in head:
            return None
        block = head
        while block:
            nl = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
            if len(nl):
                number = seen + 1 + np.arange(len(nl), dtype=np.int64)  # each newline's count in the file
                keep = number % step == 0  # the newline that ends line k*step: line k*step+1 starts after it
                found.append(nl[keep].astype(np.int64) + pos + 1)
            seen += len(nl)
            pos += len(block)
            block = fh.read(READ)
    return np.concatenate(found)


def _store_path(store: Path, src, step: int) -> Path:
    name = hashlib.sha256(f"{src.rel}\0{step}".encode()).hexdigest()[:24]
    return store / ".index" / "lines" / f"{name}.npz"


def index_of(bundle, src, step: int = STEP) -> np.ndarray | None:
    """The line offsets of the bundle's file ``src`` (a :class:`kitlib.sources.files.SourceFile`),
    built on first use and kept (see the module doc); None for a file without one."""
    if src.gz or src.member or src.start or src.end is not None or src.meta.get("cr_lines"):
        return None
    try:
        st = os.stat(src.path)
    except OSError:
        return None
    key = (str(src.path), st.st_size, st.st_mtime_ns, step)
    if key in _MEMO:
        return _MEMO[key]
    store = bundle.__dict__.get("store")
    saved = _store_path(Path(store), src, step) if store is not None else None
    if saved is not None and saved.is_file():
        try:
            with np.load(saved) as z:
                if tuple(int(v) for v in z["stat"]) == (st.st_size, st.st_mtime_ns):
                    got = z["offsets"] if len(z["offsets"]) else None
                    _MEMO[key] = got
                    return got
        except (OSError, ValueError, KeyError):
            pass  # unreadable: built again below
    try:
        got = offsets(src.path, step)
    except OSError:
        return None
    _MEMO[key] = got
    if saved is not None:
        try:
            saved.parent.mkdir(parents=True, exist_ok=True)
            tmp = saved.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(
                tmp,
                offsets=got if got is not None else np.zeros(0, np.int64),
                stat=np.array([st.st_size, st.st_mtime_ns]),
            )
            os.replace(tmp, saved)
        except OSError:
            pass  # a read-only store: the index stays in memory
    return got


def from_line(bundle, src, line: int, last: int | None = None, step: int = STEP):
    """``(src to read, number of its first line)``: the part of the file from the indexed line at
    or before ``line`` to the indexed line after ``last`` (default ``line``) when the file has an
    index and ``line`` lies past its first step, else the file from its start (line 1)."""
    if line <= step:
        return src, 1
    got = index_of(bundle, src, step)
    if got is None:
        return src, 1
    k = min((int(line) - 1) // step, len(got) - 1)
    if k <= 0:
        return src, 1
    after = (max(int(last or line), int(line)) - 1) // step + 1  # the first indexed line past ``last``
    end = int(got[after]) if after < len(got) else os.stat(src.path).st_size
    return replace(src, start=int(got[k]), end=end, first_line=k * step + 1, meta=dict(src.meta)), k * step + 1
