"""A Kafka Connect standalone worker in the lab, against a lab broker, running the connectors
it is given; it writes connect.log in Connect's own layout."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .folders import fresh_work, render, work_root
from .jmx import enable_jmx
from .processes import Proc, free_port, jvm_command, popen, save_state, wait_for_line

CONNECT_READY = "Kafka Connect started"


def start_connect(
    broker: Proc,
    connectors: list[dict],
    name: str = "connect-1",
    work: str | Path | None = None,
    worker: dict | None = None,
    flush_interval_ms: int = 10000,
    flush_timeout_ms: int = 5000,
    task_log_level: str = "INFO",
    jmx: bool = True,
    heap: str = "512m",
    timeout: float = 90,
    fresh: bool = True,
) -> Proc:
    """Start a Connect standalone worker against ``broker`` running ``connectors`` (each a dict
    of connector properties with at least ``name`` and ``connector.class``)."""
    work = Path(work) if work else work_root() / name
    if fresh:
        fresh_work(work)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rest = free_port()
    props = render(
        "connect-standalone.properties",
        bootstrap=broker.bootstrap,
        rest_port=rest,
        work=work,
        flush_interval_ms=flush_interval_ms,
        flush_timeout_ms=flush_timeout_ms,
    )
    for k, v in (worker or {}).items():
        props += f"{k}={v}\n"
    (work / "worker.properties").write_text(props)
    files = []
    for conn in connectors:
        f = work / f"{conn['name']}.properties"
        f.write_text("".join(f"{k}={v}\n" for k, v in conn.items()))
        files.append(str(f))
    out = work / "connect.out"
    cmd = jvm_command(work, logs, "connect-log4j.properties", heap, {"kit.connect.task.log.level": task_log_level})
    cmd += ["org.apache.kafka.connect.cli.ConnectStandalone", str(work / "worker.properties"), *files]
    with open(out, "wb") as fh:
        p = popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    c = Proc("connect", name, str(work), p.pid, rest, 0, 0, str(logs), {"broker": broker.name})
    wait_for_line(logs / "connect.log", CONNECT_READY, p, p.pid, timeout, f"Connect worker {name}", out)
    if jmx:
        c.jmx_port = enable_jmx(p.pid)
    save_state(c)
    return c
