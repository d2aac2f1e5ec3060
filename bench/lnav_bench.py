"""The kit beside the tools operators already use, on the same file, one after the other:
`grep -c` (the floor), lnav (indexing the file headless and counting its records, and opening it
and answering a ``GROUP BY log_level`` query), and the kit's whole-process ingest (single process,
and on a local Dask cluster of two workers). Each command runs as its own process under GNU time
for wall seconds, CPU seconds (user + system) and peak RSS. Prints a Markdown table
with the kit/lnav and kit/grep ratios (paste into bench/README.md with the load average it prints).

Example:
    .venv/bin/python bench/lnav_bench.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = Path(sys.executable).parent / "kitlib"


def timed(cmd: list[str], runs: int) -> tuple[float, float, str, float]:
    """Best wall seconds and the peak RSS (MB) of that run, the command's output and its CPU
    seconds (user + system)."""
    best = None
    for _ in range(runs):
        r = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", *cmd], capture_output=True, text=True)
        if r.returncode not in (0, 1):
            raise SystemExit(f"{cmd[0]} failed: {r.stderr[-500:]}")
        wall, kb, user, system = r.stderr.strip().splitlines()[-1].split()
        if best is None or float(wall) < best[0]:
            best = (float(wall), int(kb) / 1024, r.stdout, float(user) + float(system))
    assert best is not None
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="kitlib ingest vs lnav vs grep -c on one generated server.log")
    ap.add_argument("--size-mb", type=float, default=1024)
    ap.add_argument("--runs", type=int, default=2, help="runs of each command; the best is reported (default 2)")
    ap.add_argument("--workdir", help="where the generated file goes (default: a temp dir)")
    a = ap.parse_args(argv)
    if not shutil.which("lnav"):
        raise SystemExit("lnav is not installed: apt-get install lnav (Debian's package)")
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kit-lnav-"))
    log = work / "bundle" / "broker-1" / "server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    want = int(a.size_mb * 1024 * 1024)
    if not log.exists() or abs(log.stat().st_size - want) > 1024 * 1024:
        sys.path.insert(0, str(HERE))
        from genlog import generate

        with open(log, "wb") as f:
            generate(want, f)
    mb = log.stat().st_size / 1e6
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL)  # warm the page cache for everyone
    rows = []
    g = timed(["grep", "-c", " ERROR ", str(log)], a.runs)
    rows.append(("grep -c ' ERROR '", g))
    lnav = timed(["lnav", "-n", "-c", ";SELECT count(*) AS n FROM all_logs", str(log)], a.runs)
    rows.append(("lnav -n (index, count records)", lnav))
    query = ";SELECT log_level, count(*) FROM all_logs GROUP BY log_level"
    rows.append(("lnav -n, open and GROUP BY log_level", timed(["lnav", "-n", "-c", query, str(log)], a.runs)))
    out = work / "out.kit"
    rows.append(
        (
            "kitlib ingest (1 process)",
            timed([str(KIT), "ingest", str(log.parent.parent), "--out", str(out), "--no-progress"], a.runs),
        )
    )
    rows.append(
        (
            "kitlib ingest --workers 2",
            timed(
                [
                    str(KIT),
                    "ingest",
                    str(log.parent.parent),
                    "--out",
                    str(work / "out2.kit"),
                    "--workers",
                    "2",
                    "--no-progress",
                ],
                1,
            ),
        )
    )
    # what the default ingest leaves for later: the derived tables, built here by the first
    # triage over the output (every detector reads its tables), and an ingest that builds them
    rows.append(("kitlib triage on that output (builds the derived tables)", timed([str(KIT), "triage", str(out)], 1)))
    rows.append(("kitlib triage again (reads them from the output's cache)", timed([str(KIT), "triage", str(out)], 1)))
    rows.append(
        (
            "kitlib ingest --derive (1 process)",
            timed(
                [
                    str(KIT),
                    "ingest",
                    str(log.parent.parent),
                    "--out",
                    str(work / "out3.kit"),
                    "--no-progress",
                    "--derive",
                ],
                1,
            ),
        )
    )
    load = os.getloadavg()
    print(
        f"file: {mb:,.0f} MB generated server.log; {os.cpu_count()} cores; load average before the kit runs "
        f"{load[0]:.1f}; lnav {subprocess.run(['lnav', '-V'], capture_output=True, text=True).stdout.strip()}\n"
    )
    print(
        "| command | wall s | CPU s | MB/s | vs grep -c (speed) | vs lnav (speed) | vs lnav query (speed) | "
        "peak RSS MB | vs lnav (memory) | vs lnav query (memory) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    lq = rows[2][1]  # lnav's open-and-query
    for name, (wall, rss, _, cpu) in rows:
        print(
            f"| {name} | {wall:.2f} | {cpu:.2f} | {mb / wall:,.0f} | {g[0] / wall:.3f} | {lnav[0] / wall:.2f} | "
            f"{lq[0] / wall:.2f} | {rss:,.0f} | {rss / lnav[1]:.2f} | {rss / lq[1]:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
