"""Time to findings on a raw bundle, beside lnav: the first `kitlib triage` (which ingests the
bundle into the kit's cache), the second (which reads that store), and lnav opening the same
file and answering one query (`SELECT log_level, count(*) ... GROUP BY log_level`), with lnav's
index-only figure beside it. Each command is its own process under GNU time (wall seconds, peak
RSS of that process). The cache is a fresh folder of the bench's own (XDG_CACHE_HOME), so the
first run is a first run; the page cache is warmed before anything is timed.

Two bundles: the bench's own mix (one generated 1 GB server.log, bench/genlog.py) and, with
``--dense-records N``, a dense incident (bench/dense_bench.py's three brokers full of ISR
changes, rebalances, transaction rollbacks and authentication failures). ``--uncached`` also
times `kitlib triage --no-cache` (the in-memory path: slow and big on these files).
``--ingested`` also times the README's way for bundles of several GB: `kitlib ingest` to a
folder, then the first `kitlib triage` of that folder (which builds the tables derived from the
log records and keeps them in it) and the second. ``--report`` also times `kitlib report` of the raw bundle and samples the peak RSS of every
process it starts (the notebooks' kernels included) from /proc. ``--pairs N`` then runs lnav's
open-and-query and a first `kitlib triage` (a fresh cache each time) one right after the other N
more times and prints each pair's ratio and their median: on a machine whose speed drifts within
minutes, a ratio of two runs taken together says more than one of runs taken apart.
``--ingest-pairs N`` does the same with `kitlib ingest` to a fresh folder as the kit's side (the
ratio is then lnav's time over the ingest's: its speed against lnav's), and ``--pairs-only``
skips the single runs before the pairs.

The findings of every kitlib run on a bundle are compared (the JSON of `--json`): they must be
the same.

Example:
    nice -n 19 .venv/bin/python bench/cache_bench.py --size-mb 1024 --dense-records 5000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT = Path(sys.executable).parent / "kitlib"
LNAV_QUERY = ";SELECT log_level, count(*) AS n FROM all_logs GROUP BY log_level"


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of one run of ``cmd`` under GNU time."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, env=env)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:2])} failed: {r.stderr[-800:]}")
    wall, kb = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) / 1024, r.stdout


def cpu() -> float:
    """CPU-seconds (user and system) of the children waited for so far (GNU time waits for the
    command, and each command for its own processes)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree_peak(cmd: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, the largest RSS (MB) any one process of the command's tree reached (sampled
    every 0.1 s), and the exit status."""
    wall, peak, _, status, _ = tree_run(cmd, env)
    return wall, peak, status


def tree_run(cmd: list[str], env: dict | None = None, out=subprocess.DEVNULL) -> tuple[float, float, float, int, str]:
    """Wall seconds, the largest RSS (MB) any one process of the command's tree reached, the
    largest sum of the RSS of all its processes at one time (both sampled every 0.1 s), the exit
    status and stdout (with ``out=subprocess.PIPE``)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE, text=True)
    peak = total = 0.0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak, total
        while not stop.is_set():
            kids = _children()
            todo, seen = [p.pid], set()
            now = 0.0
            while todo:
                pid = todo.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                rss = _rss_mb(pid)
                peak, now = max(peak, rss), now + rss
                todo.extend(kids.get(pid, []))
            total = max(total, now)
            stop.wait(0.1)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    stdout, err = p.communicate()
    stop.set()
    th.join()
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:2])} failed: {err[-800:]}")
    return time.perf_counter() - t0, peak, total, p.returncode, stdout or ""


def mix_bundle(work: Path, size_mb: float) -> Path:
    root = work / "mix"
    log = root / "broker-1" / "server.log"
    want = int(size_mb * 1024 * 1024)
    if not log.exists() or abs(log.stat().st_size - want) > 1024 * 1024:
        log.parent.mkdir(parents=True, exist_ok=True)
        sys.path.insert(0, str(HERE))
        from genlog import generate

        with open(log, "wb") as f:
            generate(want, f)
    return root


def dense_bundle(work: Path, records: int) -> Path:
    root = work / f"dense-{records}"
    if not root.exists():
        sys.path.insert(0, str(HERE))
        from dense_bench import write_bundle

        write_bundle(root, records)
    return root


