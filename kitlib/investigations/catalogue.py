"""The findings catalogue: every finding id the investigations declare, with the severity it has
by default and what it means, read from their declarations (``findings`` of each
:class:`~kitlib.investigations.Investigation`), never written by hand.

Two documents come from it: ``docs/findings.md`` (:func:`markdown`), and the findings column of
the table in ``sample_data/README.md`` (:func:`with_sample_table`), filled from what triage finds
on each sample bundle, so the table cannot promise a finding the kit does not raise.

Usage:
    kitlib findings > docs/findings.md    # or: python -m kitlib.investigations.catalogue
    python -m kitlib.investigations.catalogue --samples sample_data    # rewrites its README table
    python -m kitlib.investigations.catalogue --samples sample_data --check

Example:
    >>> "| `cleaner-no-reclaim` | medium |" in markdown()
    True
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kitlib import registry
from kitlib.findings import Severity

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.findings import Finding
    from kitlib.investigations import Investigation

BEGIN = "<!-- findings table: the last column is written by `python -m kitlib.investigations.catalogue --samples sample_data` -->"
END = "<!-- end of findings table -->"
HEADER = ("bundle", "incident (seed)", "how it was made", "findings (triage, with severity)")


def markdown(investigations: Iterable[Investigation] | None = None) -> str:
    """The catalogue as Markdown: per investigation, each finding id with its default severity,
    its meaning and the sample bundles that show it."""
    invs = list(investigations) if investigations is not None else registry.investigations()
    out = [
        "# Findings",
        "",
        "Every finding id the kit's detectors may raise, by investigation: the severity a finding has",
        "unless its evidence makes it worse or milder, what it means, and the sample bundles under",
        "`sample_data/` that show it. Generated from the investigations' declarations:",
        "`kitlib findings > docs/findings.md`. `kitlib triage` ranks findings by severity: "
        + ", ".join(s.value for s in Severity)
        + ".",
        "",
        "Every finding also says how much evidence it rests on: the distinct log lines (and records",
        "without a line number, such as JMX samples) it cites or counts, the hosts and files they come",
        "from, and the time from the first to the last (`extent` in `kitlib triage --json`: `records`,",
        "`lines`, `other`, `hosts`, `files`, `first`, `last`, `span_s`; one line, `rests on ...`, in the",
        "terminal, the notebooks and the report). It is measured in one place from the finding's",
        "evidence rows and the rows its counts select (`counted_from`), never by a detector, and is no",
        "part of the finding's id, severity or summary. One line of a strong signal is a finding on its",
        "own (a broker fenced or deleted, an out-of-memory error, a log directory taken offline, a",
        "producer fenced by a newer one with the same transactional id); one line of an ambiguous one",
        "(a single rebalance or member join, a disconnect, one failed authentication) is not, or is low.",
    ]
    for inv in invs:
        out += ["", f"## `{inv.name}`: {inv.title}", "", inv.question, ""]
        if not inv.findings:
            out.append("Raises no findings: its notebook measures, it does not judge.")
            continue
        out += ["| finding id | default severity | meaning | sample bundles |", "|---|---|---|---|"]
        for k in inv.findings:
            samples = [b for b, ids in sorted(inv.examples.items()) if k.id in ids]
            shown = ", ".join(f"`{b}`" for b in samples) or "-"
            out.append(f"| `{k.id}` | {k.severity} | {k.meaning} | {shown} |")
    return "\n".join(out) + "\n"


def findings_cell(found: Iterable[Finding]) -> str:
    """What a sample bundle's triage yields, as the README's table shows it: each id once, in
    triage order, with its severities (and how many findings when more than one).

    Example:
        >>> from kitlib.findings import Finding
        >>> findings_cell([Finding("a-b", "high", "x"), Finding("a-b", "low", "y"), Finding("c", "low", "z")])
        '`a-b` (2: high, low), `c` (low)'
        >>> findings_cell([])
        'none'
    """
    by_id: dict[str, list[str]] = {}
    for f in found:
        by_id.setdefault(f.id, []).append(str(f.severity))
    cells = []
    for fid, sevs in by_id.items():
        shown = ", ".join(sorted(set(sevs), key=Severity.rank_of))
        cells.append(f"`{fid}` ({len(sevs)}: {shown})" if len(sevs) > 1 else f"`{fid}` ({shown})")
    return ", ".join(cells) or "none"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def with_sample_table(readme: str, found: Mapping[str, Iterable[Finding]]) -> str:
    """``readme`` with the last column of its findings table (between :data:`BEGIN` and
    :data:`END`) written from ``found`` (sample bundle name -> its triage findings). The other
    columns are kept as written; a bundle without a row gets one to fill in, a row whose bundle
    is gone is dropped. ValueError when the README has no such table."""
    lines = readme.split("\n")
    try:
        start, stop = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise ValueError(f"no findings table marked with {BEGIN!r} and {END!r}") from None
    if stop < start:
        raise ValueError(f"{END!r} comes before {BEGIN!r}")
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1 : stop]:
        if not line.startswith("| `"):
            continue  # the header and its rule
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        name = cells[0].strip("`").rstrip("/")
        rows[name] = (cells + ["", ""])[:3]
    for name in found:
        rows.setdefault(name, [f"`{name}/`", "", ""])
    table = [_row(HEADER), "|" + "---|" * len(HEADER)]
    table += [_row([*cells, findings_cell(found[name])]) for name, cells in rows.items() if name in found]
    return "\n".join(lines[: start + 1] + table + lines[stop:])


def sample_findings(sample_data: Path) -> dict[str, list[Finding]]:
    """Triage of every sample bundle (each folder of ``sample_data``), by name."""
    from kitlib.bundle import load_bundle
    from kitlib.findings import triage

    return {p.name: triage(load_bundle(p)).findings for p in sorted(sample_data.iterdir()) if p.is_dir()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kitlib.investigations.catalogue",
        description="Print the findings catalogue as Markdown, or, with --samples, write the findings "
        "column of the table in the sample bundles' README.md from their triage.",
    )
    p.add_argument("--samples", type=Path, help="a folder of sample bundles with a README.md holding the table")
    p.add_argument(
        "--check", action="store_true", help="with --samples: exit 1 when README.md is stale, writing nothing"
    )
    a = p.parse_args(argv)
    if a.samples is None:
        sys.stdout.write(markdown())
        return 0
    readme = a.samples / "README.md"
    text = readme.read_text()
    new = with_sample_table(text, sample_findings(a.samples))
    if a.check:
        if new != text:
            print(f"{readme} is stale: rewrite it with python -m kitlib.investigations.catalogue --samples {a.samples}")
            return 1
        return 0
    if new != text:
        readme.write_text(new)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
