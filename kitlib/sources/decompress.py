"""A file's content decompressed (gzip, zstd, xz, bz2, lz4 frame, found by their first bytes),
in bounded pieces, with a truncated or corrupt stream named."""

from __future__ import annotations

import bz2
import lzma
import zipfile
import zlib
from collections.abc import Iterator

from kitlib.sources.archives import open_raw
from kitlib.sources.files import SourceError, SourceFile

# compressed content, recognised by its first bytes (the name does not matter)
MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x04\x22\x4d\x18": "lz4",
}


def codec_of(src: SourceFile) -> str | None:
    try:
        with open_raw(src) as fh:
            head6 = fh.read(6)
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError, zlib.error):
        return None
    for magic, name in MAGIC.items():
        if head6.startswith(magic):
            return name
    return None


def decompressed(src: SourceFile, chunk: int) -> Iterator[bytes]:
    on_read = src.meta.get("on_read")
    try:
        raw = open_raw(src)
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError, zlib.error) as e:
        raise SourceError(src.rel, f"cannot be read: {getattr(e, 'strerror', None) or e}") from None
    done = 0  # content bytes passed on (plain content)
    try:
        fh = _Counting(raw, on_read) if on_read else raw
        if src.end is not None and not src.member:  # one part of a plain file split for parallel parsing
            fh.seek(src.start)
            left = src.end - src.start
            while left > 0:
                b = fh.read(min(chunk, left))
                if not b:
                    return
                left -= len(b)
                yield b
            return
        first = fh.read(min(chunk, 1024 * 1024))
        codec = next((name for magic, name in MAGIC.items() if first.startswith(magic)), None)
        if codec is None:
            b = first
            while b:
                done += len(b)
                yield b
                b = fh.read(chunk)
            return
        if codec == "zstd":
            yield from _unzstd(src, first, fh, chunk)
        else:
            yield from _inflate(src, codec, first, fh, chunk)
    except OSError as e:
        raise SourceError(src.rel, f"read failed: {e.strerror or e}") from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:  # a zip member failing its CRC, or cut short
        raise SourceError(src.rel, f"corrupt zip member ({e})", offset=done) from None
    finally:
        raw.close()


class _Counting:
    """File wrapper that reports bytes read (drives the progress bar)."""

    def __init__(self, fh, cb):
        self.fh, self.cb = fh, cb

    def read(self, n=-1):
        b = self.fh.read(n)
        self.cb(len(b))
        return b

    def seek(self, pos):
        self.cb(pos - self.fh.tell())
        return self.fh.seek(pos)


def _new_decompressor(codec: str):
    if codec == "gzip":
        return zlib.decompressobj(wbits=31)
    if codec == "xz":
        return lzma.LZMADecompressor()
    if codec == "bz2":
        return bz2.BZ2Decompressor()
    import lz4.frame

    return lz4.frame.LZ4FrameDecompressor()


def _inflate(src: SourceFile, codec: str, first: bytes, fh, chunk: int) -> Iterator[bytes]:
    """gzip, xz, bz2 and lz4 streams, concatenated members included, never more than ``chunk``
    bytes of output at a time (a small file that expands to gigabytes is read piece by piece)."""
    out_total = 0
    d = _new_decompressor(codec)
    fed = False
    pending = first
    errors = (zlib.error, lzma.LZMAError, OSError, EOFError, RuntimeError, ValueError)
    step = 64 * 1024  # input fed in small pieces: on corrupt data, what came before it is still yielded
    while True:
        if not pending:
            pending = fh.read(1024 * 1024)
        raw, pending = pending[:step], pending[step:]
        if not raw:
            break
        fed = True
        while True:
            try:
                piece = d.decompress(raw, chunk)
            except errors as e:
                raise SourceError(src.rel, f"corrupt {codec} data ({e})", offset=out_total) from None
            raw = d.unconsumed_tail if codec == "gzip" else b""
            if piece:
                out_total += len(piece)
                yield piece
            if d.eof:
                rest = (d.unused_data or raw) + pending  # zlib may leave the same bytes in both
                pending = b""
                d, fed = _new_decompressor(codec), False
                if any(rest.startswith(m) for m, c in MAGIC.items() if c == codec):  # concatenated streams
                    pending = rest
                elif rest.strip(b"\0") or fh.read(1):
                    raise SourceError(src.rel, f"junk after the end of the {codec} stream", offset=out_total)
                break
            if (not raw) if codec == "gzip" else d.needs_input:
                break
    if codec == "gzip":
        tail = d.flush()
        if tail:
            out_total += len(tail)
            yield tail
    if fed and not d.eof:
        raise SourceError(
            src.rel, f"truncated {codec}: the compressed stream ends before its end marker", offset=out_total
        )


def _unzstd(src: SourceFile, first: bytes, fh, chunk: int) -> Iterator[bytes]:
    """zstd frames, fed 1 KiB at a time: one call can expand that to at most ~32 MiB (zstd's
    largest block ratio), so memory stays bounded; a stream cut before its frame ends is named."""
    import zstandard

    def new():
        return zstandard.ZstdDecompressor().decompressobj(write_size=chunk)

    out_total, d, fed = 0, new(), False
    data = first
    while True:
        if not data:
            data = fh.read(1024 * 1024)
            if not data:
                break
        for i in range(0, len(data), 1024):
            piece_in = data[i : i + 1024]
            fed = True
            try:
                out = d.decompress(piece_in)
            except zstandard.ZstdError as e:
                raise SourceError(src.rel, f"corrupt zstd data ({e})", offset=out_total) from None
            if out:
                out_total += len(out)
                yield out
            if d.eof:
                rest = d.unused_data + data[i + 1024 :]
                d, fed = new(), False
                if rest.startswith(b"\x28\xb5\x2f\xfd"):
                    data = rest
                    break
                if rest.strip(b"\0"):
                    raise SourceError(src.rel, "junk after the end of the zstd stream", offset=out_total)
                data = b""
                break
        else:
            data = b""
    if fed and not d.eof:
        raise SourceError(src.rel, "truncated zstd: the compressed stream ends before its end marker", offset=out_total)
