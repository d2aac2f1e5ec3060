"""Postmortem reports: run the triage notebook and every relevant investigation notebook on a
bundle with papermill, convert each to a self-contained HTML page that needs no network, and link
them from an ``index.html`` with the findings summary.

Offline by construction: charts are static SVG (see :mod:`kitlib.display`), and nbconvert's
template is configured with every CDN URL blanked (require.js, MathJax, jQuery, widgets,
mermaid); :func:`offline_html` also removes the empty script tags this leaves.

Example:
    >>> from kitlib.report import report
    >>> result = report("sample_data/compaction", "reports")   # doctest: +SKIP
    >>> result["index"]                                         # doctest: +SKIP
    'reports/compaction/index.html'
"""
from __future__ import annotations

import base64
import json
import re
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kitlib.display import esc
from kitlib.redact import redact_text

_IMG_SVG = re.compile(r'<img alt="[^"]*" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"\s*/?>')
EXEC_TIMEOUT = 600  # seconds per cell


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


def notebooks() -> list[Notebook]:
    """The triage notebook, then every investigation's notebook (from the registry)."""
    from kitlib import registry
    return [Notebook("triage.ipynb", "Triage", lambda b: True)] + [
        Notebook(inv.notebook, inv.title, inv.relevant) for inv in registry.investigations()]


def offline_html(nb_path: Path) -> str:
    """HTML for an executed notebook that loads nothing from the network."""
    import nbformat
    from nbconvert import HTMLExporter
    exporter = HTMLExporter(template_name="lab", require_js_url="", mathjax_url="", jquery_url="",
                            widget_renderer_url="", jupyter_widgets_base_url="", mermaid_js_url="",
                            mermaid_layout_elk_js_url="")
    body, _ = exporter.from_notebook_node(nbformat.read(str(nb_path), as_version=4))
    body = re.sub(r'<script src="">\s*</script>', "", body)
    # nbconvert puts SVG outputs in <img src="data:..."> tags: inline them instead, so the chart
    # is part of the page (text selectable and searchable, checkable as an <svg> element)
    body = _IMG_SVG.sub(lambda m: base64.b64decode(m.group(1)).decode("utf-8"), body)
    body = re.sub(r'<script type="module">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*?</script>', "", body, flags=re.S)
    return body


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
    return any(_is_file(d / m) for m in _NOTES) and any(
        e.is_dir() for e in _entries(d) if not e.name.startswith("."))


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
            return []   # a loose file: path is a bundle
        subs.append(e)
    if not subs or not all(_looks_like_bundle(d) for d in subs):
        return []
    return subs


def report(bundle_path: str | Path, out: str | Path, tz: str | None = None, only: list[str] | None = None,
           timeout: int = EXEC_TIMEOUT, notebook_folder: Path | None = None, log=print) -> dict:
    """Report one bundle into ``out``: ``out/index.html``, one HTML per notebook run, the
    executed notebooks and the ingested tables (``out/tables``). Returns a summary dict with
    ``index``, ``findings`` and per-notebook ``status``. A failing notebook still yields its
    partial HTML and an error line; the others are still written."""
    import kitlib

    from kitlib.sources import check_output
    bundle_path, out = Path(bundle_path), Path(out)
    check_output(bundle_path, out)  # before anything is written or removed
    nb_dir = Path(notebook_folder) if notebook_folder else notebook_dir()
    out.mkdir(parents=True, exist_ok=True)
    tables = out / "tables"
    t0 = time.perf_counter()
    kitlib.ingest(bundle_path, tables, tz=tz, progress=False)  # replaces out/tables only when complete
    bundle = kitlib.load(tables)
    result = kitlib.triage(bundle)
    findings = result.findings
    chosen = [n for n in notebooks() if (nb_dir / n.file).is_file()
              and (only is None or n.file in only or n.file.removesuffix(".ipynb") in only)]
    runs = []
    for n in chosen:
        try:
            relevant = n.relevant(bundle)
        except Exception:  # noqa: BLE001 - a broken predicate should not hide the notebook
            relevant = True
        if not relevant:
            continue
        runs.append(_run_notebook(n, nb_dir, out, tables, tz, timeout, log))
    index = out / "index.html"
    index.write_text(redact_text(_index_html(bundle_path, bundle.summary, findings, result.runs, runs)),
                     encoding="utf-8")
    (out / "findings.json").write_text(redact_text(json.dumps([f.to_dict() for f in findings], indent=2)) + "\n")
    return {"bundle": str(bundle_path), "index": str(index), "findings": [f.id for f in findings],
            "notebooks": runs, "seconds": round(time.perf_counter() - t0, 1)}


