"""PROVENANCE.md of a scenario bundle, in two shapes: :func:`write_provenance` (a timeline of the
run and regex evidence per host, for the cluster scenarios) and :func:`write_client_provenance` (a
description and a table of evidence counted per file, for the client scenarios)."""

from __future__ import annotations

import gzip
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .bundles import NEUTRAL_ROOT, scrub_paths
from .errors import LabError
from .jars import kafka_version

if TYPE_CHECKING:
    from .scenario import Scenario


@dataclass(frozen=True)
class Evidence:
    """A kind of line a detector should find in a bundle: ``pattern`` (a regex) in files named
    ``file`` (``*`` for any) of hosts matching ``host`` (a regex on the folder name)."""

    what: str
    pattern: str
    file: str = "server.log"
    host: str = r"broker-\d+"


@dataclass(frozen=True)
class Hit:
    host: str
    file: str
    line: int
    text: str


def grep_bundle(bundle: str | Path, ev: Evidence) -> list[Hit]:
    """Every line of ``bundle`` matching ``ev`` (plain and gzipped files, rotated ones too)."""
    rx, hosts = re.compile(ev.pattern), re.compile(ev.host)
    hits = []
    for d in sorted(Path(bundle).iterdir()):
        if not d.is_dir() or not hosts.fullmatch(d.name):
            continue
        for f in sorted(d.iterdir()):
            base = f.name.removesuffix(".gz")
            if ev.file != "*" and not (base == ev.file or base.startswith(ev.file + ".")):
                continue
            raw = f.read_bytes()
            text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode(errors="replace")
            hits += [Hit(d.name, f.name, i, ln) for i, ln in enumerate(text.splitlines(), 1) if rx.search(ln)]
    return hits


