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

import subprocess
from pathlib import Path
from typing import Self

from . import (
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

    def __enter__(self) -> Self:
        self.out.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc) -> bool:
        self.stop_all()
        return False

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

    def jmxtool(self, proc: Proc, object_names: list[str], out_csv: str | Path, interval_ms: int = 1000,
                **kwargs) -> subprocess.Popen:
        """Start JmxTool on ``proc`` into ``out_csv`` (its folder is created); it is finished by
        :meth:`finish` unless the scenario finishes it earlier with :func:`kitlib.lab.finish_jmxtool`."""
        out_csv = Path(out_csv)
        out_csv.parent.mkdir(parents=True, exist_ok=True)
        p = run_jmxtool(proc, object_names, out_csv, interval_ms=interval_ms, wait=False, **kwargs)
        self.jmx.append((p, out_csv))
        return p

    def finish(self, logs: dict[str, Proc | tuple[Proc, tuple[str, ...]]], live: Proc | Cluster | None = None,
               scrub: list[str | Path] = (), hosts: dict[str, str] | None = None) -> Path:
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
        works = [Path(p.work).parent for p in self.procs] + [c.work for c in self.clusters]
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
