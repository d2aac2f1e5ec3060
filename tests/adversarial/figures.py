"""Totals per promise over the adversarial corpus, from the figures the suite records.

Run the suite with ``KIT_ADVERSARIAL_FIGURES`` naming a file, then total it:

    KIT_ADVERSARIAL_FIGURES=/tmp/adv.jsonl .venv/bin/python -m pytest -m "slow or not slow" tests/test_adversarial.py
    .venv/bin/python tests/adversarial/figures.py /tmp/adv.jsonl

Prints, for each promise, the cases it was checked on, how many checks were made, and the cases
that broke it (a case stops at the first promise it breaks, so later promises were not checked
on it); then the cases' peak memory and lines lost.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Total the adversarial suite's figures per promise.")
    ap.add_argument("figures", help="the file KIT_ADVERSARIAL_FIGURES named during the run")
    a = ap.parse_args(argv)
    cases: dict[str, dict] = {}
    with open(a.figures, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                fig = json.loads(line)
                cases[fig["case"]] = fig  # the last run of a case counts
    promises: dict[str, dict] = {}
    for name, fig in sorted(cases.items()):
        for promise, n in fig["checks"].items():
            p = promises.setdefault(promise, {"cases": 0, "checks": 0, "broken": []})
            p["cases"] += 1
            p["checks"] += n
        if fig.get("broken"):
            promises[fig["broken"]]["broken"].append(name)
    print(f"{len(cases)} cases, {sum(f['files'] for f in cases.values())} files read\n")
    print("| promise | cases | checks | broken on |")
    print("|---|---|---|---|")
    for promise, p in sorted(promises.items()):
        print(f"| {promise} | {p['cases']} | {p['checks']:,} | {', '.join(p['broken']) or 'none'} |")
    worst = max(cases.values(), key=lambda f: f.get("rss_mb", 0))
    print(
        f"\nlines lost: {sum(f['lines_lost'] for f in cases.values())}; "
        f"secrets stored: {sum(f['secrets_leaked'] for f in cases.values())}; "
        f"largest peak memory of an ingest: {worst.get('rss_mb')} MB ({worst['case']})"
    )
    return 1 if any(f.get("broken") for f in cases.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
