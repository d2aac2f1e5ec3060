"""The kit's notebooks: where they are, which of them a report may run, and a copy of them for an
analyst to work in.

The notebooks' home is the repository's top-level ``notebooks/`` folder; a wheel carries them as
``kitlib/notebooks/``. :func:`notebook_dir` finds them either way. :func:`copy_notebooks` copies
them into a folder of the analyst's (``kitlib notebooks DIR``): the installed ones are never edited
or run in place, so their stored outputs stay those of the sample bundles.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# the file beside copied notebooks naming them and their contents as the kit wrote them
COPY_RECORD = ".kitlib-notebooks"


def notebook_dir() -> Path:
    """The folder of the kit's notebooks: ``kitlib/notebooks`` in an installed wheel, else the
    top-level ``notebooks/`` of the source checkout the package is imported from."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "notebooks"
    if (shipped / "triage.ipynb").is_file():
        return shipped
    return package.parent / "notebooks"


def copy_notebooks(dest: str | Path) -> list[Path]:
    """Copy the kit's notebooks into ``dest`` (created when missing) for an analyst to open, run
    and change there; returns the notebooks written. A notebook copied there before is replaced
    only while it is as the kit wrote it: when any of them was changed since, or a file of the
    same name is someone else's, nothing is written (:class:`kitlib.ingestion.guard.OutputRefused`). The
    names and contents written are recorded in ``dest/.kitlib-notebooks``."""
    import hashlib
    import json

    from kitlib.ingestion.guard import OutputRefused, write_atomic

    src, dest = notebook_dir(), Path(dest)
    if dest.exists() and not dest.is_dir():
        raise OutputRefused(f"{dest} exists and is not a folder: give a new folder or an existing one")
    record = dest / COPY_RECORD
    try:
        wrote = json.loads(record.read_text(encoding="utf-8")).get("wrote", {})
    except (OSError, ValueError, AttributeError):
        wrote = {}
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    names = sorted(p.name for p in src.glob("*.ipynb"))
    if not names:
        raise FileNotFoundError(f"no notebooks found in {src}")
    theirs = [
        n for n in names if (dest / n).exists() and (not (dest / n).is_file() or wrote.get(n) != digest(dest / n))
    ]
    if theirs:
        raise OutputRefused(
            f"{dest} holds {', '.join(theirs)}, not as the kit wrote it: refusing to replace; "
            "move it out, or give another folder"
        )
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for n in names:
        write_atomic(dest / n, (src / n).read_text(encoding="utf-8"))
        written.append(dest / n)
    wrote.update({n: digest(dest / n) for n in names})
    write_atomic(record, json.dumps({"writer": "kitlib notebooks", "from": str(src), "wrote": wrote}, indent=1) + "\n")
    return written


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


def default_bundle(nb_path: Path) -> Path | None:
    """The ``BUNDLE`` a notebook's parameters cell names, resolved against its folder."""
    import nbformat

    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook fails later, with its own message
        return None
    for c in nb.cells:
        if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", []):
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
