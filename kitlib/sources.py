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

import bz2
import codecs
import errno
import fnmatch
import heapq
import itertools
import json
import lzma
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

CHUNK = 6 * 1024 * 1024  # log4j blocks: 6 MiB peaked 20 MB lower than 8 MiB on 1 GB, as fast
# a line longer than this keeps its first MAX_LINE bytes; the rest of it is counted, not stored
# (memory stays bounded whatever a file holds; the file's error says which line was cut)
MAX_LINE = 8 * 1024 * 1024
MANIFESTS = ("bundle.yaml", "bundle.yml", "bundle.json")
# files a bundle may hold that are not data (manifests, notes, our own ingest output)
NOTES = {"README.md", "PROVENANCE.md", ".DS_Store", "summary.json"}
SKIP_NAMES = set(MANIFESTS) | NOTES
SKIP_SUFFIXES = (".parquet",)
ZIP_MAGIC = b"PK\x03\x04"
MAX_ZIP_DEPTH = 4  # a zip inside a zip ... is read as a folder this many archives deep at most
_ROTATED = re.compile(
    r"^(?P<base>.+?)(?:\.(?P<stamp>\d{4}-\d{2}-\d{2}(?:-\d{2})?)|\.(?P<num>\d+))?"
    r"(?P<gz>\.(?:gz|zst|xz|bz2|lz4))?$"
)
# compressed content, recognised by its first bytes (the name does not matter)
MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bz2",
    b"\x04\x22\x4d\x18": "lz4",
}


class SourceError(Exception):
    """A file could not be read to its end. ``line`` is the 1-based line where it broke."""

    def __init__(self, file: str, message: str, line: int | None = None, offset: int | None = None):
        self.file, self.line, self.offset = file, line, offset
        where = f" at line {line}" if line is not None else ""
        if offset is not None:
            where += f" (byte {offset:,} of its content)"
        super().__init__(f"{file}{where}: {message}")


class ManifestError(ValueError):
    """A bundle manifest (bundle.yaml/json) or a timezone option that cannot be used; the
    message names the file and the key."""


@dataclass
class SourceFile:
    path: Path  # absolute path on disk (of the zip archive, for a member)
    rel: str  # path relative to the bundle root, '/'-separated (what tables cite)
    host: str
    tz: str = "UTC"
    gz: bool = False  # compressed (any codec in MAGIC)
    base: str = ""  # name without rotation suffix and codec suffix: 'server.log'
    stamp: str = ""  # rotation suffix: '2024-05-22-00' or '1'
    size: int = 0
    meta: dict = field(default_factory=dict)
    member: str = ""  # name inside the zip archive ``path``; empty for plain files
    start: int = 0  # a part of a big plain file: its first byte (a record start) ...
    end: int | None = None  # ... and the byte after its last (None: to the end of the file)
    first_line: int = 1  # the line number its first byte is on


@dataclass(frozen=True)
class NotRead:
    """A path of the bundle the kit did not read as data, and why."""

    rel: str
    reason: str


def shown(name: str) -> str:
    """A file name as tables and messages show it: bytes that are not UTF-8 (kept by Python as
    lone surrogates) become ``\\xNN``.

    Example:
        >>> shown(os.fsdecode(b"caf\\xe9.log"))
        'caf\\\\xe9.log'
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_tz(name, where: str) -> str:
    """``name`` when it is a timezone this machine knows, else :class:`ManifestError` naming
    ``where`` (the manifest key or the option)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(name, str) or not name.strip():
        raise ManifestError(f"{where}: a timezone name is expected (like UTC or Europe/Berlin), got {name!r}")
    if name in ("UTC", "utc", "Z", "Etc/UTC"):
        return name
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ManifestError(
            f"{where}: unknown timezone {name!r} (use an IANA name such as UTC or Europe/Berlin)"
        ) from None
    return name


def load_manifest(root: Path) -> dict:
    """The bundle manifest at ``root`` as a checked mapping ({} when there is none). Any problem
    (bad YAML/JSON, YAML tags that would build Python objects, wrong types, unknown timezones)
    raises :class:`ManifestError` naming the file and key."""
    for name in MANIFESTS:
        p = root / name
        if p.is_file():
            try:
                with open_regular(p) as fh:
                    text = fh.read(MAX_LINE).decode("utf-8-sig")
            except (OSError, UnicodeDecodeError) as e:
                raise ManifestError(f"{shown(str(p))}: cannot be read ({e})") from None
            try:
                if name.endswith(".json"):
                    data = json.loads(text) if text.strip() else {}
                else:
                    import yaml

                    data = yaml.safe_load(text)
            except json.JSONDecodeError as e:
                raise ManifestError(f"{shown(str(p))}: invalid JSON at line {e.lineno} ({e.msg})") from None
            except Exception as e:  # noqa: BLE001 - yaml's errors (syntax, unsafe tags) and RecursionError
                mark = getattr(e, "problem_mark", None)
                where = f" at line {mark.line + 1}" if mark is not None else ""
                what = getattr(e, "problem", None) or type(e).__name__
                raise ManifestError(f"{shown(str(p))}: invalid YAML{where} ({what})") from None
            return _check_manifest(data if data is not None else {}, shown(str(p)))
    return {}


