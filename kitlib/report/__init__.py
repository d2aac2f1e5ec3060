"""Postmortem reports: run the triage notebook and every relevant investigation notebook on a
bundle with papermill (several at a time), convert each to a self-contained HTML page, and write a
summary page per bundle (what happened, when, where, findings ranked by severity with their fix,
an evidence appendix quoting the cited lines) and, for a folder of bundles, an index of them all.

One module per part:

- :mod:`.catalog`: the kit's notebooks (where they are, which a report may run) and
  :func:`copy_notebooks`, which copies them for an analyst to work in;
- :mod:`.run`: one bundle's report, the notebooks executed with papermill;
- :mod:`.pages`: a notebook's HTML page (nbconvert template, cell tags) and the Jinja2 pages;
- :mod:`.summary`: the bundle's summary page;
- :mod:`.evidence`: the cited lines of its evidence appendix, read back and redacted;
- :mod:`.folders`: a folder of bundles and its index page, and :func:`report_path`, which
  reports either.

``kitlib report`` and ``kitlib notebooks`` are in :mod:`kitlib.cli.report`.

Example:
    >>> from kitlib.report import report
    >>> result = report("sample_data/compaction", "reports")   # doctest: +SKIP
    >>> result["index"]                                         # doctest: +SKIP
    'reports/compaction/index.html'
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kitlib.report.catalog import Notebook, copy_notebooks, default_bundle, notebook_dir, notebooks
    from kitlib.report.evidence import cited_lines, redact_line
    from kitlib.report.folders import bundles_in, report_many, report_path
    from kitlib.report.pages import PageContext, offline_html, page_html, reader_cells, toc
    from kitlib.report.run import BundleReport, finish, prepare, report, submit
    from kitlib.report.summary import span_text, summary_view

from kitlib.report.jobs import EXEC_TIMEOUT, default_jobs

# imported when first used, so that ``kitlib``'s command line is built without the report's machinery
_LAZY = {
    **dict.fromkeys(("Notebook", "copy_notebooks", "default_bundle", "notebook_dir", "notebooks"), "catalog"),
    **dict.fromkeys(("cited_lines", "redact_line"), "evidence"),
    **dict.fromkeys(("bundles_in", "report_many", "report_path"), "folders"),
    **dict.fromkeys(("PageContext", "offline_html", "page_html", "reader_cells", "toc"), "pages"),
    **dict.fromkeys(("BundleReport", "finish", "prepare", "report", "submit"), "run"),
    **dict.fromkeys(("span_text", "summary_view"), "summary"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'kitlib.report' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kitlib.report.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "EXEC_TIMEOUT",
    "BundleReport",
    "Notebook",
    "PageContext",
    "bundles_in",
    "cited_lines",
    "copy_notebooks",
    "default_bundle",
    "default_jobs",
    "finish",
    "notebook_dir",
    "notebooks",
    "offline_html",
    "page_html",
    "prepare",
    "reader_cells",
    "redact_line",
    "report",
    "report_many",
    "report_path",
    "span_text",
    "submit",
    "summary_view",
    "toc",
]
