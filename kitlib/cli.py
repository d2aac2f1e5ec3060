"""The ``kitlib`` command: a thin layer over the library. Every subcommand has ``--help``.

Subcommands live next to the code they call: a module in :data:`COMMAND_MODULES` exposes
``register_cli(subparsers)`` which adds its parser(s) and sets ``func`` on them.

Example:
    $ kitlib ingest sample_data/down-conversion --out /tmp/dc.kit
    $ kitlib summary /tmp/dc.kit
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

COMMAND_MODULES = [
    "kitlib.cli",  # ingest, summary, triage, investigations, tables, formats
    "kitlib.report",  # report
    "kitlib.lab",  # lab start|stop|status|jmx
    "kitlib.capture",  # capture, probe
]


def register_cli(sub) -> None:
    p = sub.add_parser(
        "ingest",
        help="parse a bundle into Parquet tables + summary.json",
        description="Parse every file of BUNDLE (a folder or one file) and write one Parquet "
        "file per table plus summary.json into OUT. Input files are never modified.",
    )
    p.add_argument("bundle", help="bundle folder (or a single log file)")
    p.add_argument(
        "--out",
        required=True,
        help="output folder: new, empty, or one a kitlib command wrote (replaced whole when the ingest is "
        "complete); a folder holding anything else is refused, as is one inside or around the bundle",
    )
    p.add_argument("--tz", default=None, help=TZ_HELP)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="parse on a local Dask cluster of N worker processes (127.0.0.1); tables are written "
        "as one Parquet dataset per table, partitioned by host",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="tcp://HOST:PORT",
        help="parse on this existing Dask cluster instead (its workers must see BUNDLE and OUT at "
        "the same paths: the same machine or a shared filesystem)",
    )
    p.add_argument(
        "--split-mb",
        type=int,
        default=256,
        metavar="MB",
        help="with --workers/--scheduler: parse plain logs bigger than this in parts (default 256)",
    )
    p.add_argument(
        "--derive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="build the tables derived from log records (commit attempts, cleaner runs, group and "
        "partition timelines, ...) during the ingest and write them (default with --workers/--scheduler: "
        "each host's are built on the workers); --no-derive leaves them to be built from the stored events "
        "by the first reader (triage, a notebook, kitlib.load), which keeps the ingest to parsing alone "
        "(default in one process) and caches them in the output",
    )
    p.set_defaults(func=_cmd_ingest)

    p = sub.add_parser(
        "summary",
        help="load a bundle (or ingest output) and print what it holds",
        description="Print files, formats, hosts, time span, rows per table and unparsed lines.",
    )
    p.add_argument("bundle", nargs="+", help="bundle folder(s) or ingest output folder(s)")
    p.add_argument("--tz", default=None, help=TZ_HELP)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser(
        "triage",
        help="run every detector over a bundle and print the findings",
        description="Run every detector over BUNDLE (a folder of files, or an ingest output) and print the "
        "findings ranked by severity, each with its id, summary, key numbers, recommended change, the "
        "notebook to open and evidence (file:line). Exit status: 0 nothing found, 1 findings, 2 could "
        "not run.",
    )
    p.add_argument("bundle", help="bundle folder, single log file, or `kitlib ingest` output folder")
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of findings (id, severity, summary, numbers, recommendation, evidence, "
        "notebook, investigation)",
    )
    p.add_argument("--tz", default=None, help=TZ_HELP)
    p.set_defaults(func=_cmd_triage)

    p = sub.add_parser(
        "investigations",
        help="list the investigations with their notebooks, tables and finding ids",
        description="List every registered investigation: its name, the question it answers, its "
        "notebook, the tables it reads and the finding ids its detectors may emit.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_investigations)

    p = sub.add_parser(
        "tables",
        help="print the documented schema of every table",
        description="Print every table kitlib produces with its columns, as Markdown.",
    )
    p.set_defaults(func=_cmd_tables)

    p = sub.add_parser(
        "formats",
        help="list the input formats kitlib recognises",
        description="List every registered input format and the tables it fills.",
    )
    p.set_defaults(func=_cmd_formats)


TZ_HELP = "timezone the logs were written in (default: the bundle manifest's tz, else UTC)"


def _cmd_ingest(args) -> int:
    from kitlib.bundle import ingest
    from kitlib.guard import exit_on_sigterm
    from kitlib.ingestion.pipeline import lean_allocator
    from kitlib.summary import summary_text

    lean_allocator()
    exit_on_sigterm()  # a terminated ingest removes its temporary folder on the way out

    progress = False if args.no_progress else None
    if args.workers or args.scheduler:
        from kitlib.ingestion.distributed import ingest_on_dask

        s = ingest_on_dask(
            args.bundle,
            args.out,
            tz=args.tz,
            workers=args.workers,
            scheduler=args.scheduler,
            split_bytes=args.split_mb * 1024 * 1024,
            progress=progress,
            derive=args.derive is not False,
        )
    else:
        s = ingest(args.bundle, args.out, tz=args.tz, progress=progress, derive=bool(args.derive))
    print(summary_text(s))
    print(f"tables written to {args.out}")
    return 1 if s.errors and not s.rows else 0


def _cmd_summary(args) -> int:
    from kitlib.bundle import load_bundle
    from kitlib.summary import summary_text

    for path in args.bundle:
        b = load_bundle(path, tz=args.tz)
        print(json.dumps(b.summary.to_dict(), indent=2, default=str) if args.json else summary_text(b.summary))
    return 0


def _cmd_triage(args) -> int:
    from kitlib.bundle import load_bundle
    from kitlib.findings import triage, triage_text
    from kitlib.summary import summary_text

    b = load_bundle(args.bundle, tz=args.tz)
    if b.summary.files == 0 or not any(v for k, v in b.summary.rows.items() if k != "unparsed"):
        what = "no files" if b.summary.files == 0 else "no file the kit recognises"
        raise ValueError(
            f"{args.bundle}: {what} (nothing to triage); point it at the folder of logs, JMX dumps "
            "and captures pulled from the brokers (`kitlib formats` lists what is read)"
        )
    result = triage(b)
    if args.json:
        json.dump([f.to_dict() for f in result.findings], sys.stdout, indent=2)
        print()
    else:
        from kitlib.gaps import gaps_text

        head = summary_text(b.summary)
        gaps = gaps_text(b)
        print(triage_text(result, head + ("\n\n" + gaps if gaps else "")))
    return EXIT_FINDINGS if result.findings else EXIT_CLEAN


def _cmd_investigations(args) -> int:
    from kitlib import registry

    invs = registry.investigations()
    if args.json:
        json.dump([i.to_dict() for i in invs], sys.stdout, indent=2)
        print()
        return 0
    for i in invs:
        print(
            f"{i.name}: {i.title}\n  question  {i.question}\n  notebook  {i.notebook}\n"
            f"  tables    {', '.join(i.tables)}\n  findings  {', '.join(i.finding_ids) or '-'}"
        )
    return 0


def _cmd_tables(args) -> int:
    from kitlib import tables

    print(tables.markdown(), end="")
    return 0


def _cmd_formats(args) -> int:
    from kitlib import formats, registry

    registry.load()
    for f in sorted(formats.FORMATS.values(), key=lambda f: (f.priority, f.name)):
        print(f"{f.name:12} -> {', '.join(f.tables):30} {f.doc}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kitlib",
        description="Kafka incident kit: turn a bundle of broker/Connect logs and JMX dumps into tables, "
        "findings and offline reports.",
    )
    parser.add_argument("--version", action="version", version="kitlib " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register_cli(sub)
    return parser


def _version() -> str:
    from kitlib import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Run one command. Everything it prints passes :func:`kitlib.terminal.visible` (control
    characters shown as escapes, secrets masked); a problem is one line on stderr and exit 2,
    never a traceback (``KITLIB_DEBUG=1`` shows it)."""
    from kitlib.terminal import VisibleStream

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(out), VisibleStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # --help, --version and usage errors exit here (0 or 2), no traceback
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        _check_tz(getattr(args, "tz", None))
        return int(args.func(args) or 0)
    except (FileNotFoundError, NotADirectoryError, PermissionError, ValueError) as e:
        print(f"kitlib {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if os.environ.get("KITLIB_DEBUG"):
            raise
        print(
            f"kitlib {args.command}: error: {type(e).__name__}: {e} (set KITLIB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 2


def _check_tz(tz) -> None:
    """A --tz that names no timezone is an error before anything is read."""
    if tz:
        from kitlib.sources import check_tz

        check_tz(tz, "--tz")


if __name__ == "__main__":
    sys.exit(main())
