"""One lab broker: its work folder and server.properties (from the packaged template), its
storage formatted for KRaft, its JVM launched with the stock log files, and :func:`start_broker`
for a single node that is both broker and controller."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from .errors import LabError
from .folders import fresh_work, render, work_root
from .jars import classpath
from .jmx import enable_jmx
from .processes import Proc, disown, free_port, jvm_command, popen, save_state, wait_for_line

READY = "Kafka Server started"


def new_cluster_id() -> str:
    """A new random KRaft cluster id (a UUID, URL-safe base64, as ``kafka-storage random-uuid``)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def prepare_node(
    work: Path, name: str, node_id: int, port: int, cport: int, voters: str, settings: dict | None, fresh: bool
) -> tuple[Path, Path]:
    """Create a node's work folder and server.properties; returns (logs, data)."""
    if fresh:
        fresh_work(work)
    logs, data = work / "logs", work / "data"
    logs.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    props = render("server.properties", port=port, controller_port=cport, data_dir=data, node_id=node_id, voters=voters)
    for k, v in (settings or {}).items():  # {port} and {controller_port} in a value name the chosen ports
        props += f"{k}={str(v).replace('{port}', str(port)).replace('{controller_port}', str(cport))}\n"
    (work / "server.properties").write_text(props)
    return logs, data


def format_storage(works: list[Path], cluster_id: str, timeout: float = 120) -> None:
    """Format the storage of every node (in parallel) with one cluster id."""
    cp = classpath()
    procs = [
        popen(
            [
                "java",
                "-cp",
                cp,
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={cluster_id}",
                "-c",
                str(w / "server.properties"),
                "--ignore-formatted",
            ],
            session=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in works
    ]
    failed = []
    for w, fp in zip(works, procs):
        try:
            out, _ = fp.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            fp.kill()
            fp.communicate()
            failed.append(f"{w.name}: formatting took more than {timeout:.0f} s")
            continue
        finally:
            disown(fp.pid)
        if fp.returncode != 0:
            failed.append(f"{w.name}:\n{out}")
    if failed:
        raise LabError("formatting storage failed:\n" + "\n".join(failed))


def launch(b: Proc, request_log: str, heap: str, gc_log: bool) -> subprocess.Popen:
    """Start the broker JVM of an already formatted node; sets ``b.pid``."""
    work, logs = Path(b.work), Path(b.logs)
    cmd = jvm_command(work, logs, "log4j.properties", heap, {"kit.request.log.level": request_log}, gc_log=gc_log)
    cmd += ["kafka.Kafka", str(work / "server.properties")]
    with open(work / "broker.out", "ab") as fh:
        p = popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work)
    b.pid = p.pid
    b.extra.update(request_log=request_log, heap=heap, gc_log=gc_log)
    return p


def log_size(b: Proc) -> int:
    """The current size of a node's server.log (a restart waits for its ready line past it)."""
    f = Path(b.logs) / "server.log"
    return f.stat().st_size if f.is_file() else 0


def start_broker(
    name: str = "broker-1",
    work: str | Path | None = None,
    settings: dict | None = None,
    request_log: str = "DEBUG",
    jmx: bool = True,
    heap: str = "512m",
    timeout: float = 90,
    fresh: bool = True,
    gc_log: bool = False,
    cluster_id: str | None = None,
) -> Proc:
    """Format storage and start a single-node broker (KRaft, broker and controller in one
    process); returns once "Kafka Server started" is logged.

    ``settings`` are appended to server.properties (e.g. ``{"log.cleaner.dedupe.buffer.size":
    1048577}``). ``request_log`` is the level of ``kafka.request.logger`` (DEBUG logs every
    request with its API version to kafka-request.log). ``gc_log`` writes kafkaServer-gc.log
    as kafka-run-class.sh does. ``{port}`` / ``{controller_port}`` in a setting's value are
    replaced by the ports chosen (to add a listener: ``{"listeners": "PLAINTEXT://127.0.0.1:{port},
    SASL_PLAINTEXT://127.0.0.1:40001,CONTROLLER://127.0.0.1:{controller_port}"}``); nodes of one
    cluster started one by one (a controller-only and a broker-only node) share ``cluster_id``."""
    work = Path(work) if work else work_root() / name
    port, cport = free_port(), free_port()
    logs, _ = prepare_node(work, name, 1, port, cport, f"1@127.0.0.1:{cport}", settings, fresh)
    format_storage([work], cluster_id or new_cluster_id())
    b = Proc("broker", name, str(work), 0, port, 0, cport, str(logs), node_id=1)
    p = launch(b, request_log, heap, gc_log)
    wait_for_line(logs / "server.log", READY, p, p.pid, timeout, f"broker {name}", work / "broker.out")
    if jmx:
        b.jmx_port = enable_jmx(p.pid)
    save_state(b)
    return b
