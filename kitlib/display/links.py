"""The "open next" links that carry the analyst's bundle and window.

A link in a notebook's output can only name the next notebook: JupyterLab opens the file at a
relative link and has no way to hand it parameters. So every "open next" rendered by the kit
says, next to the link, the exact bundle and window it was computed on, and gives the lines to
put into the next notebook's parameters cell (and the same view as a papermill command) so the
next notebook reads the same bundle through the same window, not its sample.

Example:
    >>> p = view_params({"BUNDLE": "incident-42", "START": "2026-11-23 12:00", "HOSTS": "broker-1,broker-2"})
    >>> print(params_cell(p))
    BUNDLE = 'incident-42'
    START = '2026-11-23T12:00:00+00:00'
    END = None
    HOSTS = ['broker-1', 'broker-2']
    >>> view_text(p)
    'bundle incident-42, window 2026-11-23 12:00:00 UTC → the end, hosts broker-1, broker-2'
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

import pandas as pd

from kitlib.display.markup import HTML, esc

VIEW_KEYS = ("BUNDLE", "TZ", "START", "END", "HOSTS")  # the parameters every link carries (when set)


def view_params(view, tz=None) -> dict:
    """The parameters of the view a notebook shows: ``BUNDLE`` (the path as the notebook named
    it), ``START``/``END`` (ISO UTC, None when open), ``HOSTS`` (a list, only when the view is cut
    to some hosts) and ``TZ`` (only when given). ``view`` is a bundle (its root and window) or a
    mapping of notebook parameters; None gives no parameters."""
    if view is None:
        return {}
    from kitlib.params import as_list
    from kitlib.window import Window

    if isinstance(view, Mapping):
        root = view.get("BUNDLE")
        w = Window.of(view.get("START"), view.get("END"), as_list(view.get("HOSTS")))
        tz = tz if tz is not None else view.get("TZ")
    else:
        root, w = getattr(view, "root", None), getattr(view, "window", None) or Window()
    out: dict = {"BUNDLE": None if root is None else str(root)}
    if tz:
        out["TZ"] = str(tz)
    out["START"] = _iso(w.start)
    out["END"] = _iso(w.end)
    if w.hosts:
        out["HOSTS"] = list(w.hosts)
    return out


def _iso(t) -> str | None:
    return None if t is None else pd.Timestamp(t).tz_convert("UTC").isoformat()


def _human(t) -> str:
    t = pd.Timestamp(t).tz_convert("UTC")
    return t.strftime("%Y-%m-%d %H:%M:%S") + (f".{t.microsecond // 1000:03d}" if t.microsecond else "") + " UTC"


def view_text(params: Mapping) -> str:
    """The bundle and window of ``params`` (:func:`view_params`) in one line."""
    start, end = params.get("START"), params.get("END")
    if start is None and end is None:
        window = "the whole bundle"
    else:
        window = f"{_human(start) if start else 'the start'} → {_human(end) if end else 'the end'}"
    hosts = ", ".join(params.get("HOSTS") or ()) or "all"
    tz = f", logs read as {params['TZ']}" if params.get("TZ") else ""
    return f"bundle {params.get('BUNDLE')}, window {window}, hosts {hosts}{tz}"


def params_cell(params: Mapping) -> str:
    """``params`` as the lines of a parameters cell (Python literals), in :data:`VIEW_KEYS` order."""
    return "\n".join(f"{k} = {params[k]!r}" for k in VIEW_KEYS if k in params)


def papermill_command(notebook: str, params: Mapping) -> str:
    """The papermill command that runs ``notebook`` on the view ``params`` (HOSTS as one
    comma-separated value, which every notebook's HOSTS parameter accepts)."""
    words = ["papermill", notebook, "out-" + notebook]
    for k in VIEW_KEYS:
        v = params.get(k)
        if v is None:
            continue
        words += ["-p", k, ",".join(v) if isinstance(v, list | tuple) else str(v)]
    return " ".join(shlex.quote(w) for w in words)


def open_next(notebook: str, title: str, params: Mapping | None = None) -> HTML:
    """One "open next" link to ``notebook``. With ``params`` (:func:`view_params`) it states the
    bundle and window it carries and, folded below it, the lines for that notebook's parameters
    cell and the papermill command of the same view; the link itself carries them as ``data-``
    attributes."""
    link = f"<a class='kit-open-next' href='{esc(notebook)}'"
    if not params or params.get("BUNDLE") is None:
        return HTML(link + f">{esc(title)}</a>", f"open next: {notebook}")
    data = "".join(
        f" data-{k.lower()}='{esc(','.join(params[k]) if isinstance(params[k], list) else params[k])}'"
        for k in VIEW_KEYS
        if params.get(k) is not None
    )
    text = view_text(params)
    cell = params_cell(params)
    hosts_note = (
        " (HOSTS applies in the notebooks that have a HOSTS parameter; the others read every host)"
        if params.get("HOSTS")
        else ""
    )
    html = (
        f"{link}{data}>{esc(title)}</a> <span class='kit-open-view'>on {esc(text)}</span>"
        f"<details class='kit-open-params'><summary>run it on this bundle and window</summary>"
        f"<p>Put these lines into its parameters cell, then Run All{esc(hosts_note)}:</p>"
        f"<pre>{esc(cell)}</pre><p>or run it outside JupyterLab:</p>"
        f"<pre>{esc(papermill_command(notebook, params))}</pre></details>"
    )
    return HTML(html, f"open next: {notebook} on {text}\n{cell}")