def bench(
    name: str,
    slug: str,
    root: Path,
    work: Path,
    uncached: bool,
    report: bool,
    min_mb: float | None,
    ingested: bool = False,
) -> list[tuple[str, float, float, float]]:
    logs = sorted(str(p) for p in root.rglob("*") if p.is_file())
    size = sum(os.path.getsize(p) for p in logs)
    for p in logs:  # warm the page cache
        subprocess.run(["cat", p], stdout=subprocess.DEVNULL)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / f"cache-{slug}")}
    env.pop("KITLIB_CACHE_DIR", None)
    env.pop("KITLIB_NO_CACHE", None)
    if min_mb is not None:
        env["KITLIB_CACHE_MIN_MB"] = str(min_mb)
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    rows = []
    c = cpu()
    idx = timed(["lnav", "-n", "-c", ";SELECT count(*) AS n FROM all_logs", *logs])
    rows.append(("lnav -n, index only (count records)", idx[0], idx[1], cpu() - c))
    c = cpu()
    q = timed(["lnav", "-n", "-c", LNAV_QUERY, *logs])
    rows.append(("lnav -n, open and answer one query (GROUP BY log_level)", q[0], q[1], cpu() - c))
    # the first run ingests in a process of its own, which builds the derived tables in a second
    # one: its memory is given both ways, the largest process and all of them together
    c = cpu()
    wall, largest, total, _, stdout = tree_run([str(KIT), "triage", str(root), "--json"], env, subprocess.PIPE)
    first = (wall, total, stdout)
    c = cpu() - c
    rows.append(("kitlib triage, first run (ingests into the cache; largest process)", wall, largest, c))
    rows.append(("kitlib triage, first run (the same run; RSS of all its processes together)", wall, total, c))
    c = cpu()
    second = timed([str(KIT), "triage", str(root), "--json"], env)
    rows.append(("kitlib triage, second run (reads the cached store)", second[0], second[1], cpu() - c))
    found = [json.loads(first[2]), json.loads(second[2])]
    if uncached:
        c = cpu()
        plain = timed([str(KIT), "triage", str(root), "--json", "--no-cache"], env)
        rows.append(("kitlib triage --no-cache (in memory, as before)", plain[0], plain[1], cpu() - c))
        found.append(json.loads(plain[2]))
    if ingested:
        kit = work / f"ingested-{slug}.kit"
        shutil.rmtree(kit, ignore_errors=True)
        c = cpu()
        wall, largest, _, _, _ = tree_run([str(KIT), "ingest", str(root), "--out", str(kit), "--no-progress"], env)
        rows.append(("kitlib ingest to a folder (parsing only; largest process)", wall, largest, cpu() - c))
        for run in ("first", "second"):
            c = cpu()
            wall, largest, _, _, stdout = tree_run([str(KIT), "triage", str(kit), "--json"], env, subprocess.PIPE)
            what = "builds the derived tables into the folder" if run == "first" else "reads them"
            rows.append(
                (f"kitlib triage of that folder, {run} run ({what}; largest process)", wall, largest, cpu() - c)
            )
            found.append(json.loads(stdout))
        shutil.rmtree(kit, ignore_errors=True)
    if report:
        out = work / f"report-{slug}"
        shutil.rmtree(out, ignore_errors=True)
        c = cpu()
        wall, peak, status = tree_peak([str(KIT), "report", str(root), "--out", str(out)], env)
        rows.append((f"kitlib report (cache warm; largest process of its tree; exit {status})", wall, peak, cpu() - c))
    entries = json.loads(subprocess.run([str(KIT), "cache", "--json"], env=env, capture_output=True, text=True).stdout)
    same = all(f == found[0] for f in found)
    lo = q
    print(
        f"\n### {name}: {size / 1e6:,.0f} MB in {len(logs)} files; {len(found[0])} findings "
        f"({', '.join(sorted({f['id'] for f in found[0]}))}); findings of every kitlib run the same: {same}; "
        f"cache entry {sum(e['bytes'] for e in entries) / 1e6:,.0f} MB\n"
    )
    print("| command | wall s | CPU-s | MB/s | time vs lnav open+query | peak RSS MB | memory vs lnav open+query |")
    print("|---|---|---|---|---|---|---|")
    for label, wall, rss, spent in rows:
        print(
            f"| {label} | {wall:.2f} | {spent:.1f} | {size / 1e6 / wall:,.0f} | {wall / lo[0]:.2f} | {rss:,.0f} | {rss / lo[1]:.2f} |"
        )
    if not same:
        print("\nFINDINGS DIFFER between the runs above")
    return rows


