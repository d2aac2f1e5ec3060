"""A notebook's page of the report: an executed notebook converted to one self-contained HTML page
with the kit's nbconvert template (``kitlib/templates/nbconvert/kit``, inheriting ``lab``), and the
Jinja2 templates the other pages are rendered from (``kitlib/templates/*.html.j2``). One stylesheet
serves all (``report.css``: a dark scheme and print rules that follow the reader's settings).

What a reader sees of a notebook is decided by cell tags, so any notebook gets the same treatment:
code is hidden unless ``show_code``; the ``parameters`` cell and papermill's
``injected-parameters`` cell are always left out (the values used are listed in the page header);
cells tagged ``demo`` appear only when the report is on the notebook's own default bundle (the
sample it was written for); a section whose outputs are all :func:`kitlib.display.missing` lines
collapses to its heading and those lines.

Offline by construction: charts are static SVG inlined in the page, the template drops every
script nbconvert's ``lab`` template would load.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATES = Path(__file__).parent.parent / "templates"
HIDDEN_TAGS = ("parameters", "injected-parameters")
DEMO_TAG = "demo"


@dataclass
class PageContext:
    """What a notebook page needs besides the notebook: the bundle, its other pages, the
    parameters used, and whether code and demo cells show."""

    bundle: str
    page: str
    pages: list[dict]
    parameters: list[tuple[str, str]] = field(default_factory=list)
    show_code: bool = False
    demo: bool = False
    summary_href: str = "index.html"


_exporter_lock = threading.Lock()
_dark_css: str | None = None


def _dark_theme_css(exporter) -> str:
    """JupyterLab's dark theme variables (applied under prefers-color-scheme: dark)."""
    global _dark_css
    if _dark_css is None:
        _dark_css = ""
        for p in exporter.template_paths:
            f = Path(p) / "static" / "theme-dark.css"
            if f.is_file():
                _dark_css = f.read_text(encoding="utf-8")
                break
    return _dark_css


def _exporter(show_code: bool):
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="kit",
        extra_template_basedirs=[str(TEMPLATES / "nbconvert")],
        exclude_input=not show_code,
        exclude_input_prompt=not show_code,
        exclude_output_prompt=True,
        # belt and braces: the kit template drops these scripts, and the URLs are blank anyway
        require_js_url="",
        mathjax_url="",
        jquery_url="",
        widget_renderer_url="",
        jupyter_widgets_base_url="",
        mermaid_js_url="",
        mermaid_layout_elk_js_url="",
    )


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$", re.M)


def _heading_anchor(text: str) -> str:
    """The id nbconvert gives a markdown heading."""
    return text.replace(" ", "-")


def reader_cells(nb, demo: bool) -> None:
    """Drop what a reader should not see, in place: both parameters cells, ``demo`` cells unless
    ``demo``, and the narrative of sections whose outputs only say that data is missing."""
    from kitlib.display.tables import EMPTY_CLASS

    nb.cells = [c for c in nb.cells if not (tags(c) & set(HIDDEN_TAGS)) and (demo or DEMO_TAG not in tags(c))]

    def empty_only(cell) -> bool:
        outs = cell.get("outputs", [])
        if not outs:
            return True
        for o in outs:
            html = (o.get("data") or {}).get("text/html", "")
            if isinstance(html, list):
                html = "".join(html)
            if o.get("output_type") == "error" or EMPTY_CLASS not in html:
                return False
        return True

    # sections: a heading markdown cell and everything up to the next heading of its level or above
    starts = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and _HEADING.match(c.source.lstrip())]
    drop: set[int] = set()
    for k, i in enumerate(starts):
        level = heading_level(nb.cells[i].source)
        end = len(nb.cells)
        for j in starts[k + 1 :]:
            if heading_level(nb.cells[j].source) <= level:
                end = j
                break
        body = range(i + 1, end)
        code = [j for j in body if nb.cells[j].cell_type == "code"]
        if code and all(empty_only(nb.cells[j]) for j in code) and any(nb.cells[j].get("outputs") for j in code):
            drop.update(j for j in body if nb.cells[j].cell_type == "markdown" and j not in starts)
            first_md = nb.cells[i].source.lstrip().split("\n", 1)[0]
            nb.cells[i].source = first_md  # keep the heading, not the paragraph under it
    nb.cells = [c for j, c in enumerate(nb.cells) if j not in drop]


def toc(nb) -> list[dict]:
    """Level 2 and 3 headings of the markdown cells, with their anchors."""
    out = []
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        for m in _HEADING.finditer(c.source):
            level = len(m.group(1))
            if level in (2, 3):
                text = re.sub(r"[`*_]", "", m.group(2))
                out.append({"level": level, "text": text, "anchor": _heading_anchor(m.group(2))})
    return out


def page_html(nb_path: Path, ctx: PageContext) -> str:
    """HTML for an executed notebook: reader cells only, kit template, offline."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    reader_cells(nb, ctx.demo)
    with _exporter_lock:  # the exporter and its Jinja environment are not shared across threads
        exporter = _exporter(ctx.show_code)
        resources = {
            "kit": {
                "bundle": ctx.bundle,
                "page": ctx.page,
                "pages": ctx.pages,
                "parameters": ctx.parameters,
                "toc": toc(nb),
                "summary_href": ctx.summary_href,
                "css": (TEMPLATES / "report.css").read_text(),
                "dark_theme_css": _dark_theme_css(exporter),
            }
        }
        body, _ = exporter.from_notebook_node(nb, resources=resources)
    return _link_pages(body, {p["html"] for p in ctx.pages})


_NB_LINK = re.compile(r"""href=(['"])(?:[^'"]*/)?([\w.-]+)\.ipynb\1""")


def _link_pages(html_text: str, pages: set[str]) -> str:
    """Links to a notebook (``compaction.ipynb``, as the notebooks write them so they work in
    JupyterLab) point to that notebook's page of the report when it has one."""

    def sub(m):
        page = m.group(2) + ".html"
        return f"href={m.group(1)}{page}{m.group(1)}" if page in pages else m.group(0)

    return _NB_LINK.sub(sub, html_text)


def offline_html(nb_path: Path, show_code: bool = True) -> str:
    """HTML for an executed notebook that loads nothing from the network (one page, no report
    around it)."""
    return page_html(
        Path(nb_path), PageContext(bundle=Path(nb_path).stem, page="", pages=[], show_code=show_code, demo=True)
    )


def heading_level(source: str) -> int:
    """The level of the markdown heading a cell starts with (the cells were picked by _HEADING)."""
    m = _HEADING.match(source.lstrip())
    return len(m.group(1)) if m else 99


# ---------------------------------------------------------------------------------------------
# pages from the kit's Jinja2 templates


_env = None


def render(template: str, **values) -> str:
    global _env
    if _env is None:
        import jinja2

        _env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, trim_blocks=False, lstrip_blocks=False
        )
    return _env.get_template(template).render(css=(TEMPLATES / "report.css").read_text(encoding="utf-8"), **values)
