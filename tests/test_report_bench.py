"""bench/report_bench.py's sampler on a small tree of real processes: a parent holding little and
two children, one of which holds about 80 MB; and the naming of kernels by the report's lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))

import pytest
import report_bench

TREE = r"""
import subprocess, sys, time
big = "import time; b = bytearray(80 << 20); b[::4096] = b'x' * len(b[::4096]); print('ready', flush=True); time.sleep(30)"
small = "import time; print('ready', flush=True); time.sleep(30)"
kids = [subprocess.Popen([sys.executable, "-c", c], stdout=subprocess.PIPE, text=True) for c in (big, small)]
for k in kids:
    k.stdout.readline()
print("up", *[k.pid for k in kids], flush=True)
time.sleep(30)
"""


@pytest.mark.slow  # three interpreters start
def test_sampler_sees_each_process_of_a_tree_with_its_own_peak():
    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert root.stdout is not None
        _, big, small = root.stdout.readline().split()
        tree = report_bench.Tree(root.pid)
        for i in range(3):
            report_bench.sample_once(tree, float(i))
        assert {root.pid, int(big), int(small)} <= set(tree.procs)
        procs = tree.procs
        assert procs[int(big)].ppid == root.pid and procs[int(small)].ppid == root.pid
        assert procs[int(big)].peak_mb >= 80
        assert procs[root.pid].peak_mb < 60 and procs[int(small)].peak_mb < 60
        assert report_bench.kind(procs[root.pid], root.pid) == "main"
        os.kill(int(big), 9)
        time.sleep(0.3)
        report_bench.sample_once(tree, 3.0)
        assert procs[int(big)].gone == 3.0 and procs[int(small)].gone is None
        assert procs[int(big)].peak_mb >= 80  # a peak outlives its process
        rows = report_bench.table(tree)
        assert rows[2].startswith("| main | 1 |") and any(r.startswith("| python") for r in rows)
    finally:
        root.kill()
        root.wait()


def test_kernels_are_named_by_the_report_line_printed_after_they_end():
    tree = report_bench.Tree(1)
    for pid, last in ((11, 4.0), (12, 9.0), (13, 6.0)):
        tree.procs[pid] = report_bench.Proc(
            pid, 1, "python -m ipykernel_launcher -f k.json", 0.0, last, gone=last + 0.2
        )
    lines = ["  mix/triage.ipynb               ok (4.4 s)", "  mix/compaction.ipynb      FAILED: boom (9.3 s)"]
    lines.insert(1, "  mix/cluster_health.ipynb  ok (6.5 s)")
    done = [(t, report_bench.DONE.match(ln).group(1)) for t, ln in zip((4.5, 6.6, 9.4), lines)]
    report_bench.name_kernels(tree, done)
    assert [tree.procs[p].name for p in (11, 13, 12)] == ["triage.ipynb", "cluster_health.ipynb", "compaction.ipynb"]