def pairs(
    name: str, slug: str, root: Path, work: Path, n: int, min_mb: float | None, ingest: bool = False
) -> list[float]:
    """``n`` pairs of lnav's open-and-query and a first ``kitlib triage`` (a fresh cache each),
    run one right after the other; prints each pair and the median ratio, and returns the ratios.
    With ``ingest``, the kit's side of each pair is ``kitlib ingest`` of the bundle to a fresh
    folder instead, and the ratio is lnav's time over the ingest's (its speed against lnav's)."""
    logs = sorted(str(p) for p in root.rglob("*") if p.is_file())
    env = {**os.environ, "XDG_CACHE_HOME": str(work / f"cache-{slug}-pairs")}
    env.pop("KITLIB_CACHE_DIR", None)
    env.pop("KITLIB_NO_CACHE", None)
    if min_mb is not None:
        env["KITLIB_CACHE_MIN_MB"] = str(min_mb)
    out = work / f"pairs-{slug}.kit"
    kit = "kitlib ingest" if ingest else "the first kitlib triage"
    print(f"\n{name}, {n} pairs (lnav open+query, then {kit}):\n")
    if ingest:
        print("| pair | lnav s | lnav peak MB | ingest s | largest process MB | speed ratio | memory ratio |")
        print("|---|---|---|---|---|---|---|")
    else:
        print(
            "| pair | lnav s | lnav peak MB | first triage s | largest process MB | time ratio | memory ratio | findings |"
        )
        print("|---|---|---|---|---|---|---|---|")
    ratios, found = [], None
    for i in range(1, n + 1):
        shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        q = timed(["lnav", "-n", "-c", LNAV_QUERY, *logs])
        if ingest:
            wall, largest, _, status, _ = tree_run(
                [str(KIT), "ingest", str(root), "--out", str(out), "--no-progress"], env
            )
            if status:
                raise SystemExit(f"kitlib ingest exited {status}")
            ratios.append(q[0] / wall)
            print(
                f"| {i} | {q[0]:.2f} | {q[1]:,.0f} | {wall:.2f} | {largest:,.0f} | {q[0] / wall:.2f}x | "
                f"{largest / q[1]:.2f}x |"
            )
            continue
        wall, largest, _, _, stdout = tree_run([str(KIT), "triage", str(root), "--json"], env, subprocess.PIPE)
        got = json.loads(stdout)
        found = got if found is None else found
        ratios.append(wall / q[0])
        print(
            f"| {i} | {q[0]:.2f} | {q[1]:,.0f} | {wall:.2f} | {largest:,.0f} | {wall / q[0]:.2f}x | "
            f"{largest / q[1]:.2f}x | {'same' if got == found else 'DIFFER'} |"
        )
    ordered = sorted(ratios)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    what = "speed" if ingest else "time"
    print(f"\nmedian {what} ratio {median:.2f}x (lowest {ordered[0]:.2f}x, highest {ordered[-1]:.2f}x)")
    shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    return ratios


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="first and second kitlib triage on a raw bundle vs lnav")
    ap.add_argument("--size-mb", type=float, default=1024, help="the generated mix's server.log (default 1024)")
    ap.add_argument("--dense-records", type=int, default=0, help="also a dense incident of N records (0: no)")
    ap.add_argument("--uncached", action="store_true", help="also time kitlib triage --no-cache")
    ap.add_argument("--report", action="store_true", help="also time kitlib report of the raw bundle")
    ap.add_argument(
        "--ingested", action="store_true", help="also time kitlib ingest to a folder, then triage of that folder"
    )
    ap.add_argument("--min-mb", type=float, default=None, help="KITLIB_CACHE_MIN_MB (default: the kit's, 128)")
    ap.add_argument("--workdir", help="where the bundles and caches go (default: a temp dir)")
    ap.add_argument(
        "--pairs", type=int, default=0, help="then N pairs of lnav open+query and a first triage, one after the other"
    )
    ap.add_argument(
        "--ingest-pairs",
        type=int,
        default=0,
        help="then N pairs of lnav open+query and kitlib ingest (to a fresh folder), one after the other",
    )
    ap.add_argument(
        "--pairs-only", action="store_true", help="only the pairs: skip the table of single runs before them"
    )
    a = ap.parse_args(argv)
    if not shutil.which("lnav"):
        raise SystemExit("lnav is not installed: apt-get install lnav (Debian's package)")
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kit-cache-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    lnav_v = subprocess.run(["lnav", "-V"], capture_output=True, text=True).stdout.strip()
    print(f"{os.cpu_count()} cores; load average before the runs {load[0]:.1f}; {lnav_v}")
    mix = mix_bundle(work, a.size_mb)
    dense = dense_bundle(work, a.dense_records) if a.dense_records else None
    if not a.pairs_only:
        bench("the bench's mix", "mix", mix, work, a.uncached, a.report, a.min_mb, a.ingested)
        if dense is not None:
            bench("dense incident", "dense", dense, work, a.uncached, a.report, a.min_mb, a.ingested)
    for n, ingest in ((a.ingest_pairs, True), (a.pairs, False)):
        if n:
            pairs("the bench's mix", "mix", mix, work, n, a.min_mb, ingest)
            if dense is not None:
                pairs("dense incident", "dense", dense, work, n, a.min_mb, ingest)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
