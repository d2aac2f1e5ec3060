"""Where an ingest's wall time goes on two cores: the CPU of each of its threads over the run.

Runs ``kitlib.bundle.ingest`` (template ids on, derived tables left to the first reader: what
``kitlib ingest`` does) in this process, with the allocator settings of the command, and samples
``/proc/self/task`` meanwhile:

- every ``--every`` seconds (default 0.25) each thread's CPU seconds (user + system), named after
  its Python thread (the Parquet writer, the template matcher, the parse threads, the main thread
  that reads, sinks and hands blocks on);
- every 10 ms how many of the ingest's threads are running or waiting for a core (state ``R``).
  A thread waiting for a lock, for the GIL or for another thread's block is not counted, so the
  share of samples with two or more such threads bounds how often both cores could be busy.
  (On a loaded machine threads wait for a core longer, which makes this share look better than
  it would be on two idle cores; the per-thread CPU stays comparable.)

Prints the totals per thread, the CPU-s, the peak RSS, the load average, and one line per
second: cores busy and each thread's share of a core.

```sh
nice -n 19 .venv/bin/python bench/ingest_timeline.py BUNDLE OUT [--json timeline.json]
```
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(tid: str) -> list[str] | None:
    """The fields after the command name of ``/proc/self/task/<tid>/stat``, or None if it ended."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _pool_number(name: str) -> int:
    return int(name.split("-", 1)[1].split("_", 1)[0])


class Sampler:
    """Samples the CPU seconds of every thread of this process, and how many of them can run."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.cpu: list[dict[str, float]] = []  # {"t": seconds since start, thread name: CPU s}
        self.runnable: list[tuple[float, int]] = []
        self.stop = threading.Event()
        self.t0 = time.perf_counter()
        self._threads = [
            threading.Thread(target=self._cpu_loop, name="timeline-cpu", daemon=True),
            threading.Thread(target=self._state_loop, name="timeline-state", daemon=True),
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join()
        self._cpu_once()

    def _names(self) -> dict[int, str]:
        names = {t.native_id: t.name for t in threading.enumerate() if t.native_id}
        # the sink starts its two single-thread pools in this order: the Parquet writer's, then
        # the template matcher's (the parse threads are named kitlib-parse_N)
        pools = sorted((n for n in names.values() if n.startswith("ThreadPoolExecutor-")), key=_pool_number)
        label = dict(zip(pools, ("write", "match")))
        names = {k: label.get(v, v) for k, v in names.items()}
        names[os.getpid()] = "main"
        return names

    def _cpu_once(self) -> None:
        names = self._names()
        row: dict[str, float] = {"t": time.perf_counter() - self.t0}
        for tid in os.listdir("/proc/self/task"):
            f = _stat(tid)
            if f is not None:
                name = names.get(int(tid), f"thread {tid}")
                row[name] = row.get(name, 0.0) + (int(f[11]) + int(f[12])) / TICK
        self.cpu.append(row)

    def _cpu_loop(self) -> None:
        while not self.stop.wait(self.every):
            self._cpu_once()

    def _state_loop(self) -> None:
        mine = {t.native_id for t in self._threads}
        while not self.stop.wait(0.01):
            n = 0
            for tid in os.listdir("/proc/self/task"):
                if int(tid) in mine:
                    continue
                f = _stat(tid)
                n += f is not None and f[0] == "R"
            self.runnable.append((time.perf_counter() - self.t0, n))


def per_second(cpu: list[dict[str, float]]) -> list[tuple[int, float, dict[str, float]]]:
    """(second, cores busy, {thread: share of a core}) for each second of the run."""
    bins: dict[int, list] = {}
    for prev, row in zip(cpu, cpu[1:]):
        dt = row["t"] - prev["t"]
        b = bins.setdefault(int(prev["t"]), [0.0, collections.Counter()])
        b[0] += dt
        for k, v in row.items():
            if k != "t" and not k.startswith("timeline-"):
                b[1][k] += v - prev.get(k, 0.0)
    return [(s, sum(c.values()) / dt, {k: v / dt for k, v in c.items()}) for s, (dt, c) in sorted(bins.items()) if dt]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle")
    ap.add_argument("out", help="output folder (must not exist)")
    ap.add_argument("--every", type=float, default=0.25, help="seconds between CPU samples")
    ap.add_argument("--json", help="write the samples here")
    args = ap.parse_args(argv)

    from kitlib.ingestion.memory import lean_allocator

    lean_allocator()
    from kitlib.bundle import ingest

    sampler = Sampler(args.every)
    sampler.start()
    ingest(args.bundle, Path(args.out), progress=False, derive=False)
    sampler.finish()
    wall = time.perf_counter() - sampler.t0
    ru = resource.getrusage(resource.RUSAGE_SELF)
    threads: dict[str, float] = {}  # a thread's CPU s only grows: its last sample (ended threads drop out of /proc)
    for row in sampler.cpu:
        for k, v in row.items():
            if k != "t" and not k.startswith("timeline-"):
                threads[k] = max(threads.get(k, 0.0), v)
    print(
        f"wall {wall:.2f} s (load average {os.getloadavg()[0]:.1f}), "
        f"CPU {sum(threads.values()):.2f} s of the ingest's threads "
        f"(process {ru.ru_utime + ru.ru_stime:.2f} s with imports and sampling), peak RSS {ru.ru_maxrss / 1024:.0f} MB"
    )
    for k, v in sorted(threads.items(), key=lambda kv: -kv[1]):
        if v >= 0.01:
            print(f"  {k:28s} {v:6.2f} CPU s")
    counts = collections.Counter(min(n, 2) for _, n in sampler.runnable)
    total = sum(counts.values()) or 1
    print(
        f"threads able to run: none {counts[0] / total:.0%}, one {counts[1] / total:.0%}, two or more {counts[2] / total:.0%}"
    )
    for s, busy, share in per_second(sampler.cpu):
        parts = " ".join(f"{k}={v:.2f}" for k, v in sorted(share.items()) if v >= 0.01)
        print(f"{s:4d} s  cores {busy:4.2f}  {parts}")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": sampler.cpu, "runnable": sampler.runnable}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
