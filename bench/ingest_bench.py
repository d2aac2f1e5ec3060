"""Ingest benchmark: throughput as a ratio to `grep -c` on the same file, and peak memory.

Generates (or reuses) a realistic server.log of the requested size, then, in the same run:
  1. `grep -c ' ERROR '` on it (the reference, warm page cache),
  2. the streaming ingest to Parquet (`kitlib.ingest`) in a fresh process,
  3. the in-memory load (`kitlib.load_bundle`) in a fresh process (skipped above --mem-limit-mb),
each timed, with the child's peak RSS. Prints a Markdown table (paste it into bench/README.md).

Example:
    .venv/bin/python bench/ingest_bench.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import kitlib
mode, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
t1 = time.perf_counter()
if mode == "ingest":
    s = kitlib.ingest(path, out, progress=False)
    rows = s["rows"].get("events", 0)
else:
    b = kitlib.load_bundle(path, progress=False)
    rows = len(b.events)
t2 = time.perf_counter()
print(json.dumps({"rows": rows, "import_s": t1 - t0, "work_s": t2 - t1,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run_child(mode: str, bundle: Path, out: Path) -> dict:
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(bundle), str(out)], capture_output=True, text=True, check=True
    )
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t
    return res


def grep_count(path: Path) -> tuple[float, int]:
    subprocess.run(["grep", "-c", " ERROR ", str(path)], capture_output=True)  # warm the cache
    best = None
    for _ in range(3):
        t = time.perf_counter()
        r = subprocess.run(["grep", "-c", " ERROR ", str(path)], capture_output=True, text=True)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return best, int(r.stdout.strip() or 0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark kitlib ingest against grep -c on the same file.")
    ap.add_argument("--size-mb", type=float, default=1024, help="size of the generated server.log (default 1024)")
    ap.add_argument("--file", help="benchmark this log file instead of generating one")
    ap.add_argument("--workdir", help="where to put the generated file and outputs (default: a temp dir)")
    ap.add_argument(
        "--mem-limit-mb",
        type=float,
        default=1500,
        help="skip the in-memory load for files bigger than this (default 1500)",
    )
    a = ap.parse_args(argv)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kitbench-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.file:
        log = Path(a.file)
    else:
        log = work / "bundle" / "broker-1" / "server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        want = int(a.size_mb * 1024 * 1024)
        if not log.exists() or abs(log.stat().st_size - want) > 1024 * 1024:
            sys.path.insert(0, str(HERE))
            from genlog import generate

            with open(log, "wb") as f:
                generate(want, f)
    size_mb = log.stat().st_size / 1e6
    bundle = log.parent.parent if not a.file else log
    g_s, g_n = grep_count(log)
    rows = []
    res_i = run_child("ingest", bundle, work / "out.kit")
    rows.append(("streaming ingest → Parquet", res_i))
    if size_mb <= a.mem_limit_mb:
        rows.append(("in-memory load_bundle", run_child("load", bundle, work / "unused")))
    print(
        f"file: {size_mb:,.0f} MB, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"grep -c ' ERROR ': {g_s:.3f} s ({size_mb / g_s:,.0f} MB/s, {g_n:,} matches)\n"
    )
    print("| path | records | parse s | MB/s | ratio to grep -c | whole process s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        mbs = size_mb / r["work_s"]
        print(
            f"| {name} | {r['rows']:,} | {r['work_s']:.2f} | {mbs:,.0f} | {mbs / (size_mb / g_s):.3f} | "
            f"{r['process_s']:.2f} | {r['peak_rss_mb']:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
