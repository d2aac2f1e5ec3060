"""What ``kitlib triage`` printed for a cached bundle, kept in the bundle's cache entry so that the
next triage of the same unchanged bundle, with the same kit and the same arguments, prints it
again without opening a table or importing the detectors.

- **Where**: ``<entry>/triage/<key>.json`` beside the entry's ``store/`` (never in the bundle,
  never in a report's copy of the store); removed with its entry (``kitlib cache --clear``,
  eviction). A triage of a ``kitlib ingest`` output keeps its memo in that output, in a hidden
  folder (``<out>/.triage/<key>.json``, beside the ``.derived/`` tables its first reader built),
  which goes with the output when an ingest replaces it; an output that cannot be written to
  keeps none.
- **Key** (:func:`request`): everything that can change what triage prints: the bundle's resolved
  path and the path, size, modification time and mode of each of its files (as the entry's own
  key; for an ingest output, its resolved path: its files are the stamp below), the command's arguments (output form, time zone, window and any other), the ``KITLIB_*``
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
from kitlib.ingestion.guard import TRIAGE_MEMOS, is_kit_output, marker

FOLDER = "triage"  # in a cache entry, beside store/
IN_OUTPUT = TRIAGE_MEMOS  # in an ingest output (hidden: never taken for a table)
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


def store_stamp(store: Path, skip: str | None = None) -> list:
    """Each file under ``store`` (but those in its folder ``skip``): (relative path, size,
    modification time in ns), sorted."""
    out = []
    for dirpath, dirs, files in os.walk(store):
        dirs[:] = sorted(d for d in dirs if not (skip and d == skip and dirpath == str(store)))
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
    output: bool = False  # the bundle is an ingest output (its memo is kept in it)


def request(bundle: str | os.PathLike, args: dict) -> Request | None:
    """The key of a triage of ``bundle`` with ``args`` (the command's arguments, JSON-able), or
    None when no memo applies (the bundle does not exist, is an ingest output, or the cache is
    off)."""
    if cache.disabled():
        return None
    p = Path(bundle)
    output = False
    files: list = []  # (an ingest output's files are its stamp, checked when its memo is read)
    try:
        if not os.path.lexists(p):
            return None
        if p.is_dir() and is_kit_output(p):  # a kit's folder: no cache entry
            output = is_ingest_output(p)
            if not output:  # (a report's folder, the cache's own store)
                return None
            p = p.resolve()
        else:
            _total, files = cache.bundle_files(p)
        resolved = str(p.resolve())
    except OSError:
        return None
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("KITLIB_"))
    material = [FORMAT, code_stamp(), resolved, files, sorted(args.items()), env] + (
        ["ingest output"] if output else []
    )
    key = hashlib.sha256(json.dumps(material, default=str).encode()).hexdigest()[:40]
    return Request(p, files, args.get("tz"), key, output)


def is_ingest_output(folder: Path) -> bool:
    """Whether ``folder`` is what ``kitlib ingest --out`` wrote (its marker names that command)."""
    return str((marker(folder) or {}).get("writer", "")) == "kitlib ingest"


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
    if req.output:
        return _read(req.path / IN_OUTPUT / f"{req.key}.json", store_stamp(req.path, IN_OUTPUT), req.key)
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
        if req.output:  # the output itself, read as it is (no entry of the cache)
            if Path(store).resolve() != req.path:
                return False
        elif folder.parent.resolve() != root.resolve() or not cache.is_entry(folder):
            return False
        elif folder.name != cache.entry_key(req.path, req.files, req.tz):
            return False
        parts = [printed]
        # (an ingest output's summary says how long its ingest took: printed as it was)
        if seconds is not None and not shown and not req.output:
            needle = f" bytes) in {seconds} s"
            at = printed.find(needle)
            if at >= 0:
                cut = at + len(" bytes) in ")
                parts = [printed[:cut], printed[cut + len(seconds) :]]
        d = {
            "format": FORMAT,
            "key": req.key,
            "store": store_stamp(Path(store), IN_OUTPUT if req.output else None),
            "exit": code,
            "parts": parts,
            "shown": shown,
        }
        out = req.path / IN_OUTPUT if req.output else folder / FOLDER
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
