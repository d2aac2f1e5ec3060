"""Postmortem reports: run the triage notebook and every relevant investigation notebook on a
bundle with papermill (several at a time), convert each to a self-contained HTML page, and write a
summary page per bundle (what happened, when, where, findings ranked by severity with their fix,
an evidence appendix quoting the cited lines) and, for a folder of bundles, an index of them all.

Rendering uses templates only: the notebook pages an nbconvert template inheriting ``lab``
(``kitlib/templates/nbconvert/kit``), the summary and index pages Jinja2 templates
(``kitlib/templates/*.html.j2``), one stylesheet for all (``report.css``: a dark scheme and print
rules that follow the reader's settings).

What a reader sees of a notebook is decided by cell tags, so any notebook gets the same treatment:
code is hidden unless ``show_code``; the ``parameters`` cell and papermill's
``injected-parameters`` cell are always left out (the values used are listed in the page header);
cells tagged ``demo`` appear only when the report is on the notebook's own default bundle (the
sample it was written for); a section whose outputs are all :func:`kitlib.display.missing` lines
collapses to its heading and those lines.

Offline by construction: charts are static SVG inlined in the page, the template drops every
script nbconvert's ``lab`` template would load.

Example:
    >>> from kitlib.report import report
    >>> result = report("sample_data/compaction", "reports")   # doctest: +SKIP
    >>> result["index"]                                         # doctest: +SKIP
    'reports/compaction/index.html'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.findings import Triage
    from kitlib.summary import BundleSummary

import ast
import json
import os
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kitlib.redact import redact_text

EXEC_TIMEOUT = 600  # seconds per cell
TEMPLATES = Path(__file__).parent / "templates"
HIDDEN_TAGS = ("parameters", "injected-parameters")
DEMO_TAG = "demo"
EVIDENCE_PER_FINDING = 10  # cited lines quoted per finding in the appendix
CONTEXT_LINES = 1  # lines shown before and after each cited line
RECORD_LINES = 8  # continuation lines of a multi-line record shown after it
SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}


def notebook_dir() -> Path:
    """The folder of the kit's notebooks, shipped inside the package (``kitlib/notebooks``)."""
    from importlib.resources import files

    return Path(str(files("kitlib") / "notebooks"))


@dataclass(frozen=True)
class Notebook:
    """A notebook the report may run: the triage page, or an investigation's."""

    file: str
    title: str
    relevant: Callable
    question: str = ""


def notebooks() -> list[Notebook]:
    """The triage notebook, then every investigation's notebook (from the registry)."""
    from kitlib import registry

    return [Notebook("triage.ipynb", "Triage", lambda b: True, "what the bundle holds and every finding")] + [
        Notebook(inv.notebook, inv.title, inv.relevant, inv.question) for inv in registry.investigations()
    ]


def default_jobs() -> int:
    """Notebooks run at once by default: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------------
# notebook pages


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


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


_HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*#*\s*$", re.M)


def _heading_anchor(text: str) -> str:
    """The id nbconvert gives a markdown heading."""
    return text.replace(" ", "-")


def reader_cells(nb, demo: bool) -> None:
    """Drop what a reader should not see, in place: both parameters cells, ``demo`` cells unless
    ``demo``, and the narrative of sections whose outputs only say that data is missing."""
    from kitlib.display.tables import EMPTY_CLASS

    nb.cells = [c for c in nb.cells if not (_tags(c) & set(HIDDEN_TAGS)) and (demo or DEMO_TAG not in _tags(c))]

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
        level = _heading_level(nb.cells[i].source)
        end = len(nb.cells)
        for j in starts[k + 1 :]:
            if _heading_level(nb.cells[j].source) <= level:
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


def default_bundle(nb_path: Path) -> Path | None:
    """The ``BUNDLE`` a notebook's parameters cell names, resolved against its folder."""
    import nbformat

    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook fails later, with its own message
        return None
    for c in nb.cells:
        if c.cell_type == "code" and "parameters" in _tags(c):
            try:
                tree = ast.parse(c.source)
            except SyntaxError:
                return None
            for node in tree.body:
                if (
                    isinstance(node, (ast.Assign, ast.AnnAssign))
                    and isinstance(node.value, ast.Constant)
                    and any(
                        getattr(t, "id", "") == "BUNDLE"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    )
                ):
                    return (nb_path.parent / str(node.value.value)).resolve()
    return None


