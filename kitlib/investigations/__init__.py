"""Investigations: one package each, declared once.

An investigation is the unit the kit grows by. Its package under ``kitlib/investigations/``
holds what it derives from log records (extractors), its model and detectors, and its charts; its
notebook is ``notebooks/<name>.ipynb``. The package's ``__init__`` imports those modules
and declares the investigation with :class:`Investigation` in a module-level ``INVESTIGATION``.
The report, the triage page's "where to look next", the notebooks' finding filters, ``kitlib
investigations`` and the tests all read that declaration; nothing lists investigations by hand.

A third-party package adds one the same way and announces the module under the ``kitlib.
investigations`` entry-point group (see CONTRIBUTING.md).

Example:
    >>> from kitlib import registry
    >>> registry.investigation("compaction").notebook
    'compaction.ipynb'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.bundle import Bundle


@dataclass(frozen=True)
class Investigation:
    """What an investigation is, declared once in its package.

    - ``name``: one name used everywhere (package folder, notebook stem, docs);
    - ``title`` and ``question``: what it is called and the question it answers;
    - ``tables``: the tables it reads (its notebook and detectors);
    - ``finding_ids``: every finding id its detectors may emit (each id belongs to exactly one
      investigation);
    - ``relevant``: whether a bundle holds what it looks at (the report runs its notebook then);
    - ``notebook``: the notebook file under ``notebooks/`` (default ``<name>.ipynb``);
    - ``package``: the module that declared it (detectors defined under it belong to it);
    - ``examples``: its sample bundles under ``sample_data/`` and the finding ids each must yield
      (the tests check every sample bundle against every investigation's examples; a bundle no
      investigation names must yield nothing).
    """

    name: str
    title: str
    question: str
    tables: tuple[str, ...]
    finding_ids: tuple[str, ...]
    relevant: Callable[[Bundle], bool]
    notebook: str = ""
    package: str = ""
    examples: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.notebook:
            object.__setattr__(self, "notebook", f"{self.name}.ipynb")

    def to_dict(self) -> dict:
        """The JSON shape ``kitlib investigations --json`` prints."""
        return {
            "name": self.name,
            "title": self.title,
            "question": self.question,
            "notebook": self.notebook,
            "tables": list(self.tables),
            "finding_ids": list(self.finding_ids),
            "package": self.package,
            "examples": {k: list(v) for k, v in self.examples.items()},
        }


def has_rows(bundle: Bundle, table: str, condition: Callable | None = None) -> bool:
    """True when ``table`` has rows in the bundle (and ``condition(frame)`` holds, if given).

    Example:
        >>> from kitlib.bundle import Bundle
        >>> has_rows(Bundle("x", {}), "commits")
        False
    """
    df = bundle.table(table)
    if not len(df):
        return False
    return bool(condition(df)) if condition else True


def metrics_mention(*words: str) -> Callable:
    """A condition on the metrics table: some MBean name contains one of ``words``."""

    def condition(df) -> bool:
        col = df["mbean"].astype("string")
        return any(col.str.contains(w, regex=False).any() for w in words)

    return condition
