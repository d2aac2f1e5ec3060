"""What a record is counted under, its *key*: ``t:<lineage id>`` for a record one of Kafka's log
statements matches (``events.template_id``), else ``p:<logger> <pattern>``, its first line with
every token that holds a digit, every path and every dotted host name masked as ``<*>``
(:data:`MASK`); and the words a key is shown in (:func:`describe`: a statement's newest wording
from the catalogue, or the pattern)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.formats.logs import lineage as lineages
from kitlib.formats.logs import statements as st

# a token holding a digit, a path, a dotted host name: the variable parts of a line
MASK = r"[\w.:/@=+-]*[0-9][\w.:/@=+-]*|(?:/[\w.@+-]+)+|\b(?:[A-Za-z][\w-]*\.){2,}[A-Za-z][\w-]*\b"
FIRST_LINE_CHARS = 240


def plain(col) -> pa.Array:
    """A column as plain strings (one chunk, dictionary decoded)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return col.cast(pa.string()) if not pa.types.is_string(col.type) else col


def keys(t: pa.Table) -> pa.Array:
    """Each record's key: ``t:<template id>`` or ``p:<logger> <masked first line>`` (the first line
    is cut and masked only for the records without a template)."""
    tid = plain(t.column("template_id"))
    out = pc.binary_join_element_wise("t", tid, ":")
    none = np.asarray(pc.is_null(tid).to_numpy(zero_copy_only=False), bool)
    if not none.any():
        return out
    rows = pa.array(np.flatnonzero(none))
    msg = pc.utf8_slice_codeunits(plain(t.column("message")).take(rows), 0, FIRST_LINE_CHARS)
    first = pc.replace_substring_regex(msg, r"\n[\s\S]*", "")
    masked = pc.replace_substring_regex(first, MASK, "<*>")
    logger = pc.fill_null(plain(t.column("logger")).take(rows), "")
    pattern = pc.binary_join_element_wise(logger, masked, " ")
    pattern = pc.binary_join_element_wise("p", pattern, ":")
    # scatter the patterns into the rows without a template
    pos = np.arange(len(tid))
    pos[none] = len(tid) + np.arange(int(none.sum()))
    return pa.concat_arrays([out.cast(pa.string()), pattern.cast(pa.string())]).take(pa.array(pos))


@dataclass(frozen=True)
class Text:
    """A lineage's newest wording (typed), its logger and level, and the releases it spans."""

    template: str
    logger: str
    level: str
    first: str
    last: str


def catalogue_text() -> dict[str, Text]:
    """Lineage id -> the newest wording of it (typed), its logger, level and the releases spanned.
    A wording read from Kafka's source comes before one read only from class files, whose slots
    are typed by the words around them alone (``{any}`` where the source says ``{topic}``)."""
    cat = st.load()
    fam = lineages.lineage(cat)
    pos = {r: i for i, r in enumerate(cat.releases)}
    out: dict[str, tuple[tuple[bool, int], Text]] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for s in cat.statements:
        if not s.releases:
            continue
        f = fam[s.id]
        first[f] = min(first.get(f, 1 << 30), pos[s.first])
        last[f] = max(last.get(f, -1), pos[s.last])
        rank = (s.from_source, pos[s.last])
        if f not in out or rank > out[f][0]:
            out[f] = (rank, Text(s.typed(), s.logger, s.level, s.first, s.last))
    return {
        f: Text(v.template, v.logger, v.level, cat.releases[first[f]], cat.releases[last[f]])
        for f, (_, v) in out.items()
    }


_TEXT: dict[str, Text] = {}


def describe(key: str) -> str:
    """A key in words: the statement's newest wording, or the pattern."""
    if key.startswith("t:"):
        if not _TEXT:
            _TEXT.update(catalogue_text())
        tid = key[2:]
        got = _TEXT.get(tid)
        return got.template if got else tid
    return key[2:]


def text_of(template_id: str) -> Text | None:
    """The catalogue's text of a lineage id (None for an id it does not hold)."""
    if not _TEXT:
        _TEXT.update(catalogue_text())
    return _TEXT.get(template_id)
