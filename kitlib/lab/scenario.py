"""The frame every lab scenario runs in: it remembers the processes and JmxTools a scenario
starts, stops them whatever happens, and ends a successful run the same way each time (finish
the JmxTools, take a live capture, copy the logs into one folder per host, stop everything,
replace this machine's paths, write bundle.yaml).

Example (the shape of lab/scenarios/*.py):
    >>> from kitlib import lab
    >>> with lab.Scenario("sample_data/healthy") as s:            # doctest: +SKIP
    ...     b = s.broker("healthy-broker")
    ...     s.jmxtool(b, lab.BROKER_MBEANS, s.out / "broker-1" / "jmx-broker.csv")
    ...     ...                                                     # drive the broker
    ...     s.finish(logs={"broker-1": b}, live=b)
"""

from __future__ import annotations

import gzip
import platform
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from . import (
    KAFKA_VERSION,
    LabError,
    Proc,
    collect_logs,
    finish_jmxtool,
    run_jmxtool,
    scrub_paths,
    start_broker,
    start_connect,
    stop,
    write_manifest,
)
from .cluster import Cluster, start_cluster, stop_cluster


class Scenario:
    """A context manager around one scenario run writing the bundle ``out``."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.procs: list[Proc] = []
        self.clusters: list[Cluster] = []
        self.jmx: list[tuple[subprocess.Popen, Path]] = []
        self.timeline: list[tuple[datetime, str]] = []
        self.started = datetime.now(UTC)

    def mark(self, what: str) -> None:
        """Note what the scenario does now (UTC), for the timeline in PROVENANCE.md."""
        self.timeline.append((datetime.now(UTC), what))

    def __enter__(self) -> Self:
        self.out.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    def broker(self, *args, **kwargs) -> Proc:
        """:func:`kitlib.lab.start_broker`, stopped when the scenario ends."""
        b = start_broker(*args, **kwargs)
        self.procs.append(b)
        return b

    def connect(self, *args, **kwargs) -> Proc:
        """:func:`kitlib.lab.start_connect`, stopped when the scenario ends."""
        c = start_connect(*args, **kwargs)
        self.procs.append(c)
        return c

    def cluster(self, *args, **kwargs) -> Cluster:
        """:func:`kitlib.lab.start_cluster`, stopped when the scenario ends."""
        c = start_cluster(*args, **kwargs)
        self.clusters.append(c)
        return c

    def jmxtool(
        self, proc: Proc, object_names: list[str], out_csv: str | Path, interval_ms: int = 1000, **kwargs
    ) -> subprocess.Popen:
        """Start JmxTool on ``proc`` into ``out_csv`` (its folder is created); it is finished by
        :meth:`finish` unless the scenario finishes it earlier with :func:`kitlib.lab.finish_jmxtool`."""
        out_csv = Path(out_csv)
        out_csv.parent.mkdir(parents=True, exist_ok=True)
        p = run_jmxtool(proc, object_names, out_csv, interval_ms=interval_ms, wait=False, **kwargs)
        assert isinstance(p, subprocess.Popen)  # wait=False: the tool is still running
        self.jmx.append((p, out_csv))
        return p

    def finish(
        self,
        logs: dict[str, Proc | tuple[Proc, tuple[str, ...]]],
        live: Proc | Cluster | None = None,
        scrub: tuple[str | Path, ...] | list[str | Path] = (),
        hosts: dict[str, str] | None = None,
    ) -> Path:
        """End a successful run: finish the JmxTools still running, capture ``live`` (a broker or
        cluster) into ``live/``, copy each host's logs (``{"broker-1": proc}`` or ``{"broker-1":
        (proc, ("server.log",))}``), stop every process, replace this machine's paths (the work
        folders' parents, the jars folder and ``scrub``) and write bundle.yaml (``hosts`` maps
        extra folders to a host name). Returns the bundle folder."""
        for p, csv in self.jmx:
            if not getattr(p, "_kit_done", False):
                finish_jmxtool(p, csv)
        if live is not None:
            from kitlib import capture

            capture.capture(live.bootstrap, self.out / "live")
        for host, spec in logs.items():
            proc, names = spec if isinstance(spec, tuple) else (spec, None)
            collect_logs(proc, self.out / host, names=names)
        works = [Path(p.work).parent for p in self.procs] + [c.work.parent for c in self.clusters]
        self.stop_all()
        scrub_paths(self.out, [*scrub, *works])
        write_manifest(self.out, **(hosts or {}))
        return self.out

    def stop_all(self) -> None:
        """Stop every JmxTool, process and cluster this scenario started (safe to call twice)."""
        for p, csv in self.jmx:
            if not getattr(p, "_kit_done", False):
                finish_jmxtool(p, csv)
        for proc in reversed(self.procs):
            if proc.alive():
                stop(proc)
        for c in self.clusters:
            stop_cluster(c)


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
) -> Path:
    """Write PROVENANCE.md of a finished cluster scenario bundle: what it is, how it was made
    (Kafka version, Java, the command), the timeline of :meth:`Scenario.mark`, and for every
    :class:`Evidence` the first lines that match it (host, file, line number). Raises
    :class:`LabError` when one kind of evidence is missing: the scenario did not produce the
    incident it is about."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False).stderr.splitlines()
    made = (
        f"Real data from real Apache Kafka {KAFKA_VERSION} nodes (KRaft) run by the kit's lab on 127.0.0.1 "
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
        "## What happened when (UTC, from the scenario script)",
        "",
    ]
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
