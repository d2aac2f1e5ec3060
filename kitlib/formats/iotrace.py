"""Per-file I/O traces taken on a broker -> ``file_io``.

Two shapes:
- the per-file counts of a SystemTap/bpftrace script, one ``<R|W> <count> <path>`` line per file
  per interval (seed 004); an interval starts at a line holding a time
  (``--- 2024-06-01 12:00:00`` or ``12:00:00``), or at a blank line after counts; the interval
  length is taken from ``interval=<seconds>`` in a header comment, else 60 s;
- bcc ``filetop`` output: ``HH:MM:SS loadavg: ...`` then ``TID COMM READS WRITES R_Kb W_Kb T FILE``
  rows (FILE is a base name only, so topic/partition are unknown unless a path was printed).

Topic, partition and file kind come from Kafka's data-dir layout
``<log.dir>/<topic>-<partition>/<20-digit offset>.<suffix>``.

Example:
    >>> classify("/var/lib/kafka/data/retriever-mutation-53/00000000000000000000.tierstate.mutable")
    ('retriever-mutation', 53, 'tierstate')
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib import tables
from kitlib.formats import Context, decode_line, iter_lines, register, times, unparsed_frame, with_provenance

tables.declare(
    "file_io",
    "Reads/writes per file per interval from an I/O trace on a broker.",
    [
        ("ts", "ts", "interval start (NaT when the trace gave no time)"),
        ("interval", "int", "interval number within the file (0, 1, ...)"),
        ("interval_s", "float", "interval length in seconds"),
        ("op", "category", "R or W"),
        ("count", "int", "operations (SystemTap counts, filetop READS/WRITES)"),
        ("bytes", "int", "bytes, when the trace gives them (filetop R_Kb/W_Kb × 1024)"),
        ("path", "str", "file path (filetop: base name)"),
        ("topic", "str", "topic from the partition directory"),
        ("partition", "int", "partition"),
        (
            "kind",
            "category",
            "log, index, timeindex, txnindex, snapshot, tierstate, checkpoint, leader-epoch, "
            "partition-metadata, cleaner, deleted, other",
        ),
    ],
)

_RW = re.compile(r"^\s*(?P<op>[RW])\s+(?P<count>\d+)\s+(?P<path>\S.*?)\s*$")
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})|(?:^|\s)(\d{2}:\d{2}:\d{2})(?:\s|$)")
_FT_HEAD = re.compile(r"^\s*(?:TID|PID)\s+COMM\s+READS\s+WRITES\s+R_Kb\s+W_Kb\s+T\s+FILE")
_FT_ROW = re.compile(r"^\s*(\d+)\s+(\S.{0,15}?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([RSO])\s+(.+?)\s*$")
_INTERVAL = re.compile(r"interval[=: ]\s*(\d+(?:\.\d+)?)")
_DIR = re.compile(r"/(?P<topic>[^/]+)-(?P<part>\d+)/(?P<file>[^/]+)$")
KINDS = [
    (".tierstate", "tierstate"),
    (".log.deleted", "deleted"),
    (".deleted", "deleted"),
    (".cleaned", "cleaner"),
    (".swap", "cleaner"),
    (".log", "log"),
    (".timeindex", "timeindex"),
    (".index", "index"),
    (".txnindex", "txnindex"),
    (".snapshot", "snapshot"),
    ("leader-epoch-checkpoint", "leader-epoch"),
    ("partition.metadata", "partition-metadata"),
    ("checkpoint", "checkpoint"),
]


def classify(path: str) -> tuple[str | None, int | None, str]:
    """(topic, partition, kind) of a Kafka data file path."""
    kind = next((k for suffix, k in KINDS if suffix in path.rsplit("/", 1)[-1]), "other")
    m = _DIR.search(path)
    if not m:
        return None, None, kind
    return m.group("topic"), int(m.group("part")), kind


def detect(head: bytes, src) -> bool:
    lines = [ln.decode("utf-8", "replace") for ln in head.split(b"\n")[:60] if ln.strip()]
    if any(_FT_HEAD.match(ln) for ln in lines):
        return True
    rw = sum(1 for ln in lines if _RW.match(ln) and "/" in ln)
    return rw >= 2 and rw >= len(lines) * 0.5


def parse(src, ctx: Context):
    rows, bad_n, bad_t = [], [], []
    interval, interval_s, ts, saw_counts = 0, 60.0, pd.NaT, False
    day = None
    for n, raw in iter_lines(src, ctx):
        text, ok = decode_line(raw)
        s = text.strip()
        if not ok:
            bad_n.append(n)
            bad_t.append(text)
            ctx.fail(f"{src.rel} line {n}: not valid text", n)
            continue
        m = _RW.match(text)
        if m:
            topic, part, kind = classify(m.group("path"))
            rows.append(
                {
                    "ts": ts,
                    "interval": interval,
                    "interval_s": interval_s,
                    "op": m.group("op"),
                    "count": int(m.group("count")),
                    "path": m.group("path"),
                    "topic": topic,
                    "partition": part,
                    "kind": kind,
                    "line": n,
                }
            )
            saw_counts = True
            ctx.parsed += 1
            continue
        f = _FT_ROW.match(text)
        if f and f.group(7) == "R":
            name = f.group(8)
            topic, part, kind = classify(name)
            for op, cnt, kb in (("R", f.group(3), f.group(5)), ("W", f.group(4), f.group(6))):
                if int(cnt):
                    rows.append(
                        {
                            "ts": ts,
                            "interval": interval,
                            "interval_s": interval_s,
                            "op": op,
                            "count": int(cnt),
                            "bytes": int(kb) * 1024,
                            "path": name,
                            "topic": topic,
                            "partition": part,
                            "kind": kind,
                            "line": n,
                        }
                    )
            saw_counts = True
            ctx.parsed += 1
            continue
        if f:  # socket / other file types in filetop
            ctx.parsed += 1
            continue
        if not s or s.startswith("#") or _FT_HEAD.match(text) or _TIME.search(s) or "loadavg" in s:
            if iv := _INTERVAL.search(s):
                interval_s = float(iv.group(1))
            t = _TIME.search(s)
            if t or (not s and saw_counts):
                if saw_counts:
                    interval += 1
                    saw_counts = False
                if t:
                    if t.group(1):
                        stamp = times.timestamp(t.group(1), tz=src.tz)
                        if stamp is None:  # a time the tables cannot hold costs its line
                            bad_n.append(n)
                            bad_t.append(text)
                            ctx.fail(f"{src.rel} line {n}: time {t.group(1)} cannot be read or is out of range", n)
                            continue
                        day = stamp.tz_convert(src.tz or "UTC").tz_localize(None).normalize()
                        ts = stamp
                    else:
                        stamp = (day or pd.Timestamp("1970-01-01")) + pd.Timedelta(t.group(2))
                        ts = stamp.tz_localize(src.tz or "UTC") if stamp.tzinfo is None else stamp
            ctx.parsed += 1
            continue
        bad_n.append(n)
        bad_t.append(text)
        ctx.fail(f"{src.rel} line {n}: not an I/O trace line", n)
    if rows:
        yield "file_io", with_provenance(pd.DataFrame(rows), src)
    if bad_n:
        yield "unparsed", unparsed_frame(src, bad_n, bad_t, "not an I/O trace line")


register(
    "iotrace",
    detect=detect,
    parse=parse,
    tables=("file_io",),
    priority=45,
    doc="per-file I/O traces (SystemTap 'R <count> <path>' style, bcc filetop)",
)
