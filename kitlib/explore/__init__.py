"""Explore mode: the notebooks as live tools in JupyterLab, the same notebooks as fixed reports
under papermill and nbval.

One parameter, ``EXPLORE``, in every notebook's parameters cell: ``None`` (the default) means
*on when the kernel was started by a Jupyter server*, off otherwise. The signal is the
``JPY_SESSION_NAME`` variable: jupyter_server puts it into the environment of each kernel it
starts for a notebook (JupyterLab, Notebook 7), while papermill, nbval and ``kitlib report``
start their kernels with jupyter_client directly, without it. ``KITLIB_EXPLORE=0`` (or ``1``)
in the environment overrides the guess; ``EXPLORE = True``/``False`` in the notebook overrides
both. With explore mode off, a notebook shows exactly its static outputs (SVG charts, HTML
tables) and no widget, so stored outputs stay the same from run to run.

With it on:

- charts render as live Vega-Lite charts (altair's ``JupyterChart``: tooltips, zoom,
  selections) with Vega's JavaScript taken from vl-convert's bundle in the installed package,
  never from a CDN (:func:`kitlib.display.setup`);
- :func:`explorer` shows one window for the notebook (typed, or brushed on the cross-host
  timeline), the findings' evidence rows in that window, a search over every line of the bundle
  (:mod:`kitlib.explore.query`) with the raw lines around a hit, and *pin*, which writes the view
  as parameters for ``kitlib report BUNDLE --params FILE``.

Example:
    >>> enabled(False), enabled("off")
    (False, False)
"""

from __future__ import annotations

import os

from kitlib.explore.evidence import MAX_POINTS, evidence_rows
from kitlib.explore.query import Hits, Query, context, context_html, hits_table, search

__all__ = [
    "MAX_POINTS",
    "Hits",
    "Query",
    "context",
    "context_html",
    "enabled",
    "evidence_rows",
    "explorer",
    "hits_table",
    "investigation",
    "search",
]


def enabled(flag=None) -> bool:
    """Whether explore mode is on: ``flag`` when given (a bool, or text such as ``"on"``/``"0"``);
    else ``KITLIB_EXPLORE`` from the environment when set; else whether a Jupyter server started
    this kernel (``JPY_SESSION_NAME`` set). See the module doc.

    Example:
        >>> enabled(True), enabled("1"), enabled("no")
        (True, True, False)
    """
    if flag is None:
        flag = os.environ.get("KITLIB_EXPLORE") or None
    if flag is None:
        return bool(os.environ.get("JPY_SESSION_NAME"))
    if isinstance(flag, str):
        return flag.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(flag)


def explorer(bundle, findings=(), flag=None, tz: str | None = None, pin_path: str = "pinned-view.yaml"):
    """The explore panel of a notebook (window, timeline, evidence, search, pin) when explore
    mode is on (:func:`enabled`), else None: a cell ending in it shows nothing under papermill
    and nbval."""
    if not enabled(flag):
        return None
    from kitlib.explore.panel import Explorer

    return Explorer(bundle, list(findings), tz=tz, pin_path=pin_path)


def investigation(
    bundle,
    name: str,
    flag=None,
    findings=None,
    tables: dict | None = None,
    charts: dict | None = None,
    tz: str | None = None,
    pin_path: str = "pinned-view.yaml",
):
    """The explore panel of investigation notebook ``name`` when explore mode is on, else None
    (nothing is computed then: under papermill and nbval the cell shows nothing).

    The same panel as :func:`explorer` (timeline with brush and typed window, evidence rows,
    search over every line, pin), on this investigation's ``findings`` (default: its detectors'
    findings on ``bundle``, computed here only in explore mode), plus the notebook's own
    ``tables`` and ``charts``: ``{title: function of a bundle}``, each called again with the
    bundle cut to the window whenever the window changes (a brush, a typed window), e.g.
    ``tables={"ISR episodes": analysis.isr_episodes}``. A table function returns a frame (its
    rows are counted), a chart function an altair chart (or None for nothing)."""
    if not enabled(flag):
        return None
    from kitlib.explore.panel import Explorer

    if findings is None:
        from kitlib.findings import triage

        findings = triage(bundle, investigations=[name]).findings
    return Explorer(
        bundle,
        list(findings),
        tz=tz,
        pin_path=pin_path,
        tables=tables,
        charts=charts,
        title=f"Explore: {name.replace('_', ' ')}",
    )