def _run_notebook(n: Notebook, nb_dir: Path, out: Path, tables: Path, tz: str | None, timeout: int, log) -> dict:
    import papermill as pm
    executed = out / n.file
    html_path = out / n.file.replace(".ipynb", ".html")
    status = {"notebook": n.file, "title": n.title, "html": html_path.name, "error": ""}
    t = time.perf_counter()
    try:
        pm.execute_notebook(str(nb_dir / n.file), str(executed), parameters={"BUNDLE": str(tables.resolve()), "TZ": tz},
                            cwd=str(nb_dir), kernel_name="python3", execution_timeout=timeout,
                            progress_bar=False, log_output=False,
                            # the kernel's own start-up warnings (TCP on loopback) are noise in a report run
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    except Exception as e:  # noqa: BLE001 - reported in the index, partial HTML still written
        status["error"] = _short_error(e)
    try:
        if executed.is_file():
            redact_notebook(executed)
            html_path.write_text(offline_html(executed), encoding="utf-8")
        else:
            html_path.write_text(f"<html><body><h1>{esc(n.title)}</h1><pre>{esc(status['error'])}</pre></body></html>")
    except Exception as e:  # noqa: BLE001
        status["error"] = status["error"] or f"HTML conversion failed: {e}"
        html_path.write_text(f"<html><body><pre>{esc(traceback.format_exc())}</pre></body></html>")
    status["seconds"] = round(time.perf_counter() - t, 1)
    log(f"  {n.file:24} {'FAILED: ' + status['error'] if status['error'] else 'ok'} ({status['seconds']} s)")
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


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
.sev-critical{color:#b00020}.sev-high{color:#d9480f}.sev-medium{color:#b08800}.sev-low{color:#1c7ed6}
.err{color:#b00020}code{background:#f4f4f4;padding:0 3px}"""


def _index_html(bundle_path: Path, summary, findings, checked, runs) -> str:
    rows = "".join(
        f"<tr><td class='sev-{esc(f.severity)}'>{esc(f.severity)}</td><td><code>{esc(f.id)}</code></td>"
        f"<td>{esc(f.summary)}</td><td>{esc(f.recommendation)}</td>"
        f"<td>{'<br>'.join(esc(str(e['file']) + ':' + str(e['line'])) for e in f.evidence[:3])}</td></tr>"
        for f in findings)
    ftable = (f"<table><tr><th>severity</th><th>id</th><th>summary</th><th>recommended change</th><th>evidence</th></tr>{rows}</table>"
              if findings else "<p>No findings. Checked: " + esc("; ".join(c.checks for c in checked)) + "</p>")
    nbs = "".join(
        f"<li><a href='{esc(r['html'])}'>{esc(r['title'])}</a>"
        + (f" <span class='err'>(notebook failed: {esc(r['error'])})</span>" if r["error"] else "") + "</li>"
        for r in runs)
    span = " → ".join(summary.time_span) if summary.time_span else "no timestamps"
    errs = "".join(f"<li class='err'>{esc(e)}</li>" for e in summary.errors)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>Kafka incident report: {esc(bundle_path.name)}</title>"
            f"<style>{_CSS}</style></head><body><h1>Kafka incident report: {esc(bundle_path.name)}</h1>"
            f"<p>{summary.files} files from hosts {esc(', '.join(summary.hosts))}; {esc(span)}; "
            f"{summary.unparsed_lines:,} unparsed lines.</p>"
            + (f"<ul>{errs}</ul>" if errs else "")
            + f"<h2>Findings</h2>{ftable}<h2>Reports</h2><ul>{nbs}</ul></body></html>")


def report_many(path: str | Path, out: str | Path, tz: str | None = None, log=print, **kw) -> dict:
    """Report every bundle under ``path`` (see :func:`_bundles_in`) into ``out/<bundle>/`` and
    write ``out/index.html`` linking them."""
    from kitlib.sources import check_output
    path, out = Path(path), Path(out)
    check_output(path, out)
    results = []
    for b in _bundles_in(path):
        log(f"{b.name}:")
        try:
            results.append(report(b, out / b.name, tz=tz, log=log, **kw))
        except Exception as e:  # noqa: BLE001 - one bad bundle must not stop the others
            results.append({"bundle": str(b), "index": "", "findings": [], "notebooks": [], "error": _short_error(e)})
            log(f"  FAILED: {_short_error(e)}")
    items = "".join(
        f"<li><a href='{esc(Path(r['bundle']).name)}/index.html'>{esc(Path(r['bundle']).name)}</a>: "
        + (esc(", ".join(r["findings"])) if r["findings"] else "no findings")
        + "".join(f" <span class='err'>({esc(n['notebook'])} failed)</span>" for n in r["notebooks"] if n["error"])
        + (f" <span class='err'>report failed: {esc(r['error'])}</span>" if r.get("error") else "") + "</li>"
        for r in results)
    out.mkdir(parents=True, exist_ok=True)
    index = out / "index.html"
    index.write_text(redact_text(f"<!doctype html><html><head><meta charset='utf-8'><title>Kafka incident kit reports"
                                 f"</title><style>{_CSS}</style></head><body><h1>Kafka incident kit reports</h1>"
                                 f"<ul>{items}</ul></body></html>"), encoding="utf-8")
    return {"index": str(index), "bundles": results}


def register_cli(sub) -> None:
    p = sub.add_parser(
        "report", help="run the notebooks on a bundle and write offline HTML reports",
        description="Execute the triage notebook and every investigation notebook relevant to BUNDLE with "
                    "papermill and write one HTML page per notebook plus index.html into OUT. The pages load "
                    "nothing from the network. If BUNDLE is a folder of bundles (like sample_data/: no files of "
                    "its own but README.md/PROVENANCE.md, and every subfolder a bundle, i.e. with a manifest, or "
                    "with PROVENANCE.md/README.md beside folders of its own), each is reported into OUT/<name>/ "
                    "and OUT/index.html links them. OUT must not be inside or around a bundle. Exit status: 0 all "
                    "notebooks ran, 1 some failed, 2 error.")
    p.add_argument("bundle", help="bundle folder, or a folder of bundles")
    p.add_argument("--out", required=True, help="output folder for the HTML reports")
    p.add_argument("--tz", default=None,
                   help="timezone the logs were written in (default: the bundle manifest's tz, else UTC)")
    p.add_argument("--notebook", action="append", dest="notebooks", metavar="NAME",
                   help="only this notebook (repeatable), e.g. --notebook triage")
    p.add_argument("--timeout", type=int, default=EXEC_TIMEOUT, help="seconds allowed per notebook cell (default 600)")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from kitlib.sources import check_output, shown
    path = Path(args.bundle)
    if not path.exists():
        raise FileNotFoundError(f"bundle not found: {shown(str(path))}")
    check_output(path, args.out)
    kw = dict(tz=args.tz, only=args.notebooks, timeout=args.timeout)
    if path.is_dir() and _bundles_in(path):
        res = report_many(path, args.out, **kw)
        failed = [n for r in res["bundles"] for n in r["notebooks"] if n["error"]] + [r for r in res["bundles"] if r.get("error")]
    else:
        res = report(path, args.out, **kw)
        failed = [n for n in res["notebooks"] if n["error"]]
    print(f"\nreports written: open {Path(res['index']).resolve()}")
    return 1 if failed else 0
