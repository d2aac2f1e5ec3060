"""A folder of bundles (like ``sample_data/``): which of its subfolders are bundles, each reported
into ``OUT/<bundle>/`` with one pool of notebook workers for them all, and ``OUT/index.html``
linking them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kitlib.findings import Severity
from kitlib.redact import redact_text
from kitlib.report.pages import render
from kitlib.report.run import EXEC_TIMEOUT, BundleReport, default_jobs, finish, prepare, report, short_error, submit

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


def bundles_in(path: Path) -> list[Path]:
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
    cache: bool | None = None,
) -> dict:
    """Report every bundle under ``path`` (see :func:`bundles_in`) into ``out/<bundle>/`` and
    write ``out/index.html`` linking them. Notebooks of all bundles share one pool of ``jobs``
    workers: a bundle is ingested while the previous one's notebooks run. ``out`` is locked
    while written and emptied first; one the kit did not write is refused before anything is
    touched."""
    from kitlib.ingestion.guard import check_replaceable, claim, output_lock
    from kitlib.sources import check_output

    path, out = Path(path).absolute(), Path(out).absolute()
    check_output(path, out)
    check_replaceable(out)
    with output_lock(out):
        claim(out, "kitlib report")
        return _report_bundles(path, out, tz, log, jobs, show_code, only, timeout, notebook_folder, cache)


def report_path(path: str | Path, out: str | Path, **kw) -> tuple[dict, list[dict]]:
    """Report ``path`` into ``out``: with :func:`report_many` when it is a folder of bundles
    (:func:`bundles_in`), else with :func:`~kitlib.report.run.report` (``kw`` go to either).
    Returns what that returned and what failed: the notebooks that did not run, and the bundles
    of a folder that could not be reported at all."""
    path = Path(path)
    if path.is_dir() and bundles_in(path):
        res = report_many(path, out, **kw)
        failed = [n for r in res["bundles"] for n in r["notebooks"] if n["error"]]
        return res, failed + [r for r in res["bundles"] if r.get("error")]
    res = report(path, out, **kw)
    return res, [n for n in res["notebooks"] if n["error"]]


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
    cache: bool | None = None,
) -> dict:
    from kitlib.ingestion.guard import seal, write_atomic

    results: list[dict] = []
    plans: list[tuple[Path, BundleReport | None, str]] = []
    with ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
        for b in bundles_in(path):
            try:
                plan: BundleReport | None = prepare(b, out / b.name, tz, only, notebook_folder, cache)
                assert plan is not None
                plan.up_href = "../index.html"
                submit(plan, pool, tz, timeout, show_code, log)
                plans.append((b, plan, ""))
            except Exception as e:  # noqa: BLE001 - one bad bundle must not stop the others
                plans.append((b, None, short_error(e)))
                log(f"  {b.name}: FAILED: {short_error(e)}")
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
                        "error": short_error(e),
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
    rows.sort(key=lambda b: (0 if b["error"] else 1, Severity.rank_of(b["worst"]), b["name"]))
    index = out / "index.html"
    write_atomic(index, redact_text(render("reports.html.j2", bundles=rows)))
    seal(out)
    return {"index": str(index), "bundles": results}
