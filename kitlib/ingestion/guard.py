"""The promises the kit keeps about what it writes, whatever the bundle holds.

A folder the kit writes carries a marker file (:data:`MARKER`, saying which command wrote it);
only such a folder, or an empty one, is ever replaced or emptied. Anything else is refused
(:class:`OutputRefused`) before anything is touched. While a command writes an output it holds a
lock beside it (a second run into the same output is refused, naming the pid of the first), and
the debris a killed run left beside it (its ``.partial`` or ``.old`` folders, marked and with
their writer gone) is removed. :func:`fresh_output` writes a folder that replaces the output
whole when complete (ingest); :func:`output_lock` and :func:`claim` let a command write into the
output in place (the report). :func:`new_file` creates a file in a folder that is not the kit's
(a capture into a bundle) without ever replacing one.

Example:
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "kit"
    >>> with fresh_output(out) as tmp:
    ...     _ = (tmp / "summary.json").write_text("{}")
    >>> sorted(p.name for p in out.iterdir())
    ['.kitlib-output', 'summary.json']
    >>> _ = (out.parent / "mine").mkdir(); _ = (out.parent / "mine" / "notes.txt").write_text("mine")
    >>> with fresh_output(out.parent / "mine") as tmp:
    ...     pass
    Traceback (most recent call last):
    ...
    kitlib.ingestion.guard.OutputRefused: --out .../mine holds files the kit did not write (no .kitlib-output in it): refusing to touch it; give a new or empty folder, or one a kitlib command wrote
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

# the file that makes a folder the kit's own: JSON saying which command wrote it, and its pid
MARKER = ".kitlib-output"


class OutputRefused(ValueError):
    """An output folder the kit may not write: not its own, not a folder, or being written by
    another run. Raised before anything is touched; the message says what to do."""


def _shown(path: Path) -> str:
    from kitlib.sources import shown

    return shown(str(path))


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), to tell a pid reused by
    another process from the one that wrote a marker; None where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def mark(folder: Path, writer: str) -> None:
    """Write the marker into ``folder``: it is the kit's output, written by ``writer``
    (``kitlib ingest``, ``kitlib report``) in this process."""
    pid = os.getpid()
    info = {
        "writer": writer,
        "pid": pid,
        "pid_started": _started(pid),
        "host": socket.gethostname(),
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (folder / MARKER).write_text(json.dumps(info) + "\n", encoding="utf-8")


def marker(folder: Path) -> dict | None:
    """What ``folder``'s marker says (None when it has none: a regular file, not a link, holding
    JSON with a ``writer`` that is a kitlib command)."""
    p = folder / MARKER
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > 65536:
            return None
        info = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not str(info.get("writer", "")).startswith("kitlib"):
        return None
    return info


def seal(folder: Path) -> None:
    """Record in ``folder``'s marker the names the kit wrote at its top level, once the output is
    complete: anything else found there later was put there by someone else, and the folder is
    then no longer the kit's to replace (its derived-table cache, written on first use, is)."""
    info = marker(folder)
    if info is None:
        return
    info["wrote"] = sorted(e.name for e in os.scandir(folder) if e.name != MARKER)
    (folder / MARKER).write_text(json.dumps(info) + "\n", encoding="utf-8")


# the folder of an ingest output in which triage keeps what it printed (kitlib.ingestion.memo),
# added after the output was sealed, as the derived tables' cache is
TRIAGE_MEMOS = ".triage"


def _foreign(folder: Path, info: dict) -> list[str]:
    """Top-level names of a sealed kit output that its writer did not write."""
    wrote = info.get("wrote")
    if not isinstance(wrote, list):
        return []  # not sealed: written in place and cut short, all of it the kit's
    known = set(map(str, wrote)) | {MARKER}
    readers = (".derived", TRIAGE_MEMOS)  # (and the folder the cache is built in, .derived-*)
    return sorted(e.name for e in os.scandir(folder) if e.name not in known and not e.name.startswith(readers))


def is_kit_output(folder: Path) -> bool:
    """True for a folder a kitlib command wrote (it holds :data:`MARKER`)."""
    return marker(Path(folder)) is not None


def _alive(pid, started=None, host=None) -> bool:
    """Whether the process that wrote a marker may still run (when unsure: yes)."""
    if host is not None and host != socket.gethostname():
        return True  # another machine's pid (a shared filesystem): cannot tell
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _started(pid)
    return started is None or now is None or now == started


def writer_gone(info: dict) -> bool:
    """Whether the process a marker names (its ``pid``, ``pid_started`` and ``host``) has ended:
    what it was writing is debris. When unsure: no."""
    return not _alive(info.get("pid"), info.get("pid_started"), info.get("host"))


