"""Throughput of the general layout path against the numpy fast path.

Generates a broker log in Kafka's default layout (``bench/genlog.py``), rewrites its record
headers into another layout (``%d{ISO8601} %-5p [%t] %c - %m%n``, the most common alternative, and
Strimzi's ``%d{ISO8601} %p %m (%c) [%t]%n``; stack traces and config dumps stay as they are), and optionally into ECS JSON
lines; then parses each file in this process (best of ``--repeat``) and prints MB/s per path.

Example:
    .venv/bin/python bench/layout_bench.py --size-mb 200
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kitlib.formats import Context  # noqa: E402
from kitlib.formats.logs import jsonlog, layouts, log4j, patterned  # noqa: E402
from kitlib.sources import SourceFile  # noqa: E402

HEADER = re.compile(rb"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (\w+) (.*) \(([^()\s]+)\)$", re.MULTILINE)


def to_other_layout(data: bytes) -> bytes:
    """Kafka's ``[%d] %p %m (%c)`` headers rewritten as ``%d %-5p [%t] %c - %m``."""
    return HEADER.sub(lambda m: b"%s %-5s [kafka-request-handler-3] %s - %s" % (m[1], m[2], m[4], m[3]), data)


def to_strimzi_layout(data: bytes) -> bytes:
    """Kafka's ``[%d] %p %m (%c)`` headers rewritten as Strimzi's ``%d{ISO8601} %p %m (%c) [%t]``
    (the layout its Kafka, Connect and MirrorMaker pods log in)."""
    return HEADER.sub(lambda m: b"%s %s %s (%s) [data-plane-kafka-request-handler-3]" % (m[1], m[2], m[3], m[4]), data)


def to_ecs_json(data: bytes) -> bytes:
    """One ECS JSON line per record; continuation lines go into error.stack_trace."""
    out, cur = [], None
    for line in data.decode().split("\n"):
        m = HEADER.match(line.encode())
        if m:
            if cur:
                out.append(json.dumps(cur))
            d = m[1].decode()
            cur = {
                "@timestamp": d[:10] + "T" + d[11:19] + "." + d[20:] + "Z",
                "log.level": m[2].decode(),
                "message": m[3].decode(),
                "process.thread.name": "main",
                "log.logger": m[4].decode(),
            }
        elif cur is not None and line:
            cur["error.stack_trace"] = cur.get("error.stack_trace", "") + line + "\n"
    if cur:
        out.append(json.dumps(cur))
    return ("\n".join(out) + "\n").encode()


def timed(parse, path: Path, repeat: int) -> tuple[float, int, int]:
    best, rows, unparsed = float("inf"), 0, 0
    for _ in range(repeat):
        src = SourceFile(path, path.name, "bench", size=path.stat().st_size)
        ctx = Context(src)
        t0 = time.perf_counter()
        rows = unparsed = 0
        for name, chunk in parse(src, ctx):
            if name == "events":
                rows += chunk.num_rows
            else:
                unparsed += len(chunk)
        best = min(best, time.perf_counter() - t0)
    return best, rows, unparsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="also time ECS JSON lines of the same records")
    ap.add_argument("--dir", default=None, help="where to write the generated files (default: a temp dir)")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="layout-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    default = work / "server.log"
    if not default.exists():
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "genlog.py"), "--size-mb", str(args.size_mb), "--out", str(default)],
            check=True,
        )
    other = work / "server-other-layout.log"
    if not other.exists():
        other.write_bytes(to_other_layout(default.read_bytes()))
    strimzi = work / "server-strimzi-layout.log"
    if not strimzi.exists():
        strimzi.write_bytes(to_strimzi_layout(default.read_bytes()))
    lay = layouts.compile_pattern("%d{ISO8601} %-5p [%t] %c - %m%n")
    runs = [
        ("fast path, Kafka default layout", log4j.parse, default),
        ("general path, %d{ISO8601} %-5p [%t] %c - %m%n", lambda s, c: patterned.parse(s, c, layout=lay), other),
        ("general path, same file, layout inferred", patterned.parse, other),
        ("compiled scan, Strimzi's %d{ISO8601} %p %m (%c) [%t]%n, inferred", patterned.parse, strimzi),
    ]
    if args.json:
        ecs = work / "server-ecs.json"
        if not ecs.exists():
            ecs.write_bytes(to_ecs_json(default.read_bytes()))
        runs.append(("JSON path, ECS lines", jsonlog.parse, ecs))
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; best of {args.repeat}")
    print("| path | MB | records | unparsed | s | MB/s |\n|---|---|---|---|---|---|")
    fast = None
    for name, parse, path in runs:
        mb = path.stat().st_size / 1e6
        s, rows, un = timed(parse, path, args.repeat)
        fast = fast or mb / s
        print(f"| {name} | {mb:,.0f} | {rows:,} | {un:,} | {s:.2f} | {mb / s:,.0f} ({mb / s / fast:.2f} of fast) |")


if __name__ == "__main__":
    main()
