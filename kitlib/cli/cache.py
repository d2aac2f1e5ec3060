"""``kitlib cache``: list and clear the kit's cache of ingested bundles
(:mod:`kitlib.ingestion.cache`)."""

from __future__ import annotations

import json
import time

from kitlib.ingestion import cache


def register_cli(sub) -> None:
    p = sub.add_parser(
        "cache",
        help="list or clear the cache of ingested big bundles",
        description="A raw bundle of KITLIB_CACHE_MIN_MB MiB or more (default 128) is parsed once by "
        "`kitlib triage`, `kitlib report`, `kitlib summary`, kitlib.load_bundle and the notebooks into a "
        "store in the kit's cache, and the next run on the same unchanged bundle reads that store instead of "
        "parsing it again. An entry is keyed by the bundle's path and the path, size and modification time "
        "of each of its files (touch one and the next run writes a new entry), the time zone and the kit's "
        "version; the bundle itself is never written to. The cache is $KITLIB_CACHE_DIR, else "
        "$XDG_CACHE_HOME/kitlib, else ~/.cache/kitlib; all entries together are kept under "
        "KITLIB_CACHE_MAX_GB GiB (default 5) by removing those used longest ago. --no-cache on those "
        "commands (KITLIB_NO_CACHE=1 for the library and notebooks) reads bundles into memory instead. "
        "Without options, list the entries: key, size, age, last use and bundle. Only folders the kit "
        "wrote as entries (marked) are ever removed. Exit status: 0 done, 2 error.",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--clear",
        metavar="KEY_OR_BUNDLE",
        nargs="?",
        const="",
        default=None,
        help="remove one entry (its KEY, as listed) or every entry of a bundle (its path); "
        "`--clear --all` removes every entry",
    )
    p.add_argument("--all", action="store_true", help="with --clear: remove every entry")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_cache)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _ago(t: float) -> str:
    s = max(0.0, time.time() - t)
    if s < 120:
        return f"{s:.0f} s ago"
    if s < 7200:
        return f"{s / 60:.0f} min ago"
    if s < 172800:
        return f"{s / 3600:.0f} h ago"
    return f"{s / 86400:.0f} days ago"


def _cmd_cache(args) -> int:
    root = cache.cache_root()
    if args.clear is not None:
        if args.clear and args.all:
            raise ValueError("--clear takes a KEY or bundle, or --all, not both")
        if not args.clear and not args.all:
            raise ValueError("--clear needs a KEY or bundle path (as `kitlib cache` lists them), or --all")
        removed = cache.clear(args.clear or None)
        if args.json:
            print(json.dumps([e.to_dict() for e in removed], indent=2))
        else:
            freed = sum(e.bytes for e in removed)
            print(
                f"removed {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'} ({_size(freed)}) from {root}"
            )
        return 0
    if args.all:
        raise ValueError("--all goes with --clear (kitlib cache --clear --all)")
    found = cache.entries()
    if args.json:
        print(json.dumps([e.to_dict() for e in found], indent=2))
        return 0
    if not found:
        print(f"no cache entries in {root}")
        return 0
    rows = [("KEY", "SIZE", "BUNDLE SIZE", "CREATED", "LAST USED", "BUNDLE")]
    rows += [(e.key, _size(e.bytes), _size(e.input_bytes), _ago(e.created), _ago(e.used), e.bundle) for e in found]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + "  " + r[5])
    total = sum(e.bytes for e in found)
    print(f"\n{len(found)} entries, {_size(total)} of {_size(cache.max_bytes())} in {root}")
    return 0
