"""Finding the files of a bundle and reading their bytes (plain or gzip), never writing to them.

Host identity, in order of precedence:
1. ``bundle.yaml`` / ``bundle.json`` at the bundle root: ``files: {glob: host}`` maps paths
   (relative, fnmatch globs) to hosts; ``hosts: {folder: {name:, tz:}}`` renames a folder's
   host and sets its log timezone; ``host:`` names the host of files at the root; ``tz:`` the
   default timezone; ``layouts: {glob: pattern}`` names the log layout of matching files (a
   log4j/logback pattern, or ``json``), read by :mod:`kitlib.formats.layouts`.
2. The first folder under the bundle root (``broker-3/server.log`` -> ``broker-3``).
3. For files at the root: the bundle folder's own name.

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "broker-1").mkdir()
    >>> _ = (d / "broker-1" / "server.log").write_text("x\\n")
    >>> [(f.rel, f.host) for f in discover(d)]
    [('broker-1/server.log', 'broker-1')]
"""
from __future__ import annotations

import fnmatch
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

CHUNK = 16 * 1024 * 1024
MANIFESTS = ("bundle.yaml", "bundle.yml", "bundle.json")
# files a bundle may hold that are not data (manifests, notes, our own ingest output)
SKIP_NAMES = set(MANIFESTS) | {"README.md", "PROVENANCE.md", ".DS_Store", "summary.json"}
SKIP_SUFFIXES = (".parquet",)
_ROTATED = re.compile(r"^(?P<base>.+?)(?:\.(?P<stamp>\d{4}-\d{2}-\d{2}(?:-\d{2})?)|\.(?P<num>\d+))?(?P<gz>\.gz)?$")


class SourceError(Exception):
    """A file could not be read to its end. ``line`` is the 1-based line where it broke."""

    def __init__(self, file: str, message: str, line: int | None = None, offset: int | None = None):
        self.file, self.line, self.offset = file, line, offset
        where = f" at line {line}" if line is not None else ""
        if offset is not None:
            where += f" (byte {offset:,} of its content)"
        super().__init__(f"{file}{where}: {message}")


@dataclass
class SourceFile:
    path: Path          # absolute path on disk
    rel: str            # path relative to the bundle root, '/'-separated (what tables cite)
    host: str
    tz: str = "UTC"
    gz: bool = False
    base: str = ""      # name without rotation suffix and .gz: 'server.log'
    stamp: str = ""     # rotation suffix: '2024-05-22-00' or '1'
    size: int = 0
    meta: dict = field(default_factory=dict)
    start: int = 0             # a part of a big plain file: its first byte (a record start) ...
    end: int | None = None     # ... and the byte after its last (None: to the end of the file)
    first_line: int = 1        # the line number its first byte is on


def load_manifest(root: Path) -> dict:
    for name in MANIFESTS:
        p = root / name
        if p.is_file():
            text = p.read_text(encoding="utf-8")
            if name.endswith(".json"):
                return json.loads(text) or {}
            import yaml
            return yaml.safe_load(text) or {}
    return {}


def discover(path: str | os.PathLike, tz: str | dict | None = None) -> list[SourceFile]:
    """Every data file under ``path`` (a folder or one file), sorted so rotated files come
    oldest first before the live file. ``tz`` (a zone name, or {host: zone}) overrides the
    manifest."""
    p = Path(path)
    if p.is_file():
        root, files = p.parent, [p]
    else:
        root = p
        files = [f for f in p.rglob("*") if f.is_file()]
    manifest = load_manifest(root) if p.is_dir() else {}
    hosts_map = manifest.get("hosts") or {}
    file_map = manifest.get("files") or {}
    default_tz = manifest.get("tz") or "UTC"
    layouts_map = manifest.get("layouts") or {}
    out = []
    for f in files:
        rel = f.relative_to(root).as_posix()
        parts = rel.split("/")
        if f.name in SKIP_NAMES and p.is_dir() or f.name.endswith(SKIP_SUFFIXES) or any(x.startswith(".") for x in parts):
            continue
        folder = parts[0] if len(parts) > 1 else None
        host = None
        for pat, h in file_map.items():
            if fnmatch.fnmatch(rel, pat):
                host = h
                break
        host_tz = None
        if folder is not None and folder in hosts_map:
            spec = hosts_map[folder]
            if isinstance(spec, str):
                spec = {"name": spec}
            host = host or spec.get("name", folder)
            host_tz = spec.get("tz")
        if host is None:
            host = folder if folder is not None else (manifest.get("host") or root.resolve().name)
        if isinstance(tz, dict):
            ftz = tz.get(host, host_tz or default_tz)
        else:
            ftz = tz or host_tz or default_tz
        m = _ROTATED.match(f.name)
        gz = f.name.endswith(".gz")
        base = m.group("base") if m else f.name
        stamp = (m.group("stamp") or m.group("num") or "") if m else ""
        sf = SourceFile(f, rel, str(host), ftz, gz, base, stamp, f.stat().st_size)
        layout = next((str(v) for g, v in layouts_map.items() if fnmatch.fnmatch(rel, g)), None)
        if layout:
            sf.meta["layout"] = layout
        out.append(sf)
    out.sort(key=_order)
    return out


