"""What the kit did not read, and lines it cut, as rows and notes of the ``files`` table."""

from __future__ import annotations

from kitlib.sources import MAX_LINE


def not_read_rows(skipped) -> list[dict]:
    """``files`` table rows for paths the kit did not read (see :func:`kitlib.sources.discover_all`)."""
    return [
        {
            "file": s.rel,
            "host": "",
            "format": "not read",
            "tz": "",
            "bytes": None,
            "lines": None,
            "parsed": None,
            "unparsed": None,
            "rows": 0,
            "error": f"{s.rel}: not read: {s.reason}",
            "error_line": None,
        }
        for s in skipped
    ]


def cut_line_note(src) -> str:
    """What the file's error says about lines longer than :data:`kitlib.sources.MAX_LINE` (kept
    cut to that length, the rest counted), or ''."""
    cuts = src.meta.get("cut_lines") or []
    if not cuts:
        return ""
    line, dropped = cuts[0]
    more = f" ({len(cuts)} such lines)" if len(cuts) > 1 else ""
    return (
        f"{src.rel} line {line}: longer than {MAX_LINE // (1024 * 1024)} MiB: its first "
        f"{MAX_LINE // (1024 * 1024)} MiB kept, {dropped:,} bytes after that not stored{more}"
    )
