"""The lab's processes: a started JVM (broker or Connect worker) as :class:`Proc`, its java
command line, waiting for its ready line (never without a timeout), stopping it, the state file
that lets ``kitlib lab status`` find it again, and free ports on 127.0.0.1.

Every process the lab starts goes through :func:`popen` (or :func:`run`) and is *owned* by the
Python process that started it: it is stopped when that process exits (``atexit``), when it is
sent SIGTERM or SIGHUP (the handler stops them, then lets the signal end the process as before),
on Ctrl-C (``KeyboardInterrupt`` unwinds ``lab.Scenario``, and exit runs the ``atexit`` hook),
and when it dies without a chance to clean up (SIGKILL, an OOM kill, a crash): a small watcher
process, started with the first owned process in a session of its own, holds the read end of a
pipe from its parent and stops whatever is still owned once that pipe reaches end of file.

Why a watcher and not ``prctl(PR_SET_PDEATHSIG)`` in a ``preexec_fn``: the death signal is sent
when the *thread* that started the child ends, not the process (a broker started from a worker
thread would die with that thread); it is not inherited across ``fork``, so a JVM that a shell
script (``mvn``, ``kafka-run-class.sh`` without ``exec``) starts as its own child would still be
orphaned, while the watcher signals the whole process group; it cannot be taken back, whereas
``kitlib lab start`` must leave its broker running (:func:`release`); and ``preexec_fn`` runs
Python between ``fork`` and ``exec``, which is unsafe beside the client threads of a scenario.
Each owned pid is kept with its start time (``/proc/<pid>/stat``), so a pid reused by an
unrelated process is never signalled."""

from __future__ import annotations

import atexit
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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


# how long before a wait began its ``after`` offset may have been taken (a rolled piece last
# written before that holds nothing past the offset)
ROLL_SLACK_S = 120.0


def rolled_pieces(log: Path) -> list[Path]:
    """The pieces log4j's hourly roll made of ``log`` (``server.log.2026-11-29-22``), oldest first."""
    return sorted(p for p in log.parent.glob(log.name + ".*") if p.is_file())


def whole_log(log: Path) -> str:
    """The text of ``log`` with the pieces log4j rolled of it before, oldest first ("" if none)."""
    out = []
    for p in [*rolled_pieces(log), log]:
        try:
            out.append(p.read_text(errors="replace"))
        except OSError:
            pass
    return "".join(out)


