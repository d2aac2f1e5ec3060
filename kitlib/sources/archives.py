"""Zip archives read as folders: their members listed (nested archives too, a few deep) and
opened, each member's CRC-32 checked after all it held was passed on."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import BinaryIO

from kitlib.sources.files import NotRead, SourceFile
from kitlib.sources.manifest import MANIFESTS
from kitlib.sources.names import shown
from kitlib.sources.regular import open_regular, special_kind
from kitlib.sources.walk import NOTES, SKIP_SUFFIXES

ZIP_MAGIC = b"PK\x03\x04"
MAX_ZIP_DEPTH = 4  # a zip inside a zip ... is read as a folder this many archives deep at most


def is_zip(f: Path) -> bool:
    try:
        with open_regular(f) as fh:
            return fh.read(4) == ZIP_MAGIC
    except OSError:
        return False


def zip_members(f: Path, rel: str, skipped: list[NotRead]) -> list[tuple[str, str, int]]:
    """A zip archive read as a folder: (member, rel path, size) for each file member, in the
    archive's order. A member that is itself a zip archive is read as a folder too (its members'
    ``member`` is the chain of names joined by NUL), :data:`MAX_ZIP_DEPTH` archives deep at most;
    members whose attributes say symlink, pipe or device are listed, never read."""
    out: list[tuple[str, str, int]] = []
    # (chain of member names leading to the archive, its rel path)
    archives: list[tuple[tuple[str, ...], str]] = [((), rel)]
    while archives:
        chain, arel = archives.pop()
        try:
            infos = _archive(f, chain).infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, RuntimeError) as e:
            skipped.append(NotRead(shown(arel), f"zip archive cannot be read: {e}"))
            continue
        nested: list[tuple[tuple[str, ...], str]] = []
        for i in infos:
            if i.is_dir():
                continue
            mrel = f"{arel}/{i.filename.lstrip('/')}"
            name = i.filename.rsplit("/", 1)[-1]
            mode = i.external_attr >> 16 if i.create_system == 3 else 0  # unix attributes
            if any(part.startswith(".") for part in i.filename.split("/")) or ".." in i.filename.split("/"):
                skipped.append(NotRead(shown(mrel), "hidden or parent-relative member of a zip archive"))
            elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                skipped.append(
                    NotRead(shown(mrel), f"zip member stored as a {special_kind(mode)}, not a file: never read")
                )
            elif i.flag_bits & 0x1:
                skipped.append(NotRead(shown(mrel), "encrypted zip member"))
            elif name in NOTES or name in MANIFESTS or name.endswith(SKIP_SUFFIXES):
                skipped.append(NotRead(shown(mrel), "bundle notes or kit output, not log data"))
            elif _member_is_zip(f, chain, i):
                if len(chain) + 2 > MAX_ZIP_DEPTH:
                    skipped.append(
                        NotRead(
                            shown(mrel),
                            f"zip archive inside {len(chain) + 1} others: archives are opened "
                            f"{MAX_ZIP_DEPTH} deep at most",
                        )
                    )
                else:
                    nested.append(((*chain, i.filename), mrel))
            else:
                out.append(("\0".join((*chain, i.filename)), mrel, i.file_size))
        archives.extend(reversed(nested))
    return out


def _member_is_zip(f: Path, chain: tuple[str, ...], info: zipfile.ZipInfo) -> bool:
    if info.file_size < 22:  # smaller than an empty archive
        return False
    try:
        with _archive(f, chain).open(info) as m:
            return m.read(4) == ZIP_MAGIC
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, RuntimeError, NotImplementedError):
        return False


# open archives kept for the next member (each member is then found in O(1), not by reading the
# central directory again): key -> (archive, the file it reads)
_ARCHIVES: OrderedDict[tuple, tuple[zipfile.ZipFile, BinaryIO]] = OrderedDict()
ARCHIVES_OPEN = 8


def _archive(path: Path, chain: tuple[str, ...] = ()) -> zipfile.ZipFile:
    """The zip archive at ``path`` or, with ``chain``, the one nested in it by that chain of
    member names (streamed once into an anonymous temporary file, so memory stays bounded
    whatever its size). Archives stay open (a few, most recently used) for the next member."""
    st = os.stat(path)
    key = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, chain)
    got = _ARCHIVES.get(key)
    if got is not None:
        _ARCHIVES.move_to_end(key)
        return got[0]
    if chain:
        fh: BinaryIO = tempfile.TemporaryFile(prefix="kitlib-nested-zip-")
        try:
            with _archive(path, chain[:-1]).open(chain[-1]) as m:
                shutil.copyfileobj(m, fh, 1 << 20)
            fh.seek(0)
        except BaseException:
            fh.close()
            raise
    else:
        fh = open_regular(path)
    try:
        z = zipfile.ZipFile(fh)
    except BaseException:
        fh.close()
        raise
    _ARCHIVES[key] = (z, fh)
    while len(_ARCHIVES) > ARCHIVES_OPEN:  # an open member keeps its file alive on its own
        _ARCHIVES.popitem(last=False)
    return z


def close_archives() -> None:
    """Close the archives kept open (and remove the temporary copies of nested ones)."""
    while _ARCHIVES:
        z, fh = _ARCHIVES.popitem()[1]
        z.close()
        fh.close()


def open_raw(src: SourceFile):
    """The raw bytes of ``src``, opened read-only and only if it is a regular file (a zip member
    is streamed from its archive, kept open for the next member)."""
    if src.member:
        *chain, name = src.member.split("\0")
        return _Member(_archive(src.path, tuple(chain)).open(name))
    return open_regular(src.path)


class _Member:
    """A zip member read in pieces of 64 KiB with its CRC-32 checked here, after every byte was
    passed on: a member that fails its check, or whose compressed data breaks, still gives all
    it held before the damage (zipfile alone raises on the read that reaches the end, losing that
    read's data); the error comes with the next read."""

    PIECE = 64 * 1024

    def __init__(self, fh):
        self.fh, self.crc, self.error = fh, 0, None
        self.expected = getattr(fh, "_expected_crc", None)
        if self.expected is not None:
            fh._expected_crc = None  # checked here instead (the attribute zipfile's own check reads)

    def read(self, n: int = -1) -> bytes:
        if self.error is not None:
            raise self.error
        out = bytearray()
        while n < 0 or len(out) < n:
            try:
                b = self.fh.read(self.PIECE if n < 0 else min(self.PIECE, n - len(out)))
            except (zipfile.BadZipFile, EOFError, zlib.error) as e:
                self.error = e
                break
            if not b:
                if self.expected is not None and self.crc != self.expected:
                    self.error = zipfile.BadZipFile(f"bad CRC-32 for {self.fh.name!r}: the member is damaged")
                break
            self.crc = zlib.crc32(b, self.crc)
            out += b
        if not out and self.error is not None:
            raise self.error
        return bytes(out)

    def close(self) -> None:
        self.fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
