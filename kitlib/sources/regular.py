"""Opening a path only when it is a regular file, never waiting on a pipe, socket or device."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


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
