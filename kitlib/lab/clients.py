"""The client side of the lab scenarios: applications built on kafka-python that log to their own
file the way a Python service does, run as separate processes so one can be killed mid-work,
waits on what they do, and a consumer-lag history taken by ``kitlib capture --every`` beside them.

Client log layout (Python ``logging``, times in UTC)::

    2026-11-23 11:52:07,118 WARNING kafka.coordinator [kafka-coordinator-heartbeat-thread | orders] Heartbeat ...

Example:
    >>> with client_log("clients/app.log"):            # doctest: +SKIP
    ...     run_the_application()
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from .errors import LabError
from .processes import Proc, disown, popen, start_detached, whole_log

CLIENT_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"


@contextmanager
def client_log(path: str | Path, level: int | str = logging.INFO, debug: tuple[str, ...] = ()):
    """Send the ``kafka`` loggers (kafka-python) and the root logger's records to ``path`` for
    the duration of the block, in :data:`CLIENT_LOG_FORMAT` with UTC times. Loggers named in
    ``debug`` are raised to DEBUG."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    fmt = logging.Formatter(CLIENT_LOG_FORMAT)
    fmt.converter = time.gmtime
    handler.setFormatter(fmt)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(level)
    raised = [(logging.getLogger(n), logging.getLogger(n).level) for n in debug]
    for lg, _ in raised:
        lg.setLevel(logging.DEBUG)
    try:
        yield logging.getLogger("app")
    finally:
        for lg, lvl in raised:
            lg.setLevel(lvl)
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()


def spawn(script: str | Path, *args: str, out: str | Path | None = None) -> subprocess.Popen:
    """Run ``script`` (a scenario file) with this Python in a process group of its own, e.g. in
    its ``--worker`` mode; stdout/stderr go to ``out`` (or are dropped)."""
    return start_detached([sys.executable, str(script), *args], out, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_for(predicate, timeout: float, what: str, every: float = 0.5):
    """Poll ``predicate()`` until it returns something truthy (returned); :class:`LabError`
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(every)
    raise LabError(f"timed out after {timeout:.0f} s waiting for {what}")


def log_has(proc: Proc, text: str, name: str = "server.log") -> bool:
    """Whether a lab process's log file ``name``, or a piece log4j rolled of it, contains ``text`` yet."""
    return text in whole_log(Path(proc.logs) / name)


def start_lag_history(
    broker: Proc,
    out: str | Path,
    every: float,
    count: int | None = None,
    groups: tuple[str, ...] = (),
    timeout: float = 120,
) -> subprocess.Popen:
    """Run ``kitlib capture --every`` against ``broker`` in a process of its own (its kafka-python
    logging stays out of the application's log), writing into ``out``; returns once the process
    has opened its file (on a busy machine starting Python can take many seconds). Stop it with
    :func:`stop_lag_history` (Ctrl-C, which keeps every finished snapshot)."""
    args = ["capture", "--bootstrap", broker.bootstrap, "--out", str(out), "--every", str(every)]
    if count:
        args += ["--count", str(count)]
    for g in groups:
        args += ["--group", g]
    before = set(Path(out).glob("lag-*.jsonl"))
    p = popen(
        [sys.executable, "-c", "import sys; from kitlib.cli import main; sys.exit(main(sys.argv[1:]))", *args],
        session=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for(
            lambda: set(Path(out).glob("lag-*.jsonl")) - before or p.poll() is not None,
            timeout,
            "kitlib capture --every to start",
        )
    except LabError:
        p.kill()
        p.communicate()
        raise
    if p.poll() is not None:
        raise LabError(f"kitlib capture --every exited ({p.returncode}): {p.communicate()[1][-2000:]}")
    p._kit_out = Path(out)  # type: ignore[attr-defined]
    p._kit_before = before  # type: ignore[attr-defined]
    return p


def stop_lag_history(p: subprocess.Popen, timeout: float = 60) -> Path:
    """Interrupt a :func:`start_lag_history` capture as Ctrl-C would and return its file. If it
    has not stopped after ``timeout`` seconds (a snapshot stuck on a starved broker) it is killed;
    the file then still holds every snapshot finished before (each is written whole and flushed),
    and a torn last line, if any, is cut off."""
    import signal

    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    disown(p.pid)
    files = sorted(set(p._kit_out.glob("lag-*.jsonl")) - p._kit_before)  # type: ignore[attr-defined]
    if not files:
        raise LabError(f"kitlib capture --every wrote nothing ({p.returncode}): {err[-2000:]}")
    path = files[-1]
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])
    return path
