"""``kitlib capture`` and ``kitlib probe``: facts and measurements from a live cluster
(:mod:`kitlib.capture`)."""

from __future__ import annotations

import signal
import sys
import threading


def _client_kw(args) -> dict:
    kw = {}
    for name in (
        "security_protocol",
        "sasl_mechanism",
        "sasl_plain_username",
        "sasl_plain_password",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
    ):
        v = getattr(args, name, None)
        if v:
            kw[name] = v
    return kw


def _security_args(p) -> None:
    g = p.add_argument_group("security (passed to kafka-python, never written to the bundle)")
    g.add_argument("--security-protocol", help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    g.add_argument("--sasl-mechanism", help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, ...")
    g.add_argument("--sasl-plain-username")
    g.add_argument("--sasl-plain-password", help="better: leave empty and set it in the environment of a wrapper")
    g.add_argument("--ssl-cafile")
    g.add_argument("--ssl-certfile")
    g.add_argument("--ssl-keyfile")


def _capture():
    """The capture package, imported when a capture command runs (not to build the command line)."""
    import kitlib.capture

    return kitlib.capture


def _cmd_capture(args) -> int:
    from kitlib.capture import capture, capture_lag_series

    if args.every is None:
        if args.count is not None:
            print("kitlib capture: --count needs --every SECONDS", file=sys.stderr)
            return 2
        print(capture(args.bootstrap, args.out, args.groups, args.all_configs, **_client_kw(args)))
        return 0
    if args.every <= 0 or (args.count is not None and args.count < 1):
        print("kitlib capture: --every must be more than 0 seconds and --count at least 1", file=sys.stderr)
        return 2
    tty = sys.stderr.isatty()
    of = f"/{args.count}" if args.count else ""

    def progress(n: int, ts: str, rows: int, lag: int) -> None:
        if tty:
            print(
                f"\rsnapshot {n}{of} at {ts[11:19]} UTC: {rows} partitions, total lag {lag:,}   ",
                end="",
                file=sys.stderr,
                flush=True,
            )

    # Ctrl-C (and a service manager's SIGTERM) ends the series after the snapshot under way; a
    # second one stops at once, keeping the snapshots already written
    stopping = threading.Event()

    def stop(signum, frame):
        if stopping.is_set():
            raise KeyboardInterrupt
        stopping.set()
        if tty:
            print("\nstopping after this snapshot (Ctrl-C again to stop now)", file=sys.stderr)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    if tty:
        print(f"lag snapshot every {args.every:g} s{' until Ctrl-C' if not args.count else ''}", file=sys.stderr)
    got = capture_lag_series(
        args.bootstrap, args.out, args.every, args.count, args.groups, progress, stopping, **_client_kw(args)
    )
    if tty:
        print(file=sys.stderr)
    if got.interrupted:
        print(f"stopped after {got.snapshots} snapshots, all kept", file=sys.stderr)
    print(got.path)
    return 0


def register_cli(sub) -> None:
    p = sub.add_parser(
        "capture",
        help="capture configs, log-dir sizes, consumer lag and API versions from a cluster",
        description="Connect with kafka-python and write cluster facts into OUT (a bundle folder): "
        "broker/topic configs (secrets redacted), log-dir sizes per partition, consumer "
        "groups with committed offsets, end offsets and lag, and supported API versions. "
        "With --every, record a lag history instead: a consumer-lag snapshot every SECONDS "
        "(--count times, or until Ctrl-C, which keeps every finished snapshot) into "
        "OUT/lag-<time>.jsonl, the same JSON-lines format with one consumer_lag row per "
        "group and partition and snapshot, all rows of a snapshot stamped with its UTC time "
        "(ts): the file loads as one consumer_lag table.",
    )
    p.add_argument("--bootstrap", required=True, help="HOST:PORT of a broker")
    p.add_argument("--out", required=True, help="bundle folder to write into (e.g. incident/live)")
    p.add_argument("--group", action="append", dest="groups", help="only this consumer group (repeatable)")
    p.add_argument("--all-configs", action="store_true", help="include configs left at their defaults")
    p.add_argument(
        "--every",
        type=float,
        metavar="SECONDS",
        help="lag history: take a consumer-lag snapshot every SECONDS (only lag, no configs)",
    )
    p.add_argument(
        "--count", type=int, metavar="N", help="with --every: stop after N snapshots (default: until Ctrl-C)"
    )
    _security_args(p)
    p.set_defaults(func=_cmd_capture)

    p = sub.add_parser(
        "probe",
        help="measure consume throughput or codec trade-offs against a cluster",
        description="Active measurements written into a bundle folder.",
    )
    psub = p.add_subparsers(dest="probe", metavar="PROBE")
    c = psub.add_parser(
        "consume",
        help="consume a topic and record MB/s over time",
        description="Read TOPIC from the beginning with a client speaking --api-version (e.g. 0.9 makes "
        "a 3.x broker down-convert every fetch) and record MB/s per second.",
    )
    c.add_argument("--bootstrap", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--out", required=True, help="bundle folder to write into")
    c.add_argument(
        "--api-version", default=None, help="client protocol version to speak, e.g. 0.9 or 2.8 (default: negotiate)"
    )
    c.add_argument("--seconds", type=float, default=20, help="stop after this long (default 20)")
    c.add_argument("--mb", type=float, default=None, help="stop after this many MB")
    _security_args(c)
    c.set_defaults(
        func=lambda a: (
            print(
                _capture().probe_consume(
                    a.bootstrap,
                    a.topic,
                    a.out,
                    tuple(int(x) for x in a.api_version.split(".")) if a.api_version else None,
                    a.seconds,
                    a.mb,
                    **_client_kw(a),
                )
            )
            or 0
        )
    )
    k = psub.add_parser(
        "codecs",
        help="produce a sample with each codec; record MB/s, ratio and bytes on disk",
        description="Produce the records of --sample (one per line) once per codec (none, gzip, snappy, "
        "lz4, zstd), each to a new topic, and record producer MB/s and bytes on disk.",
    )
    k.add_argument("--bootstrap", required=True)
    k.add_argument("--sample", required=True, help="file with one record value per line (your own payloads)")
    k.add_argument("--out", required=True, help="bundle folder to write into")
    k.add_argument("--repeat", type=int, default=1, help="send the sample this many times (default 1)")
    _security_args(k)
    k.set_defaults(
        func=lambda a: (
            print(_capture().probe_codecs(a.bootstrap, a.sample, a.out, repeat=a.repeat, **_client_kw(a))) or 0
        )
    )
    p.set_defaults(func=lambda a: p.print_help() or 2)
