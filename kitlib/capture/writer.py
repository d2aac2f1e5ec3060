"""The file a capture or probe writes: JSON lines, a header line first, into a file of its own
that never replaces one already in the bundle.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path


def now() -> str:
    """The current UTC time, ISO 8601 to the millisecond: the ``ts`` of capture rows."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Writer:
    """Appends capture records as JSON lines (a header line first) to a new file: when ``path``
    exists (a second capture in the same second, a file of the user's) the next free name
    ``<stem>-2.jsonl``, ... is taken, so no file already in the bundle is ever replaced."""

    def __init__(self, path: Path, what: str, bootstrap: str):
        from kitlib.ingestion.guard import new_file

        self.path, self.fh = new_file(path)
        self.write_raw({"kit_capture": 1, "kind": "header", "what": what, "bootstrap": bootstrap, "ts": now()})

    def write_raw(self, rec: dict) -> None:
        self.fh.write(json.dumps(rec, default=str, sort_keys=True) + "\n")

    def row(self, kind: str, **fields) -> None:
        fields.setdefault("ts", now())
        self.write_raw({"kind": kind, **fields})

    def close(self) -> Path:
        self.fh.close()
        return self.path
