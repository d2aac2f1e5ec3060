"""`kitlib report` on a raw bundle: wall seconds, CPU-seconds and the peak RSS of every process it
starts. Runs `kitlib report BUNDLE --out DIR` with a fresh cache folder of its own
(XDG_CACHE_HOME), so the report ingests the bundle first, and samples the whole process tree from
/proc every 0.2 s: the kit's main process and each notebook's kernel (named by the notebook whose
"ok"/"FAILED" line the report prints when that kernel has ended). CPU-seconds are the children's
getrusage after the run (every process waited for) and, per process, its last sampled utime +
stime. The load average is sampled as well (before, the largest during, after).

Example (the bench's mix, then a fleet that bench/fleet_bench.py built):
    nice -n 19 .venv/bin/python bench/report_bench.py /path/to/mix
    nice -n 19 .venv/bin/python bench/report_bench.py /path/to/fleet --jobs 2
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

KIT = Path(sys.executable).parent / "kitlib"
TICK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
DONE = re.compile(r"^\s+\S+/(\S+\.ipynb)\s+(ok|FAILED)")


@dataclass
class Proc:
    """One process of the tree as sampled: what it is, its largest RSS and its CPU so far."""

    pid: int
    ppid: int
    cmd: str
    first: float
    last: float
    peak_mb: float = 0.0
    cpu_s: float = 0.0
    gone: float | None = None
    name: str = ""


@dataclass
class Tree:
    """Every process seen under a root pid, with the load averages seen while it ran."""

    root: int
    procs: dict[int, Proc] = field(default_factory=dict)
    loads: list[float] = field(default_factory=list)


def _stat(pid: int) -> tuple[int, float, float] | None:
    """ppid, CPU-seconds (utime + stime) and RSS (MB) of ``pid`` from /proc/PID/stat; None when
    it has ended."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            rest = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if rest[0] == b"Z":  # ended, not reaped yet: gone
        return None
    # fields after the name: state(0) ppid(1) ... utime(11) stime(12) ... rss(21)
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK, int(rest[21]) * PAGE_KB / 1024


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def sample_once(tree: Tree, now: float) -> None:
    """One pass over /proc: every live descendant of ``tree.root`` (the root included) updated."""
    stats: dict[int, tuple[int, float, float]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            s = _stat(int(d))
            if s is not None:
                stats[int(d)] = s
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    live, todo = set(), [tree.root]
    while todo:
        pid = todo.pop()
        if pid in live or pid not in stats:
            continue
        live.add(pid)
        ppid, cpu, rss = stats[pid]
        p = tree.procs.get(pid)
        if p is None:
            p = tree.procs[pid] = Proc(pid, ppid, _cmdline(pid), now, now)
        p.last, p.cpu_s, p.peak_mb = now, max(p.cpu_s, cpu), max(p.peak_mb, rss)
        todo.extend(kids.get(pid, []))
    for pid, p in tree.procs.items():
        if p.gone is None and pid not in live:
            p.gone = now
    tree.loads.append(os.getloadavg()[0])


def kind(p: Proc, root: int) -> str:
    """main (the kit's process), kernel, or the program's name."""
    if p.pid == root:
        return "main"
    if "ipykernel" in p.cmd:
        return "kernel"
    return Path(p.cmd.split(" ", 1)[0]).name or "?"


def name_kernels(tree: Tree, done: list[tuple[float, str]]) -> None:
    """Give each kernel the notebook whose end line the report printed soonest after the kernel
    was last seen alive (each line used once, kernels taken in the order they ended)."""
    kernels = sorted((p for p in tree.procs.values() if kind(p, tree.root) == "kernel"), key=lambda p: p.gone or p.last)
    left = sorted(done)
    for p in kernels:
        after = [d for d in left if d[0] >= p.last - 0.5]
        if after:
            p.name = after[0][1]
            left.remove(after[0])


def run_report(cmd: list[str], env: dict, every: float = 0.2) -> tuple[Tree, float, float, int, list[str]]:
    """Run ``cmd``, sampling its tree every ``every`` seconds. Returns the tree, wall seconds,
    the children's CPU-seconds (getrusage), the exit status and the printed lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    tree = Tree(p.pid)
    done: list[tuple[float, str]] = []
    lines: list[str] = []
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            sample_once(tree, time.perf_counter() - t0)
            stop.wait(every)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    assert p.stdout is not None
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        m = DONE.match(line)
        if m:
            done.append((time.perf_counter() - t0, m.group(1)))
    p.wait()
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    name_kernels(tree, done)
    return tree, wall, cpu, p.returncode, lines


def table(tree: Tree) -> list[str]:
    """Markdown rows: one per process kind (main, each notebook's kernel, other programs)."""
    rows: dict[str, list[Proc]] = {}
    for p in tree.procs.values():
        k = kind(p, tree.root)
        label = f"kernel: {p.name or '(unnamed)'}" if k == "kernel" else k
        rows.setdefault(label, []).append(p)
    order = sorted(rows, key=lambda k: (k != "main", not k.startswith("kernel"), k))
    out = ["| process | count | peak RSS MB (largest) | CPU-s (sampled) | alive s |", "|---|---|---|---|---|"]
    for k in order:
        ps = rows[k]
        alive = sum((p.gone or p.last) - p.first for p in ps)
        out.append(
            f"| {k} | {len(ps)} | {max(p.peak_mb for p in ps):,.0f} | {sum(p.cpu_s for p in ps):.1f} | {alive:.1f} |"
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="time kitlib report on a raw bundle; peak RSS of every process it starts")
    ap.add_argument("bundle", help="the bundle folder (read only; nothing is written inside it)")
    ap.add_argument("--workdir", help="where the report and the cache go (default: a temp dir)")
    ap.add_argument("--jobs", type=int, default=None, help="kitlib report --jobs (default: the kit's)")
    ap.add_argument("--every", type=float, default=0.2, help="seconds between samples (default 0.2)")
    ap.add_argument("--keep-cache", action="store_true", help="reuse the work folder's cache (a second run)")
    a = ap.parse_args(argv)
    bundle = Path(a.bundle).absolute()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kit-report-bench-")).absolute()
    work.mkdir(parents=True, exist_ok=True)
    out, cache = work / "report", work / "cache"
    shutil.rmtree(out, ignore_errors=True)
    if not a.keep_cache:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("KITLIB_CACHE_DIR", None)
    env.pop("KITLIB_NO_CACHE", None)
    files = [p for p in bundle.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    for p in files:  # warm the page cache
        subprocess.run(["cat", str(p)], stdout=subprocess.DEVNULL)
    cmd = [str(KIT), "report", str(bundle), "--out", str(out)]
    if a.jobs:
        cmd += ["--jobs", str(a.jobs)]
    load0 = os.getloadavg()[0]
    tree, wall, cpu, status, lines = run_report(cmd, env, a.every)
    load1 = os.getloadavg()[0]
    top = max(tree.procs.values(), key=lambda p: p.peak_mb)
    print(
        f"{bundle.name}: {size / 1e6:,.0f} MB in {len(files)} files; {os.cpu_count()} cores; "
        f"cache {'kept' if a.keep_cache else 'fresh'}; exit {status}"
    )
    print(
        f"wall {wall:.1f} s; CPU {cpu:.1f} s (getrusage of the children); {len(tree.procs)} processes; "
        f"largest {top.peak_mb:,.0f} MB ({kind(top, tree.root)} {top.name}); load average "
        f"{load0:.1f} before, {max(tree.loads or [load0]):.1f} at most during, {load1:.1f} after\n"
    )
    print("\n".join(table(tree)))
    failed = [ln.strip() for ln in lines if "FAILED" in ln]
    if failed or status not in (0,):
        print("\n" + "\n".join(failed or lines[-20:]))
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
