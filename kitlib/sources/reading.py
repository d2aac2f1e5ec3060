"""Reading a file's content as bytes: decompressed, as UTF-8, every line ending a newline, no line
longer than :data:`MAX_LINE`."""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Callable, Iterator

from kitlib.sources.decompress import decompressed
from kitlib.sources.files import CHUNK, MAX_LINE, SourceError, SourceFile


def read_chunks(src: SourceFile, chunk: int = CHUNK, count: Callable[[bytes], int] | None = None) -> Iterator[bytes]:
    """Yield the file's content in chunks: decompressed (gzip, zstd, xz, bz2, lz4 frame, found
    by their first bytes), UTF-16 (with a BOM) turned into UTF-8, a UTF-8 BOM dropped, lines
    longer than :data:`MAX_LINE` cut (see :func:`cap_lines`). Memory stays bounded by ``chunk``
    whatever the compression ratio. Raises :class:`SourceError` after yielding everything
    readable when a compressed stream is truncated or corrupt, or the file cannot be read.
    ``count`` counts a chunk's newlines (default :func:`count_lines`; a parser passes a compiled
    one where it has it).

    Example:
        >>> import gzip, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.log.gz"
        >>> _ = p.write_bytes(gzip.compress(b"hello\\n"))
        >>> b"".join(read_chunks(SourceFile(p, "a.log.gz", "h", gz=True)))
        b'hello\\n'
    """
    yield from cap_lines(_line_ends(_text(decompressed(src, chunk), src), src), src, count=count)


CR_PROBE = 64 * 1024  # bytes of a file's content that decide how its lines end
CR_NOTE = "lines end with a lone CR (no LF in the first 64 KiB): each CR read as a line end"


def _line_ends(chunks: Iterator[bytes], src: SourceFile) -> Iterator[bytes]:
    """The content with every line ending a newline. A file whose first :data:`CR_PROBE` bytes
    hold a carriage return and no line feed (classic Mac OS, some Windows tools) has its lines
    end with a lone CR: from then on each CR (or CR LF) becomes one newline, so every reader
    counts and numbers those lines (``src.meta['cr_lines']`` is set; the file's note says so).
    Other files pass through untouched (a CR before a newline stays; readers drop it).

    Example:
        >>> s = SourceFile(None, "x", "h")
        >>> b"".join(_line_ends(iter([b"a\\rb\\r", b"c"]), s)), s.meta["cr_lines"]
        (b'a\\nb\\nc', True)
    """
    it = iter(chunks)
    pieces: list[bytes] = []
    size = 0
    if src.end is None:  # a part of a split file keeps the whole file's endings (LF: it was split at one)
        try:
            for b in it:
                pieces.append(b)
                size += len(b)
                if size >= CR_PROBE:
                    break
        except SourceError:  # damaged within the probe: what came before the damage still counts
            if pieces:
                yield b"".join(pieces)
            raise
    probe = pieces[0][:CR_PROBE] if len(pieces) == 1 else b"".join(pieces)[:CR_PROBE]
    if b"\r" not in probe or b"\n" in probe:
        yield from pieces
        yield from it
        return
    src.meta["cr_lines"] = True
    held = b""  # a CR at a chunk's end: its LF may start the next chunk
    for b in itertools.chain(pieces, it):
        data = held + b if held else b
        held = b"\r" if data.endswith(b"\r") else b""
        if held:
            data = data[:-1]
        yield data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if held:
        yield b"\n"


def _text(chunks: Iterator[bytes], src: SourceFile) -> Iterator[bytes]:
    """UTF-16 content (found by its byte-order mark) re-encoded as UTF-8; a UTF-8 BOM dropped."""
    it = iter(chunks)
    first = next(it, b"")
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        src.meta["encoding"] = "utf-16"
        dec = codecs.getincrementaldecoder("utf-16")(errors="backslashreplace")
        yield dec.decode(first).encode("utf-8")
        for b in it:
            yield dec.decode(b).encode("utf-8")
        yield dec.decode(b"", final=True).encode("utf-8")
        return
    if first.startswith(codecs.BOM_UTF8):
        first = first[3:]
    if first:
        yield first
    yield from it


def cap_lines(
    chunks: Iterator[bytes],
    src: SourceFile,
    limit: int = MAX_LINE,
    count: Callable[[bytes], int] | None = None,
) -> Iterator[bytes]:
    """The same bytes, except that a line longer than ``limit`` keeps its first ``limit`` bytes:
    the rest is counted in ``src.meta['cut_lines']`` ([(line, bytes dropped)]), its newline kept, so
    line numbers and counts are unchanged. Checking costs a few ``find`` calls per chunk and a
    count of its newlines (``count``, default :func:`count_lines`).

    Example:
        >>> s = SourceFile(None, "x", "h")
        >>> b"".join(cap_lines(iter([b"ab\\n", b"cdefgh", b"ij\\nk"]), s, limit=4)), s.meta["cut_lines"]
        (b'ab\\ncdef\\nk', [(2, 4)])
    """
    since = 0  # bytes of the current line already passed on
    dropping = 0  # > 0 while the rest of a long line is being dropped (bytes so far + 1)
    lines_done = 0
    half = max(limit // 2, 1)
    count = count or count_lines
    for c in chunks:
        if not dropping:
            nl0 = c.find(b"\n")
            fast = nl0 >= 0 and since + nl0 <= limit and len(c) - 1 - c.rfind(b"\n") <= limit - 0
            if fast:
                i = nl0 + 1
                while i + half < len(c):
                    if c.find(b"\n", i, i + half) < 0:
                        fast = False
                        break
                    i += half
            if fast:
                lines_done += count(c)
                since = len(c) - 1 - c.rfind(b"\n")
                yield c
                continue
        out = []
        pos = 0
        while pos < len(c):
            nl = c.find(b"\n", pos)
            end = nl if nl >= 0 else len(c)
            seg = end - pos
            if dropping:
                dropping += seg
                if nl < 0:
                    break
                src.meta.setdefault("cut_lines", []).append((lines_done + 1, dropping - 1))
                dropping, since = 0, 0
                lines_done += 1
                out.append(b"\n")
                pos = nl + 1
                continue
            room = limit - since
            if seg <= room:
                out.append(c[pos : end + 1] if nl >= 0 else c[pos:end])
                if nl >= 0:
                    since = 0
                    lines_done += 1
                else:
                    since += seg
                pos = end + 1 if nl >= 0 else len(c)
                continue
            out.append(c[pos : pos + room])
            since = limit
            dropping = 1
            pos += room
        if out:
            yield b"".join(out)
    if dropping:
        src.meta.setdefault("cut_lines", []).append((lines_done + 1, dropping - 1))


def count_lines(data: bytes) -> int:
    """The number of newline bytes in ``data`` (``bytes.count``, compiled code; a view is copied
    first, which costs less than counting with numpy).

    Example:
        >>> count_lines(b"a\\nb\\n")
        2
    """
    return (data if isinstance(data, bytes) else bytes(data)).count(b"\n")


def head(src: SourceFile, n: int = 64 * 1024) -> bytes:
    """The first ``n`` bytes of the file's content (decompressed), for format detection."""
    buf = bytearray()
    it = read_chunks(src, chunk=n)
    try:
        for b in it:
            buf += b
            if len(buf) >= n:
                break
    except SourceError:
        pass
    finally:
        it.close()  # type: ignore[attr-defined]  # a generator: closing it closes the file
    return bytes(buf[:n])
