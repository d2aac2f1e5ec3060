"""``kitlib report`` and ``kitlib notebooks``: offline HTML reports of a bundle, and the kit's
notebooks copied for an analyst to work in (:mod:`kitlib.report`)."""

from __future__ import annotations

from pathlib import Path

from kitlib.cli.common import NO_CACHE_HELP
from kitlib.report.jobs import EXEC_TIMEOUT, default_jobs


def register_cli(sub) -> None:
    p = sub.add_parser(
        "report",
        help="run the notebooks on a bundle and write offline HTML reports",
        description="Execute the triage notebook and every investigation notebook relevant to BUNDLE with "
        "papermill and write one HTML page per notebook plus a summary (index.html) into OUT. The "
        "pages load nothing from the network. If BUNDLE is a folder of bundles (its subfolders carry "
        "no files of its own but README.md/PROVENANCE.md, and every subfolder a bundle, like sample_data/), each is reported into "
        "OUT/<name>/ and OUT/index.html links them. OUT must not be inside or around a bundle. Exit status: 0 "
        "all notebooks ran, 1 some failed, 2 error.",
    )
    p.add_argument("bundle", help="bundle folder, or a folder of bundles")
    p.add_argument(
        "--out",
        required=True,
        help="output folder for the HTML reports: new, empty, or one a kitlib command wrote (emptied first); "
        "a folder holding anything else is refused",
    )
    p.add_argument(
        "--tz", default=None, help="timezone the logs were written in (default: the bundle manifest's tz, else UTC)"
    )
    p.add_argument(
        "--notebook",
        action="append",
        dest="notebooks",
        metavar="NAME",
        help="only this notebook (repeatable), e.g. --notebook triage",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help=f"notebooks run at once (default: the core count, here {default_jobs()})",
    )
    p.add_argument(
        "--show-code", action="store_true", help="show the notebooks' code cells in the pages (hidden by default)"
    )
    p.add_argument("--timeout", type=int, default=EXEC_TIMEOUT, help="seconds allowed per notebook cell (default 600)")
    p.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    p.add_argument(
        "--params",
        metavar="FILE",
        default=None,
        help="a view pinned in a notebook's explore mode (YAML: START, END, HOSTS, TZ, SEARCH): the report shows "
        "that window, and every page says so; one bundle only",
    )
    p.set_defaults(func=_cmd)

    p = sub.add_parser(
        "notebooks",
        help="copy the kit's notebooks into a folder to work in",
        description="Copy the triage notebook and every investigation notebook into DIR (created when "
        "missing), to open in JupyterLab, point at a bundle (BUNDLE in the first cell) and change there; "
        "the installed notebooks are never edited. Copying again replaces only notebooks left as the kit "
        "wrote them: when one was changed, or DIR holds a file of the same name the kit did not write, "
        "nothing is copied. Exit status: 0 copied, 2 refused or error.",
    )
    p.add_argument("dir", help="folder to copy the notebooks into")
    p.set_defaults(func=_cmd_notebooks)


def _cmd(args) -> int:
    path = Path(args.bundle)
    if not path.exists():
        raise FileNotFoundError(f"bundle not found: {path}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError("--jobs must be at least 1")
    kw = dict(
        tz=args.tz,
        only=args.notebooks,
        timeout=args.timeout,
        jobs=args.jobs,
        show_code=args.show_code,
        cache=False if args.no_cache else None,
    )
    if args.params:
        from kitlib.params import read_pinned
        from kitlib.report.folders import bundles_in

        if path.is_dir() and bundles_in(path):
            raise ValueError("--params pins a view of one bundle; BUNDLE is a folder of bundles")
        kw["pinned"] = read_pinned(args.params)
    from kitlib.report import report_path

    res, failed = report_path(path, args.out, **kw)
    print(f"\nreports written: open {Path(res['index']).resolve()}")
    return 1 if failed else 0


def _cmd_notebooks(args) -> int:
    from kitlib.report import copy_notebooks

    written = copy_notebooks(args.dir)
    for p in written:
        print(p)
    print(f"\n{len(written)} notebooks copied: open them with jupyter lab {Path(args.dir)}")
    return 0
