"""The kit's cache of ingested bundles: a big raw bundle is parsed once into a store in the user's
cache folder, and every later ``kitlib triage``, ``kitlib report``, :func:`kitlib.load_bundle` or
notebook on the same bundle opens that store instead of parsing it again.

- **Where**: ``$XDG_CACHE_HOME/kitlib`` (else ``~/.cache/kitlib``), or ``$KITLIB_CACHE_DIR``.
  Never inside the bundle (refused like an ``--out`` inside it).
- **When**: a raw bundle (not an ingest output) whose files hold at least
  ``$KITLIB_CACHE_MIN_MB`` MiB (default :data:`MIN_BYTES`, 128 MiB). Smaller bundles are read into
  memory as before. ``--no-cache`` (or ``KITLIB_NO_CACHE=1``) turns it off.
- **Key**: the bundle's resolved path, and the path, size, modification time and mode of every file
  under it, the time zone asked for, and the kit itself (its version and the tables it declares):
  touching a file of the bundle, or installing another version of the kit, makes a new entry.
- **What**: one folder per entry, ``<key>/``, holding the kit's marker (:data:`ENTRY_WRITER`),
  ``entry.json`` (the bundle, its size, when the entry was made) and ``store/``, an ingest output
  with the derived tables built during the ingest (``kitlib ingest --derive``). The entry is
  written into a hidden folder and renamed into place when complete, so a run killed half way
  leaves nothing that a later run reads; its debris is removed by the next run.
- **Bound**: ``$KITLIB_CACHE_MAX_GB`` (default :data:`MAX_BYTES`, 5 GB) for all entries; after a
  new entry is written, the entries used longest ago are removed until the rest fit (the one just
  written stays, even alone above the bound). Last use is the time of ``entry.json``.
- Only folders carrying the entry marker are ever removed (:func:`clear`, eviction).

Example:
    >>> from kitlib.ingestion.cache import entries       # doctest: +SKIP
    >>> [e.bundle for e in entries()]                     # doctest: +SKIP
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kitlib.ingestion.guard import MARKER, OutputRefused, is_kit_output, mark, marker, output_lock, writer_gone

MIN_BYTES = 128 * 1024 * 1024  # a raw bundle this big or bigger is cached (KITLIB_CACHE_MIN_MB)
MAX_BYTES = 5 * 1024**3  # all entries together (KITLIB_CACHE_MAX_GB)
ENTRY_WRITER = "kitlib cache"  # the writer named in an entry's marker: only such folders are removed
ENTRY = "entry.json"
STORE = "store"
# bumped when what an entry holds changes shape, so that a kit never reads an older kit's entries
LAYOUT = 1
# whether a new entry is ingested in a process of its own (ingest_apart): only within
# ingests_apart(), which a command that reads the new store right after (kitlib triage) uses, so
# that none of the ingest's memory stays with it; in a notebook's kernel or a script the ingest
# runs in the calling process (its bar a widget there)
APART = False
# the process a new entry is ingested in, started ahead of the ingest by warm_ingest (kitlib triage)
_WARM = None


@contextlib.contextmanager
def ingests_apart() -> Iterator[None]:
    """Within this block, a new cache entry is ingested in a process of its own."""
    global APART
    was, APART = APART, True
    try:
        yield
    finally:
        APART = was


def cache_root() -> Path:
    """The folder the entries are kept in: ``$KITLIB_CACHE_DIR``, else ``$XDG_CACHE_HOME/kitlib``
    (an absolute ``XDG_CACHE_HOME`` only, as the XDG spec says), else ``~/.cache/kitlib``."""
    own = os.environ.get("KITLIB_CACHE_DIR")
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "kitlib"


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} is negative")
    return value


def min_bytes() -> int:
    """Raw bundles of this many bytes or more are cached (``KITLIB_CACHE_MIN_MB``, MiB)."""
    return int(_env_number("KITLIB_CACHE_MIN_MB", MIN_BYTES / 2**20) * 2**20)


def max_bytes() -> int:
    """The bound on all entries together (``KITLIB_CACHE_MAX_GB``, GiB)."""
    return int(_env_number("KITLIB_CACHE_MAX_GB", MAX_BYTES / 2**30) * 2**30)


def disabled() -> bool:
    """Whether ``KITLIB_NO_CACHE`` turns the cache off (any value but empty, 0, false, no)."""
    return os.environ.get("KITLIB_NO_CACHE", "").strip().lower() not in ("", "0", "false", "no")


def quiet() -> bool:
    """Whether progress is off whatever the terminal: under CI (``CI`` set, as CI services do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def bundle_files(path: Path) -> tuple[int, list[tuple[str, int, int, int]]]:
    """(total bytes, one ``(relative path, size, mtime ns, mode)`` per file under ``path``, sorted).
    A symbolic link counts with what it points to (its own entry when that is gone); folders are
    walked without following links. Only ``stat`` is called: no file is opened."""
    found: list[tuple[str, int, int, int]] = []
    if not path.is_dir():
        st = path.stat()
        return st.st_size, [(path.name, st.st_size, st.st_mtime_ns, st.st_mode)]
    total = 0
    pending = [str(path)]  # an explicit stack: a folder nested thousands deep is no recursion
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                pending.append(e.path)
                continue
            try:
                st = os.stat(e.path)
            except OSError:
                try:
                    st = os.lstat(e.path)
                except OSError:
                    continue
            found.append((os.path.relpath(e.path, path), st.st_size, st.st_mtime_ns, st.st_mode))
            if os.path.isfile(e.path):
                total += st.st_size
    found.sort()
    return total, found


def kit_fingerprint() -> str:
    """The kit that writes an entry: its version, the layout of an entry (:data:`LAYOUT`) and the
    tables it declares (names, columns, types), hashed. A kit of another version reads none of
    this kit's entries. (A working copy of the kit changed without a new version does: clear the
    cache after changing a parser, ``kitlib cache --clear --all``.)"""
    from importlib import metadata

    from kitlib import registry, tables

    registry.load()
    h = hashlib.sha256()
    try:
        h.update(metadata.version("kafka-incident-kit").encode())
    except metadata.PackageNotFoundError:
        h.update(b"unknown version")
    h.update(str(LAYOUT).encode())
    for name in sorted(tables.SCHEMAS):
        h.update(name.encode())
        for c in tables.SCHEMAS[name].columns:
            h.update(f"{c.name}:{c.dtype}".encode())
    return h.hexdigest()


def entry_key(path: Path, files: list, tz) -> str:
    """The key of the entry of the bundle at ``path`` (resolved) with ``files`` (from
    :func:`bundle_files`) read in time zone ``tz``."""
    h = hashlib.sha256()
    h.update(kit_fingerprint().encode())
    h.update(json.dumps([str(path.resolve()), tz, files], sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class Entry:
    """One entry of the cache, as :func:`entries` lists it."""

    key: str
    path: Path
    bundle: str  # the bundle's resolved path when the entry was written
    input_bytes: int  # the bundle's size
    bytes: int  # the entry's size on disk
    created: float  # seconds since the epoch
    used: float  # last opened

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "bundle": self.bundle,
            "input_bytes": self.input_bytes,
            "bytes": self.bytes,
            "created": self.created,
            "used": self.used,
            "path": str(self.path),
        }


def is_entry(folder: Path) -> bool:
    """Whether ``folder`` is an entry the kit wrote into its cache (its marker names
    :data:`ENTRY_WRITER`). Nothing else is ever removed from the cache folder."""
    info = marker(folder) if folder.is_dir() and not folder.is_symlink() else None
    return info is not None and info.get("writer") == ENTRY_WRITER


def _size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def _entry(folder: Path) -> Entry | None:
    if not is_entry(folder):
        return None
    try:
        info = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
        used = (folder / ENTRY).stat().st_mtime
    except (OSError, ValueError):
        info, used = {}, folder.stat().st_mtime
    return Entry(
        key=folder.name,
        path=folder,
        bundle=str(info.get("bundle", "?")),
        input_bytes=int(info.get("input_bytes", 0) or 0),
        bytes=_size(folder),
        created=float(info.get("created", used) or used),
        used=used,
    )


def entries(root: Path | None = None) -> list[Entry]:
    """The entries of the cache, used most recently first. Folders without the entry marker are
    not listed (and never removed)."""
    root = cache_root() if root is None else root
    try:
        names = sorted(e.name for e in os.scandir(root) if not e.name.startswith("."))
    except FileNotFoundError:
        return []
    found = [e for e in (_entry(root / n) for n in names) if e is not None]
    return sorted(found, key=lambda e: -e.used)


def _remove(folder: Path) -> None:
    """Remove an entry: renamed aside first (so no reader finds half of it), then deleted."""
    aside = folder.parent / f".{folder.name}.old-{os.getpid()}"
    try:
        os.rename(folder, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def clear(target: str | None = None, root: Path | None = None) -> list[Entry]:
    """Remove entries: all of them (``target`` None), the one whose key is ``target``, or those of
    the bundle at path ``target``. Returns what was removed. A name in the cache folder that is not
    an entry the kit wrote is refused (ValueError), as is a target that matches nothing."""
    root = cache_root() if root is None else root
    found = entries(root)
    if target is None:
        chosen = found
    else:
        by_key = [e for e in found if e.key == target]
        if by_key:
            chosen = by_key
        elif os.sep not in target and (root / target).exists():
            raise ValueError(
                f"{target} in the cache folder is not an entry the kit wrote (no {MARKER} naming "
                f"{ENTRY_WRITER!r}): refusing to remove it"
            )
        else:
            real = os.path.realpath(target)
            chosen = [e for e in found if e.bundle == real]
            if not chosen:
                raise ValueError(f"no cache entry has the key or bundle {target} (`kitlib cache` lists them)")
    for e in chosen:
        _remove(e.path)
    _sweep(root)
    return chosen


def evict(keep: Path | None = None, bound: int | None = None, root: Path | None = None) -> list[Entry]:
    """Remove the entries used longest ago until all fit in ``bound`` bytes (default
    :func:`max_bytes`); ``keep`` (the entry in use) is never removed. Returns what was removed."""
    root = cache_root() if root is None else root
    bound = max_bytes() if bound is None else bound
    found = entries(root)
    total = sum(e.bytes for e in found)
    removed = []
    for e in reversed(found):  # least recently used first
        if total <= bound:
            break
        if keep is not None and e.path == keep:
            continue
        _remove(e.path)
        total -= e.bytes
        removed.append(e)
    return removed


def _sweep(root: Path) -> None:
    """Remove what killed runs left in the cache folder: hidden entry folders being written
    (``.<key>.partial-*``) or removed (``.<key>.old-*``) whose writer is gone, and empty ones."""
    try:
        debris = [e for e in os.scandir(root) if e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for e in debris:
        if ".partial-" not in e.name and ".old-" not in e.name:
            continue
        info = marker(Path(e.path))
        if info is None:
            with contextlib.suppress(OSError):
                os.rmdir(e.path)
            continue
        if info.get("writer") != ENTRY_WRITER:
            continue
        if ".old-" in e.name:
            pid = e.name.rsplit(".old-", 1)[1]
            gone = pid.isdigit() and writer_gone({"pid": int(pid)})
        else:
            gone = writer_gone(info)
        if gone:
            shutil.rmtree(e.path, ignore_errors=True)


@contextlib.contextmanager
def _wait_lock(out: Path, note) -> Iterator[None]:
    """Hold the lock of entry ``out``, waiting for another run that writes the same entry."""
    told = False
    while True:
        try:
            with output_lock(out, "cache entry"):
                yield
                return
        except OutputRefused:
            if not told:
                note("another kitlib run is caching this bundle: waiting for it")
                told = True
            time.sleep(0.5)


def _stage(progress: bool, text: str) -> None:
    if progress:
        stream = getattr(sys.stderr, "stream", sys.stderr)
        print(f"kitlib: {text}", file=stream, flush=True)


def _used(folder: Path) -> None:
    """Record that the entry was used now (the time of its ``entry.json``)."""
    with contextlib.suppress(OSError):  # a read-only cache is still read
        os.utime(folder / ENTRY)


def show_progress(progress: bool | None) -> bool:
    """Whether a first run shows what it does: ``progress`` when given, else on a terminal and
    not under CI."""
    if progress is not None:
        return bool(progress)
    stream = getattr(sys.stderr, "stream", sys.stderr)
    return bool(getattr(stream, "isatty", lambda: False)()) and not quiet()


def cached_store(
    path: str | os.PathLike, tz=None, progress: bool | None = None, cache: bool | None = None
) -> Path | None:
    """The store of the raw bundle at ``path`` in the cache, written first when there is none
    for it as it is now; None when the cache does not apply: ``cache`` False (or None with
    ``KITLIB_NO_CACHE`` set), a bundle under :func:`min_bytes` (unless ``cache`` is True), or a
    path that does not exist (the caller's parse says so). ``progress`` (default: on a terminal,
    not under CI) shows the stages and the ingest's progress bar on stderr."""
    from kitlib.ingestion.store import ingest
    from kitlib.sources import check_output, shown

    if cache is False or (cache is None and disabled()):
        return None
    p = Path(path)
    if not os.path.lexists(p):
        return None
    total, files = bundle_files(p)
    if cache is None and total < min_bytes():
        return None
    root = cache_root()
    check_output(p, root, "the cache folder")  # never inside (or around) the bundle: refused before any write
    key = entry_key(p, files, tz)
    folder = root / key
    store = folder / STORE
    if is_entry(folder) and (folder / ENTRY).is_file():
        _used(folder)
        return store
    show = show_progress(progress)
    try:  # a cache folder that cannot be written (read-only home, no space): read into memory, as before
        root.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".probe-", dir=root))
    except OSError as e:
        _stage(show, f"the cache folder {shown(str(root))} cannot be written ({e.strerror or e}): reading into memory")
        return None
    with _wait_lock(folder, lambda t: _stage(show, t)):
        if is_entry(folder) and (folder / ENTRY).is_file():  # written by the run waited for
            _used(folder)
            return store
        _sweep(root)
        if is_entry(folder):  # marked but incomplete: not one this kit wrote whole
            _remove(folder)
        elif folder.exists():
            raise OutputRefused(f"{shown(str(folder))} is not an entry the kit wrote: refusing to replace it")
        _stage(
            show,
            f"first read of {shown(str(p))} ({len(files):,} file{'s' if len(files) != 1 else ''}, {total / 2**20:,.0f} MiB): "
            f"parsing it into the cache at {shown(str(folder))} (--no-cache to read it into memory instead)",
        )
        t0 = time.perf_counter()
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.partial-", dir=root))
        try:
            mark(tmp, ENTRY_WRITER)
            # the ingest's own bar: on a terminal (as shown here), else as it decides (a Jupyter
            # kernel's widget for a big bundle), never when progress is False or under CI
            bar = True if show else (False if progress is False or quiet() else None)
            if APART:
                ingest_apart(p, tmp / STORE, tz, bar)
            else:
                ingest(p, tmp / STORE, tz=tz, progress=bar, derive=True, writer=ENTRY_WRITER)
            info = {"bundle": str(p.resolve()), "input_bytes": total, "files": len(files), "created": time.time()}
            (tmp / ENTRY).write_text(json.dumps(info) + "\n", encoding="utf-8")
            os.rename(tmp, folder)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        took = time.perf_counter() - t0
        _stage(show, f"cached in {took:.1f} s ({total / 2**20 / max(took, 1e-9):,.0f} MiB/s); the next run reuses it")
    evict(keep=folder, root=root)
    return store


def ingest_apart(path: Path, out: Path, tz, progress: bool | None) -> None:
    """:func:`kitlib.ingestion.store.ingest` of ``path`` into ``out`` (derived tables built) in a
    process of its own, waited for: the ingest's memory (its peak, and what the allocators keep
    after it) is that process's and goes with it, so the command that asked for the entry reads
    the new store with none of it held. What the ingest raises is raised here, by the same name
    and message; its bar and warnings go to this process's stderr. The process started ahead by
    :func:`warm_ingest` is used when there is one."""
    err = out.parent / ".ingest.err"
    job = json.dumps({"path": str(path), "out": str(out), "tz": tz, "progress": progress, "err": str(err)})
    proc = _claim_warm(job)
    if proc is None:
        proc = _start(job)
    try:
        code = proc.wait()
    except BaseException:  # interrupted: the process goes too (a Ctrl-C reached it as well)
        proc.kill()
        proc.wait()
        raise
    if code == 0:
        return
    said = None
    with contextlib.suppress(OSError, ValueError):
        said = json.loads(err.read_text(encoding="utf-8"))
    if not isinstance(said, dict) or not isinstance(said.get("type"), str):
        raise RuntimeError(f"the ingest into the cache stopped (exit status {code})")
    name, message = said["type"], str(said.get("message", ""))
    if name == "KeyboardInterrupt":
        raise KeyboardInterrupt
    known = {"OutputRefused": OutputRefused, "MemoryError": MemoryError}
    kind = known.get(name) or getattr(builtins, name, None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind = type(name, (RuntimeError,), {})  # said by its own name, as in one process
    raise kind(message)


def _ingest_main() -> None:
    """The process :func:`ingest_apart` starts: one ingest, its error (type and message) written
    to the file it was given. Started ahead (:func:`warm_ingest`), it imports what the ingest
    needs and then reads its job from stdin (none: it ends). Once it has imported the ingest, the
    second process a big bundle's ingest builds its blockwise tables in is forked from it
    (:func:`~kitlib.ingestion.blockwise.fork_ahead`), ready before the first block is."""
    from kitlib import registry
    from kitlib.ingestion import blockwise

    ahead = sys.argv[1] == "-"
    try:
        try:
            from kitlib.ingestion import sink, store  # noqa: F401 - imported while the command imports its own

            registry.load()
            blockwise.fork_ahead(sink.run_builder)
            job = json.loads(sys.stdin.readline() or "null") if ahead else json.loads(sys.argv[1])
        except KeyboardInterrupt:
            if ahead:  # the command was interrupted before it had a job for it
                return
            raise
        if job is None:  # no job came
            return
        _ingest_job(job)
    finally:
        blockwise.end_spare()


def _ingest_job(job: dict) -> None:
    from kitlib.ingestion.memory import lean_allocator
    from kitlib.ingestion.store import ingest
    from kitlib.terminal import VisibleStream

    lean_allocator()  # a process of the kit's own, for this one ingest
    sys.stderr = VisibleStream(sys.stderr)  # warnings shown as the command shows its own
    try:
        ingest(job["path"], job["out"], tz=job["tz"], progress=job["progress"], derive=True, writer=ENTRY_WRITER)
    except BaseException as e:  # noqa: BLE001 - handed back to the command, which says it
        if os.environ.get("KITLIB_DEBUG"):
            import traceback

            traceback.print_exc()
        with contextlib.suppress(OSError):
            Path(job["err"]).write_text(json.dumps({"type": type(e).__name__, "message": str(e)}), encoding="utf-8")
        sys.exit(1)


def _start(job: str | None):
    """A new interpreter running :func:`_ingest_main` on ``job``, or (None) one that imports the
    ingest and then waits for its job on stdin (:func:`warm_ingest`)."""
    import subprocess

    # the folder this kitlib is imported from, first (before the working folder), so the process
    # runs the same code
    here = str(Path(__file__).resolve().parents[2])
    run = f"import sys; sys.path.insert(0, {here!r}); from kitlib.ingestion.cache import _ingest_main; _ingest_main()"
    return subprocess.Popen(
        [sys.executable, "-c", run, "-" if job is None else job],
        stdin=subprocess.PIPE if job is None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )


def warm_ingest(path: str | os.PathLike, cache: bool | None = None) -> bool:
    """Start ahead the process :func:`ingest_apart` ingests a new entry in, when the raw bundle at
    ``path`` looks new to the cache (the cache applies to it, and no entry was written for it at
    its present size): its interpreter starts and imports the ingest while the command imports
    the detectors, instead of after. It waits for its job on stdin; :func:`ingest_apart` hands it
    one, and :func:`end_warm` ends it when none came. Only ``stat`` and the entries' small files
    are read here, and whether it is started changes nothing but when the ingest starts. True
    when it was started."""
    global _WARM
    if _WARM is not None or cache is False or (cache is None and disabled()):
        return False
    p = Path(path)
    try:
        if not os.path.lexists(p) or (p.is_dir() and is_kit_output(p)):  # an ingest output: never cached
            return False
        total, _files = bundle_files(p)
        if cache is None and total < min_bytes():
            return False
        resolved = str(p.resolve())
        for e in entries():
            if e.bundle == resolved and e.input_bytes == total:  # most likely this bundle's entry
                return False
    except OSError:
        return False
    _WARM = _start(None)
    return True


def _claim_warm(job: str):
    """The process :func:`warm_ingest` started, handed ``job``; None when there is none (or it
    could not take it: it is ended)."""
    global _WARM
    proc, _WARM = _WARM, None
    if proc is None:
        return None
    try:
        proc.stdin.write(job.encode() + b"\n")
        proc.stdin.close()
        return proc
    except OSError:  # it stopped before its job came: another is started
        if proc.poll() is None:
            proc.terminate()
        proc.wait()
        return None


def end_warm() -> None:
    """End the process :func:`warm_ingest` started when no ingest took it (the bundle was cached
    already, or could not be)."""
    global _WARM
    proc, _WARM = _WARM, None
    if proc is None:
        return
    with contextlib.suppress(OSError):
        proc.stdin.close()
    if proc.poll() is None:
        proc.terminate()
    proc.wait()


def link_store(store: Path, out: Path) -> None:
    """Put a copy of the cached ``store`` at ``out`` (which must not exist), each Parquet file a
    hard link to the cache's where the filesystem allows (else copied), written beside it and renamed into
    place: a report's ``tables/`` that is the very store its triage and notebooks read, and that
    outlives the cache entry's eviction."""

    def link(src: str, dst: str) -> None:
        # only the Parquet files, which the kit never writes again in place, are shared: the small
        # files (marker, summary) are the copy's own
        if src.endswith(".parquet"):
            with contextlib.suppress(OSError):
                os.link(src, dst)
                return
        shutil.copy2(src, dst)

    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    try:
        shutil.copytree(store, tmp, copy_function=link, symlinks=True)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