# ---------------------------------------------------------------------------------------------
# one bundle


def _heading_level(source: str) -> int:
    """The level of the markdown heading a cell starts with (the cells were picked by _HEADING)."""
    m = _HEADING.match(source.lstrip())
    return len(m.group(1)) if m else 99


@dataclass
class BundleReport:
    """A bundle being reported: what was ingested and found, and the notebooks to run."""

    bundle_path: Path
    out: Path
    tables: Path
    summary: BundleSummary
    triage: Triage
    chosen: list[Notebook]
    nb_dir: Path
    t0: float
    up_href: str = ""
    futures: list[Future] = field(default_factory=list)


def prepare(
    bundle_path: str | Path,
    out: str | Path,
    tz: str | None = None,
    only: list[str] | None = None,
    notebook_folder: Path | None = None,
) -> BundleReport:
    """Ingest the bundle into ``out/tables``, run triage, and pick the relevant notebooks. ``out``
    must be new, empty or an earlier output of the kit (emptied first: see
    :func:`kitlib.guard.claim`); the caller holds its lock."""
    import kitlib
    from kitlib.guard import claim
    from kitlib.sources import check_output

    bundle_path, out = Path(bundle_path).absolute(), Path(out).absolute()
    check_output(bundle_path, out)  # before anything is written or removed
    nb_dir = (Path(notebook_folder) if notebook_folder else notebook_dir()).absolute()
    claim(out, "kitlib report")
    tables = out / "tables"
    t0 = time.perf_counter()
    # replaces out/tables only when complete; the derived tables are built now and written, since
    # triage and every notebook's kernel read them (built on first use, each kernel would build them)
    kitlib.ingest(bundle_path, tables, tz=tz, progress=False, derive=True)
    bundle = kitlib.load(tables)
    result = kitlib.triage(bundle)
    chosen = []
    for n in notebooks():
        if not (nb_dir / n.file).is_file() or (
            only is not None and n.file not in only and n.file.removesuffix(".ipynb") not in only
        ):
            continue
        try:
            relevant = n.relevant(bundle)
        except Exception:  # noqa: BLE001 - a broken predicate should not hide the notebook
            relevant = True
        if relevant:
            chosen.append(n)
    return BundleReport(bundle_path, out, tables, bundle.summary, result, chosen, nb_dir, t0)


def submit(plan: BundleReport, pool: ThreadPoolExecutor, tz: str | None, timeout: int, show_code: bool, log) -> None:
    """Queue the plan's notebooks on ``pool``."""
    pages = [{"html": n.file.replace(".ipynb", ".html"), "title": n.title} for n in plan.chosen]
    for n in plan.chosen:
        plan.futures.append(pool.submit(_run_notebook, n, plan, pages, tz, timeout, show_code, log))


def finish(plan: BundleReport) -> dict:
    """Wait for the plan's notebooks, write ``findings.json`` and then ``index.html``, last and
    whole (a report cut short has no index page, so it never looks complete)."""
    from kitlib.guard import seal, write_atomic

    runs = [f.result() for f in plan.futures]
    findings = plan.triage.findings
    index = plan.out / "index.html"
    view = summary_view(plan, runs)
    write_atomic(plan.out / "findings.json", redact_text(json.dumps([f.to_dict() for f in findings], indent=2)) + "\n")
    write_atomic(index, redact_text(_render("bundle.html.j2", s=view)))
    seal(plan.out)
    return {
        "bundle": str(plan.bundle_path),
        "index": str(index),
        "findings": [f.id for f in findings],
        "severities": [f.severity for f in findings],
        "summaries": [f.summary for f in findings],
        "worst": view["worst"],
        "span": view["span"],
        "hosts": view["hosts_text"],
        "notebooks": runs,
        "seconds": round(time.perf_counter() - plan.t0, 1),
    }


