"""Record-value samples: a file of JSON lines, one record value per line (what
``kitlib probe codecs --sample`` and the compression notebook read) -> ``payload_samples``.

Only the size of each value is kept, never the value itself: payloads are the user's data.
Detected by content (at least 90 % of the head's lines are JSON values) and tried after every other format,
so Jolokia responses and capture files keep their own parsers.

Example:
    >>> detect(b'{"order": 1, "sku": "A-17"}\\n{"order": 2, "sku": "B-02"}\\n', None)
    True
    >>> detect(b'[2024-05-22 00:32:03,023] INFO hi (x.Y)\\n', None)
    False
"""

from __future__ import annotations

import json

import pandas as pd

from kitlib import tables
from kitlib.formats import Context, register, text_lines, unparsed_frame, with_provenance

tables.declare(
    "payload_samples",
    "Record-value sample files (JSON lines): one row per record, size only.",
    [
        ("bytes", "int", "UTF-8 size of the record value"),
    ],
)


def detect(head: bytes, src) -> bool:
    lines = head.split(b"\n")
    if len(head) >= 64 * 1024:
        lines = lines[:-1]  # the last line of a full head may be cut
    lines = [ln for ln in lines[:200] if ln.strip()]
    if not lines:
        return False
    good = 0
    for ln in lines:
        s = ln.strip()
        if s[:1] in (b"{", b"["):
            try:
                json.loads(s)
                good += 1
            except (ValueError, RecursionError):
                pass
    return good >= 0.9 * len(lines)  # a stray bad line still leaves the file a sample


def parse(src, ctx: Context):
    sizes, where, bad_n, bad_t = [], [], [], []
    for n, text, ok in text_lines(src, ctx):
        try:
            json.loads(text) if ok else None
        except (ValueError, RecursionError):  # deeply nested JSON costs its line only
            ok = False
        if not ok:
            bad_n.append(n)
            bad_t.append(text)
            continue
        ctx.parsed += 1
        sizes.append(len(text.encode()))
        where.append(n)
    if sizes:
        yield "payload_samples", with_provenance(pd.DataFrame({"line": where, "bytes": sizes}), src)
    if bad_n:
        ctx.fail(f"{src.rel} line {bad_n[0]}: not a JSON value", bad_n[0])
        yield "unparsed", unparsed_frame(src, bad_n, bad_t, "not a JSON record value")


register(
    "payload",
    detect=detect,
    parse=parse,
    tables=("payload_samples",),
    priority=90,
    doc="record-value samples, one JSON value per line (sizes only)",
)
