"""``kitlib ingest`` and ``kitlib summary``: parse a bundle into tables, say what a bundle holds."""

from __future__ import annotations

import argparse
import json

from kitlib.cli.common import NO_CACHE_HELP, TZ_HELP


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
    p.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p.set_defaults(func=_cmd_summary)


def _cmd_ingest(args) -> int:
    import gc

    gc.disable()  # nothing the imports below make is garbage: no collector passes over them
    from kitlib.bundle import ingest
    from kitlib.ingestion.guard import exit_on_sigterm
    from kitlib.ingestion.memory import lean_allocator
    from kitlib.summary import summary_text

    lean_allocator()  # (what the imports made is frozen: the collector's passes leave it alone)
    gc.enable()
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
        b = load_bundle(path, tz=args.tz, progress=False if args.json else None, cache=False if args.no_cache else None)
        print(json.dumps(b.summary.to_dict(), indent=2, default=str) if args.json else summary_text(b.summary))
    return 0
