"""``kitlib changes``: the log statements that changed in a time window."""

from __future__ import annotations

import json
import sys

from kitlib.cli.common import EXIT_CLEAN, NO_CACHE_HELP, TZ_HELP


def register_cli(sub) -> None:
    p = sub.add_parser(
        "changes",
        help="what changed in a time window: log statements new, gone, or whose rate rose or fell",
        description="Compare a window of BUNDLE with a baseline (default: the rest of the bundle) by the Kafka log "
        "statement of each record (lines outside the catalogue by their pattern, variables masked): statements "
        "new in the window, gone from it, or whose share of the log rose or fell beyond chance (G test, "
        "alpha 0.01 with Bonferroni), overall and per host, with logger, level, counts, hosts, first and last "
        "time, the slot values that changed most and two example lines. Without --window, the window is the "
        "span where the WARN/ERROR rate departs most from the rest.",
    )
    p.add_argument("bundle", help="bundle folder, single log file, or `kitlib ingest` output folder")
    p.add_argument("--window", metavar="START..END", help="the window (ISO times, UTC unless a zone is given)")
    p.add_argument("--baseline", metavar="START..END", help="the baseline (default: every record outside the window)")
    p.add_argument("--top", type=int, default=20, help="changes listed (default: %(default)s)")
    p.add_argument(
        "--investigation",
        metavar="NAME",
        help="compare only the records of the loggers this investigation declares (kitlib investigations --json)",
    )
    p.add_argument(
        "--logger",
        action="append",
        metavar="NAME",
        help="compare only the records of this logger and the loggers under it (repeatable)",
    )
    p.add_argument(
        "--include-lifecycle",
        action="store_true",
        help="compare the records of nodes starting or stopping and of topics being created like the others "
        "(by default they are set aside and reported as context)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--tz", default=None, help=TZ_HELP)
    p.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p.set_defaults(func=_cmd_changes)


def _cmd_changes(args) -> int:
    from kitlib.bundle import load_bundle
    from kitlib.changes import changes, changes_text, parse_span

    window = parse_span(args.window) if args.window else None
    baseline = parse_span(args.baseline) if args.baseline else None
    b = load_bundle(
        args.bundle, tz=args.tz, progress=False if args.json else None, cache=False if args.no_cache else None
    )
    res = changes(
        b,
        window,
        baseline,
        top=args.top,
        loggers=args.logger,
        investigation=args.investigation,
        lifecycle=args.include_lifecycle,
    )
    if args.json:
        json.dump(res.to_dict(), sys.stdout, indent=1, default=str)
        print()
    else:
        print(changes_text(res, args.top))
    return EXIT_CLEAN
