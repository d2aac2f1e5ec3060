"""Template lineages: which of the catalogue's statements are one Kafka log statement across releases.

When a release drops a template and the next release of the same logger and level brings one that
starts with the same words and holds (nearly) all of the other's words, the two are one lineage,
named by the oldest template's id (the ``template_id`` that :mod:`kitlib.formats.logs.matching`
gives a record). So Kafka 0.10's ``Shrinking ISR for partition [{},{}] from {} to {}`` and 3.9's
``Shrinking ISR from {} to {}. Leader: (...)`` are one lineage.
"""

from __future__ import annotations

import re

from kitlib.formats.logs import statements as st

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def _words(template: str) -> list[str]:
    return _WORD.findall(template.replace("{}", " "))


def lineage(cat: st.Catalogue) -> dict[str, str]:
    """Statement id -> lineage id (the id of the oldest template of its lineage).

    Releases read from class files (listed after those read from source, see
    :func:`statements.extend`) only add to this: a statement's lineage at the last release it has
    from source is decided as if they were not there, and a link at a later release never joins
    two lineages that were apart without them (so no id of the source's catalogue changes)."""
    pos = {r: i for i, r in enumerate(cat.releases)}
    jars = set((cat.notes or {}).get("class_files") or ())
    boundary = max((i for i, r in enumerate(cat.releases) if r not in jars), default=-1)
    parent: dict[str, str] = {}
    first: dict[str, int] = {}
    for s in cat.statements:
        if s.releases:
            first[s.id] = min(first.get(s.id, 1 << 30), pos[s.releases[0]])

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    groups: dict[tuple[str, str], list[st.Statement]] = {}
    for s in cat.statements:
        if s.releases:
            groups.setdefault((s.logger, s.level), []).append(s)
    for late in (False, True):  # the source's links first, then the class files' ones
        for grp in groups.values():
            _link(grp, pos, boundary, late, first, parent, root)
    return {s.id: root(s.id) for s in cat.statements}


def _link(grp: list[st.Statement], pos: dict[str, int], boundary: int, late: bool, first: dict[str, int],
          parent: dict[str, str], root) -> None:  # fmt: skip
    """Join each statement of one logger and level to its successor's lineage (see :func:`lineage`)."""
    starts: dict[int, list[st.Statement]] = {}
    for s in grp:
        starts.setdefault(pos[s.releases[0]], []).append(s)
    for p in grp:
        idx = [pos[r] for r in p.releases]
        last = max(idx) if late else max((i for i in idx if i <= boundary), default=-1)
        nxt = last + 1
        if last < 0 or (nxt > boundary) != late or nxt >= len(pos) or not starts.get(nxt):
            continue
        pw = _words(p.template)
        best, score = None, 0.0
        for s in starts[nxt]:
            sw = _words(s.template)
            if s.id == p.id or min(len(pw), len(sw)) < 2 or pw[:2] != sw[:2]:
                continue
            a, b = set(pw), set(sw)
            ov = len(a & b) / min(len(a), len(b))
            if ov >= 0.75 and ov + len(a & b) / len(a | b) > score:
                best, score = s, ov + len(a & b) / len(a | b)
        if best is not None:
            ra, rb = root(p.id), root(best.id)
            if ra != rb and not (late and first.get(ra, 0) <= boundary and first.get(rb, 0) <= boundary):
                keep, drop = sorted((ra, rb), key=lambda x: (first.get(x, 0), x))
                parent[drop] = keep