def _check_manifest(m, where: str) -> dict:
    if not isinstance(m, dict):
        raise ManifestError(
            f"{where}: a mapping of keys (files, hosts, host, tz) is expected, got a {type(m).__name__}"
        )
    for k in ("host", "tz"):
        if k in m and m[k] is not None and not isinstance(m[k], str):
            raise ManifestError(f"{where}: key '{k}' must be a string, got {type(m[k]).__name__}")
    if m.get("tz"):
        check_tz(m["tz"], f"{where}: key 'tz'")
    files = m.get("files")
    if files is not None:
        if not isinstance(files, dict):
            raise ManifestError(f"{where}: key 'files' must map path globs to host names, got {type(files).__name__}")
        for g, h in files.items():
            if not isinstance(g, str) or not isinstance(h, (str, int)):
                raise ManifestError(f"{where}: key 'files' entry {g!r}: a glob mapped to a host name is expected")
    layouts = m.get("layouts")
    if layouts is not None and not isinstance(layouts, dict):
        raise ManifestError(
            f"{where}: key 'layouts' must map path globs to layout patterns, got {type(layouts).__name__}"
        )
    hosts = m.get("hosts")
    if hosts is not None:
        if not isinstance(hosts, dict):
            raise ManifestError(
                f"{where}: key 'hosts' must map folder names to a host name or "
                f"{{name:, tz:}}, got {type(hosts).__name__}"
            )
        for folder, spec in hosts.items():
            if isinstance(spec, (str, int)):
                continue
            if not isinstance(spec, dict):
                raise ManifestError(f"{where}: key 'hosts.{folder}' must be a host name or {{name:, tz:}}")
            if "name" in spec and not isinstance(spec["name"], (str, int)):
                raise ManifestError(f"{where}: key 'hosts.{folder}.name' must be a string")
            if spec.get("tz") is not None:
                check_tz(spec["tz"], f"{where}: key 'hosts.{folder}.tz'")
    return m


def discover(path: str | os.PathLike, tz: str | dict | None = None) -> list[SourceFile]:
    """Every data file under ``path`` (a folder or one file), sorted so rotated files come
    oldest first before the live file. ``tz`` (a zone name, or {host: zone}) overrides the
    manifest. What is not read is listed by :func:`discover_all`."""
    return discover_all(path, tz)[0]


def discover_all(path: str | os.PathLike, tz: str | dict | None = None) -> tuple[list[SourceFile], list[NotRead]]:
    """(data files, paths not read with why). Folders are walked without following symlinks
    out of the bundle: a link is followed only when its target is inside the bundle; dangling
    links, loops, unreadable files and folders, hidden paths, notes and kit output are listed
    in the second list, never skipped silently. Zip archives are read as folders."""
    p = Path(path)
    if isinstance(tz, str):
        check_tz(tz, "--tz")
    elif isinstance(tz, dict):
        for h, z in tz.items():
            check_tz(z, f"tz for host {h}")
    if not os.path.lexists(p):
        raise FileNotFoundError(f"bundle not found: {shown(str(p))}")
    skipped: list[NotRead] = []
    if p.is_dir():
        root = p
        found = _walk(root, skipped)
        manifest = load_manifest(root)
    else:
        root, manifest = p.parent, {}
        found = [(p, p.name)]
        try:
            with open_regular(p):
                pass
        except OSError as e:
            skipped.append(NotRead(shown(p.name), f"cannot be read: {e.strerror or e}"))
            found = []
    hosts_map = manifest.get("hosts") or {}
    file_map = manifest.get("files") or {}
    default_tz = manifest.get("tz") or "UTC"
    out = []
    for f, rel in found:
        members = _zip_members(f, rel, skipped) if _is_zip(f) else [("", rel, None)]
        for member, mrel, msize in members:
            out.append(_source(f, member, mrel, msize, root, p, manifest, hosts_map, file_map, default_tz, tz))
    out.sort(key=_order)
    return out, sorted(skipped, key=lambda s: s.rel)