def write_provenance(
    s: Scenario,
    title: str,
    summary: str,
    how: str,
    expected: str,
    evidence: list[Evidence],
    command: str,
    notes: str = "",
    per_kind: int = 6,
    window: tuple | None = None,
) -> Path:
    """Write PROVENANCE.md of a finished cluster scenario bundle: what it is, how it was made
    (Kafka version, Java, the command), the incident window when given (two UTC datetimes, as
    ``Incident window (UTC): START..END``, the span ``kitlib changes --window`` takes), the
    timeline of :meth:`Scenario.mark`, and for every :class:`Evidence` the first lines that match
    it (host, file, line number). Raises
    :class:`LabError` when one kind of evidence is missing: the scenario did not produce the
    incident it is about."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    made = (
        f"Real data from real Apache Kafka {kafka_version()} nodes (KRaft) run by the kit's lab on 127.0.0.1 "
        f"({java[0] if java else 'java'}, {platform.system()} {platform.machine()}), on "
        f"{s.started:%Y-%m-%d}, by `{command}`. Regenerate with the same command (timestamps, ports and ids "
        "will differ). Nothing was edited by hand: the one change is that the lab's work-folder paths are "
        "replaced by `/var/lib/kafka-lab` in every file (`kitlib.lab.scrub_paths`); `bundle.yaml` only names "
        "the host of the capture folder. Log timestamps are the machine's local time, UTC."
    )
    lines = [
        f"# {title}",
        "",
        summary.strip(),
        "",
        "## How it was made",
        "",
        made,
        "",
        how.strip(),
        "",
        f"Expected findings: {expected}",
        "",
    ]
    if window is not None:
        lines += [f"Incident window (UTC): {window[0]:%Y-%m-%dT%H:%M:%S}..{window[1]:%Y-%m-%dT%H:%M:%S}", ""]
    lines += ["## What happened when (UTC, from the scenario script)", ""]
    lines += [f"- {t:%H:%M:%S.%f}"[:-3] + f" {what}" for t, what in s.timeline]
    lines += ["", "## Lines a detector should find", ""]
    missing = []
    for ev in evidence:
        hits = grep_bundle(s.out, ev)
        if not hits:
            missing.append(ev.what)
            continue
        hosts = sorted({h.host for h in hits})
        head = (
            f"**{ev.what}**: {len(hits)} line(s) matching `{ev.pattern}` in `{ev.file}` on {', '.join(hosts)}; "
            f"the first {min(per_kind, len(hits))}:"
        )
        lines += [head, "", "```"]
        lines += [f"{h.host}/{h.file}:{h.line}: {h.text[:400]}" for h in hits[:per_kind]]
        lines += ["```", ""]
    if notes:
        lines += ["## Notes", "", notes.strip(), ""]
    path = s.out / "PROVENANCE.md"
    path.write_text("\n".join(lines) + "\n")
    if missing:
        raise LabError(f"the scenario did not produce the evidence it is about: {', '.join(missing)} (see {path})")
    return path


@dataclass(frozen=True)
class LineEvidence:
    """Lines a detector should find in a scenario bundle: files matching ``glob`` (relative to
    the bundle) whose lines contain ``text``."""

    what: str
    glob: str
    text: str


_TS = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d{3}")


def evidence_table(bundle: str | Path, items: list[LineEvidence]) -> str:
    """A markdown table saying, per :class:`LineEvidence`, how many lines match, in which files, the
    first and last time on them and the first such line (cut at 220 characters)."""
    bundle = Path(bundle)
    rows = ["| what | file | text | lines | first | last | first line |", "|---|---|---|---|---|---|---|"]
    for ev in items:
        hits: list[tuple[str, str]] = []
        files = sorted(f for f in bundle.glob(ev.glob) if f.is_file())
        for f in files:
            raw = f.read_bytes()
            data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            hits += [
                (f.relative_to(bundle).as_posix(), ln)
                for ln in data.decode("utf-8", "replace").splitlines()
                if ev.text in ln
            ]
        times = [m.group(0) for _, ln in hits if (m := _TS.search(ln))]
        names = ", ".join(sorted({n for n, _ in hits})) or ev.glob
        first = hits[0][1][:220].replace("|", "\\|") if hits else ""
        rows.append(
            f"| {ev.what} | `{names}` | `{ev.text}` | {len(hits)} | {min(times, default='')} | "
            f"{max(times, default='')} | `{first}` |"
        )
    return "\n".join(rows) + "\n"


def write_client_provenance(bundle: str | Path, title: str, script: str, body: str, items: list[LineEvidence]) -> Path:
    """Write ``PROVENANCE.md`` for a scenario bundle: how it was made (``body``, markdown) and the
    evidence table counted from the bundle's own files (:func:`evidence_table`)."""
    bundle = Path(bundle)
    # client logs can carry tracebacks naming this checkout or its virtualenv: neutral paths too
    scrub_paths(bundle, [Path(__file__).resolve().parents[2], sys.prefix])  # the checkout, the venv
    text = (
        f"# {bundle.name}: {title}\n\n"
        f"Real data from a real Apache Kafka 3.9.1 broker (KRaft, single node, Java 17) run by the kit's lab on "
        f"127.0.0.1 with kafka-python {_kafka_python_version()} clients, produced on {time.strftime('%Y-%m-%d')} by "
        f"`.venv/bin/python lab/scenarios/{script} sample_data/{bundle.name}`. Regenerate with the same command "
        f"(timestamps, ports and ids will differ). Nothing was edited by hand; the lab's work-folder path is "
        f"replaced by `{NEUTRAL_ROOT}` (`kitlib.lab.scrub_paths`) and `bundle.yaml` only names the hosts of "
        f"the folders that are not brokers.\n\n{body.strip()}\n\n"
        f"## Evidence a detector should find\n\nCounted from the files of this bundle when it was written "
        f"(times are UTC).\n\n{evidence_table(bundle, items)}"
    )
    path = bundle / "PROVENANCE.md"
    path.write_text(text)
    return path


def _kafka_python_version() -> str:
    import kafka

    return kafka.__version__
