"""A multi-node KRaft cluster for the lab: N nodes on 127.0.0.1, each a combined broker and
controller (``process.roles=broker,controller``), all of them voters of the controller quorum.

Combined nodes keep a three-node cluster at three JVMs, which two CPU cores can carry, and
still give a real three-voter Raft quorum: killing the active controller elects a new one and
moves partition leadership at once, as on a small production cluster. Each node writes the
stock log files (server.log, controller.log, state-change.log, log-cleaner.log,
kafka-request.log, kafka-authorizer.log) and kafkaServer-gc.log, has JMX on loopback, and can be
paused, killed and restarted.

Example:
    >>> from kitlib import lab
    >>> c = lab.start_cluster(3)                    # doctest: +SKIP
    >>> c.bootstrap                                 # doctest: +SKIP
    '127.0.0.1:40123,127.0.0.1:40125,127.0.0.1:40127'
    >>> lab.stop_cluster(c)                         # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .broker import READY, format_storage, launch, log_size, new_cluster_id, prepare_node
from .errors import LabError
from .folders import fresh_work, work_root
from .jars import classpath
from .jmx import enable_jmx
from .processes import (
    Proc,
    disown,
    free_port,
    kill,
    log_errors,
    log_tail,
    run,
    running,
    save_state,
    stop,
    text_past,
    wait_for_line,
)

# what every cluster node gets: internal topics replicated three ways, acks=all needs two in sync
CLUSTER_SETTINGS = {
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
    "num.partitions": 3,
}


@dataclass
class Cluster:
    """A running lab cluster: its nodes (node ids 1..N, in order) and cluster id."""

    name: str
    cluster_id: str
    nodes: list[Proc]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def work(self) -> Path:
        return Path(self.nodes[0].work).parent

    def node(self, node_id: int) -> Proc:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise LabError(f"cluster {self.name} has no node {node_id}")


def start_cluster(
    n: int = 3,
    name: str = "cluster",
    work: str | Path | None = None,
    settings: dict | None = None,
    node_settings: dict[int, dict] | None = None,
    request_log: str = "INFO",
    heap: str = "512m",
    node_heap: dict[int, str] | None = None,
    jmx: bool = True,
    timeout: float = 120,
    fresh: bool = True,
) -> Cluster:
    """Format and start an ``n``-node KRaft cluster (each node broker + controller, all voters)
    and return once every node has logged "Kafka Server started".

    ``settings`` go into every node's server.properties after :data:`CLUSTER_SETTINGS`;
    ``node_settings`` / ``node_heap`` give one node (by node id) more settings or another heap.
    Node ``i`` lives in ``<work>/broker-i`` (``work`` defaults to ``work_root()/name``)."""
    if n < 1:
        raise LabError("a cluster needs at least one node")
    work = Path(work) if work else work_root() / name
    if fresh:
        fresh_work(work)
    ids = list(range(1, n + 1))
    ports = {i: (free_port(), free_port()) for i in ids}
    voters = ",".join(f"{i}@127.0.0.1:{ports[i][1]}" for i in ids)
    nodes = []
    for i in ids:
        conf = dict(CLUSTER_SETTINGS)
        if n < 3:  # fewer nodes than the replication factor: internal topics must still be creatable
            conf.update({k: min(int(v), n) for k, v in conf.items() if "replication.factor" in k})
            conf.update({"transaction.state.log.min.isr": 1, "min.insync.replicas": 1})
        conf.update(settings or {})
        conf.update((node_settings or {}).get(i, {}))
        nwork = work / f"broker-{i}"
        logs, _ = prepare_node(nwork, f"broker-{i}", i, ports[i][0], ports[i][1], voters, conf, fresh=True)
        nodes.append(
            Proc(
                "broker",
                f"{name}/broker-{i}",
                str(nwork),
                0,
                ports[i][0],
                0,
                ports[i][1],
                str(logs),
                {"cluster": name},
                node_id=i,
            )
        )
    cluster = Cluster(name, new_cluster_id(), nodes)
    format_storage([Path(b.work) for b in nodes], cluster.cluster_id)
    procs = {b.node_id: launch(b, request_log, (node_heap or {}).get(b.node_id, heap), gc_log=True) for b in nodes}
    try:
        for b in nodes:
            p = procs[b.node_id]
            wait_for_line(
                Path(b.logs) / "server.log",
                READY,
                p,
                p.pid,
                timeout,
                f"cluster node {b.name}",
                Path(b.work) / "broker.out",
            )
            if jmx:
                b.jmx_port = enable_jmx(b.pid)
            save_state(b)
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: Cluster, grace: float = 20.0) -> None:
    """Stop every node and forget them. All nodes get SIGTERM at once (a paused one is resumed
    first), so they shut down together while the quorum still stands; SIGKILL after ``grace``."""
    live = [b for b in cluster.nodes if b.pid and b.alive()]
    for b in live:
        resume(b)
        try:
            os.killpg(b.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError:
            os.kill(b.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for b in live:
        while time.monotonic() < deadline and b.alive():
            try:
                os.waitpid(b.pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if b.alive():
            kill(b.pid, grace=0)
    for b in cluster.nodes:
        disown(b.pid)
        state = Path(b.work) / "lab.json"
        if state.exists():
            state.unlink()


def stop_recorded(name: str | None = None) -> Iterator[Proc | Cluster]:
    """Stop the lab processes recorded under the work root: all of them, or the one process or
    cluster called ``name``. A cluster's nodes stop together (:func:`stop_cluster`), after the
    lone processes, while their quorum stands. Yields each process or cluster once stopped."""
    clusters: dict[str, list[Proc]] = {}
    for p in running():
        if name not in (None, p.name, p.extra.get("cluster")):
            continue
        if p.extra.get("cluster"):
            clusters.setdefault(p.extra["cluster"], []).append(p)
            continue
        stop(p)
        yield p
    for cluster_name, nodes in clusters.items():
        cluster = Cluster(cluster_name, "", nodes)
        stop_cluster(cluster)
        yield cluster


def pause(node: Proc) -> None:
    """Freeze a node (SIGSTOP to its JVM): it answers nothing, as in a long GC or a hung disk."""
    os.kill(node.pid, signal.SIGSTOP)


def resume(node: Proc) -> None:
    """Let a paused node run again (SIGCONT)."""
    try:
        os.kill(node.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def kill_node(node: Proc) -> None:
    """SIGKILL a node's JVM (no clean shutdown, as in a crash or an OOM kill) and reap it."""
    disown(node.pid)
    try:
        os.kill(node.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(node.pid, os.WNOHANG)
            if done:
                return
        except ChildProcessError:
            if not node.alive():
                return
        time.sleep(0.1)
    raise LabError(f"node {node.name} (pid {node.pid}) did not die after SIGKILL")


def restart_node(node: Proc, timeout: float = 120, jmx: bool = True) -> Proc:
    """Start a stopped or killed node again on its existing data and config (same ports); returns
    once it has logged "Kafka Server started" anew."""
    if node.alive():
        raise LabError(f"node {node.name} is still running (pid {node.pid})")
    after = log_size(node)
    x = node.extra
    p = launch(node, x.get("request_log", "INFO"), x.get("heap", "512m"), x.get("gc_log", True))
    wait_for_line(
        Path(node.logs) / "server.log",
        READY,
        p,
        p.pid,
        timeout,
        f"node {node.name} (restart)",
        Path(node.work) / "broker.out",
        after=after,
    )
    if jmx:
        node.jmx_port = enable_jmx(p.pid)
    save_state(node)
    return node


def active_controller(cluster: Cluster, timeout: float = 60) -> Proc:
    """The node that is the quorum's leader (active controller) now, as the metadata quorum tool
    reports it (``kafka-metadata-quorum describe --status``)."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        live = [b for b in cluster.nodes if b.alive()]
        if not live:
            raise LabError(f"no node of cluster {cluster.name} is running")
        cmd = [
            "java",
            "-Xmx128m",
            "-cp",
            classpath(),
            "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-server",
            ",".join(b.bootstrap for b in live),
            "describe",
            "--status",
        ]
        try:
            r = run(cmd, timeout=max(5.0, deadline - time.monotonic()), text=True)
            last = r.stdout + r.stderr
            m = re.search(r"^LeaderId:\s+(\d+)", r.stdout, re.MULTILINE)
            if r.returncode == 0 and m:
                leader = cluster.node(int(m.group(1)))
                if leader.alive():
                    return leader
        except subprocess.TimeoutExpired:
            last = "the metadata quorum tool did not answer in time"
        time.sleep(1)
    raise LabError(
        f"no active controller found in cluster {cluster.name} after {timeout:.0f} s:\n{last[-2000:]}\n"
        + "".join(log_errors(Path(b.logs) / "server.log") for b in cluster.nodes)
    )


def wait_for_log(
    node: Proc, text: str | re.Pattern, timeout: float = 60, after: int = 0, log: str = "server.log"
) -> str:
    """Wait until a node's ``log`` has a line matching ``text`` (a substring or a compiled
    pattern) past byte ``after``; returns that line. Raises :class:`LabError` with the log's
    tail on timeout."""
    path = Path(node.logs) / log
    deadline = time.monotonic() + timeout
    since = time.time()
    while time.monotonic() < deadline:
        for line in text_past(path, after, since).splitlines():
            if text.search(line) if isinstance(text, re.Pattern) else text in line:
                return line
        time.sleep(0.25)
    raise LabError(
        f"node {node.name}: no line with {text!r} in {log} after {timeout:.0f} s.\n{log_errors(path)}"
        f"last lines:\n{log_tail(path, 20)}"
    )


def log_offset(node: Proc, log: str = "server.log") -> int:
    """The current size of one of a node's logs (pass it as ``after`` to :func:`wait_for_log`)."""
    path = Path(node.logs) / log
    return path.stat().st_size if path.is_file() else 0


def wait_for_full_isr(cluster: Cluster, topic: str, timeout: float = 60) -> None:
    """Wait until every partition of ``topic`` has all its replicas in sync (a new topic's
    followers need a moment to start fetching, more on a busy machine)."""
    from kafka.admin import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        deadline = time.monotonic() + timeout
        behind: list = []
        while time.monotonic() < deadline:
            (desc,) = a.describe_topics([topic])
            parts = desc.get("partitions") or []
            behind = [p["partition_index"] for p in parts if sorted(p["isr_nodes"]) != sorted(p["replica_nodes"])]
            if parts and not behind:
                return
            time.sleep(0.5)
        raise LabError(f"topic {topic}: partitions {behind} still had replicas out of sync after {timeout:.0f} s")
    finally:
        a.close()
