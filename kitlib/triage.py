"""Triage: every detector over a bundle, findings ranked by severity, as text or JSON.

Example:
    >>> from kitlib.triage import triage_text
    >>> import kitlib
    >>> print(triage_text(*kitlib.run_detectors(kitlib.load_bundle("sample_data/healthy"))))  # doctest: +SKIP
    No findings. Checked: ...
"""
from __future__ import annotations

import json
import sys

from kitlib.findings import Finding, run_detectors

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def triage_text(findings: list[Finding], checked: list[dict], bundle_summary: dict | None = None) -> str:
    """Findings as the text ``kitlib triage`` prints: ranked, each with id, summary, key numbers,
    recommended change and evidence (file:line). A healthy bundle says what was checked."""
    out = []
    if bundle_summary:
        s = bundle_summary
        span = " -> ".join(s["time_span"]) if s.get("time_span") else "no timestamps"
        out.append(f"bundle {s['bundle']}: {s['files']} files, hosts {', '.join(s['hosts']) or '-'}, {span}, "
                   f"{s['unparsed_lines']:,} unparsed lines")
        for e in s.get("errors", []):
            out.append(f"  file problem: {e}")
        out.append("")
    if not findings:
        out.append("No findings. Checked:")
        for c in checked:
            line = f"  - {c['detector']}: {c['checks']}"
            if c["error"]:
                line += f"  [detector failed: {c['error']}]"
            out.append(line)
        return "\n".join(out)
    out.append(f"{len(findings)} finding(s), most severe first:")
    for i, f in enumerate(findings, 1):
        out.append(f"\n{i}. [{f.severity.upper()}] {f.id}: {f.summary}")
        for k, v in f.numbers.items():
            out.append(f"     {k} = {v}")
        if f.recommendation:
            out.append(f"   fix: {f.recommendation}")
        if f.notebook:
            out.append(f"   open: {f.notebook}")
        for e in f.evidence[:5]:
            text = (e.get("text") or "").splitlines()[0][:160] if e.get("text") else ""
            out.append(f"   evidence {e['file']}:{e['line']}  {text}")
        if len(f.evidence) > 5:
            out.append(f"   ... {len(f.evidence) - 5} more evidence rows (--json shows all)")
    failed = [c for c in checked if c["error"]]
    for c in failed:
        out.append(f"\ndetector {c['detector']} failed: {c['error']}")
    return "\n".join(out)


def register_cli(sub) -> None:
    p = sub.add_parser(
        "triage", help="run every detector over a bundle and print the findings",
        description="Run every detector over BUNDLE (a folder of files, or an ingest output) and print the "
                    "findings ranked by severity, each with its id, summary, key numbers, recommended change and "
                    "evidence (file:line). Exit status: 0 nothing found, 1 findings, 2 error.")
    p.add_argument("bundle", help="bundle folder, single log file, or `kitlib ingest` output folder")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of findings (id, severity, summary, numbers, recommendation, evidence, notebook)")
    p.add_argument("--tz", default=None, help="timezone the logs were written in (default: manifest, else UTC)")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from kitlib.bundle import load_bundle
    b = load_bundle(args.bundle, tz=args.tz)
    findings, checked = run_detectors(b)
    if args.json:
        json.dump([f.to_dict() for f in findings], sys.stdout, indent=2)
        print()
    else:
        print(triage_text(findings, checked, b.summary))
    return EXIT_FINDINGS if findings else EXIT_CLEAN
