"""Fleet benchmark: a generated bundle of many hosts (each a broker server.log from genlog.py plus
the real controller, cleaner, request and Connect logs of the sample bundles) ingested three
ways: one process; `--workers 2` (a local Dask cluster); and a Dask scheduler plus two workers
started as separate processes on 127.0.0.1 (`--scheduler`). Checks that the three give the same
rows per table and prints wall seconds and the peak RSS of every process.

Example:
    .venv/bin/python bench/fleet_bench.py --hosts 16 --mb-per-host 128
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = Path(sys.executable).parent
EXTRA = [
    ("compaction", "broker-1", "log-cleaner.log"),
    ("down-conversion", "broker-1", "kafka-request.log"),
    ("compaction", "broker-1", "controller.log"),
    ("connect-offsets", "worker-1", "connect.log"),
]


def tree_peak_rss_mb(pid: int) -> float:
    """The largest peak RSS (VmHWM) of one process among ``pid`` and all its descendants, in MB."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    peak, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for ln in Path(f"/proc/{p}/status").read_text().splitlines():
                if ln.startswith("VmHWM:"):
                    peak = max(peak, int(ln.split()[1]))
        except OSError:
            continue
    return peak / 1024 if peak else float("nan")


def make_fleet(root: Path, hosts: int, mb: float) -> None:
    sys.path.insert(0, str(HERE))
    from genlog import generate

    for i in range(1, hosts + 1):
        d = root / f"broker-{i}"
        d.mkdir(parents=True, exist_ok=True)
        if not (d / "server.log").exists():
            with open(d / "server.log", "wb") as f:
                generate(int(mb * 1024 * 1024), f, seed=i)
        for bundle, host, name in EXTRA:
            src = ROOT / "sample_data" / bundle / host / name
            for cand in (src, src.with_name(name + ".gz")):
                if cand.exists() and not (d / cand.name).exists():
                    shutil.copy(cand, d / cand.name)


def timed(cmd: list[str]) -> tuple[float, float]:
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr[-800:]}")
    wall, kb = r.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Ingest a generated many-host bundle single-process and on Dask.")
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--mb-per-host", type=float, default=128)
    ap.add_argument("--workdir", help="where the bundle and outputs go (default: a temp dir)")
    a = ap.parse_args(argv)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kit-fleet-"))
    bundle = work / "fleet"
    make_fleet(bundle, a.hosts, a.mb_per_host)
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) / 1e6
    kit = str(BIN / "kitlib")
    results = {}
    # "one process" builds the derived tables as the Dask ingests do, so that all of their rows
    # compare; the default single-process ingest (which leaves them to the first reader) runs too
    for name, extra in (
        ("one process", ["--derive"]),
        ("one process, derived tables left to the first reader", []),
        ("--workers 2", ["--workers", "2"]),
    ):
        out = work / name.replace(" ", "_").replace("-", "")
        shutil.rmtree(out, ignore_errors=True)
        results[name] = (*timed([kit, "ingest", str(bundle), "--out", str(out), "--no-progress", *extra]), out, [])
    # a scheduler and two workers as separate processes
    sched_file = work / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    sched = subprocess.Popen(
        [
            str(BIN / "dask"),
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--dashboard-address",
            "127.0.0.1:0",
            "--scheduler-file",
            str(sched_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    while not sched_file.exists():
        time.sleep(0.2)
    address = json.loads(sched_file.read_text())["address"]
    workers = [
        subprocess.Popen(
            [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for _ in range(2)
    ]
    time.sleep(3)
    out = work / "scheduler"
    shutil.rmtree(out, ignore_errors=True)
    wall, rss = timed([kit, "ingest", str(bundle), "--out", str(out), "--no-progress", "--scheduler", address])
    peaks = []
    import signal

    for p in [*workers, sched]:
        # read before stopping them: a dask worker is a nanny process with the worker as its child
        peaks.append(tree_peak_rss_mb(p.pid))
        os.killpg(p.pid, signal.SIGTERM)
        p.communicate(timeout=120)
    results["scheduler + 2 worker processes"] = (wall, rss, out, peaks)
    rows = {k: json.loads((v[2] / "summary.json").read_text())["rows"] for k, v in results.items()}
    same = all(r == rows["one process"] for k, r in rows.items() if "first reader" not in k)
    print(
        f"bundle: {a.hosts} hosts, {size:,.0f} MB; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}; "
        f"rows per table equal across the ingests that build the derived tables: {same}\n"
    )
    print("| ingest | wall s | MB/s | client peak RSS MB | scheduler / worker peak RSS MB |")
    print("|---|---|---|---|---|")
    for k, (wall, rss, _, peaks) in results.items():
        extra = ", ".join(f"{x:,.0f}" for x in ([peaks[-1]] + peaks[:-1])) if peaks else "-"
        print(f"| {k} | {wall:.1f} | {size / wall:,.0f} | {rss:,.0f} | {extra} |")
    # analysing the output: triage, and the triage notebook, on the dataset written by the workers
    store = results["--workers 2"][2]
    events = rows["one process"].get("events", 0)
    r = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", kit, "triage", str(store), "--json"], capture_output=True, text=True
    )
    t_wall, t_kb = r.stderr.strip().splitlines()[-1].split()
    nb = ROOT / "notebooks" / "triage.ipynb"
    r = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%e %M",
            str(BIN / "papermill"),
            "-k",
            "python3",
            "--cwd",
            str(nb.parent),
            "-p",
            "BUNDLE",
            str(store),
            str(nb),
            str(work / "triage-out.ipynb"),
        ],
        capture_output=True,
        text=True,
    )
    n_wall, n_kb = r.stderr.strip().splitlines()[-1].split()
    out_mb = sum(p.stat().st_size for p in store.rglob("*.parquet")) / 1e6
    print(f"\nanalysis of the --workers 2 output ({out_mb:,.0f} MB of Parquet, {events:,} events):\n")
    print("| step | wall s | peak RSS MB |\n|---|---|---|")
    print(f"| kitlib triage | {float(t_wall):.1f} | {int(t_kb) / 1024:,.0f} |")
    print(
        f"| triage notebook (papermill; the kernel is a child: its peak is the larger figure) | {float(n_wall):.1f} | "
        f"{int(n_kb) / 1024:,.0f} |"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
