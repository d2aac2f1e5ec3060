"""What ``kitlib triage`` printed for a cached bundle, kept in the bundle's cache entry so that the
next triage of the same unchanged bundle, with the same kit and the same arguments, prints it
again without opening a table or importing the detectors.

- **Where**: ``<entry>/triage/<key>.json`` beside the entry's ``store/`` (never in the bundle,
  never in a report's copy of the store); removed with its entry (``kitlib cache --clear``,
  eviction).
- **Key** (:func:`request`): everything that can change what triage prints: the bundle's resolved
  path and the path, size, modification time and mode of each of its files (as the entry's own
  key), the command's arguments (output form, time zone, window and any other), the ``KITLIB_*``
  environment, the kit's code and data (a hash of every file of the installed package: its
  modules, the statement catalogue, the templates), its version, and the installed distributions
  (names and versions). The memo also holds the stamp of the store it was computed from (each
  file's path, size and modification time) and is used only while the store still has it.
- A memo that cannot be read, or whose key or stamp differ, is ignored: triage runs the
  detectors and writes a new one. ``--no-cache`` neither reads nor writes one. A triage in which a
  detector failed is not kept (the next run tries again).
- Only the standard library is imported here, so a triage answered from its memo starts no
  pandas, Arrow or DuckDB.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kitlib.ingestion import cache
from kitlib.ingestion.guard import is_kit_output

FOLDER = "triage"  # in a cache entry, beside store/
FORMAT = 1  # bumped when a memo's shape changes
_CODE: str | None = None


def code_stamp() -> str:
    """A hash of the installed kit: every file of the package (path and bytes; compiled bytecode
    left out), its distribution's version, and the name of every installed distribution (which
    carries its version), so another numpy or pandas counts as another kit."""
    global _CODE
    if _CODE is not None:
        return _CODE
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            p = os.path.join(dirpath, name)
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            h.update(os.path.relpath(p, root).encode() + b"\0" + hashlib.sha256(data).digest())
    dists = []
    for entry in sys.path:
        with contextlib.suppress(OSError):
            dists += [e.name for e in os.scandir(entry or ".") if e.name.endswith((".dist-info", ".egg-info"))]
    h.update(json.dumps(sorted(set(dists))).encode())
    h.update(sys.version.encode())
    _CODE = h.hexdigest()
    return _CODE


def store_stamp(store: Path) -> list:
    """Each file under ``store``: (relative path, size, modification time in ns), sorted."""
    out = []
    for dirpath, dirs, files in os.walk(store):
        dirs.sort()
        for name in files:
            p = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.stat(p)
                out.append([os.path.relpath(p, store), st.st_size, st.st_mtime_ns])
    return sorted(out)


@dataclass(frozen=True)
class Request:
    """One triage asked for: the bundle's path, its files' listing, the time zone, the key."""

    path: Path
    files: list
    tz: object
    key: str


def request(bundle: str | os.PathLike, args: dict) -> Request | None:
    """The key of a triage of ``bundle`` with ``args`` (the command's arguments, JSON-able), or
    None when no memo applies (the bundle does not exist, is an ingest output, or the cache is
    off)."""
    if cache.disabled():
        return None
    p = Path(bundle)
    try:
        if not os.path.lexists(p) or (p.is_dir() and is_kit_output(p)):  # an ingest output: no cache entry
            return None
        _total, files = cache.bundle_files(p)
        resolved = str(p.resolve())
    except OSError:
        return None
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("KITLIB_"))
    material = [FORMAT, code_stamp(), resolved, files, sorted(args.items()), env]
    key = hashlib.sha256(json.dumps(material, default=str).encode()).hexdigest()[:40]
    return Request(p, files, args.get("tz"), key)


@dataclass(frozen=True)
class Memo:
    """What a triage printed, and its exit status. The text form's load time (the summary's
    ``files ... in X s``) is this run's own: the printed text is cut around it. The JSON form is
    kept as it was shown (:func:`kitlib.terminal.visible`: control characters escaped, secrets
    masked), so that it is not searched for secrets again."""

    parts: list
    exit: int
    shown: bool = False

    def text(self, seconds: float) -> str:
        return f"{seconds:.2f}".join(self.parts)

    def write(self, out, seconds: float) -> None:
        """Print it on ``out`` (the command's stdout: a :class:`kitlib.terminal.VisibleStream`)."""
        if self.shown:
            getattr(out, "stream", out).write(self.parts[0])
        else:
            out.write(self.text(seconds))


def _read(path: Path, stamp: list, key: str) -> Memo | None:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(d, dict) or d.get("format") != FORMAT or d.get("key") != key or d.get("store") != stamp:
            return None
        parts, code = d["parts"], d["exit"]
        if not (isinstance(parts, list) and 1 <= len(parts) <= 2 and all(isinstance(s, str) for s in parts)):
            return None
        shown = d.get("shown", False)
        if type(code) is not int or type(shown) is not bool or (shown and len(parts) != 1):
            return None
        return Memo(parts, code, shown)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def lookup(req: Request) -> Memo | None:
    """The memo of ``req`` in any entry of the cache, when its store is as it was; the entry is
    marked used (as opening it would)."""
    root = cache.cache_root()
    try:
        names = [e.name for e in os.scandir(root) if not e.name.startswith(".")]
    except OSError:
        return None
    for name in names:
        folder = root / name
        path = folder / FOLDER / f"{req.key}.json"
        if not path.is_file() or not cache.is_entry(folder) or not (folder / cache.ENTRY).is_file():
            continue
        memo = _read(path, store_stamp(folder / cache.STORE), req.key)
        if memo is not None:
            with contextlib.suppress(OSError):
                os.utime(folder / cache.ENTRY)
            return memo
    return None


def save(req: Request, store: Path | None, printed: str, seconds: str | None, code: int, shown: bool = False) -> bool:
    """Keep what a triage of ``req`` printed (``printed``, exit status ``code``) in the cache entry
    whose store it read, when ``store`` is the entry the cache gives this very request (so a bundle
    changed during the run keeps nothing). ``seconds`` is the load time as printed in the text form
    (its text is cut around it); ``shown`` says ``printed`` is already as shown (JSON). Nothing is
    raised: a memo that cannot be written is not kept."""
    if store is None:
        return False
    folder = Path(store).parent
    root = cache.cache_root()
    try:
        if folder.parent.resolve() != root.resolve() or not cache.is_entry(folder):
            return False
        if folder.name != cache.entry_key(req.path, req.files, req.tz):
            return False
        parts = [printed]
        if seconds is not None and not shown:
            needle = f" bytes) in {seconds} s"
            at = printed.find(needle)
            if at >= 0:
                cut = at + len(" bytes) in ")
                parts = [printed[:cut], printed[cut + len(seconds) :]]
        d = {
            "format": FORMAT,
            "key": req.key,
            "store": store_stamp(Path(store)),
            "exit": code,
            "parts": parts,
            "shown": shown,
        }
        out = folder / FOLDER
        out.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memo-", dir=out)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(d, f)
            os.replace(tmp, out / f"{req.key}.json")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return True
    except OSError:
        return False