# folders that name a kind of file, not a machine: `incident/jmx/broker-1.csv` is broker-1's
KIND_FOLDERS = {
    "jmx",
    "logs",
    "log",
    "connect",
    "metrics",
    "gc",
    "gclogs",
    "kafka",
    "brokers",
    "workers",
    "clients",
    "cli",
    "tools",
    "prometheus",
    "jolokia",
    "server",
    "controller",
    "controllers",
}
_HOSTLIKE = re.compile(
    r"^(?P<h>(?:broker|kafka|node|controller|worker|connect|kraft|zk|zookeeper|server|host)"
    r"[-_]?[a-z]?\d+[a-z0-9-]*?)(?:[-_.](?:jmx|gc|metrics|server|log|out|csv|json|txt|\d{8}).*)?$",
    re.I,
)
_ID_IN_LOG = [
    re.compile(rb"\[(?:KafkaServer|BrokerServer|ControllerServer|KafkaRaftServer) (?:id|nodeId)=(\d+)\]"),
    re.compile(rb"^\s*(?:node\.id|broker\.id) = (\d+)\s*$", re.M),
]


def infer_host(rel: str, f: Path | None = None, head_bytes: bytes | None = None) -> tuple[str | None, str]:
    """A host for a file under a kind folder (``jmx/``, ``logs/``, ``connect/`` ...): the next
    folder down, else a host-like file name (``broker-1.csv``), else what the file says
    (``[KafkaServer id=1]``, ``node.id = 1`` in a config dump: ``broker-1``). Returns
    (host or None, how it was found).

    Example:
        >>> infer_host("jmx/broker-2.csv")
        ('broker-2', 'file name')
        >>> infer_host("connect/worker-a/connect.log")
        ('worker-a', 'folder')
    """
    parts = rel.split("/")
    if len(parts) > 2:
        return parts[1], "folder"
    stem = parts[-1]
    for ext in (".gz", ".zst", ".xz", ".bz2", ".lz4"):
        stem = stem.removesuffix(ext)
    m = _HOSTLIKE.match(stem)
    if m:
        return m.group("h"), "file name"
    data = head_bytes
    if data is None and f is not None:
        try:
            with open_regular(f) as fh:
                data = fh.read(256 * 1024)
        except OSError:
            data = b""
    for rx in _ID_IN_LOG:
        hit = rx.search(data or b"")
        if hit:
            return f"broker-{hit.group(1).decode()}", "file content"
    return None, ""


def _source(f: Path, member: str, rel_raw: str, msize, root, p, manifest, hosts_map, file_map, default_tz, tz):
    rel = shown(rel_raw)
    parts = rel.split("/")
    # archives are folders: logs.zip/broker-1/server.log (and a.zip/b.zip/broker-1/server.log)
    # belong to broker-1; broker-1.zip/server.log, with no folder inside, to broker-1 too
    plain = [d for d in parts[:-1] if not d.lower().endswith(".zip")]
    folder = plain[0] if plain else (parts[-2][:-4] if len(parts) > 1 else None)
    host = None
    for pat, h in file_map.items():
        if fnmatch.fnmatch(rel, pat):
            host = h
            break
    host_tz = None
    if folder is not None and folder in hosts_map:
        spec = hosts_map[folder]
        if not isinstance(spec, dict):
            spec = {"name": spec}
        host = host or spec.get("name", folder)
        host_tz = spec.get("tz")
    host_from = "manifest" if host is not None else ""
    if host is None and folder is not None and folder.lower() in KIND_FOLDERS and not member:
        host, host_from = infer_host(rel, f)
    if host is None:
        host = folder if folder is not None else (manifest.get("host") or shown(root.resolve().name))
        host_from = "folder" if folder is not None else ("manifest" if manifest.get("host") else "bundle name")
    if isinstance(tz, dict):
        ftz = tz.get(host, host_tz or default_tz)
    else:
        ftz = tz or host_tz or default_tz
    name = parts[-1]
    m = _ROTATED.match(name)
    base = m.group("base") if m else name
    stamp = (m.group("stamp") or m.group("num") or "") if m else ""
    size = msize if msize is not None else f.stat().st_size
    src = SourceFile(f, rel, str(host), ftz, False, base, stamp, size, member=member)
    src.gz = bool(member) or _codec(src) is not None  # never split into byte ranges
    src.meta["host_from"] = host_from
    layout = next((str(v) for g, v in (manifest.get("layouts") or {}).items() if fnmatch.fnmatch(rel, g)), None)
    if layout:
        src.meta["layout"] = layout
    return src


