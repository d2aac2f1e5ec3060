"""``kitlib investigations``, ``tables``, ``formats`` and ``findings``: what the kit knows, read from its
registry (no bundle needed)."""

from __future__ import annotations

import json
import sys


def register_cli(sub) -> None:
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

    p = sub.add_parser(
        "findings",
        help="print the findings catalogue (every finding id, its default severity and meaning)",
        description="Print every finding id the investigations declare, with the severity it has by default "
        "and what it means, as Markdown (docs/findings.md is this output).",
    )
    p.set_defaults(func=_cmd_findings)


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


def _cmd_findings(args) -> int:
    from kitlib.investigations import catalogue

    print(catalogue.markdown(), end="")
    return 0
