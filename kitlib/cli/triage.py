"""``kitlib triage``: run every detector over a bundle and print the findings."""

from __future__ import annotations

import json
import sys
import time

from kitlib.cli.common import EXIT_CLEAN, EXIT_FINDINGS, NO_CACHE_HELP, TZ_HELP


def register_cli(sub) -> None:
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
        "notebook, investigation, extent: the lines, hosts and time the finding rests on)",
    )
    p.add_argument("--tz", default=None, help=TZ_HELP)
    p.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p.set_defaults(func=_cmd_triage)


def _cmd_triage(args) -> int:
    from kitlib.ingestion import cache, memo

    t0 = time.perf_counter()
    # a big bundle new to the cache: the process that ingests it starts now, its imports beside
    # this one's (ended below when no ingest took it; it ends by itself when this process does)
    cache.warm_ingest(args.bundle, False if args.no_cache else None)
    # what an earlier triage of the same unchanged cached bundle printed, with the same kit and
    # arguments (kitlib.ingestion.memo): printed again without reading a table
    asked = None if args.no_cache else memo.request(args.bundle, _memo_args(args))
    kept = memo.lookup(asked) if asked is not None else None
    if kept is not None:
        cache.end_warm()
        kept.write(sys.stdout, time.perf_counter() - t0)
        return kept.exit
    try:
        from kitlib.bundle import load_bundle
        from kitlib.findings import triage, triage_text
        from kitlib.ingestion.memory import give_back_at_once, lean_allocator
        from kitlib.summary import summary_text

        # the command's own process reads the stored tables and runs the detectors: Arrow on
        # jemalloc there too (on the 1 GB mix's biggest detector, 0.3 s of the kernel's page faults less)
        lean_allocator()
        give_back_at_once()  # (a raw bundle big enough is ingested in a process of its own, without it)

        # a first run on a big bundle shows its progress on a terminal, never with --json; it
        # ingests in a process of its own, whose memory goes with it
        with cache.ingests_apart():
            b = load_bundle(
                args.bundle, tz=args.tz, progress=False if args.json else None, cache=False if args.no_cache else None
            )
    finally:
        cache.end_warm()
    nothing = b.summary.nothing_read()
    if nothing:
        raise ValueError(
            f"{args.bundle}: {nothing} (nothing to triage); point it at the folder of logs, JMX dumps "
            "and captures pulled from the brokers (`kitlib formats` lists what is read)"
        )
    # the detectors in two processes when there are two cores: the same findings, sooner
    result = triage(b, jobs=2)
    seconds, shown = None, args.json
    if args.json:
        from kitlib.terminal import visible

        # shown here as stdout would show it, and kept so in the memo (masked once, not again)
        printed = visible(json.dumps([f.to_dict() for f in result.findings], indent=2) + "\n")
        getattr(sys.stdout, "stream", sys.stdout).write(printed)
    else:
        from kitlib.gaps import gaps_text

        head = summary_text(b.summary)
        gaps = gaps_text(b)
        printed = triage_text(result, head + ("\n\n" + gaps if gaps else "")) + "\n"
        seconds = f"{b.summary.seconds:.2f}"
        sys.stdout.write(printed)
    code = EXIT_FINDINGS if result.findings else EXIT_CLEAN
    if asked is not None and not result.failed:
        memo.save(asked, b.store, printed, seconds, code, shown)
    return code


def _memo_args(args) -> dict:
    """Every argument of the command that can change what it prints (the bundle is keyed by its
    files)."""
    return {k: v for k, v in sorted(vars(args).items()) if k not in ("func", "bundle", "no_cache")}