def text_past(log: Path, after: int, since: float) -> str:
    """What ``log`` got past byte ``after``, an offset taken when a wait began (at ``since``, epoch
    seconds), also when log4j rolled it meanwhile: the piece rolled since, from ``after`` on, then
    the new file whole. Without a roll, a file smaller than ``after`` (written anew) is read whole."""

    def read(path: Path, start: int) -> str:
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size >= start:
                    f.seek(start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    rolled = [p for p in rolled_pieces(log) if p.stat().st_mtime >= since - ROLL_SLACK_S]
    return "".join(read(p, after) for p in rolled) + read(log, 0 if rolled else after)


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
    since = time.time()
    while time.monotonic() < deadline:
        content = text_past(log, after, since)
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
    """Stop ``pid`` and its process group: SIGTERM, SIGKILL after ``grace`` seconds; reaped if it
    is a child of this process. It is no longer owned (see :func:`own`) afterwards."""
    try:
        _kill(pid, grace)
    finally:
        disown(pid)


def _kill(pid: int, grace: float) -> None:
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
    state = Path(p.work) / "lab.json"
    state.write_text(json.dumps(asdict(p), indent=2))
    if p.pid in _OWNED:
        _STATE[p.pid] = state


def running(root: Path | None = None) -> list[Proc]:
    """Lab processes recorded under ``root`` (default :func:`work_root`; cluster nodes one level
    deeper), alive or not."""
    root = Path(root) if root else work_root()
    out = []
    for f in sorted([*root.glob("*/lab.json"), *root.glob("*/*/lab.json")]):
        out.append(Proc(**json.loads(f.read_text())))
    return out


def start_detached(cmd: list[str], out: str | Path | None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start ``cmd`` in a session of its own with stdout and stderr to ``out`` (or nowhere);
    owned (:func:`own`) by this process."""
    if out is None:
        return popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    with open(out, "wb") as fh:  # the child keeps its own copy of the descriptor
        return popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


def popen(cmd: list[str], session: bool = True, **kw: Any) -> subprocess.Popen:
    """``subprocess.Popen`` for every process the lab starts: in a session (and process group) of
    its own unless ``session=False`` (then in this one's, where a Ctrl-C reaches it too), and
    owned by this process (:func:`own`), so it is stopped when this process ends."""
    _start_watcher()  # before the child: it must not run one moment unwatched
    p = subprocess.Popen(cmd, start_new_session=session, **kw)
    own(p.pid, group=session)
    return p


def run(cmd: list[str], timeout: float | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, stdin=DEVNULL)`` for a short command of the lab
    (a tool, ``jcmd``), owned while it runs; killed, and :class:`subprocess.TimeoutExpired`
    raised, after ``timeout`` seconds, as ``subprocess.run`` does."""
    p = popen(cmd, session=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, **kw)
    try:
        with p:
            try:
                out, err = p.communicate(timeout=timeout)
            except BaseException:
                p.kill()
                p.wait()
                raise
    finally:
        disown(p.pid)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


# --- ownership: every process the lab starts ends with the Python process that started it ---

STOP_GRACE = 5.0  # seconds an owned process gets after SIGTERM when its owner ends, then SIGKILL

# pid -> (start time in clock ticks since boot or None where /proc is missing, leads its own group)
_OWNED: dict[int, tuple[int | None, bool]] = {}
_STATE: dict[int, Path] = {}  # pid -> its lab.json, removed when the owner stops it
_WATCH: dict[str, int] = {}  # "fd": write end of the watcher's pipe, "pid": the watcher
_WATCH_LOCK = threading.Lock()
_PREVIOUS: dict[int, object] = {}  # signal -> the handler in place before ours
_HOOKED: list[bool] = []

# The watcher: reads one JSON line per change ({"own": pid, "start": t, "group": bool} or
# {"drop": pid}) until end of file, which comes when every copy of the write end is closed, i.e.
# when its parent has exited, however it died. Then it stops what is still owned: SIGCONT and
# SIGTERM to each (to its process group when it leads one), SIGKILL to those alive after the grace.
# Standard library only, run with ``python -I -S``: it starts in a few hundredths of a second.
_WATCHER_CODE = r"""
import json, os, signal, sys, time
grace = float(sys.argv[1])
owned = {}
for line in sys.stdin.buffer:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "own" in m:
        owned[m["own"]] = (m["start"], m["group"])
    else:
        owned.pop(m.get("drop"), None)
def started(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(") ", 1)[1].split()
        if rest[0] == "Z" and len(os.listdir("/proc/%d/task" % pid)) <= 1:
            return -1
    except (OSError, IndexError):
        return -1
    return int(rest[19])
def alive(pid, start):
    if start is None:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False
    return start != -1 and started(pid) == start
def send(sig, pid, group):
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except OSError:
        pass
for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
    live = {p: v for p, v in owned.items() if alive(p, v[0])}
    for p, (start, group) in live.items():
        send(signal.SIGCONT, p, group)
        send(sig, p, group)
    end = time.monotonic() + wait
    while live and time.monotonic() < end:
        time.sleep(0.1)
        live = {p: v for p, v in live.items() if alive(p, v[0])}
    if not live:
        break
"""


def _started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, field 22 of /proc/<pid>/stat); -1 when it
    is gone or a zombie, ``None`` where there is no /proc to tell. A JVM's first thread can be a
    zombie while its other threads still shut down, holding its ports: it counts as running."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(") ", 1)[1].split()
        if rest[0] == "Z" and len(os.listdir(f"/proc/{pid}/task")) <= 1:
            return -1
    except FileNotFoundError:
        return None if not os.path.isdir("/proc/self") else -1
    except (OSError, IndexError):
        return -1
    return int(rest[19])


def _alive(pid: int, start: int | None) -> bool:
    """Whether the owned process ``pid`` that started at ``start`` still runs (not a zombie, and
    not another process that got its pid since)."""
    if start is None:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return start != -1 and _started(pid) == start


def _tell(message: dict) -> None:
    fd = _WATCH.get("fd")
    if fd is None:
        return
    try:
        os.write(fd, (json.dumps(message) + "\n").encode())
    except OSError:  # the watcher is gone: the signal and exit hooks still stop what is owned
        pass


def _start_watcher() -> None:
    with _WATCH_LOCK:
        if "fd" not in _WATCH:
            _spawn_watcher()


def _spawn_watcher() -> None:
    r, w = os.pipe()  # both ends non-inheritable: no other child keeps the write end open
    try:
        p = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHER_CODE, str(STOP_GRACE)],
            stdin=r,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",  # holds no folder of the lab busy
            start_new_session=True,  # a Ctrl-C or `timeout`'s signal to the group does not reach it
        )
    except OSError:
        os.close(w)
        return
    finally:
        os.close(r)
    p.returncode = 0  # never waited for: it outlives its parent by design (no ResourceWarning)
    os.set_blocking(w, False)  # a stalled watcher never blocks the lab: the hooks still stop all
    _WATCH.update(fd=w, pid=p.pid)


