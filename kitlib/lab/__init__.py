"""The local Kafka lab: real Apache Kafka 3.9.1 brokers (KRaft; one node, or a cluster of
several with :func:`start_cluster`) and a Connect standalone worker, from Maven Central jars, on
127.0.0.1 only.

Nothing here points into a source checkout: the config templates and the Maven pom are package
data (``kitlib/lab/templates``). Jars are fetched once (``mvn dependency:copy-dependencies``)
into a user cache folder, ``$KITLIB_LAB_JARS`` or else
``$XDG_CACHE_HOME/kafka-incident-kit/jars-3.9.1`` (``~/.cache`` when unset). Each broker gets a
work folder holding its config, data and the log files a real installation writes (server.log,
controller.log, state-change.log, log-cleaner.log, kafka-request.log, kafka-authorizer.log,
kafkaServer-gc.log), under ``$KITLIB_LAB_WORK`` or else
``$XDG_STATE_HOME/kafka-incident-kit/lab`` (``~/.local/state`` when unset). Ports are chosen
free at start. JMX is opened with ``jcmd ManagementAgent.start`` bound to loopback (the
``-Dcom.sun.management`` flags would also open a random port on every interface). Every wait
has a timeout; a broker that does not come up raises :class:`LabError` with its last log lines.

The modules, one concern each: :mod:`~kitlib.lab.folders` (work folders, packaged templates),
:mod:`~kitlib.lab.jars` (fetching the jars, the class path), :mod:`~kitlib.lab.processes`
(starting, waiting on and stopping JVMs, each stopped with the Python process that started it
unless handed over with :func:`release`; ports), :mod:`~kitlib.lab.jmx`,
:mod:`~kitlib.lab.broker` (one broker and its config), :mod:`~kitlib.lab.connect`,
:mod:`~kitlib.lab.cluster`, :mod:`~kitlib.lab.tools` (Kafka's command-line tools),
:mod:`~kitlib.lab.bundles` (logs, scrubbed paths and bundle.yaml of a sample bundle),
:mod:`~kitlib.lab.provenance` (its PROVENANCE.md), :mod:`~kitlib.lab.load` and
:mod:`~kitlib.lab.clients` (what the clients of a scenario do), and :mod:`~kitlib.lab.scenario`
(the frame every scenario runs in). This module holds the names scenarios and tests use.

Example:
    >>> from kitlib import lab
    >>> b = lab.start_broker()                      # doctest: +SKIP
    >>> b.bootstrap                                 # doctest: +SKIP
    '127.0.0.1:40123'
    >>> lab.stop(b)                                 # doctest: +SKIP
"""

from .broker import READY, start_broker
from .bundles import NEUTRAL_ROOT, collect_logs, scrub_paths, write_manifest
from .cluster import (
    Cluster,
    active_controller,
    kill_node,
    log_offset,
    pause,
    restart_node,
    resume,
    start_cluster,
    stop_cluster,
    stop_recorded,
    wait_for_full_isr,
    wait_for_log,
)
from .connect import start_connect
from .disk import record_df
from .errors import LabError
from .folders import APP_DIR, WORK_ENV, fresh_work, template, work_root
from .jars import (
    JARS_ENV,
    KAFKA4_VERSION,
    KAFKA_VERSION,
    VERSION_ENV,
    fetch_jars,
    jars_dir,
    kafka_major,
    kafka_version,
    tool_class,
    use_kafka,
)
from .jmx import BROKER_MBEANS, CLUSTER_MBEANS, enable_jmx, finish_jmxtool, run_jmxtool
from .load import LoadStats, ProduceLoad
from .processes import Proc, free_port, owned, release, running, stop, stop_owned, whole_log
from .provenance import (
    Evidence,
    Hit,
    LineEvidence,
    evidence_table,
    grep_bundle,
    write_client_provenance,
    write_provenance,
)
from .scenario import Scenario
from .tools import java_tool, run_tool, set_client_quota, start_java_tool

__all__ = [
    "APP_DIR",
    "BROKER_MBEANS",
    "CLUSTER_MBEANS",
    "JARS_ENV",
    "KAFKA4_VERSION",
    "KAFKA_VERSION",
    "NEUTRAL_ROOT",
    "READY",
    "VERSION_ENV",
    "WORK_ENV",
    "Cluster",
    "Evidence",
    "Hit",
    "LabError",
    "LineEvidence",
    "LoadStats",
    "Proc",
    "ProduceLoad",
    "Scenario",
    "active_controller",
    "collect_logs",
    "enable_jmx",
    "evidence_table",
    "fetch_jars",
    "finish_jmxtool",
    "free_port",
    "fresh_work",
    "grep_bundle",
    "java_tool",
    "jars_dir",
    "kafka_major",
    "kafka_version",
    "kill_node",
    "log_offset",
    "owned",
    "pause",
    "restart_node",
    "resume",
    "run_jmxtool",
    "record_df",
    "release",
    "run_tool",
    "running",
    "scrub_paths",
    "set_client_quota",
    "start_broker",
    "start_cluster",
    "start_connect",
    "start_java_tool",
    "stop",
    "stop_cluster",
    "stop_owned",
    "stop_recorded",
    "template",
    "tool_class",
    "use_kafka",
    "wait_for_full_isr",
    "wait_for_log",
    "whole_log",
    "work_root",
    "write_client_provenance",
    "write_manifest",
    "write_provenance",
]
