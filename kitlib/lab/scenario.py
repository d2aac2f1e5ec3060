"""The frame every lab scenario runs in: it remembers the processes, JmxTools and client
processes a scenario starts, stops them whatever happens, and ends a successful run the same way
each time (finish the JmxTools, take a live capture, end the client processes, copy the logs
into one folder per host, stop everything, replace this machine's paths, write bundle.yaml). A
synthetic bundle, written by the script with no lab process, ends with ``finish(manifest=False)``
and is left as written.

Example (the shape of lab/scenarios/*.py):
    >>> from kitlib import lab
    >>> with lab.Scenario("sample_data/healthy") as s:            # doctest: +SKIP
    ...     b = s.broker("healthy-broker")
    ...     s.jmxtool(b, lab.BROKER_MBEANS, s.out / "broker-1" / "jmx-broker.csv")
    ...     ...                                                     # drive the broker
    ...     s.finish(logs={"broker-1": b}, live=b)
"""

from __future__ import annotations

import os
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from .broker import start_broker
from .bundles import collect_logs, scrub_paths, write_manifest
from .cluster import Cluster, start_cluster, stop_cluster
from .connect import start_connect
from .jmx import finish_jmxtool, run_jmxtool
from .processes import Proc, disown, stop


class Scenario:
    """A context manager around one scenario run writing the bundle ``out``."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        self.procs: list[Proc] = []
        self.clusters: list[Cluster] = []
        self.jmx: list[tuple[subprocess.Popen, Path]] = []
        self.children: list[subprocess.Popen] = []
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

    def track(self, child: subprocess.Popen) -> subprocess.Popen:
        """Have a client process the scenario started (a worker in a session of its own, a lag
        history, one of Kafka's tools) killed when the scenario ends, if it still runs then."""
        self.children.append(child)
        return child

    def stop_one(self, proc: Proc, host: str) -> None:
        """Stop one process before the others, its logs first copied into the bundle's folder
        ``host``: the processes still running then log its going, as they do in the bundle."""
        collect_logs(proc, self.out / host)
        stop(proc)

    def finish(
        self,
        logs: dict[str, Proc | tuple[Proc, tuple[str, ...]]] | None = None,
        live: Proc | Cluster | None = None,
        scrub: tuple[str | Path, ...] | list[str | Path] = (),
        hosts: dict[str, str] | None = None,
        manifest: bool = True,
    ) -> Path:
        """End a successful run: finish the JmxTools still running, capture ``live`` (a broker or
        cluster) into ``live/``, kill the client processes still running, copy each host's logs
        (``{"broker-1": proc}`` or ``{"broker-1": (proc, ("server.log",))}``), stop every process,
        replace this machine's paths (the work folders' parents, the jars folder and ``scrub``) and
        write bundle.yaml (``hosts`` maps extra folders to a host name). With ``manifest=False``
        (a synthetic bundle) no path is replaced and no bundle.yaml written. Returns the bundle
        folder."""
        for p, csv in self.jmx:
            if not getattr(p, "_kit_done", False):
                finish_jmxtool(p, csv)
        if live is not None:
            from kitlib import capture

            capture.capture(live.bootstrap, self.out / "live")
        self._kill_children()
        for host, spec in (logs or {}).items():
            proc, names = spec if isinstance(spec, tuple) else (spec, None)
            collect_logs(proc, self.out / host, names=names)
        works = [Path(p.work).parent for p in self.procs] + [c.work.parent for c in self.clusters]
        self.stop_all()
        if manifest:
            scrub_paths(self.out, [*scrub, *works])
            write_manifest(self.out, **(hosts or {}))
        return self.out

    def _kill_children(self) -> None:
        for child in self.children:
            if child.poll() is None:  # a reaped one is left alone: its pid may be reused by now
                try:
                    if os.getpgid(child.pid) == child.pid:  # a session of its own: its children go too
                        os.killpg(child.pid, signal.SIGKILL)
                    else:
                        child.kill()
                except ProcessLookupError:
                    pass
            child.wait()
            disown(child.pid)

    def stop_all(self) -> None:
        """Stop every client process, JmxTool, process and cluster this scenario started (safe to
        call twice)."""
        self._kill_children()
        for p, csv in self.jmx:
            if not getattr(p, "_kit_done", False):
                finish_jmxtool(p, csv)
        for proc in reversed(self.procs):
            if proc.alive():
                stop(proc)
        for c in self.clusters:
            stop_cluster(c)
