"""What a file of a bundle is to the kit (:class:`SourceFile`), a path it did not read
(:class:`NotRead`), a read that broke (:class:`SourceError`), and how much is read at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# log4j blocks: 6 MiB peaked 20 MB lower than 8 MiB on 1 GB, as fast; 4 MiB (with a row group per
# block and less free heap kept) brought the ingest under lnav's peak at the same CPU
CHUNK = 4 * 1024 * 1024
# a line longer than this keeps its first MAX_LINE bytes; the rest of it is counted, not stored
# (memory stays bounded whatever a file holds; the file's error says which line was cut)
MAX_LINE = 8 * 1024 * 1024


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