def _order(s: SourceFile):
    # group by folder + base name; rotated files first (by stamp, numbered ones newest-last
    # as log4j's RollingFileAppender numbers .1 as the newest), the live file last
    folder = s.rel.rsplit("/", 1)[0] if "/" in s.rel else ""
    if not s.stamp:
        rank = (2, "")
    elif s.stamp.isdigit():
        rank = (1, f"{-int(s.stamp):012d}")
    else:
        rank = (0, s.stamp)
    return (folder, s.base, rank, s.rel)


def read_chunks(src: SourceFile, chunk: int = CHUNK) -> Iterator[bytes]:
    """Yield the file's (decompressed) bytes in chunks. Raises :class:`SourceError` after
    yielding everything readable when a gzip stream is truncated or corrupt.

    Example:
        >>> import gzip, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.log.gz"
        >>> _ = p.write_bytes(gzip.compress(b"hello\\n"))
        >>> b"".join(read_chunks(SourceFile(p, "a.log.gz", "h", gz=True)))
        b'hello\\n'
    """
    on_read = src.meta.get("on_read")
    with open(src.path, "rb") as raw:
        fh = _Counting(raw, on_read) if on_read else raw
        if src.end is not None:  # one part of a plain file split for parallel parsing
            fh.seek(src.start)
            left = src.end - src.start
            while left > 0:
                b = fh.read(min(chunk, left))
                if not b:
                    return
                left -= len(b)
                yield b
            return
        if not _is_gzip(src, fh):
            while True:
                b = fh.read(chunk)
                if not b:
                    return
                yield b
        yield from _gunzip(src, fh, chunk)


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


def _is_gzip(src: SourceFile, fh) -> bool:
    head = fh.read(2)
    fh.seek(0)
    return head == b"\x1f\x8b"


def _gunzip(src: SourceFile, fh, chunk: int) -> Iterator[bytes]:
    out_total = 0
    d, fed = zlib.decompressobj(wbits=31), False
    pending = b""
    while True:
        raw = pending or fh.read(1024 * 1024)
        pending = b""
        if not raw:
            break
        fed = True
        while raw:
            try:
                piece = d.decompress(raw, chunk)
            except zlib.error as e:
                raise SourceError(src.rel, f"corrupt gzip data ({e})", offset=out_total) from None
            raw = d.unconsumed_tail
            if piece:
                out_total += len(piece)
                yield piece
            if d.eof:
                rest = d.unused_data + raw
                d, fed = zlib.decompressobj(wbits=31), False
                if rest[:2] == b"\x1f\x8b":       # concatenated gzip members (`cat a.gz b.gz`)
                    pending = rest
                elif rest.strip(b"\0"):
                    raise SourceError(src.rel, "junk after the end of the gzip stream", offset=out_total)
                raw = b""
    tail = d.flush()
    if tail:
        out_total += len(tail)
        yield tail
    if fed and not d.eof:
        raise SourceError(src.rel, "truncated gzip: the compressed stream ends before its end marker",
                          offset=out_total)


def head(src: SourceFile, n: int = 64 * 1024) -> bytes:
    """The first ``n`` bytes of the file's content (decompressed), for format detection."""
    buf = bytearray()
    try:
        for b in read_chunks(src, chunk=n):
            buf += b
            if len(buf) >= n:
                break
    except SourceError:
        pass
    return bytes(buf[:n])
