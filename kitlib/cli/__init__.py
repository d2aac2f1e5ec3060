"""The ``kitlib`` command: a thin layer over the library. Every subcommand has ``--help``.

Each module of this package holds one group of commands and exposes ``register_cli(subparsers)``,
which adds its parser(s) and sets ``func`` on them; :data:`COMMAND_MODULES` lists them in the
order ``kitlib --help`` shows them. A command reads its arguments, calls the library and prints
what it returns; the work itself is the library's.

Exit status: 0 done (triage: nothing found), 1 triage found something (report: a notebook
failed), 2 could not run (a problem is one line on stderr, never a traceback).

Example:
    $ kitlib ingest sample_data/down-conversion --out /tmp/dc.kit
    $ kitlib summary /tmp/dc.kit
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from kitlib.cli.common import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS

COMMAND_MODULES = [
    "kitlib.cli.bundle_commands",  # ingest, summary
    "kitlib.cli.triage",  # triage
    "kitlib.cli.changes",  # changes
    "kitlib.cli.catalogue",  # investigations, tables, formats, findings, templates
    "kitlib.cli.report",  # report, notebooks
    "kitlib.cli.lab",  # lab start|stop|status|jars
    "kitlib.cli.capture",  # capture, probe
    "kitlib.cli.cache",  # cache
]
# the module of each command, so that running one imports only its own module (``kitlib lab``'s
# parser alone imports the whole lab); tests/test_cli.py checks it against what the modules register
COMMANDS = {
    **dict.fromkeys(["ingest", "summary"], "kitlib.cli.bundle_commands"),
    "triage": "kitlib.cli.triage",
    "changes": "kitlib.cli.changes",
    **dict.fromkeys(["investigations", "tables", "formats", "findings", "templates"], "kitlib.cli.catalogue"),
    **dict.fromkeys(["report", "notebooks"], "kitlib.cli.report"),
    "lab": "kitlib.cli.lab",
    **dict.fromkeys(["capture", "probe"], "kitlib.cli.capture"),
    "cache": "kitlib.cli.cache",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command`` (a key of :data:`COMMANDS`), only that command's module
    registers its parsers, which parse that command's arguments the same way."""
    parser = argparse.ArgumentParser(
        prog="kitlib",
        description="Kafka incident kit: turn a bundle of broker/Connect logs and JMX dumps into tables, "
        "findings and offline reports.",
    )
    parser.add_argument("--version", action="version", version="kitlib " + _version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES:
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
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)  # --help, --version and usage errors exit here (0 or 2), no traceback
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_ERROR
    try:
        _check_tz(getattr(args, "tz", None))
        return int(args.func(args) or 0)
    except (FileNotFoundError, NotADirectoryError, PermissionError, ValueError) as e:
        print(f"kitlib {args.command}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if os.environ.get("KITLIB_DEBUG"):
            raise
        print(
            f"kitlib {args.command}: error: {type(e).__name__}: {e} (set KITLIB_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _check_tz(tz) -> None:
    """A --tz that names no timezone is an error before anything is read."""
    if tz:
        from kitlib.sources import check_tz

        check_tz(tz, "--tz")


__all__ = ["main", "build_parser", "COMMAND_MODULES", "COMMANDS", "EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_ERROR"]