def check_replaceable(out: str | os.PathLike, what: str = "--out") -> None:
    """Refuse (:class:`OutputRefused`) an output the kit may not replace: one that exists and is
    not a folder (or is a symbolic link), or a folder holding anything without the kit's marker.
    A missing or empty folder, or one a kitlib command wrote, passes. Touches nothing."""
    out = Path(out)
    if out.is_symlink():
        raise OutputRefused(f"{what} {_shown(out)} is a symbolic link: give the folder itself, or a new one")
    if not out.exists():
        return
    if not out.is_dir():
        raise OutputRefused(f"{what} {_shown(out)} exists and is not a folder: give a new or empty folder")
    try:
        empty = next(os.scandir(out), None) is None
    except OSError as e:
        raise OutputRefused(f"{what} {_shown(out)} cannot be read ({e.strerror}): give a new or empty folder") from None
    info = None if empty else marker(out)
    if not empty and info is None:
        raise OutputRefused(
            f"{what} {_shown(out)} holds files the kit did not write (no {MARKER} in it): refusing to touch it; "
            "give a new or empty folder, or one a kitlib command wrote"
        )
    foreign = _foreign(out, info) if info is not None else []
    if foreign:
        shown = ", ".join(_shown(Path(n)) for n in foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise OutputRefused(
            f"{what} {_shown(out)} holds files the kit did not write ({shown}): refusing to touch it; "
            "move them out, or give a new or empty folder"
        )


@contextlib.contextmanager
def output_lock(out: str | os.PathLike, what: str = "--out") -> Iterator[None]:
    """Hold the lock of output ``out`` (an flock on the hidden file ``.<name>.lock`` beside it,
    which holds the writer's pid and is removed on leaving) while the block runs. Another holder
    means another run is writing the same output: refused at once, naming its pid."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise OutputRefused(
                f"{what} {_shown(out)} is being written by another kitlib run"
                f"{f' (pid {holder})' if holder.isdigit() else ''}: wait for it to end, or give another folder"
            ) from None
        # the previous holder removes the file on leaving: make sure the one locked is still there
        try:
            same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def sweep(out: str | os.PathLike) -> list[Path]:
    """Remove what killed runs left beside output ``out`` (call it holding :func:`output_lock`):
    its hidden ``.<name>.partial-*`` and ``.<name>.old-*`` folders that carry the kit's marker
    and whose writer is gone, and empty ones (a run killed before it marked its folder).
    Returns the folders removed; anything else is left alone."""
    out = Path(out)
    removed: list[Path] = []
    partial, old = f".{out.name}.partial-", f".{out.name}.old-"
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return removed
    for e in entries:
        if not e.name.startswith((partial, old)) or not e.is_dir(follow_symlinks=False):
            continue
        info = marker(Path(e.path))
        if info is None:
            with contextlib.suppress(OSError):  # only an empty folder can be removed this way
                os.rmdir(e.path)
                removed.append(Path(e.path))
            continue
        if e.name.startswith(old):  # the output a run was replacing: named after that run's pid
            pid_text = e.name[len(old) :]
            gone = pid_text.isdigit() and not _alive(int(pid_text))
        else:
            gone = not _alive(info.get("pid"), info.get("pid_started"), info.get("host"))
        if gone:
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(Path(e.path))
    return removed


def claim(out: str | os.PathLike, writer: str, what: str = "--out") -> Path:
    """Make ``out`` an empty folder of the kit's, marked as written by ``writer``, to be written
    in place (call it holding :func:`output_lock`). Refused as :func:`check_replaceable` says;
    a previous output of the kit there is emptied first, so nothing of an earlier run (its
    index page above all) can pass for part of this one."""
    out = Path(out)
    check_replaceable(out, what)
    sweep(out)
    if out.is_dir():
        for e in list(os.scandir(out)):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
    else:
        out.mkdir(parents=True)
    mark(out, writer)
    return out


@contextlib.contextmanager
def fresh_output(out: str | os.PathLike, writer: str = "kitlib ingest", what: str = "--out") -> Iterator[Path]:
    """Yield a new empty folder beside ``out`` (marked as the kit's); when the block ends without
    an exception it becomes ``out`` (a previous ``out`` is removed only then), otherwise it is
    removed and ``out`` is left as it was. ``out`` is locked meanwhile (:func:`output_lock`),
    and debris of killed runs beside it is removed first (:func:`sweep`). Refuses
    (:class:`OutputRefused`) an ``out`` the kit may not replace (:func:`check_replaceable`),
    before anything is written."""
    out = Path(out)
    check_replaceable(out, what)
    with output_lock(out, what):
        check_replaceable(out, what)  # again, now that no other run of the kit can change it
        sweep(out)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
        try:
            mark(tmp, writer)
            yield tmp
            check_replaceable(out, what)  # what the user may have put there meanwhile is kept
            seal(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}"
            os.replace(out, old)
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def write_atomic(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: into a hidden temporary file beside it, then renamed
    over it."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def new_file(path: str | os.PathLike) -> tuple[Path, IO[str]]:
    """Create ``path`` for writing (text), or when a file of that name exists, the first free
    ``<stem>-2<suffix>``, ``-3``, ...: a file already there is never replaced. Returns the path
    created and the open file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        p = path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        try:
            return p, open(p, "x", encoding="utf-8")
        except FileExistsError:
            n += 1


def exit_on_sigterm() -> None:
    """Make SIGTERM end this process as Ctrl-C would, through every ``finally`` (so an ingest
    removes its temporary folder), with exit status 143. Only from the main thread."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, stop)