def special_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words.

    Example:
        >>> special_kind(stat.S_IFIFO | 0o644)
        'named pipe (FIFO)'
    """
    for test, what in (
        (stat.S_ISFIFO, "named pipe (FIFO)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISDIR, "folder"),
    ):
        if test(mode):
            return what
    return "special file"


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """``path`` opened read-only, only if it is a regular file. It is opened without blocking
    (a pipe, socket or device is never waited on) and checked with ``fstat`` before anything is
    read, so a path swapped for a pipe after it was examined still costs nothing; anything but a
    regular file raises OSError saying what it is."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"not a regular file (a {special_kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _walk(root: Path, skipped: list[NotRead]) -> list[tuple[Path, str]]:
    """(path to open, path relative to root) for every regular file under root, each real file
    once. The tree is walked with a stack (any depth); symlinks are resolved after every real
    path is known, so a link to a file or folder read under its own name is listed as a link
    (``link to X, read once there``), never read twice; hard links are read once too (by
    ``st_dev``/``st_ino``)."""
    real_root = os.path.realpath(root)
    found: list[tuple[Path, str]] = []
    read_as: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) of each file read -> its rel
    # (st_dev, st_ino) of each folder walked -> its rel (by identity: a real path would be resolved
    # component by component, which costs the square of the depth on a deep tree)
    root_st = os.stat(root)
    folder_as: dict[tuple[int, int], str] = {(root_st.st_dev, root_st.st_ino): ""}
    folders: list[tuple[str, str]] = [(str(root), "")]  # to walk: (path, rel)
    links: list[tuple[str, str]] = []  # symlinks met (a heap by rel), resolved last

    def inside(real: str) -> bool:
        return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)

    def listed_by_name(rel: str, name: str) -> bool:
        if "/" not in rel and name in MANIFESTS:
            return True  # the manifest itself: read by load_manifest
        if name in NOTES or name in MANIFESTS:
            skipped.append(NotRead(shown(rel), "bundle notes or kit output, not log data"))
            return True
        if name.endswith(SKIP_SUFFIXES):
            skipped.append(NotRead(shown(rel), "Parquet table (kit output), not log data"))
            return True
        return False

    def take(path: str, rel: str, st: os.stat_result, via_link: bool) -> None:
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in folder_as:
                there = folder_as[key]
                holds = rel == there or rel.startswith(there + "/") or not there
                why = (
                    "symlink loop (a link to a folder that holds it)"
                    if holds
                    else f"link to {shown(there)}, read once there"
                )
                skipped.append(NotRead(shown(rel), why))
                return
            folder_as[key] = rel
            folders.append((path, rel))
            return
        if not stat.S_ISREG(st.st_mode):
            skipped.append(NotRead(shown(rel), f"not a regular file (a {special_kind(st.st_mode)}): never opened"))
            return
        key = (st.st_dev, st.st_ino)
        if key in read_as:
            how = "link to" if via_link else "hard link to"
            skipped.append(NotRead(shown(rel), f"{how} {shown(read_as[key])}, read once there"))
            return
        if not os.access(path, os.R_OK):
            skipped.append(NotRead(shown(rel), "cannot be read: permission denied"))
            return
        read_as[key] = rel
        found.append((Path(path), rel))

    while folders or links:
        if not folders:  # every real folder is walked: resolve the next link
            rel, path = heapq.heappop(links)
            try:
                real = os.path.realpath(path, strict=True)
            except OSError as err:
                loop = "loop" in str(err).lower() or err.errno == errno.ELOOP
                why = "symlink loop" if loop else "dangling symlink (its target does not exist)"
                skipped.append(NotRead(shown(rel), why))
                continue
            if not inside(real):
                skipped.append(NotRead(shown(rel), "symlink to a path outside the bundle: not followed"))
                continue
            try:
                st = os.stat(real)
            except OSError as err:
                skipped.append(NotRead(shown(rel), f"cannot be examined: {err.strerror or err}"))
                continue
            take(real, rel, st, via_link=True)
            continue
        d, rel_dir = folders.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            skipped.append(NotRead(shown(rel_dir or "."), f"folder cannot be read: {err.strerror or err}"))
            continue
        at = len(folders)
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            if e.name.startswith("."):
                skipped.append(NotRead(shown(rel), "hidden (its name starts with a dot)"))
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as err:
                skipped.append(NotRead(shown(rel), f"cannot be examined: {err.strerror or err}"))
                continue
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                if listed_by_name(rel, e.name):
                    continue
            if stat.S_ISLNK(st.st_mode):
                heapq.heappush(links, (rel, e.path))
                continue
            take(e.path, rel, st, via_link=False)
        folders[at:] = folders[at:][::-1]  # this folder's subfolders are walked in name order
    return found


