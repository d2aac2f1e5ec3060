"""Explore mode on a big bundle: how long a search and a brush take over an ingest output, and
the kernel's memory.

Generates a broker server.log of ``--size-mb`` (bench/genlog.py, deterministic), ingests it into
Parquet (``kitlib ingest``), opens the output as a notebook does, then times, each several times:

- a plain-text search (case-insensitive) and a regular-expression search: the first page, and the
  number of hits (exact when the page is the last one, else counted up to 10,000: "≥ 10,000");
- a level search (WARN and worse);
- a brush: the timeline's aggregation for the whole bundle (what the chart is built from once),
  then a window cut and the first page of every line inside it (what a brush re-queries);
- opening a hit's context (the raw lines around it), early, mid-file and at the end of the file;
- the first text search and the first context, which build the trigram index of the store and the
  line offsets of the file (:mod:`kitlib.explore.textindex`, :mod:`kitlib.explore.lines`);
- text whose trigrams are on most lines (``offset 4242`` in any case and exact, a regular expression
  with a number), which the index's number keys narrow, and a word on many lines (``leader``).

``--keep-index`` keeps an index already in the output (the searches then run as in a kernel that
opens a store indexed before: its peak RSS without the build).

Prints one Markdown table (median and worst seconds) and the process's peak RSS.

Example:
    .venv/bin/python bench/explore_bench.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def timed(fn, n: int) -> tuple[float, float, float, float, object]:
    """Median and worst wall seconds, median CPU seconds (every thread of this process), the
    process's peak RSS in MB after the step, the result."""
    got, cpu, out = [], [], None
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        got.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return statistics.median(got), max(got), statistics.median(cpu), peak, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Time explore mode's search and brush over an ingest output.")
    ap.add_argument("--size-mb", type=float, default=1024, help="size of the generated server.log (default 1024)")
    ap.add_argument("--workdir", help="where to put the generated file and the ingest output (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each step (default 3)")
    ap.add_argument("--keep-index", action="store_true", help="keep the output's index instead of timing its build")
    a = ap.parse_args(argv)
    work = Path(a.workdir or tempfile.mkdtemp(prefix="kitexplore-"))
    log = work / "bundle" / "broker-1" / "server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    want = int(a.size_mb * 1024 * 1024)
    if not log.exists() or abs(log.stat().st_size - want) > 1024 * 1024:
        sys.path.insert(0, str(HERE))
        from genlog import generate

        with open(log, "wb") as f:
            generate(want, f)

    import kitlib
    from kitlib.explore import query as q
    from kitlib.explore import timeline as tl
    from kitlib.window import Window

    out = work / "out.kit"
    if not (out / "summary.json").exists():  # in a child process: its memory is not the kernel's
        import subprocess

        subprocess.run(
            [sys.executable, "-m", "kitlib.cli", "ingest", str(log.parent.parent), "--out", str(out)], check=True
        )
    import shutil

    from kitlib.explore import lines as li

    if not a.keep_index:
        shutil.rmtree(out / ".index", ignore_errors=True)  # the indexes are built below, timed
    load0 = os.getloadavg()
    b = kitlib.load(out)
    lo, hi = b.span()
    mid = lo + (hi - lo) / 2
    window = Window.of(mid, mid + (hi - lo) / 20)
    rows = []
    n = a.repeat
    rows.append(
        ("trigram index: built by the first text search (once per store)", *timed(lambda: q.search(b, "fenced"), 1))
    )
    rows.append(
        (
            "line index of the 1 GB file: built by the first context (once per file)",
            *timed(lambda: q.context(b, "broker-1/server.log", 5_000_000), 1),
        )
    )
    rows.append(("search: plain text, any case (lower case typed)", *timed(lambda: q.search(b, "shrinking isr"), n)))
    rows.append(("search: plain text, exact (a capital typed)", *timed(lambda: q.search(b, "Shrinking ISR"), n)))
    rows.append(
        ("search: regex with rare literal text", *timed(lambda: q.search(b, r"Shrinking ISR from \d+", regex=True), n))
    )
    rows.append(
        (
            "search: regex, its literal text on most lines",
            *timed(lambda: q.search(b, r"Rolled new log segment at offset 9\d{5} ", regex=True), n),
        )
    )
    rows.append(
        ("search: a number on most lines, any case (offset 4242)", *timed(lambda: q.search(b, "offset 4242"), n))
    )
    rows.append(("search: a number on most lines, exact (Offset 4242)", *timed(lambda: q.search(b, "Offset 4242"), n)))
    rows.append(("search: a word on many lines (leader)", *timed(lambda: q.search(b, "leader"), n)))
    rows.append(("search: level WARN and worse", *timed(lambda: q.search(b, level="WARN+"), n)))
    rows.append(("timeline aggregation (once per panel)", *timed(lambda: tl.counts(b, 5000), n)))
    rows.append(("brush: every line in a 5 % window, first page", *timed(lambda: q.search(b, window=window), n)))
    rows.append(("brush: plain text in the window", *timed(lambda: q.search(b, "error", window=window), n)))
    hit = q.search(b, level="WARN+").rows.iloc[0]
    rows.append(("context of an early hit (11 lines)", *timed(lambda: q.context(b, hit["file"], int(hit["line"])), n)))
    hit = q.search(b, window=window).rows.iloc[0]
    rows.append(
        ("context of a hit mid-file (11 lines)", *timed(lambda: q.context(b, hit["file"], int(hit["line"])), n))
    )
    last = int(b.sql("select max(line) as n from events")["n"].iloc[0])
    rows.append(
        ("context of the file's last line (11 lines)", *timed(lambda: q.context(b, "broker-1/server.log", last), n))
    )
    size = log.stat().st_size / 1e6
    print(f"bundle: {size:,.0f} MB server.log, {b.summary.rows.get('events', 0):,} events (ingest output, DuckDB)\n")
    print("| step | median s | worst s | CPU s | peak RSS MB | hits |")
    print("|---|---|---|---|---|---|")
    for name, med, worst, cpu, peak, got in rows:
        total = (
            f"{'≥ ' if got.capped else ''}{got.total:,}"
            if hasattr(got, "total")
            else (f"{got[2]:,} records" if isinstance(got, tuple) else "")
        )
        print(f"| {name} | {med:.3f} | {worst:.3f} | {cpu:.3f} | {peak:,.0f} | {total} |")
    sizes = {f.name: f.stat().st_size / 1e6 for f in sorted((out / ".index").glob("*.*")) if f.is_file()}
    print(
        "\nindex on disk: "
        + ", ".join(f"{k} {v:.1f} MB" for k, v in sizes.items())
        + f"; line offsets: {sum(len(v) for v in li._MEMO.values() if v is not None):,} entries"
    )
    print(f"load average (1, 5, 15 min) at the start: {load0}, at the end: {os.getloadavg()}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process (as a notebook kernel would hold it): {rss:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
