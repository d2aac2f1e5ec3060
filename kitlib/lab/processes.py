"""The lab's processes: a started JVM (broker or Connect worker) as :class:`Proc`, its java
command line, waiting for its ready line (never without a timeout), stopping it, the state file
that lets ``kitlib lab status`` find it again, and free ports on 127.0.0.1."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import LabError
from .folders import template, work_root
from .jars import classpath

GC_LOG = "kafkaServer-gc.log"  # kafka-run-class.sh's GC log name for kafka.Kafka
# log lines after which a starting process will not become ready
FATAL_MARKERS = ("Fatal error during", "Exiting Kafka", "Stopping Kafka Connect", "Failed to start")


@dataclass
class Proc:
    """A running lab process (broker or Connect worker)."""

    kind: str
    name: str
    work: str
    pid: int
    port: int
    jmx_port: int = 0
    controller_port: int = 0
    logs: str = ""
    extra: dict = field(default_factory=dict)
    node_id: int = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def jmx_url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.jmx_port}/jmxrmi"

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        try:  # a zombie (exited, not reaped) is not alive
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().split(") ", 1)[1][:1] != "Z"
        except OSError:
            return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, never the same one twice in a process.

    It is taken below the kernel's ephemeral range (where outgoing connections get their local
    port): a port from that range can be taken by any client connecting somewhere between this
    check and the node binding it, and the node then dies with "Address already in use"."""
    low = _ephemeral_low()
    for _ in range(500):
        port = random.randrange(max(1024, low - 12000), low)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket() as s:  # that window is full: let the kernel choose
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_HANDED_OUT: set[int] = set()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux: ip_local_port_range; else 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def log_tail(path: Path, n: int = 40) -> str:
    """The last ``n`` lines of a log file (or a note that it was never written)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log written)"


def wait_for_line(
    log: Path,
    text: str,
    proc: subprocess.Popen | None,
    pid: int,
    timeout: float,
    what: str,
    stdout: Path,
    after: int = 0,
) -> None:
    """Wait until ``text`` appears in ``log`` (past byte ``after``: lines of an earlier run of
    the same process do not count), the process dies or logs a fatal line, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = ""
        if log.is_file():
            with open(log, "rb") as f:
                if os.fstat(f.fileno()).st_size >= after:  # smaller: rotated since, read it all
                    f.seek(after)
                content = f.read().decode(errors="replace")
        if text in content:
            return
        fatal = any(m in content for m in FATAL_MARKERS)
        if fatal or (proc is not None and proc.poll() is not None):
            kill(pid)
            why = f"exited with code {proc.returncode}" if proc is not None and proc.poll() is not None else "failed"
            raise LabError(
                f"{what} {why} before it was ready.\n{log_errors(log)}"
                f"last lines of {log.name}:\n{log_tail(log)}\n--- stdout/stderr:\n{log_tail(stdout, 20)}"
            )
        time.sleep(0.2)
    kill(pid)
    raise LabError(
        f"{what} was not ready after {timeout:.0f} s (waited for '{text}' in {log}).\n{log_errors(log)}"
        f"last lines of {log.name}:\n{log_tail(log)}\n--- stdout/stderr:\n{log_tail(stdout, 20)}"
    )


def log_errors(log: Path, n: int = 8) -> str:
    """The first ERROR/FATAL lines of a log (with the line that follows, often the cause)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    out = []
    for i, ln in enumerate(lines):
        if "] ERROR " in ln or "] FATAL " in ln:
            out.append(ln)
            if i + 1 < len(lines) and not lines[i + 1].startswith("["):
                out.append(lines[i + 1])
        if len(out) >= n:
            break
    return ("errors logged:\n" + "\n".join(out) + "\n") if out else ""


def kill(pid: int, grace: float = 15.0) -> None:
    try:  # a paused (SIGSTOP) process must run again to act on SIGTERM
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    return
            except ChildProcessError:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.1)


def jvm_command(
    work: Path, logs: Path, log4j: str, heap: str, props: dict[str, str], gc_log: bool = False
) -> list[str]:
    """The java command line of a lab process; the log4j template is copied into the work folder.
    ``gc_log`` turns on GC logging exactly as kafka-run-class.sh does for a broker."""
    (work / log4j).write_text(template(log4j))
    cmd = ["java", f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
    if gc_log:
        cmd.append(f"-Xlog:gc*:file={logs / GC_LOG}:time,tags:filecount=10,filesize=100M")
    cmd += [f"-Dlog4j.configuration={(work / log4j).as_uri()}", f"-Dkafka.logs.dir={logs}"]
    cmd += [f"-D{k}={v}" for k, v in props.items()]
    return cmd + ["-cp", classpath()]


def stop(proc: Proc) -> None:
    """Stop a lab process (SIGTERM, then SIGKILL after a grace period) and forget it."""
    kill(proc.pid)
    state = Path(proc.work) / "lab.json"
    if state.exists():
        state.unlink()


def save_state(p: Proc) -> None:
    """Record a started process in ``lab.json`` of its work folder (read back by :func:`running`)."""
    (Path(p.work) / "lab.json").write_text(json.dumps(asdict(p), indent=2))


def running(root: Path | None = None) -> list[Proc]:
    """Lab processes recorded under ``root`` (default :func:`work_root`; cluster nodes one level
    deeper), alive or not."""
    root = Path(root) if root else work_root()
    out = []
    for f in sorted([*root.glob("*/lab.json"), *root.glob("*/*/lab.json")]):
        out.append(Proc(**json.loads(f.read_text())))
    return out


def start_detached(cmd: list[str], out: str | Path | None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``cmd`` in a session of its own with stdout and stderr to ``out`` (or nowhere)."""
    if out is None:
        return subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    with open(out, "wb") as fh:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env
        )
