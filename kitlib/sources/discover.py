"""Finding the data files of a bundle and the host, timezone and layout of each.

Host identity, in order of precedence:
1. ``bundle.yaml`` / ``bundle.json`` at the bundle root: ``files: {glob: host}`` maps paths
   (relative, fnmatch globs) to hosts; ``hosts: {folder: {name:, tz:}}`` renames a folder's
   host and sets its log timezone; ``host:`` names the host of files at the root; ``tz:`` the
   default timezone; ``layouts: {glob: pattern}`` names the log layout of matching files (a
   log4j/logback pattern, or ``json``), read by :mod:`kitlib.formats.logs.inference`.
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
import os
import re
from pathlib import Path

from kitlib.sources.archives import is_zip, zip_members
from kitlib.sources.decompress import codec_of
from kitlib.sources.files import NotRead, SourceFile
from kitlib.sources.manifest import check_tz, load_manifest
from kitlib.sources.names import shown
from kitlib.sources.regular import open_regular
from kitlib.sources.walk import walk

_ROTATED = re.compile(
    r"^(?P<base>.+?)(?:\.(?P<stamp>\d{4}-\d{2}-\d{2}(?:-\d{2})?)|\.(?P<num>\d+))?"
    r"(?P<gz>\.(?:gz|zst|xz|bz2|lz4))?$"
)


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
        found = walk(root, skipped)
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
        members = zip_members(f, rel, skipped) if is_zip(f) else [("", rel, None)]
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
    src.gz = bool(member) or codec_of(src) is not None  # never split into byte ranges
    src.meta["host_from"] = host_from
    layout = next((str(v) for g, v in (manifest.get("layouts") or {}).items() if fnmatch.fnmatch(rel, g)), None)
    if layout:
        src.meta["layout"] = layout
    return src


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
