"""Running a report on one bundle: ingest it, triage it, execute the triage notebook and every
relevant investigation notebook with papermill (several at a time, in threads), turn each executed
notebook into its page and write the bundle's summary page last.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kitlib.ingestion.memory import release_memory
from kitlib.redact import redact_text
from kitlib.report.catalog import Notebook, default_bundle, notebook_dir, notebooks
from kitlib.report.jobs import EXEC_TIMEOUT, default_jobs
from kitlib.report.pages import PageContext, page_html, render
from kitlib.report.summary import changes_for, summary_view

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.findings import Triage
    from kitlib.summary import BundleSummary


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
    pinned: dict = field(default_factory=dict)  # a pinned view's parameters (kitlib report --params)
    # the summary page's "what else changed" block, made once with the triage (:func:`prepare`)
    changes: Any = None
    # the file the triage notebook is handed the findings and that block in (:mod:`.handoff`), in a
    # folder of the report's own removed by :func:`finish`; None when nothing is handed
    handed: Path | None = None


def prepare(
    bundle_path: str | Path,
    out: str | Path,
    tz: str | None = None,
    only: list[str] | None = None,
    notebook_folder: Path | None = None,
    cache: bool | None = None,
    pinned: dict | None = None,
) -> BundleReport:
    """Ingest the bundle into ``out/tables``, run triage, and pick the relevant notebooks. ``out``
    must be new, empty or an earlier output of the kit (emptied first: see
    :func:`kitlib.ingestion.guard.claim`); the caller holds its lock.

    A big raw bundle is ingested once into the kit's cache (:mod:`kitlib.ingestion.cache`;
    ``cache`` as :func:`kitlib.load_bundle` takes it) and ``out/tables`` is that store, linked
    (hard links, else copied): triage and every notebook read the one store, and the next report
    or triage of the unchanged bundle parses nothing."""
    import kitlib
    from kitlib.ingestion.cache import cached_store, ingests_apart, link_store
    from kitlib.ingestion.guard import claim
    from kitlib.sources import check_output

    bundle_path, out = Path(bundle_path).absolute(), Path(out).absolute()
    check_output(bundle_path, out)  # before anything is written or removed
    nb_dir = (Path(notebook_folder) if notebook_folder else notebook_dir()).absolute()
    claim(out, "kitlib report")
    tables = out / "tables"
    t0 = time.perf_counter()
    with ingests_apart():  # a new entry's ingest leaves none of its memory with the report's process
        store = cached_store(bundle_path, tz, None, cache)
    if store is not None:
        link_store(store, tables)
    else:
        # replaces out/tables only when complete; the derived tables are built now and written, since
        # triage and every notebook's kernel read them (built on first use, each kernel would build them)
        kitlib.ingest(bundle_path, tables, tz=tz, progress=False, derive=True)
    bundle = kitlib.load(tables)
    pinned = dict(pinned or {})
    if pinned.get("START") or pinned.get("END") or pinned.get("HOSTS"):  # the summary shows the pinned view
        bundle = kitlib.window(bundle, pinned.get("START"), pinned.get("END"), pinned.get("HOSTS"))
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
    summary = bundle.summary
    del bundle  # the summary page reads its cited lines and the store again
    release_memory(collect=True)  # what the detectors freed, before the comparison reads the store
    changes = changes_for(tables, pinned, result.findings)
    release_memory(collect=True)  # what the ingest, the detectors and the comparison held, while the notebooks run
    plan = BundleReport(bundle_path, out, tables, summary, result, chosen, nb_dir, t0, pinned=pinned, changes=changes)
    plan.handed = hand_on(plan, tz)
    return plan


def hand_on(plan: BundleReport, tz: str | None) -> Path | None:
    """Write what the triage notebook is handed (:mod:`.handoff`): the findings and the changes
    block, when the notebook's view is the one they were made on (a pinned view's hosts, or a time
    zone other than the ingest's, make the notebook run its own). None when there is nothing to
    hand on or it could not be written."""
    import shutil
    import tempfile
    import weakref

    from kitlib.report import handoff

    takers = [n for n in plan.chosen if "HANDED" in _declared(plan.nb_dir / n.file)]
    if not takers or plan.pinned.get("HOSTS") or plan.pinned.get("TZ") not in (None, tz):
        return None
    params = notebook_parameters(plan, takers[0], tz)
    try:
        folder = Path(tempfile.mkdtemp(prefix="kitlib-report-"))
    except OSError:
        return None
    weakref.finalize(plan, shutil.rmtree, folder, True)
    try:
        view = handoff.key(params["BUNDLE"], params["TZ"], params.get("START"), params.get("END"))
        return handoff.write(folder, view, plan.triage, plan.changes)
    except Exception:  # noqa: BLE001 - the notebook then runs the detectors itself
        shutil.rmtree(folder, True)
        return None


def _declared(path: Path) -> dict:
    """The parameters a notebook declares (papermill's reading of its ``parameters`` cell)."""
    import papermill as pm

    try:
        return pm.inspect_notebook(str(path))
    except Exception:  # noqa: BLE001 - a notebook papermill cannot read fails when it runs
        return {}


def submit(plan: BundleReport, pool: ThreadPoolExecutor, tz: str | None, timeout: int, show_code: bool, log) -> None:
    """Queue the plan's notebooks on ``pool``."""
    pages = [{"html": n.file.replace(".ipynb", ".html"), "title": n.title} for n in plan.chosen]
    for n in plan.chosen:
        plan.futures.append(pool.submit(_run_notebook, n, plan, pages, tz, timeout, show_code, log))


def finish(plan: BundleReport) -> dict:
    """Wait for the plan's notebooks, write ``findings.json`` and then ``index.html``, last and
    whole (a report cut short has no index page, so it never looks complete)."""
    import shutil

    from kitlib.ingestion.guard import seal, write_atomic

    runs = [f.result() for f in plan.futures]
    if plan.handed is not None:
        shutil.rmtree(plan.handed.parent, True)
    findings = plan.triage.findings
    index = plan.out / "index.html"
    view = summary_view(plan, runs)
    write_atomic(plan.out / "findings.json", redact_text(json.dumps([f.to_dict() for f in findings], indent=2)) + "\n")
    write_atomic(index, redact_text(render("bundle.html.j2", s=view)))
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
    cache: bool | None = None,
    pinned: dict | None = None,
) -> dict:
    """Report one bundle into ``out``: ``out/index.html`` (the summary), one HTML per notebook
    run, the executed notebooks and the ingested tables (``out/tables``). ``jobs`` notebooks run at
    once (default: the core count). Returns a summary dict with ``index``, ``findings`` and
    per-notebook ``status``. A failing notebook still yields its partial HTML and an error line;
    the others are still written. ``out`` is locked while written; one the kit did not write is
    refused (:class:`kitlib.ingestion.guard.OutputRefused`) before anything is touched. ``pinned``
    is a view pinned in explore mode (:func:`kitlib.params.read_pinned`): its window (START, END,
    HOSTS) and TZ go to every notebook that takes them, and every page says which view it shows."""
    from kitlib.ingestion.guard import check_replaceable, output_lock
    from kitlib.sources import check_output

    check_output(bundle_path, out)
    check_replaceable(out)
    with output_lock(out), ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        plan = prepare(bundle_path, out, tz, only, notebook_folder, cache, pinned)
        submit(plan, pool, tz, timeout, show_code, log)
        return finish(plan)


