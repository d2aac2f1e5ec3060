"""Kafka's own command-line tools (the classes behind the kafka-*.sh scripts: TopicCommand,
ConfigCommand, ProducerPerformance, ...) run with the lab's jars, to the end or in the background."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .errors import LabError
from .jars import classpath, tool_class
from .processes import Proc, run, start_detached

TOOLS_LOG4J = (
    "log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
)


def run_tool(main_class: str, args: list[str], timeout: float = 120, stderr: bool = True) -> str:
    """Run one of Kafka's command-line tools (by main class) with the lab's jars and return what
    it printed (stdout, then stderr unless ``stderr=False``), as a user running it with ``2>&1``
    would capture it. Tool logging goes to stderr at ERROR, like ``config/tools-log4j.properties``.

    Example:
        >>> run_tool("org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", b.bootstrap, "--list"])  # doctest: +SKIP
        '__consumer_offsets\\norders\\n'
    """
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write(TOOLS_LOG4J)
    try:
        cmd = [
            "java",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration={Path(f.name).as_uri()}",
            "-cp",
            classpath(),
            tool_class(main_class),
            *args,
        ]
        try:
            r = run(cmd, timeout=timeout, text=True)
        except subprocess.TimeoutExpired:
            raise LabError(f"{main_class} ran longer than {timeout:.0f} s") from None
    finally:
        os.unlink(f.name)
    return r.stdout + (r.stderr if stderr else "")


def _java_command(main_class: str, args: tuple[str, ...], log4j: str | Path | None) -> list[str]:
    """The java command line of one of Kafka's tool classes, with its own log4j file if given."""
    cmd = ["java", "-Xmx256m", "-cp", classpath()]
    if log4j:
        cmd.append(f"-Dlog4j.configuration={Path(log4j).resolve().as_uri()}")
    return [*cmd, tool_class(main_class), *args]


def java_tool(
    main_class: str, *args: str, timeout: float = 120, log4j: str | Path | None = None
) -> subprocess.CompletedProcess:
    """Run one of Kafka's tool classes (``kafka.admin.ConfigCommand``, ...) with the lab's jars
    to the end; :class:`LabError` on a non-zero exit. ``log4j`` is a log4j 1 properties file
    for the tool's own client logging."""
    r = run(_java_command(main_class, args, log4j), timeout=timeout, text=True)
    if r.returncode != 0:
        raise LabError(f"{main_class} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-2000:]}")
    return r


def start_java_tool(
    main_class: str, *args: str, log4j: str | Path | None = None, out: str | Path | None = None
) -> subprocess.Popen:
    """Start one of Kafka's tool classes (``org.apache.kafka.tools.ProducerPerformance``, ...) in
    a session of its own, its output to ``out``."""
    return start_detached(_java_command(main_class, args, log4j), out)


def set_client_quota(broker: Proc, client_id: str, **rates: int) -> str:
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