def report(
    bundle_path: str | Path,
    out: str | Path,
    tz: str | None = None,
    only: list[str] | None = None,
    timeout: int = EXEC_TIMEOUT,
    notebook_folder: Path | None = None,
    log=print,
    jobs: int | None = None,
    show_code: bool = False,
) -> dict:
    """Report one bundle into ``out``: ``out/index.html`` (the summary), one HTML per notebook
    run, the executed notebooks and the ingested tables (``out/tables``). ``jobs`` notebooks run at
    once (default: the core count). Returns a summary dict with ``index``, ``findings`` and
    per-notebook ``status``. A failing notebook still yields its partial HTML and an error line;
    the others are still written. ``out`` is locked while written; one the kit did not write is
    refused (:class:`kitlib.guard.OutputRefused`) before anything is touched."""
    from kitlib.guard import check_replaceable, output_lock
    from kitlib.sources import check_output

    check_output(bundle_path, out)
    check_replaceable(out)
    with output_lock(out), ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        plan = prepare(bundle_path, out, tz, only, notebook_folder)
        submit(plan, pool, tz, timeout, show_code, log)
        return finish(plan)


def _run_notebook(
    n: Notebook, plan: BundleReport, pages: list[dict], tz: str | None, timeout: int, show_code: bool, log
) -> dict:
    import papermill as pm

    executed = plan.out / n.file
    html_path = plan.out / n.file.replace(".ipynb", ".html")
    status: dict[str, Any] = {
        "notebook": n.file,
        "title": n.title,
        "question": n.question,
        "html": html_path.name,
        "error": "",
    }
    t = time.perf_counter()
    try:
        pm.execute_notebook(
            str(plan.nb_dir / n.file),
            str(executed),
            parameters={"BUNDLE": str(plan.tables.resolve()), "TZ": tz},
            # the kernel starts in the notebooks' folder; papermill's own cwd= would
            # chdir this whole process, which notebooks running in threads must not do
            resources={"metadata": {"path": str(plan.nb_dir)}},
            kernel_name="python3",
            execution_timeout=timeout,
            progress_bar=False,
            log_output=False,
            # the kernel's own start-up warnings (TCP on loopback) are noise in a report run
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
        )
    except Exception as e:  # noqa: BLE001 - reported in the index, partial HTML still written
        status["error"] = _short_error(e)
    default = default_bundle(plan.nb_dir / n.file)
    ctx = PageContext(
        bundle=plan.bundle_path.name,
        page=html_path.name,
        pages=pages,
        show_code=show_code,
        demo=default is not None and default == plan.bundle_path.resolve(),
        parameters=[("time zone", tz or "bundle manifest, else UTC")],
    )
    try:
        if executed.is_file():
            redact_notebook(executed)
            html_path.write_text(page_html(executed, ctx), encoding="utf-8")
        else:
            html_path.write_text(_render("failed.html.j2", title=n.title, error=status["error"]), encoding="utf-8")
    except Exception as e:  # noqa: BLE001
        status["error"] = status["error"] or f"HTML conversion failed: {_short_error(e)}"
        html_path.write_text(_render("failed.html.j2", title=n.title, error=status["error"]), encoding="utf-8")
    status["seconds"] = round(time.perf_counter() - t, 1)
    log(
        f"  {plan.bundle_path.name}/{n.file:24} {'FAILED: ' + status['error'] if status['error'] else 'ok'} "
        f"({status['seconds']} s)"
    )
    return status