def quiet_kernel_manager():
    """A kernel manager whose kernels write nothing to this process's terminal. A kernel's own
    errors (a traceback its event loop logs while shutting down, seen now and then as "Socket
    operation on non-socket") are not the user's: what a cell raises reaches the report through
    the executed notebook, and a kernel that dies is reported by the notebook runner."""
    import subprocess

    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd, **kw):  # type: ignore[override]
            kw["stderr"] = subprocess.DEVNULL
            return await super()._async_launch_kernel(kernel_cmd, **kw)

    return QuietKernelManager


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
            parameters=notebook_parameters(plan, n, tz),
            # the kernel starts in the notebooks' folder; papermill's own cwd= would
            # chdir this whole process, which notebooks running in threads must not do
            resources={"metadata": {"path": str(plan.nb_dir)}},
            kernel_name="python3",
            execution_timeout=timeout,
            progress_bar=False,
            log_output=False,
            # the kernel's own start-up warnings (TCP on loopback) are noise in a report run
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            kernel_manager_class=quiet_kernel_manager(),
        )
    except Exception as e:  # noqa: BLE001 - reported in the index, partial HTML still written
        status["error"] = short_error(e)
    default = default_bundle(plan.nb_dir / n.file)
    ctx = PageContext(
        bundle=plan.bundle_path.name,
        page=html_path.name,
        pages=pages,
        show_code=show_code,
        demo=default is not None and default == plan.bundle_path.resolve(),
        parameters=[("time zone", tz or "bundle manifest, else UTC"), *view_parameters(plan.pinned)],
    )
    try:
        if executed.is_file():
            redact_notebook(executed)
            html_path.write_text(page_html(executed, ctx), encoding="utf-8")
        else:
            html_path.write_text(render("failed.html.j2", title=n.title, error=status["error"]), encoding="utf-8")
    except Exception as e:  # noqa: BLE001
        status["error"] = status["error"] or f"HTML conversion failed: {short_error(e)}"
        html_path.write_text(render("failed.html.j2", title=n.title, error=status["error"]), encoding="utf-8")
    status["seconds"] = round(time.perf_counter() - t, 1)
    log(
        f"  {plan.bundle_path.name}/{n.file:24} {'FAILED: ' + status['error'] if status['error'] else 'ok'} "
        f"({status['seconds']} s)"
    )
    return status