def _hook() -> None:
    """Register the exit hook once, and the SIGTERM/SIGHUP handlers as soon as this runs in the
    main thread (only it may set them). A signal that is ignored stays ignored."""
    if not _HOOKED:
        atexit.register(stop_owned)
        _HOOKED.append(True)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None or sig in _PREVIOUS:
            continue
        prev = signal.getsignal(sig)
        if prev is signal.SIG_IGN or prev is None:  # ignored, or set outside Python: left alone
            continue
        _PREVIOUS[sig] = prev
        signal.signal(sig, _on_signal)


def _on_signal(signum: int, frame) -> None:
    """Stop every owned process, then do what the signal did before: call the earlier handler,
    or end this process by the signal itself (its exit status is unchanged)."""
    stop_owned()
    prev = _PREVIOUS.get(signum, signal.SIG_DFL)
    if callable(prev):
        prev(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _forget_in_child() -> None:
    """A fork (without exec) of the owner owns nothing, and must not hold the watcher's pipe."""
    _OWNED.clear()
    _STATE.clear()
    fd = _WATCH.pop("fd", None)
    _WATCH.pop("pid", None)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def own(pid: int, group: bool = True) -> None:
    """Have ``pid`` stopped when this process ends (``group``: it leads its own process group,
    which is signalled as a whole)."""
    _start_watcher()
    _hook()
    start = _started(pid)
    if start == -1:  # ended already
        return
    _OWNED[pid] = (start, group)
    _tell({"own": pid, "start": start, "group": group})


def disown(pid: int) -> None:
    """Forget ``pid``: it is stopped already, or is to outlive this process."""
    if _OWNED.pop(pid, None) is not None:
        _tell({"drop": pid})
    _STATE.pop(pid, None)


def owned() -> list[int]:
    """The pids of the processes this process started and still owns."""
    return list(_OWNED)


def release(*started: Any) -> None:
    """Let lab processes (a :class:`Proc`, or a cluster: anything with ``nodes``) outlive this
    process, as ``kitlib lab start`` does; ``kitlib lab stop`` stops them later."""
    for item in started:
        for p in getattr(item, "nodes", None) or [item]:
            disown(p.pid)


def stop_owned(grace: float = STOP_GRACE) -> list[int]:
    """Stop every process this process still owns, all at once: SIGCONT and SIGTERM (to each
    one's process group), SIGKILL to those still alive after ``grace`` seconds; their lab.json
    files go too. Returns the pids that were still running. Run on exit and on SIGTERM/SIGHUP."""
    live = {pid: v for pid, v in list(_OWNED.items()) if _alive(pid, v[0])}
    were = list(live)
    for pid in were:
        state = _STATE.get(pid)
        if state is not None:
            state.unlink(missing_ok=True)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid, (_, group) in live.items():
            for s in (signal.SIGCONT, sig):  # a paused process must run again to act on SIGTERM
                try:
                    if group:
                        os.killpg(pid, s)
                    else:
                        os.kill(pid, s)
                except OSError:
                    pass
        deadline = time.monotonic() + wait
        while True:
            for pid in list(live):
                try:  # reap our own children, so that they do not linger as zombies
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                if not _alive(pid, live[pid][0]):
                    del live[pid]
            if not live or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        if not live:
            break
    for pid in list(_OWNED):
        disown(pid)
    return were
