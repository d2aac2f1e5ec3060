"""The lines a finding cites, read back from the bundle's own files with a line of context (or the
rest of a multi-line record) and redacted, for the summary page's evidence appendix.
"""

from __future__ import annotations

import re
from pathlib import Path

CONTEXT_LINES = 1  # lines shown before and after each cited line
RECORD_LINES = 8  # continuation lines of a multi-line record shown after it


_JSON_SECRET = re.compile(r'("([^"]+)"\s*:\s*)"((?:[^"\\]|\\.)*)"')


def redact_line(text: str) -> str:
    """A raw line of a bundle file made safe to show: the same masking ingest applies to log
    messages and config dumps, plus ``"key": "value"`` pairs of JSON captures by key.

    Example:
        >>> redact_line('{"ssl.truststore.password": "hunter2", "batch.size": "16384"}')
        '{"ssl.truststore.password": "[redacted]", "batch.size": "16384"}'
    """
    from kitlib.redact import REDACTED, is_secret_key, redact_message

    text = _JSON_SECRET.sub(
        lambda m: m.group(1) + (f'"{REDACTED}"' if is_secret_key(m.group(2)) else f'"{m.group(3)}"'), text
    )
    return redact_message(text)


def cited_lines(bundle_path: Path, evidence: list[dict], context: int = CONTEXT_LINES) -> dict:
    """``{(file, line): (lines before, the line, lines after)}`` read from the bundle's own files
    (gzip and rotated files too), redacted (:func:`redact_line`). Files are read once each, in
    blocks, only up to the last cited line; a file that cannot be read is skipped (the finding's
    own quote is shown instead)."""
    from bisect import bisect_left, bisect_right

    from kitlib.sources import discover, read_chunks

    wanted: dict[str, set[int]] = {}
    for e in evidence:
        line = line_number(e.get("line"))
        if e.get("file") and line:
            wanted.setdefault(str(e["file"]), set()).add(line)
    if not wanted:
        return {}
    try:
        sources = {s.rel: s for s in discover(bundle_path)}
    except Exception:  # noqa: BLE001 - e.g. an ingested store: no raw files to quote
        return {}
    out = {}
    for rel, nums in wanted.items():
        src = sources.get(rel)
        if src is None:
            continue
        lo, hi = max(1, min(nums) - context), max(nums) + max(context, RECORD_LINES)
        # only the lines shown: each cited line's context and the rest of its record (evidence from
        # the first to the last line of a 1 GB log must not hold every line between them)
        need = sorted({j for n in nums for j in range(max(1, n - context), n + max(context, RECORD_LINES) + 1)})
        keep: dict[int, str] = {}
        seen, tail = 0, b""
        try:
            for chunk in read_chunks(src):
                data = tail + chunk
                parts = data.split(b"\n")
                tail = parts.pop()
                first = seen + 1
                seen += len(parts)
                if seen >= lo:
                    for i in need[bisect_left(need, first) : bisect_right(need, seen)]:
                        keep[i] = parts[i - first].decode("utf-8", "replace").rstrip("\r")
                if seen >= hi:
                    break
            else:
                if tail and seen + 1 <= hi and need[bisect_left(need, seen + 1) : bisect_right(need, seen + 1)]:
                    keep[seen + 1] = tail.decode("utf-8", "replace").rstrip("\r")
        except Exception:  # noqa: BLE001 - a broken file: quote what was read
            pass
        for n in nums:
            if n in keep:
                after: list[str] = []
                i = n + 1
                # the rest of a multi-line record (a config dump, a stack trace), else one line of context
                while i in keep and len(after) < RECORD_LINES and not _RECORD_START.match(keep[i]):
                    after.append(keep[i])
                    i += 1
                if not after:
                    after = [keep[j] for j in range(n + 1, n + context + 1) if j in keep]
                before = [keep[i] for i in range(n - context, n) if i in keep]
                # redacted as one text: a value on the line after its key is masked too
                shown = redact_line("\n".join([*before, keep[n], *after])).split("\n")
                if len(shown) != len(before) + 1 + len(after):  # never: redaction keeps the lines
                    shown = [redact_line(t) for t in [*before, keep[n], *after]]
                out[(rel, n)] = (shown[: len(before)], shown[len(before)], shown[len(before) + 1 :])
    return out


_RECORD_START = re.compile(r"^\[?\d{4}-\d\d-\d\d")


def line_number(v) -> int | None:
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return n if n > 0 else None
