"""The explore panel (ipywidgets): one window for the notebook, typed or brushed on the
cross-host timeline; the findings and their evidence rows in that window; a search over every
line with a paged, sortable table of hits and the raw lines around one; and *pin*, which writes
the view as parameters of ``kitlib report BUNDLE --params FILE``.

Everything here is driven from Python too (``panel.set_window(...)``, ``panel.run_search(...)``,
``panel.open_hit(n)``, ``panel.pin(path)``), which is how the tests check it without a browser.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pandas as pd

from kitlib import display
from kitlib.explore import timeline as tl
from kitlib.explore.evidence import MAX_POINTS, evidence_rows
from kitlib.explore.query import LEVELS, ORDERS, Hits, Query, context_html, hits_table, search
from kitlib.window import Window

PAGE = 25  # hits per page


def window_text(w: Window, tz: str | None = None) -> str:
    """A window as one line: ``start → end (zone), hosts``.

    Example:
        >>> window_text(Window.of("2026-11-23 12:00", "2026-11-23 12:05"))
        'Window: 2026-11-23 12:00:00 → 2026-11-23 12:05:00 UTC, all hosts'
        >>> window_text(Window())
        'Window: the whole bundle, all hosts'
    """
    zone = tz or "UTC"

    def t(v):
        return v.tz_convert(zone).strftime("%Y-%m-%d %H:%M:%S") + (
            f".{v.microsecond // 1000:03d}" if v.microsecond else ""
        )

    hosts = ", ".join(w.hosts) if w.hosts else "all hosts"
    if w.start is None and w.end is None:
        return f"Window: the whole bundle, {hosts}"
    lo = t(w.start) if w.start is not None else "the start"
    hi = t(w.end) if w.end is not None else "the end"
    return f"Window: {lo} → {hi} {zone}, {hosts}"


class Explorer:
    """The panel over ``bundle`` (its own window is the outer limit) and ``findings``.

    An investigation notebook adds its own ``tables`` and ``charts`` (see
    :func:`kitlib.explore.investigation`): each a function of a bundle, called with the bundle cut
    to the panel's window (:func:`kitlib.bundle.window`) whenever the window changes, so the
    notebook's evidence tables and charts follow the brush."""

    def __init__(
        self,
        bundle,
        findings: list,
        tz: str | None = None,
        pin_path: str = "pinned-view.yaml",
        tables: dict | None = None,
        charts: dict | None = None,
        title: str = "Explore",
    ):
        import ipywidgets as w

        self.bundle, self.findings, self.tz = bundle, findings, tz
        self.tables, self.charts = dict(tables or {}), dict(charts or {})
        self.table_frames: dict[str, pd.DataFrame] = {}  # the notebook's tables in the current window
        self.window = Window()
        self.query = Query()
        self.order, self.desc, self.offset = "time", False, 0
        self.hits: Hits | None = None
        self.evidence_all = evidence_rows(findings)

        lay = w.Layout
        self.start_box = w.Text(description="start", placeholder="2026-11-23 12:00", layout=lay(width="260px"))
        self.end_box = w.Text(description="end", placeholder="(open)", layout=lay(width="260px"))
        self.hosts_box = w.Text(description="hosts", placeholder="all", layout=lay(width="220px"))
        apply_btn = w.Button(description="Set window")
        whole_btn = w.Button(description="Whole bundle")
        self.window_label = w.HTML()
        self.window_label.add_class("kit-window")
        self.findings_out = w.HTML()
        self.findings_out.add_class("kit-explore-findings")
        self.evidence_out = w.HTML()
        self.evidence_out.add_class("kit-explore-evidence")
        self.next_out = w.HTML()
        self.next_out.add_class("kit-explore-next")
        self.tables_out = w.HTML()
        self.tables_out.add_class("kit-explore-tables")
        self.chart_outs = {name: w.Output() for name in self.charts}  # one place per chart
        self.live_charts: dict = {}  # name -> the live chart on screen (given each window's chart)
        self.charts_out = w.VBox(list(self.chart_outs.values()))
        self.charts_out.add_class("kit-explore-charts")
        apply_btn.on_click(lambda _: self._typed())
        whole_btn.on_click(lambda _: self.set_window(None, None, None))
        for box in (self.start_box, self.end_box, self.hosts_box):
            box.continuous_update = False

        self.chart = None
        spec = tl.chart(bundle, self.evidence_all, tz, MAX_POINTS)
        if spec is not None:
            import altair as alt

            alt.JupyterChart.enable_offline()
            self.chart = alt.JupyterChart(spec, debounce_wait=200, max_wait=False)
            self.chart.add_class("kit-timeline")
            self.chart.selections.observe(self._brushed, names=["window"])

        self.text_box = w.Text(
            description="search", placeholder="text or regular expression", layout=lay(width="420px")
        )
        self.text_box.add_class("kit-search-text")
        self.regex_box = w.Checkbox(description="regex", value=False, indent=False, layout=lay(width="80px"))
        self.level_box = w.Dropdown(
            description="level",
            options=[("any", "")] + [(f"{lv} and worse", f"{lv}+") for lv in LEVELS[:-1]] + [("FATAL", "FATAL")],
            layout=lay(width="220px"),
        )
        self.shost_box = w.Text(description="host", placeholder="any", layout=lay(width="200px"))
        self.logger_box = w.Text(description="logger", placeholder="part of its name", layout=lay(width="260px"))
        self.order_box = w.Dropdown(description="sort", options=list(ORDERS), value="time", layout=lay(width="200px"))
        self.desc_box = w.Checkbox(description="descending", value=False, indent=False, layout=lay(width="110px"))
        search_btn = w.Button(description="Search", button_style="primary")
        search_btn.add_class("kit-search-go")
        self.text_box.continuous_update = False  # Enter (or leaving the box) searches
        self.text_box.observe(lambda _: self.run_search(), names=["value"])
        search_btn.on_click(lambda _: self.run_search())
        prev_btn, next_btn = w.Button(description="◀ previous"), w.Button(description="next ▶")
        prev_btn.on_click(lambda _: self.page(-1))
        next_btn.on_click(lambda _: self.page(+1))
        self.hits_label = w.HTML()
        self.hits_label.add_class("kit-hits-count")
        self.hits_out = w.Output()
        self.hits_out.add_class("kit-hits")
        self.hit_box = w.BoundedIntText(description="hit #", min=1, max=1, value=1, layout=lay(width="160px"))
        open_btn = w.Button(description="Show lines around it")
        open_btn.add_class("kit-open-hit")
        open_btn.on_click(lambda _: self.open_hit(self.hit_box.value))
        self.context_out = w.HTML()
        self.evidence_now = self.evidence_all
        self.ev_box = w.BoundedIntText(description="evidence row", min=1, max=1, value=1, layout=lay(width="200px"))
        ev_btn = w.Button(description="Show its lines")
        ev_btn.add_class("kit-open-evidence")
        ev_btn.on_click(lambda _: self.open_evidence(self.ev_box.value))
        self.context_out.add_class("kit-context-view")

        self.pin_box = w.Text(description="pin to", value=pin_path, layout=lay(width="360px"))
        pin_btn = w.Button(description="Pin this view")
        pin_btn.add_class("kit-pin")
        self.pin_label = w.HTML()
        self.pin_label.add_class("kit-pin-status")
        pin_btn.on_click(lambda _: self._pin_clicked())

        parts = [
            w.HTML(f"<h4>{display.esc(title)}</h4>"),
            w.HBox([self.start_box, self.end_box, self.hosts_box, apply_btn, whole_btn]),
            self.window_label,
        ]
        if self.chart is not None:
            parts.append(self.chart)
        parts += [
            self.findings_out,
            self.next_out,
            self.evidence_out,
            w.HBox([self.ev_box, ev_btn]),
        ]
        if self.tables:
            parts.append(self.tables_out)
        if self.charts:
            parts.append(self.charts_out)
        parts += [
            w.HTML("<h4>Search every line</h4>"),
            w.HBox([self.text_box, self.regex_box, self.level_box]),
            w.HBox([self.shost_box, self.logger_box, self.order_box, self.desc_box, search_btn]),
            w.HBox([self.hits_label, prev_btn, next_btn]),
            self.hits_out,
            w.HBox([self.hit_box, open_btn]),
            self.context_out,
            w.HBox([self.pin_box, pin_btn]),
            self.pin_label,
        ]
        self.widget = w.VBox(parts)
        self.widget.add_class("kit-explore")
        self.refresh()
        _index_soon(bundle)

    def _ipython_display_(self):
        from IPython.display import display as show

        show(self.widget)

    # -- the window -------------------------------------------------------------------------------

    def set_window(self, start=None, end=None, hosts=None) -> Window:
        """Set the window (ISO text or Timestamps, naive means UTC; hosts a list or comma-separated
        text; None for open) and re-query everything that follows it."""
        from kitlib.params import as_list

        self.window = Window.of(start, end, as_list(hosts))
        self.start_box.value = "" if self.window.start is None else self._show(self.window.start)
        self.end_box.value = "" if self.window.end is None else self._show(self.window.end)
        self.hosts_box.value = ", ".join(self.window.hosts or ())
        self.offset = 0
        self.refresh()
        return self.window

    def _show(self, t: pd.Timestamp) -> str:
        return t.tz_convert(self.tz or "UTC").isoformat()

    def _typed(self) -> None:
        try:
            self.set_window(
                self.start_box.value.strip() or None, self.end_box.value.strip() or None, self.hosts_box.value
            )
        except (ValueError, TypeError) as e:
            self.window_label.value = f"<p style='color:#c92a2a'>Not a time: {display.esc(e)}</p>"

    def _brushed(self, change) -> None:
        sel = change["new"]
        got = tl.brushed(getattr(sel, "value", None), self.tz)
        if got is None:
            self.set_window(None, None, self.window.hosts)
        else:
            self.set_window(got[0], got[1], self.window.hosts)

    def refresh(self) -> None:
        """Re-query the findings, the evidence rows and the search for the current window."""
        self.window_label.value = f"<p><b>{display.esc(window_text(self.window, self.tz))}</b></p>"
        ev = self.evidence_all if self.window.whole else self.window.frame(self.evidence_all, "ts")
        per = ev.groupby("finding").size() if len(ev) else pd.Series(dtype="int64")
        fs = pd.DataFrame(
            [
                {
                    "finding": f.id,
                    "severity": f.severity,
                    "evidence in window": int(per.get(f.id, 0)),
                    "summary": f.summary,
                }
                for f in self.findings
            ],
            columns=["finding", "severity", "evidence in window", "summary"],
        )
        self.findings_out.value = display.table(
            fs, empty="No findings: the detectors found nothing in this bundle."
        ).html
        self.next_out.value = self.next_links().html
        self.evidence_now = ev
        self.ev_box.max = max(1, len(ev))
        shown = ev.drop(columns=["file", "line"])
        shown.insert(0, "row", range(1, len(shown) + 1))
        shown = shown.assign(ts=pd.to_datetime(shown["ts"], utc=True).dt.tz_convert(self.tz or "UTC"))
        note = (
            f"<p class='kit-evidence-count' data-rows='{len(ev)}'>{len(ev):,} evidence rows in the window "
            f"(of {len(self.evidence_all):,})</p>"
        )
        why = (
            "No evidence rows: nothing was found."
            if not len(self.evidence_all)
            else "No evidence row lies in this window: widen it or press Whole bundle."
        )
        self.evidence_out.value = note + display.table(shown, empty=why, max_rows=200).html
        if self.tables or self.charts:
            self._own_views(self.scoped())
        self.run_search(self.query)

    def scoped(self):
        """The bundle cut to the panel's window (itself for the whole bundle): what the notebook's
        own tables and charts are computed from."""
        from kitlib.bundle import window as cut

        w = self.window
        return self.bundle if w.whole else cut(self.bundle, w.start, w.end, list(w.hosts) if w.hosts else None)

    def _own_views(self, b) -> None:
        """The notebook's tables and charts, recomputed from ``b``; a function that fails shows its
        message in place of its table or chart (never a traceback)."""
        parts, frames = [], {}
        for name, fn in self.tables.items():
            try:
                got = fn(b)
            except Exception as e:  # noqa: BLE001 - one table failing leaves the rest of the panel working
                parts.append(
                    f"<h5>{display.esc(name)}</h5><p class='kit-table-error'>Could not compute it: {display.esc(e)}</p>"
                )
                continue
            data = got if isinstance(got, pd.DataFrame) else getattr(got, "data", None)  # a Styler holds its frame
            rows = len(data) if isinstance(data, pd.DataFrame) else 0
            if isinstance(data, pd.DataFrame):
                frames[name] = data
            shown = display.table(got, max_rows=200) if isinstance(got, pd.DataFrame) else got
            parts.append(
                f"<div class='kit-own-table' data-table='{display.esc(name)}'><h5>{display.esc(name)}</h5>"
                f"<p class='kit-table-count' data-table='{display.esc(name)}' data-rows='{rows}'>{rows:,} rows "
                f"in the window</p>{_html_of(shown)}</div>"
            )
        self.table_frames = frames
        self.tables_out.value = "".join(parts)
        if not self.charts:
            return
        import altair as alt
        from IPython.display import display as show

        for name, fn in self.charts.items():
            try:
                got = fn(b)
            except Exception as e:  # noqa: BLE001 - as for the tables
                got = display.HTML(
                    f"<p class='kit-chart-error'>{display.esc(name)}: could not draw it: {display.esc(e)}</p>",
                    f"{name}: could not draw it: {e}",
                )
            live = self.live_charts.get(name)
            if isinstance(got, alt.TopLevelMixin):
                if live is not None:  # the chart on screen takes the new spec (a new widget is slow to start)
                    live.chart = got
                    continue
                alt.JupyterChart.enable_offline()
                got = self.live_charts[name] = alt.JupyterChart(got)
            else:
                self.live_charts.pop(name, None)
            out = self.chart_outs[name]
            out.clear_output()
            if got is not None:
                with out:
                    show(got)

    def next_links(self) -> display.HTML:
        """The notebooks the findings point to, each link carrying the bundle and the panel's
        window (within the bundle's own), so the next notebook opens on what is on screen here
        (:func:`kitlib.display.links.open_next`)."""
        from kitlib.display.links import open_next, view_params

        targets = dict.fromkeys((f.notebook, f.investigation) for f in self.findings if f.notebook)
        if not targets:
            return display.HTML("", "")
        w = self.bundle.window.within(self.window)
        params = view_params({"BUNDLE": self.bundle.root, "START": w.start, "END": w.end, "HOSTS": w.hosts}, self.tz)
        items = "".join(f"<li>{open_next(nb, inv or nb, params).html}</li>" for nb, inv in targets)
        return display.HTML(
            f"<p>Open next, on this window:</p><ul>{items}</ul>",
            "\n".join(f"open next: {nb}" for nb, _ in targets),
        )

    # -- search -----------------------------------------------------------------------------------

    def run_search(self, query: Query | None = None, **kw) -> Hits:
        """Search (``query``, or keywords of :class:`Query`, or the boxes of the panel) within the
        window and show the first page."""
        if query is None and not kw:
            query = Query(
                text=self.text_box.value,
                regex=self.regex_box.value,
                level=self.level_box.value or None,
                host=self.shost_box.value or None,
                logger=self.logger_box.value.strip(),
            )
            self.order, self.desc, self.offset = self.order_box.value, self.desc_box.value, 0
        elif query is None:
            query = Query(**kw)
            self.offset = 0
        self.query = Query(query.text, query.regex, query.level, query.host, query.logger, self.window)
        self.hits = search(
            self.bundle, query=self.query, limit=PAGE, offset=self.offset, order=self.order, desc=self.desc
        )
        self._show_hits()
        return self.hits

    def page(self, step: int) -> None:
        """The previous (-1) or next (+1) page of hits."""
        if self.hits is None:
            return
        new = self.offset + step * PAGE
        more = PAGE if self.hits.capped else 0  # a capped count: more hits lie past it
        if 0 <= new < max(self.hits.total + more, 1):
            self.offset = new
            self.hits = search(
                self.bundle, query=self.query, limit=PAGE, offset=self.offset, order=self.order, desc=self.desc
            )
            self._show_hits()

    def _show_hits(self) -> None:
        hits = self.hits
        assert hits is not None
        what = (
            "every line"
            if not (self.query.text or self.query.levels() or self.query.hosts() or self.query.logger)
            else "the search"
        )
        self.hits_label.value = (
            f"<p class='kit-hits-count' data-total='{hits.total}'>{display.esc(hits.describe())}"
            f" ({display.esc(what)}, in the window)</p>"
        )
        self.hit_box.max = max(1, hits.total)
        self.hit_box.value = max(1, hits.offset + 1)
        table = hits_table(hits, self.tz)
        widget = _hits_widget(table, self)
        if widget is not None and widget is self.__dict__.get("_hits_shown"):
            return  # the table on screen took the new page (a new widget each time is slow to start)
        self._hits_shown = widget
        self.hits_out.clear_output()
        with self.hits_out:
            from IPython.display import display as show

            show(widget)

    def open_hit(self, n: int) -> display.HTML:
        """Show (and return) the raw lines around hit number ``n`` (1-based, as the table numbers them)."""
        hits = self.hits
        if hits is None or not hits.total:
            out = display.HTML("<p>No hit to open: search first.</p>", "No hit to open.")
        else:
            n = min(max(1, int(n)), hits.total)
            if not (hits.offset < n <= hits.offset + len(hits.rows)):
                self.offset = ((n - 1) // PAGE) * PAGE
                self.hits = hits = search(
                    self.bundle, query=self.query, limit=PAGE, offset=self.offset, order=self.order, desc=self.desc
                )
                self._show_hits()
            row = hits.rows.iloc[n - 1 - hits.offset]
            out = context_html(self.bundle, str(row["file"]), int(row["line"]))
        self.context_out.value = out.html
        return out

    def open_evidence(self, n: int) -> display.HTML:
        """Show (and return) the raw lines around evidence row ``n`` of the window (1-based, as the
        evidence table numbers them), headed by the finding it is evidence of."""
        ev = self.evidence_now
        if not len(ev):
            out = display.HTML("<p>No evidence row in this window.</p>", "No evidence row.")
        else:
            row = ev.iloc[min(max(1, int(n)), len(ev)) - 1]
            f = next((f for f in self.findings if f.id == row["finding"]), None)
            head = (
                f"Evidence of [{f.severity}] {f.id}: {f.summary}" if f is not None else f"Evidence of {row['finding']}"
            )
            if pd.isna(row["file"]) or pd.isna(row["line"]):
                body = display.HTML("<p>This evidence row cites no file line.</p>", "No file line.")
            else:
                body = context_html(self.bundle, str(row["file"]), int(row["line"]))
            out = display.HTML(
                f"<p class='kit-evidence-of' data-finding='{display.esc(row['finding'])}'><b>{display.esc(head)}</b></p>"
                + body.html,
                head + "\n" + body.text,
            )
        self.context_out.value = out.html
        return out

    # -- pin --------------------------------------------------------------------------------------

    def params(self) -> dict:
        """The current view as notebook parameters (see :func:`kitlib.params.write_pinned`)."""
        w = self.window
        out: dict = {
            "START": w.start.isoformat() if w.start is not None else None,
            "END": w.end.isoformat() if w.end is not None else None,
        }
        if w.hosts:
            out["HOSTS"] = list(w.hosts)
        if self.tz:
            out["TZ"] = self.tz
        q = self.query.to_dict()
        if any(v for v in q.values()):
            out["SEARCH"] = q
        return out

    def pin(self, path: str | Path | None = None) -> Path:
        """Write the current view as papermill parameters (YAML) to ``path`` (default: the panel's
        pin box); ``kitlib report BUNDLE --params PATH`` renders the static report of that view."""
        from kitlib.params import write_pinned

        target = Path(path or self.pin_box.value or "pinned-view.yaml")
        when = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        write_pinned(
            target,
            self.params(),
            f"A view pinned in explore mode ({when}): {window_text(self.window, self.tz)}\n"
            f"Render it: kitlib report BUNDLE --out DIR --params {target.name}",
        )
        self.pin_label.value = f"<p class='kit-pinned'>Pinned to <code>{display.esc(target)}</code>: {display.esc(window_text(self.window, self.tz))}</p>"
        return target

    def _pin_clicked(self) -> None:
        try:
            self.pin()
        except (OSError, ValueError) as e:
            self.pin_label.value = f"<p style='color:#c92a2a'>Could not pin: {display.esc(e)}</p>"


def _index_soon(bundle) -> None:
    """Build the trigram index of a stored bundle on a thread of its own (daemon) while the analyst
    reads the panel, so the first text search finds it built (it waits for it otherwise); nothing
    when the store has one already or the bundle is in memory."""
    import threading

    from kitlib.explore import textindex

    f = textindex.events_file(bundle)
    if f is None or textindex.ready(f):
        return

    def build():
        try:
            textindex.index_of(bundle)
        except Exception:  # noqa: BLE001 - the search builds it again, or scans, and says what failed
            pass

    threading.Thread(target=build, name="kit-trigram-index", daemon=True).start()


def _html_of(shown) -> str:
    """The HTML of what a table function returned: a :class:`kitlib.display.HTML`, anything with
    ``_repr_html_`` (a pandas Styler), else its text, escaped."""
    if isinstance(shown, display.HTML):
        return shown.html
    got = shown._repr_html_() if hasattr(shown, "_repr_html_") else None
    return got if isinstance(got, str) else f"<pre>{display.esc(shown)}</pre>"


def _hits_widget(table: pd.DataFrame, panel: Explorer):
    """The page of hits as an interactive, sortable table (itables' widget, offline: its
    DataTables code ships in the package); selecting a row shows the lines around it. Without
    itables, a plain HTML table."""
    if not len(table):
        return display.HTML("<p class='kit-empty'>No line matches in the window.</p>", "No line matches.")
    try:
        from itables.widget import ITable
    except ImportError:  # pragma: no cover - itables is a dependency; a plain table still works
        return display.table(table, max_rows=PAGE)
    shown = table.assign(ts=table["ts"].map(lambda v: display.tables.cell(v), na_action="ignore").fillna(""))
    options: dict = {
        "select": {"style": "single"},
        "paging": False,
        "classes": "display compact kit-hits-table",
        "columnDefs": [{"className": "dt-left", "targets": "_all"}],
        "style": "table-layout:auto;width:100%;margin:0;text-align:left",
        "showIndex": False,
        "allow_html": False,
    }
    panel.__dict__["_hits_page"] = table
    t = panel.__dict__.get("_hits_table")
    if t is not None:  # one table widget per panel, given each new page
        t.update(shown, selected_rows=[], **options)
        return t
    t = ITable(shown, **options)

    def picked(change):
        rows = change["new"]
        page = panel.__dict__["_hits_page"]
        if rows and rows[0] < len(page):
            panel.open_hit(int(page["hit"].iloc[rows[0]]))

    t.observe(picked, names=["selected_rows"])
    panel.__dict__["_hits_table"] = t
    return t
