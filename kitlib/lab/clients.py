"""The client side of the lab scenarios: applications built on kafka-python that log to their own
file the way a Python service does, run as separate processes so one can be killed mid-work,
and Kafka's own command-line tool classes (kafka-configs, ProducerPerformance) from the lab jars.

Client log layout (Python ``logging``, times in UTC)::

    2026-11-23 11:52:07,118 WARNING kafka.coordinator [kafka-coordinator-heartbeat-thread | orders] Heartbeat ...

Example:
    >>> with client_log("clients/app.log"):            # doctest: +SKIP
    ...     run_the_application()
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kitlib import lab

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
    return _popen([sys.executable, str(script), *args], out, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _popen(cmd: list[str], out: str | Path | None, env: dict[str, str] | None = None) -> subprocess.Popen:
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


def _java_cmd(main_class: str, args: tuple[str, ...], log4j: str | Path | None) -> list[str]:
    cmd = ["java", "-Xmx256m", "-cp", lab._classpath()]
    if log4j:
        cmd.append(f"-Dlog4j.configuration={Path(log4j).resolve().as_uri()}")
    return [*cmd, main_class, *args]


def java_tool(
    main_class: str, *args: str, timeout: float = 120, log4j: str | Path | None = None
) -> subprocess.CompletedProcess:
    """Run one of Kafka's tool classes (``kafka.admin.ConfigCommand``, ...) with the lab's jars
    to the end; :class:`lab.LabError` on a non-zero exit. ``log4j`` is a log4j 1 properties file
    for the tool's own client logging."""
    r = subprocess.run(_java_cmd(main_class, args, log4j), capture_output=True, text=True, timeout=timeout, check=False)
    if r.returncode != 0:
        raise lab.LabError(f"{main_class} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    return r


def start_java_tool(
    main_class: str, *args: str, log4j: str | Path | None = None, out: str | Path | None = None
) -> subprocess.Popen:
    """Start one of Kafka's tool classes (``org.apache.kafka.tools.ProducerPerformance``, ...) in
    a session of its own, its output to ``out``."""
    return _popen(_java_cmd(main_class, args, log4j), out)


def set_client_quota(broker: lab.Proc, client_id: str, **rates: int) -> str:
    """Set client-id quotas with kafka-configs (``kafka.admin.ConfigCommand``), e.g.
    ``producer_byte_rate=51200``; returns the tool's output."""
    conf = ",".join(f"{k}={v}" for k, v in rates.items())
    r = java_tool(
        "kafka.admin.ConfigCommand",
        "--bootstrap-server",
        broker.bootstrap,
        "--alter",
        "--add-config",
        conf,
        "--entity-type",
        "clients",
        "--entity-name",
        client_id,
    )
    return r.stdout.strip()


def wait_for(predicate, timeout: float, what: str, every: float = 0.5):
    """Poll ``predicate()`` until it returns something truthy (returned); :class:`lab.LabError`
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(every)
    raise lab.LabError(f"timed out after {timeout:.0f} s waiting for {what}")


def log_has(proc: lab.Proc, text: str, name: str = "server.log") -> bool:
    """Whether a lab process's log file ``name`` contains ``text`` yet."""
    f = Path(proc.logs) / name
    return f.is_file() and text in f.read_text(errors="replace")


def start_lag_history(
    broker: lab.Proc,
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
    p = subprocess.Popen(
        [sys.executable, "-c", "import sys; from kitlib.cli import main; sys.exit(main(sys.argv[1:]))", *args],
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
    except lab.LabError:
        p.kill()
        p.communicate()
        raise
    if p.poll() is not None:
        raise lab.LabError(f"kitlib capture --every exited ({p.returncode}): {p.communicate()[1][-2000:]}")
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
    files = sorted(set(p._kit_out.glob("lag-*.jsonl")) - p._kit_before)  # type: ignore[attr-defined]
    if not files:
        raise lab.LabError(f"kitlib capture --every wrote nothing ({p.returncode}): {err[-2000:]}")
    path = files[-1]
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        path.write_bytes(data[: data.rfind(b"\n") + 1])
    return path


@dataclass(frozen=True)
class Evidence:
    """Lines a detector should find in a scenario bundle: files matching ``glob`` (relative to
    the bundle) whose lines contain ``text``."""

    what: str
    glob: str
    text: str


_TS = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}[,.]\d{3}")


def evidence_table(bundle: str | Path, items: list[Evidence]) -> str:
    """A markdown table saying, per :class:`Evidence`, how many lines match, in which files, the
    first and last time on them and the first such line (cut at 220 characters)."""
    import gzip

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


def write_provenance(bundle: str | Path, title: str, script: str, body: str, items: list[Evidence]) -> Path:
    """Write ``PROVENANCE.md`` for a scenario bundle: how it was made (``body``, markdown) and the
    evidence table counted from the bundle's own files (:func:`evidence_table`)."""
    bundle = Path(bundle)
    # client logs can carry tracebacks naming this checkout or its virtualenv: neutral paths too
    lab.scrub_paths(bundle, [Path(__file__).resolve().parents[2], sys.prefix])  # the checkout, the venv
    text = (
        f"# {bundle.name}: {title}\n\n"
        f"Real data from a real Apache Kafka 3.9.1 broker (KRaft, single node, Java 17) run by the kit's lab on "
        f"127.0.0.1 with kafka-python {_kafka_python_version()} clients, produced on {time.strftime('%Y-%m-%d')} by "
        f"`.venv/bin/python lab/scenarios/{script} sample_data/{bundle.name}`. Regenerate with the same command "
        f"(timestamps, ports and ids will differ). Nothing was edited by hand; the lab's work-folder path is "
        f"replaced by `{lab.NEUTRAL_ROOT}` (`kitlib.lab.scrub_paths`) and `bundle.yaml` only names the hosts of "
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
