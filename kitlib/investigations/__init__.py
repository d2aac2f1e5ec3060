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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kitlib.findings import Severity

if TYPE_CHECKING:  # pragma: no cover
    from kitlib.bundle import Bundle


@dataclass(frozen=True)
class FindingKind:
    """One finding id an investigation's detectors may emit: the ``id``, the ``severity`` it has
    unless the evidence makes it worse or milder, and what it means in one line. The findings
    catalogue (``docs/findings.md``, ``python -m kitlib.investigations.catalogue``) lists them.

    Example:
        >>> FindingKind("demo-x", "high", "something demonstrated").severity.rank
        1
    """

    id: str
    severity: Severity
    meaning: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", Severity.of(self.severity))


@dataclass(frozen=True)
class Rows:
    """Rows of ``table`` that make an investigation relevant. With no ``column``, any row; with a
    ``column``, a row where it is set, or, when ``among``, ``mentions`` or ``other_than`` is
    given, where it is one of ``among``, contains one of ``mentions`` as text, or is none of
    ``other_than``. A bare table name in ``relevant_when`` stands for ``Rows(name)``.

    Example:
        >>> Rows("metrics", "mbean", mentions=("BytesInPerSec",)).table
        'metrics'
    """

    table: str
    column: str = ""
    among: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    other_than: tuple[str, ...] = ()


@dataclass(frozen=True)
class Investigation:
    """What an investigation is, declared once in its package.

    - ``name``: one name used everywhere (package folder, notebook stem, docs);
    - ``title`` and ``question``: what it is called and the question it answers;
    - ``tables``: the tables it reads (its notebook and detectors);
    - ``findings``: every finding its detectors may emit, as :class:`FindingKind` (each id belongs
      to exactly one investigation); ``finding_ids`` lists their ids;
    - ``relevant_when``: the rows that make a bundle worth its notebook (the report runs it
      then): table names and :class:`Rows`, any one of them enough; see :func:`relevant`;
    - ``notebook``: the notebook file under ``notebooks/`` (default ``<name>.ipynb``);
    - ``package``: the module that declared it (detectors defined under it belong to it);
    - ``examples``: its sample bundles under ``sample_data/`` and the finding ids each must yield
      (the tests check every sample bundle against every investigation's examples; a bundle no
      investigation names must yield nothing);
    - ``risks``: its findings are configuration risks rather than incidents: the triage and the
      report list them in a block of their own after the incident findings, so a risk never
      hides an outage;
    - ``loggers``: the loggers of the Kafka code it is about (a name also stands for the loggers
      under it and its inner classes), so its notebook can show what changed among them alone
      (``kitlib.changes(bundle, window, investigation=name)``).
    """

    name: str
    title: str
    question: str
    tables: tuple[str, ...]
    findings: tuple[FindingKind, ...]
    relevant_when: tuple[str | Rows, ...]
    notebook: str = ""
    package: str = ""
    examples: dict[str, tuple[str, ...]] = field(default_factory=dict)
    risks: bool = False
    loggers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.notebook:
            object.__setattr__(self, "notebook", f"{self.name}.ipynb")
        object.__setattr__(self, "relevant_when", tuple(self.relevant_when))

    @property
    def finding_ids(self) -> tuple[str, ...]:
        """The ids of ``findings``, in their declared order."""
        return tuple(k.id for k in self.findings)

    @property
    def relevance(self) -> tuple[Rows, ...]:
        """``relevant_when`` with every bare table name as :class:`Rows`."""
        return tuple(Rows(r) if isinstance(r, str) else r for r in self.relevant_when)

    def relevant(self, bundle: Bundle) -> bool:
        """Whether ``bundle`` holds what this investigation looks at (:func:`relevant`)."""
        return relevant(self, bundle)

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
            "loggers": list(self.loggers),
        }


def relevant(inv: Investigation, bundle: Bundle) -> bool:
    """True when ``bundle`` has rows that make ``inv`` relevant: any entry of its
    ``relevant_when`` matching is enough, looked at in their declared order.

    Example:
        >>> from kitlib.bundle import Bundle
        >>> inv = Investigation("demo", "Demo", "?", ("commits",), (), ("commits",))
        >>> relevant(inv, Bundle("x", {}))
        False
    """
    return any(_matches(rows, bundle) for rows in inv.relevance)


def _matches(rows: Rows, bundle: Bundle) -> bool:
    # on an ingest output the rows are counted and only the asked column read, never the whole
    # table (a big bundle's group lines are hundreds of MB with their text)
    count = getattr(bundle, "rows", None)
    if not (int(count(rows.table)) if callable(count) else len(bundle.table(rows.table))):
        return False
    if not rows.column:
        return True
    read = getattr(bundle, "columns", None)
    col = (read(rows.table, [rows.column]) if callable(read) else bundle.table(rows.table))[rows.column]
    if rows.among:
        return bool(col.astype("string").isin(rows.among).any())
    if rows.mentions:
        text = col.astype("string")
        return any(text.str.contains(w, regex=False).any() for w in rows.mentions)
    if rows.other_than:
        return bool((~col.isin(rows.other_than)).any())
    return bool(col.notna().any())
