"""``kitlib lab``: start, stop or inspect the local Kafka lab (:mod:`kitlib.lab`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kitlib import lab


def register_cli(sub) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--jars",
        metavar="DIR",
        default=None,
        help=f"folder of the Kafka jars (default: ${lab.JARS_ENV}, else "
        f"$XDG_CACHE_HOME/{lab.APP_DIR}/jars-{lab.KAFKA_VERSION}, ~/.cache when unset)",
    )
    common.add_argument(
        "--kafka",
        metavar="VERSION",
        default=None,
        help=f"Kafka release to run (default: ${lab.VERSION_ENV}, else {lab.KAFKA_VERSION}; "
        f"4 stands for {lab.KAFKA4_VERSION}, a KRaft-only 4.x line with jars of its own)",
    )
    common.add_argument(
        "--work",
        metavar="DIR",
        default=None,
        help=f"folder of the lab's work folders (default: ${lab.WORK_ENV}, else "
        f"$XDG_STATE_HOME/{lab.APP_DIR}/lab, ~/.local/state when unset)",
    )
    p = sub.add_parser(
        "lab",
        help="start, stop or inspect the local Kafka lab (real brokers on 127.0.0.1)",
        description=f"Run real Apache Kafka {lab.KAFKA_VERSION} brokers (KRaft: one node, or a cluster of "
        "combined broker+controller nodes) from Maven Central jars on 127.0.0.1, for trying "
        "the kit's capture and probes. Needs Java 17+ and Maven. Jars are cached in a user "
        "cache folder, work folders (config, data, logs) in a user state folder.",
    )
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION")
    s = lsub.add_parser(
        "start",
        parents=[common],
        help="fetch jars if needed, format storage and start a broker or cluster",
        description="Start a broker in WORK/NAME (or, with --nodes N, a cluster of N nodes in "
        "WORK/NAME/broker-1..N) and print bootstrap address, JMX and log folder.",
    )
    s.add_argument(
        "--name",
        default=None,
        help="broker or cluster name, its work folder under WORK (default: broker-1, or cluster with --nodes)",
    )
    s.add_argument(
        "--nodes",
        type=int,
        default=1,
        metavar="N",
        help="start a KRaft cluster of N combined broker+controller nodes (default: 1, a single broker)",
    )
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra server.properties setting")
    s.add_argument("--request-log", default="DEBUG", help="level of kafka.request.logger (DEBUG logs every request)")
    s.set_defaults(func=_cmd_start)
    s = lsub.add_parser(
        "stop",
        parents=[common],
        help="stop lab processes",
        description="Stop one lab process or cluster (--name) or all of them.",
    )
    s.add_argument("--name", default=None, help="only this broker or cluster")
    s.set_defaults(func=_cmd_stop)
    s = lsub.add_parser(
        "status", parents=[common], help="list lab processes", description="List lab processes and whether they run."
    )
    s.set_defaults(func=_cmd_status)
    s = lsub.add_parser(
        "jars",
        parents=[common],
        help="fetch the Kafka jars from Maven Central (cached)",
        description="Download the lab's jars into the jars folder once and print where it is.",
    )
    s.set_defaults(func=_cmd_jars)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _use_dirs(args) -> None:
    """--jars/--work/--kafka act like the environment variables (child JVMs and helpers see them too)."""
    if getattr(args, "kafka", None):
        lab.use_kafka(args.kafka)
        lab.kafka_version()  # an unknown release is refused before anything starts
    if getattr(args, "jars", None):
        os.environ[lab.JARS_ENV] = str(Path(args.jars).expanduser().resolve())
    if getattr(args, "work", None):
        os.environ[lab.WORK_ENV] = str(Path(args.work).expanduser().resolve())


def _cmd_jars(args) -> int:
    _use_dirs(args)
    print(lab.fetch_jars())
    return 0


def _cmd_start(args) -> int:
    _use_dirs(args)
    settings = dict(kv.split("=", 1) for kv in args.set)
    if args.nodes > 1:
        c = lab.start_cluster(args.nodes, name=args.name or "cluster", settings=settings, request_log=args.request_log)
        lab.release(c)  # the nodes outlive this command, until `kitlib lab stop`
        print(f"cluster {c.name} ready: bootstrap {c.bootstrap}")
        for b in c.nodes:
            print(f"  node {b.node_id}: {b.bootstrap}, JMX {b.jmx_url}, logs in {b.logs}")
        return 0
    b = lab.start_broker(args.name or "broker-1", settings=settings, request_log=args.request_log)
    lab.release(b)
    print(f"{b.name} ready: bootstrap {b.bootstrap}, JMX {b.jmx_url}, logs in {b.logs}")
    return 0


def _cmd_stop(args) -> int:
    _use_dirs(args)
    for stopped in lab.stop_recorded(args.name):
        if isinstance(stopped, lab.Cluster):
            print(f"stopped cluster {stopped.name} (nodes {', '.join(str(n.node_id) for n in stopped.nodes)})")
        else:
            print(f"stopped {stopped.kind} {stopped.name} (pid {stopped.pid})")
    return 0


def _cmd_status(args) -> int:
    _use_dirs(args)
    procs = lab.running()
    if not procs:
        print(f"no lab process recorded under {lab.work_root()}")
    for p in procs:
        print(
            f"{p.kind:8} {p.name:18} pid {p.pid:<8} {'running' if p.alive() else 'not running'}  "
            f"port {p.port}  jmx {p.jmx_port or '-'}  logs {p.logs}"
        )
    return 0