def regular_files(root: Path) -> list[Path]:
    """Every regular file under the folder ``root`` that :func:`discover_all` would read (any
    depth, each real file once; hidden paths, notes and special files left out)."""
    return [p for p, _ in _walk(Path(root), [])]


def _is_zip(f: Path) -> bool:
    try:
        with open_regular(f) as fh:
            return fh.read(4) == ZIP_MAGIC
    except OSError:
        return False


def _zip_members(f: Path, rel: str, skipped: list[NotRead]) -> list[tuple[str, str, int]]:
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


def _open(src: SourceFile):
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


def _codec(src: SourceFile) -> str | None:
    try:
        with _open(src) as fh:
            head6 = fh.read(6)
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError, zlib.error):
        return None
    for magic, name in MAGIC.items():
        if head6.startswith(magic):
            return name
    return None


def read_chunks(src: SourceFile, chunk: int = CHUNK) -> Iterator[bytes]:
    """Yield the file's content in chunks: decompressed (gzip, zstd, xz, bz2, lz4 frame, found
    by their first bytes), UTF-16 (with a BOM) turned into UTF-8, a UTF-8 BOM dropped, lines
    longer than :data:`MAX_LINE` cut (see :func:`cap_lines`). Memory stays bounded by ``chunk``
    whatever the compression ratio. Raises :class:`SourceError` after yielding everything
    readable when a compressed stream is truncated or corrupt, or the file cannot be read.

    Example:
        >>> import gzip, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.log.gz"
        >>> _ = p.write_bytes(gzip.compress(b"hello\\n"))
        >>> b"".join(read_chunks(SourceFile(p, "a.log.gz", "h", gz=True)))
        b'hello\\n'
    """
    yield from cap_lines(_line_ends(_text(_decompressed(src, chunk), src), src), src)


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


def _decompressed(src: SourceFile, chunk: int) -> Iterator[bytes]:
    on_read = src.meta.get("on_read")
    try:
        raw = _open(src)
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


def cap_lines(chunks: Iterator[bytes], src: SourceFile, limit: int = MAX_LINE) -> Iterator[bytes]:
    """The same bytes, except that a line longer than ``limit`` keeps its first ``limit`` bytes:
    the rest is counted in ``src.meta['cut_lines']`` ([(line, bytes dropped)]), its newline kept, so
    line numbers and counts are unchanged. Checking costs a few ``find`` calls per chunk.

    Example:
        >>> s = SourceFile(None, "x", "h")
        >>> b"".join(cap_lines(iter([b"ab\\n", b"cdefgh", b"ij\\nk"]), s, limit=4)), s.meta["cut_lines"]
        (b'ab\\ncdef\\nk', [(2, 4)])
    """
    since = 0  # bytes of the current line already passed on
    dropping = 0  # > 0 while the rest of a long line is being dropped (bytes so far + 1)
    lines_done = 0
    half = max(limit // 2, 1)
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
                lines_done += count_lines(c)
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
    """The number of newline bytes in ``data``: counted by the compiled scan's module eight bytes
    at a time, about 7 GB/s (numpy's compare-and-count, the fallback, runs at a tenth of that).

    Example:
        >>> count_lines(b"a\\nb\\n")
        2
    """
    if _count_newlines is not None:
        return _count_newlines(data)
    import numpy as np

    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == 10))


_count_newlines: Callable[[bytes | memoryview], int] | None
try:
    from kitlib.formats._log4j_scan import count_newlines as _count_newlines
except ImportError:  # built without a C compiler: numpy counts
    _count_newlines = None


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


def check_output(bundle: str | os.PathLike, out: str | os.PathLike, what: str = "--out") -> None:
    """Refuse (ValueError, before anything is written or removed) an output folder that is the
    bundle, inside it, or around it (a parent of the bundle): writing or replacing it would touch
    the input. Symlinks are resolved first.

    Example:
        >>> check_output("/data/b", "/data/b/tables")
        Traceback (most recent call last):
        ...
        ValueError: --out /data/b/tables is inside the bundle /data/b: input files are never written to
    """
    b = Path(os.path.realpath(bundle))
    o = Path(os.path.realpath(out))
    if o == b:
        raise ValueError(f"{what} {shown(str(out))} is the bundle itself: input files are never written to")
    if b in o.parents:
        raise ValueError(
            f"{what} {shown(str(out))} is inside the bundle {shown(str(bundle))}: input files are never written to"
        )
    if o in b.parents:
        raise ValueError(
            f"{what} {shown(str(out))} holds the bundle {shown(str(bundle))}: input files are never written to"
        )