def redact_notebook(path: Path) -> None:
    """Rewrite an executed notebook with every cell output passed through the redaction rules
    (text, HTML, streams, error messages), so neither it nor its HTML holds a secret."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    changed = False

    def fix(v):
        nonlocal changed
        if isinstance(v, str):
            r = redact_text(v)
            changed |= r != v
            return r
        if isinstance(v, list):
            return [fix(x) for x in v]
        return v

    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if "text" in o:
                o["text"] = fix(o["text"])
            for mime, v in list(o.get("data", {}).items()):
                if mime.startswith("text/") or mime.endswith("json") and isinstance(v, str):
                    o["data"][mime] = fix(v)
            if "evalue" in o:
                o["evalue"] = fix(o["evalue"])
            if "traceback" in o:
                o["traceback"] = fix(o["traceback"])
    if changed:
        nbformat.write(nb, str(path))


def _short_error(e: Exception) -> str:
    name = getattr(e, "ename", type(e).__name__)
    value = getattr(e, "evalue", str(e))
    return f"{name}: {value}".strip()[:500]


# ---------------------------------------------------------------------------------------------
# the summary page


_env = None


def _render(template: str, **values) -> str:
    global _env
    if _env is None:
        import jinja2

        _env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, trim_blocks=False, lstrip_blocks=False
        )
    return _env.get_template(template).render(css=(TEMPLATES / "report.css").read_text(encoding="utf-8"), **values)


def span_text(time_span) -> str:
    """``2024-05-22 00:00:01 → 00:01:03 UTC (62 s)`` from a summary's ISO time span.

    Example:
        >>> span_text(["2024-05-22T00:00:01+00:00", "2024-05-23T01:00:00+00:00"])
        '2024-05-22 00:00:01 → 2024-05-23 01:00:00 UTC (25.0 h)'
        >>> span_text(None)
        'no timestamps in the bundle'
    """
    import pandas as pd

    if not time_span:
        return "no timestamps in the bundle"
    lo, hi = (pd.Timestamp(t) for t in time_span[:2])
    lo = lo.tz_localize("UTC") if lo.tzinfo is None else lo.tz_convert("UTC")
    hi = hi.tz_localize("UTC") if hi.tzinfo is None else hi.tz_convert("UTC")
    secs = (hi - lo).total_seconds()
    dur = (
        f"{secs:.0f} s"
        if secs < 120
        else f"{secs / 60:.0f} min"
        if secs < 7200
        else f"{secs / 3600:.1f} h"
        if secs < 3 * 86400
        else f"{secs / 86400:.1f} days"
    )
    end = f"{hi:%H:%M:%S}" if lo.date() == hi.date() else f"{hi:%Y-%m-%d %H:%M:%S}"
    return f"{lo:%Y-%m-%d %H:%M:%S} → {end} UTC ({dur})"


def summary_view(plan: BundleReport, runs: list[dict]) -> dict:
    """Everything the summary template shows, as plain values."""
    from kitlib.findings import value_text

    s, findings = plan.summary, sorted(plan.triage.findings, key=lambda f: SEVERITY_RANK.get(f.severity, 9))
    pages = {r["notebook"]: r for r in runs}
    lines = cited_lines(plan.bundle_path, [e for f in findings for e in f.evidence[:EVIDENCE_PER_FINDING]])
    fviews = []
    for f in findings:
        page = pages.get(Path(f.notebook).name) if f.notebook else None
        ev = []
        for e in f.evidence[:EVIDENCE_PER_FINDING]:
            key = (str(e.get("file") or ""), _line_number(e.get("line")))
            got = lines.get(key)
            ev.append(
                {
                    "host": e.get("host") or "",
                    "where": f"{key[0]}:{key[1]}" if key[1] else key[0],
                    "ts": _short_ts(e.get("ts")),
                    "text": got[1] if got else (e.get("text") or ""),
                    "before": got[0] if got else [],
                    "after": got[2] if got else [],
                    "quoted": e.get("text") or "",
                }
            )
        fviews.append(
            {
                "id": f.id,
                "severity": f.severity,
                "summary": f.summary,
                "recommendation": f.recommendation,
                "numbers": [(k, value_text(v)) for k, v in f.numbers.items()],
                "page": page,
                "evidence": ev,
                "more": max(0, len(f.evidence) - EVIDENCE_PER_FINDING),
            }
        )
    runs_ = plan.triage.runs
    worst = findings[0].severity if findings else "none"
    if findings:
        more = f" (and {len(findings) - 1} more finding{'s' if len(findings) > 2 else ''})" if len(findings) > 1 else ""
        headline = f"{findings[0].severity.capitalize()}: {findings[0].summary}{more}"
    else:
        ran = sum(r.status == "ok" for r in runs_)
        headline = f"No problem found: {ran} checks ran on this bundle and none fired."
    return {
        "bundle": plan.bundle_path.name,
        "up_href": plan.up_href,
        "headline": headline,
        "worst": worst,
        "span": span_text(s.time_span),
        "hosts": list(s.hosts),
        "hosts_text": f"{len(s.hosts)} host{'s' if len(s.hosts) != 1 else ''}: " + ", ".join(s.hosts)
        if s.hosts
        else "no hosts",
        "files_text": f"{s.files} files ({s.bytes:,} bytes)",
        "formats_text": ", ".join(f"{k} ({v})" for k, v in s.formats.items()) or "–",
        "unparsed": f"{s.unparsed_lines:,}",
        "errors": list(s.errors),
        "findings": fviews,
        "pages": runs,
        "checked_text": "Checked: " + "; ".join(r.checks for r in runs_ if r.status == "ok"),
        "checks": [
            {"investigation": r.investigation, "checks": r.checks, "status": r.status, "reason": r.reason}
            for r in runs_
        ],
        "checks_ok": sum(r.status == "ok" for r in runs_),
        "checks_skipped": sum(r.status == "skipped" for r in runs_),
        "checks_failed": sum(r.status == "failed" for r in runs_),
    }


def _short_ts(ts) -> str:
    return str(ts).replace("T", " ")[:23] if ts else ""


# ---------------------------------------------------------------------------------------------
# cited lines


_JSON_SECRET = re.compile(r'("([^"]+)"\s*:\s*)"((?:[^"\\]|\\.)*)"')


def redact_line(text: str) -> str:
    """A raw line of a bundle file made safe to show: the same masking ingest applies to log
    messages and config dumps, plus ``"key": "value"`` pairs of JSON captures by key.

    Example:
        >>> redact_line('{"ssl.truststore.password": "hunter2", "batch.size": "16384"}')
        '{"ssl.truststore.password": "[redacted]", "batch.size": "16384"}'
    """
    from kitlib.redact import REDACTED, is_secret_key, redact_message

    text = _JSON_SECRET.sub(
        lambda m: m.group(1) + (f'"{REDACTED}"' if is_secret_key(m.group(2)) else f'"{m.group(3)}"'), text
    )
    return redact_message(text)


def cited_lines(bundle_path: Path, evidence: list[dict], context: int = CONTEXT_LINES) -> dict:
    """``{(file, line): (lines before, the line, lines after)}`` read from the bundle's own files
    (gzip and rotated files too), redacted (:func:`redact_line`). Files are read once each, in
    blocks, only up to the last cited line; a file that cannot be read is skipped (the finding's
    own quote is shown instead)."""
    from kitlib.sources import discover, read_chunks

    wanted: dict[str, set[int]] = {}
    for e in evidence:
        line = _line_number(e.get("line"))
        if e.get("file") and line:
            wanted.setdefault(str(e["file"]), set()).add(line)
    if not wanted:
        return {}
    try:
        sources = {s.rel: s for s in discover(bundle_path)}
    except Exception:  # noqa: BLE001 - e.g. an ingested store: no raw files to quote
        return {}
    out = {}
    for rel, nums in wanted.items():
        src = sources.get(rel)
        if src is None:
            continue
        lo, hi = max(1, min(nums) - context), max(nums) + max(context, RECORD_LINES)
        keep: dict[int, str] = {}
        seen, tail = 0, b""
        try:
            for chunk in read_chunks(src):
                data = tail + chunk
                parts = data.split(b"\n")
                tail = parts.pop()
                first = seen + 1
                seen += len(parts)
                if seen >= lo:
                    for i in range(max(lo, first), min(hi, seen) + 1):
                        keep[i] = parts[i - first].decode("utf-8", "replace").rstrip("\r")
                if seen >= hi:
                    break
            else:
                if tail and seen + 1 <= hi:
                    keep[seen + 1] = tail.decode("utf-8", "replace").rstrip("\r")
        except Exception:  # noqa: BLE001 - a broken file: quote what was read
            pass
        for n in nums:
            if n in keep:
                after: list[str] = []
                i = n + 1
                # the rest of a multi-line record (a config dump, a stack trace), else one line of context
                while i in keep and len(after) < RECORD_LINES and not _RECORD_START.match(keep[i]):
                    after.append(keep[i])
                    i += 1
                if not after:
                    after = [keep[j] for j in range(n + 1, n + context + 1) if j in keep]
                before = [keep[i] for i in range(n - context, n) if i in keep]
                # redacted as one text: a value on the line after its key is masked too
                shown = redact_line("\n".join([*before, keep[n], *after])).split("\n")
                if len(shown) != len(before) + 1 + len(after):  # never: redaction keeps the lines
                    shown = [redact_line(t) for t in [*before, keep[n], *after]]
                out[(rel, n)] = (shown[: len(before)], shown[len(before)], shown[len(before) + 1 :])
    return out


_RECORD_START = re.compile(r"^\[?\d{4}-\d\d-\d\d")


def _line_number(v) -> int | None:
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return n if n > 0 else None


# ---------------------------------------------------------------------------------------------
# a folder of bundles


BUNDLE_MARKS = ("PROVENANCE.md", "README.md", "bundle.yaml", "bundle.yml", "bundle.json")
_MANIFESTS = ("bundle.yaml", "bundle.yml", "bundle.json")
_NOTES = ("PROVENANCE.md", "README.md")


def _is_file(p: Path) -> bool:
    try:
        return p.is_file()
    except OSError:
        return False


def _entries(path: Path) -> list[Path]:
    try:
        return sorted(path.iterdir())
    except OSError:
        return []


def _looks_like_bundle(d: Path) -> bool:
    """A folder that is a bundle of its own: it has a manifest, or notes (PROVENANCE.md or
    README.md) next to host folders of its own. A host folder with a README beside its logs is
    not one."""
    if any(_is_file(d / m) for m in _MANIFESTS):
        return True
    return any(_is_file(d / m) for m in _NOTES) and any(e.is_dir() for e in _entries(d) if not e.name.startswith("."))


def _bundles_in(path: Path) -> list[Path]:
    """The bundles of a folder of bundles (like sample_data/), or [] when ``path`` is one bundle.

    ``path`` is a folder of bundles only when it has no manifest of its own, no loose files of
    its own (other than notes: README.md, PROVENANCE.md, hidden files), and every visible
    subfolder is a bundle itself (see :func:`_looks_like_bundle`). Otherwise it is one bundle,
    and folders inside it are its hosts, whatever notes they hold."""
    if not path.is_dir() or any(_is_file(path / m) for m in _MANIFESTS):
        return []
    subs = []
    for e in _entries(path):
        if e.name.startswith("."):
            continue
        try:
            is_dir = e.is_dir()
        except OSError:
            return []
        if not is_dir:
            if e.name in _NOTES:
                continue
            return []  # a loose file: path is a bundle
        subs.append(e)
    if not subs or not all(_looks_like_bundle(d) for d in subs):
        return []
    return subs


def report_many(
    path: str | Path,
    out: str | Path,
    tz: str | None = None,
    log=print,
    jobs: int | None = None,
    show_code: bool = False,
    only: list[str] | None = None,
    timeout: int = EXEC_TIMEOUT,
    notebook_folder: Path | None = None,
) -> dict:
    """Report every bundle under ``path`` (see :func:`_bundles_in`) into ``out/<bundle>/`` and
    write ``out/index.html`` linking them. Notebooks of all bundles share one pool of ``jobs``
    workers: a bundle is ingested while the previous one's notebooks run. ``out`` is locked
    while written and emptied first; one the kit did not write is refused before anything is
    touched."""
    from kitlib.guard import check_replaceable, claim, output_lock
    from kitlib.sources import check_output

    path, out = Path(path).absolute(), Path(out).absolute()
    check_output(path, out)
    check_replaceable(out)
    with output_lock(out):
        claim(out, "kitlib report")
        return _report_bundles(path, out, tz, log, jobs, show_code, only, timeout, notebook_folder)


def _report_bundles(
    path: Path,
    out: Path,
    tz: str | None,
    log,
    jobs: int | None,
    show_code: bool,
    only: list[str] | None,
    timeout: int,
    notebook_folder: Path | None,
) -> dict:
    from kitlib.guard import seal, write_atomic

    results: list[dict] = []
    plans: list[tuple[Path, BundleReport | None, str]] = []
    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        for b in _bundles_in(path):
            try:
                plan: BundleReport | None = prepare(b, out / b.name, tz, only, notebook_folder)
                assert plan is not None
                plan.up_href = "../index.html"
                submit(plan, pool, tz, timeout, show_code, log)
                plans.append((b, plan, ""))
            except Exception as e:  # noqa: BLE001 - one bad bundle must not stop the others
                plans.append((b, None, _short_error(e)))
                log(f"  {b.name}: FAILED: {_short_error(e)}")
        for b, plan, error in plans:
            if plan is None:
                results.append(
                    {
                        "bundle": str(b),
                        "index": "",
                        "findings": [],
                        "severities": [],
                        "summaries": [],
                        "worst": "none",
                        "span": "",
                        "hosts": "",
                        "notebooks": [],
                        "error": error,
                    }
                )
                continue
            try:
                results.append(finish(plan))
            except Exception as e:  # noqa: BLE001
                results.append(
                    {
                        "bundle": str(b),
                        "index": "",
                        "findings": [],
                        "severities": [],
                        "summaries": [],
                        "worst": "none",
                        "span": "",
                        "hosts": "",
                        "notebooks": [],
                        "error": _short_error(e),
                    }
                )
    rows = []
    for r in results:
        name = Path(r["bundle"]).name
        rows.append(
            {
                "name": name,
                "dir": name,
                "href": f"{name}/index.html",
                "worst": r["worst"],
                "span": r["span"],
                "hosts": r["hosts"],
                "error": r.get("error", ""),
                "findings": [
                    {"id": i, "severity": s, "summary": t}
                    for i, s, t in zip(r["findings"], r["severities"], r["summaries"])
                ],
                "failed": [n["notebook"] for n in r["notebooks"] if n["error"]],
            }
        )
    rows.sort(key=lambda b: (0 if b["error"] else 1, SEVERITY_RANK.get(b["worst"], 9), b["name"]))
    index = out / "index.html"
    write_atomic(index, redact_text(_render("reports.html.j2", bundles=rows)))
    seal(out)
    return {"index": str(index), "bundles": results}


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
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    path = Path(args.bundle)
    if not path.exists():
        raise FileNotFoundError(f"bundle not found: {path}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError("--jobs must be at least 1")
    kw = dict(tz=args.tz, only=args.notebooks, timeout=args.timeout, jobs=args.jobs, show_code=args.show_code)
    if path.is_dir() and _bundles_in(path):
        res = report_many(path, args.out, **kw)
        failed = [n for r in res["bundles"] for n in r["notebooks"] if n["error"]] + [
            r for r in res["bundles"] if r.get("error")
        ]
    else:
        res = report(path, args.out, **kw)
        failed = [n for n in res["notebooks"] if n["error"]]
    print(f"\nreports written: open {Path(res['index']).resolve()}")
    return 1 if failed else 0


__all__ = ["report", "report_many", "offline_html", "page_html", "cited_lines", "redact_line"]