def notebook_parameters(plan: BundleReport, n: Notebook, tz: str | None) -> dict:
    """What papermill passes to notebook ``n``: BUNDLE and TZ, and of a pinned view the
    parameters the notebook declares (START, END, HOSTS; TZ when not given on the command line)."""
    out: dict[str, Any] = {"BUNDLE": str(plan.tables.resolve()), "TZ": tz}
    if plan.handed is not None and "HANDED" in _declared(plan.nb_dir / n.file):
        out["HANDED"] = str(plan.handed)
    if plan.pinned:
        import papermill as pm

        declared = pm.inspect_notebook(str(plan.nb_dir / n.file))
        for key in ("START", "END", "HOSTS", "TZ"):
            if key in declared and plan.pinned.get(key) is not None and (key != "TZ" or tz is None):
                out[key] = plan.pinned[key]
    return out


def view_parameters(pinned: dict) -> list[tuple[str, str]]:
    """The lines a page's header shows for a pinned view: its window, hosts and search.

    Example:
        >>> view_parameters({"START": "2026-11-23T12:00:00+00:00", "END": None, "SEARCH": {"text": "ISR", "level": "WARN+"}})
        [('window', '2026-11-23T12:00:00+00:00 → the end of the bundle (pinned view)'), ('search (pinned view)', 'text ISR, level WARN+')]
    """
    if not pinned:
        return []
    out = []
    lo, hi = pinned.get("START"), pinned.get("END")
    out.append(("window", f"{lo or 'the start of the bundle'} → {hi or 'the end of the bundle'} (pinned view)"))
    if pinned.get("HOSTS"):
        hosts = pinned["HOSTS"]
        out.append(("hosts", hosts if isinstance(hosts, str) else ", ".join(map(str, hosts))))
    search = pinned.get("SEARCH") or {}
    if isinstance(search, dict) and any(search.values()):
        out.append(("search (pinned view)", ", ".join(f"{k} {v}" for k, v in search.items() if v)))
    return out


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


def short_error(e: Exception) -> str:
    name = getattr(e, "ename", type(e).__name__)
    value = getattr(e, "evalue", str(e))
    return f"{name}: {value}".strip()[:500]
