"""Reading a lab node's logs, or a bundle's, across log4j's hourly roll.

Every hour log4j renames ``server.log`` to ``server.log.YYYY-MM-DD-HH`` and starts a new one, so
a test that runs over the hour finds the start of its story in the dated file. Tests that look
for a line read the current file and its rolled pieces, oldest first."""

import gzip
import re
from pathlib import Path


def log_text(path: Path) -> str:
    """A log file's text, gzipped or not."""
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")


def oldest_first(files: list[Path]) -> list[Path]:
    """Rolled pieces (dated, in name order) before the file still written (``*.log``, ``*.log.gz``)."""
    return sorted(files, key=lambda f: (f.name.removesuffix(".gz").endswith(".log"), f.name))


def rolled_lines(folder: Path, name: str, pattern: str) -> list[str]:
    """Lines matching the regular expression ``pattern`` in ``folder/name`` and its rolled pieces,
    oldest first."""
    pieces = oldest_first(list(folder.glob(name + "*")))
    assert pieces, f"{folder.name}/{name} is missing"
    return [ln for f in pieces for ln in log_text(f).splitlines() if re.search(pattern, ln)]
