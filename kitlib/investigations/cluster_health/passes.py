"""The regex passes behind ``partition_changes`` and ``node_events`` (:mod:`.state`), in fewer and
cheaper Arrow kernel calls.

- Both tables are built from the same batch of records (one selection, :data:`.wording.CONTAINS`):
  the records' messages, first lines and wording codes are made once for the two builders
  (:func:`shared`).
- The rule of each record is found by wording groups as :func:`kitlib.extract.first_rule_by_wording`
  finds it (same answer, same captures handed to :func:`kitlib.extract.rule_groups`), with a
  group's capture pass tried anchored at the start of the line first (:func:`captures`): a rule
  that matches where the line starts has there its leftmost match, so its groups are those of a
  search; only the lines it does not match so are searched with the lazy prefix. Anchored, RE2
  runs its bit-state engine from the first character alone instead of from every position.
"""

from __future__ import annotations

import re
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.extract import (
    LAZY_GROUPS,
    _literal,
    _named,
    arrow_messages,
    first_lines,
    first_rule,
    first_rule_by_wording,
    hits,
    may_match_earlier,
    wording_codes,
)
from kitlib.investigations.cluster_health.wording import NODE_KEYS, NODE_RULES, PARTITION_KEYS, PARTITION_RULES

_LAST: dict = {}  # the one frame whose texts are held: {"ref": weakref, "texts": (messages, first lines, codes)}


def shared(events: pd.DataFrame) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The messages, first lines and wording codes (:func:`kitlib.extract.wording_codes`) of
    ``events``, made once for the two builders that read the same batch in turn (kept while that
    frame lives, for the last frame only)."""
    ref = _LAST.get("ref")
    if ref is not None and ref() is events and _LAST.get("rows") == len(events):
        return _LAST["texts"]
    msgs = arrow_messages(events)
    texts = (msgs, first_lines(msgs), wording_codes(events))
    _LAST.clear()
    try:
        _LAST.update(ref=weakref.ref(events, lambda _: _LAST.clear()), rows=len(events), texts=texts)
    except TypeError:  # (a frame that cannot be referred to weakly: not kept)
        pass
    return texts


def rules(events: pd.DataFrame) -> tuple[tuple[np.ndarray, dict], tuple[np.ndarray, dict]]:
    """The rule of each record of ``events`` among ``partition_changes``' rules and among
    ``node_events``' (index or -1) with the captures found on the way (:func:`rules_of_sets` on
    the records' first lines), made once for the two builders as :func:`shared` is."""
    _, first, codes = shared(events)
    if "rules" not in _LAST:
        sets = [([p for _, p in PARTITION_RULES], PARTITION_KEYS), ([p for _, p in NODE_RULES], NODE_KEYS)]
        got = rules_of_sets(first, codes, sets)
        if _LAST.get("texts") is None:  # (a frame not kept: nothing to share)
            return got[0], got[1]
        _LAST["rules"] = (got[0], got[1])
    return _LAST["rules"]


def captures(texts: pa.Array, pattern: str, anchored: bool) -> pa.Array:
    """The extraction of ``pattern``'s groups from each text (a null struct where it does not match),
    the same as :func:`kitlib.extract._captures` gives: with ``anchored``, first where the text
    starts, then the lazy-prefix search only on the texts that failed there."""
    named = _named(pattern)
    if not anchored:
        return pc.extract_regex(texts, "^(?s:.*?)(?:" + named + ")")
    got = pc.extract_regex(texts, "^(?:" + named + ")")
    miss = np.asarray(pc.is_null(got).to_numpy(zero_copy_only=False), bool)
    if not miss.any():
        return got
    at = np.flatnonzero(miss)
    again = pc.extract_regex(texts.take(pa.array(at)), "^(?s:.*?)(?:" + named + ")")
    # the two extractions' rows in text order: the anchored ones where they hit, the searched ones elsewhere
    order = np.empty(len(texts), np.int64)
    order[~miss] = np.flatnonzero(~miss)
    order[at] = len(texts) + np.arange(len(at))
    return pa.concat_arrays([got, again]).take(pa.array(order))


def rules_by_wording(
    texts: pa.Array,
    patterns: list[str],
    keys: list[tuple[str, ...]],
    hint: np.ndarray,
    found: dict[int, list[tuple[np.ndarray, pa.Array]]],
) -> np.ndarray:
    """Index of the first of ``patterns`` each text matches (-1: none), with the extractions the
    groups' passes made collected in ``found`` (rule -> ``(rows, extraction)``), as
    :func:`kitlib.extract.first_rule_by_wording` with ``captures`` gives them, for few ``hint``
    codes (its lazy way: the keys are looked for only in a group whose first text matches no rule,
    and in what a group leaves over). A group's texts are copied out once; the rule's pass is
    anchored where the group's first text holds the rule's match at its start."""
    out = np.full(len(texts), -1, dtype=np.int16)
    if not len(texts):
        return out
    if not all(keys) or len(np.unique(hint)) > LAZY_GROUPS:  # (many groups: the keys first, there)
        return first_rule_by_wording(texts, patterns, keys, hint, found)
    any_key = "|".join(_literal(k) for k in sorted({k for ks in keys for k in ks}))
    order = np.argsort(hint, kind="stable")
    starts = np.flatnonzero(np.r_[True, hint[order][1:] != hint[order][:-1]])
    todo = []
    for group in np.split(order, starts[1:]):
        left = np.sort(group)
        keyed = False  # every text in ``left`` holds a key
        for _ in range(len(patterns) + 1):  # a new pattern each time round (or the keys once)
            if not len(left):
                break
            part = texts if len(left) == len(texts) else texts.take(pa.array(left))
            sample = part[0].as_py()
            r = -1 if sample is None else next((i for i, p in enumerate(patterns) if re.search(p, sample)), -1)
            if r < 0:
                if keyed:
                    break
                left = left[hits(part, any_key)]  # (those without a key match nothing)
                keyed = True
                continue
            got = captures(part, patterns[r], re.match(patterns[r], sample) is not None)
            hit = np.asarray(pc.is_valid(got).to_numpy(zero_copy_only=False), bool)
            if not hit[0]:  # (Python's and Arrow's regexes disagree on it): in order, below
                todo.append(left[:1])
                left = left[1:]
                continue
            mine, left = left[hit], left[~hit]
            sub = part if len(mine) == len(part) else part.filter(pa.array(hit))
            doubt = may_match_earlier(sub, patterns, keys, r)
            todo.append(mine[doubt])
            out[mine[~doubt]] = r
            if not doubt.all():
                at = np.flatnonzero(hit)
                at = at if not doubt.any() else at[~doubt]
                found.setdefault(r, []).append((mine[~doubt], got if len(at) == len(got) else got.take(pa.array(at))))
        if not keyed and len(left):
            left = left[hits(texts.take(pa.array(left)), any_key)]
        todo.append(left)
    rest = np.sort(np.concatenate(todo)) if todo else np.zeros(0, np.int64)
    if len(rest):
        out[rest] = first_rule(texts.take(pa.array(rest)), patterns)
    return out


RuleSet = tuple[list[str], list[tuple[str, ...]]]  # (patterns, their literal keys)


def rules_of_sets(
    texts: pa.Array, hint: np.ndarray, sets: list[RuleSet]
) -> list[tuple[np.ndarray, dict[int, list[tuple[np.ndarray, pa.Array]]]]]:
    """:func:`rules_by_wording` for several sets of rules on the same texts (both tables' rules on
    one batch), with one pass of literal keys per wording group for all the sets: the keys of the
    sets whose rules the group's first text matches none of (a text holding none matches none) and
    of the earlier rules each matched rule must be told apart from (a text holding none is that
    rule's) are looked for at once; the texts holding one are then checked set by set. What a
    group leaves over (texts its rule does not match, or holding keys of a set none of whose rules
    its first text matched) is searched again set by set (:func:`rules_by_wording`); the texts that
    may match an earlier rule, by every rule in order. Returns ``(rule index per text, captures)``
    per set, as :func:`rules_by_wording` gives them."""
    outs = [np.full(len(texts), -1, dtype=np.int16) for _ in sets]
    founds: list[dict] = [{} for _ in sets]
    if not len(texts):
        return list(zip(outs, founds))
    if not all(all(k) for _, k in sets) or len(np.unique(hint)) > LAZY_GROUPS:
        return [(rules_by_wording(texts, p, k, hint, f), f) for (p, k), f in zip(sets, founds)]
    all_keys = [sorted({k for ks in keys for k in ks}) for _, keys in sets]
    again: list[list[np.ndarray]] = [[] for _ in sets]  # searched again by wording, set by set
    todo: list[list[np.ndarray]] = [[] for _ in sets]  # tried on every rule in order
    order = np.argsort(hint, kind="stable")
    starts = np.flatnonzero(np.r_[True, hint[order][1:] != hint[order][:-1]])
    for group in np.split(order, starts[1:]):
        rows = np.sort(group)
        part = texts if len(rows) == len(texts) else texts.take(pa.array(rows))
        sample = part[0].as_py()
        plans: list[tuple | None] = []  # per set: (rule, the extraction, which texts it matched, keys to look for)
        wanted: set[str] = set()
        for s, (patterns, keys) in enumerate(sets):
            r = -1 if sample is None else next((i for i, p in enumerate(patterns) if re.search(p, sample)), -1)
            if r < 0:
                plans.append((r, None, None, all_keys[s]))
                wanted.update(all_keys[s])
                continue
            got = captures(part, patterns[r], re.match(patterns[r], sample) is not None)
            hit = np.asarray(pc.is_valid(got).to_numpy(zero_copy_only=False), bool)
            if not hit[0]:  # (Python's and Arrow's regexes disagree on it): the group searched again
                again[s].append(rows)
                plans.append(None)
                continue
            again[s].append(rows[~hit])
            doubt = np.zeros(len(rows), bool)
            others: list[str] = []
            mine = part if hit.all() else part.filter(pa.array(hit))
            for j in range(r):
                if any(kj in kr for kj in keys[j] for kr in keys[r]):  # it holds j's key: try j
                    doubt[hit] |= hits(mine, patterns[j])
                else:
                    others += keys[j]
            plans.append((r, got, hit, doubt, sorted(set(others))))
            wanted.update(others)
        flagged = np.zeros(len(rows), bool)  # texts holding a key of some set: checked set by set
        if wanted and any(p is not None for p in plans):
            flagged = hits(part, "|".join(_literal(k) for k in sorted(wanted)))
        some = part.filter(pa.array(flagged)) if flagged.any() else None
        for s, plan in enumerate(plans):
            if plan is None:
                continue
            if plan[0] < 0:  # texts with this set's keys: searched again
                held = np.zeros(len(rows), bool)
                if some is not None:
                    held[flagged] = hits(some, "|".join(_literal(k) for k in plan[3]))
                again[s].append(rows[held])
                continue
            r, got, hit, doubt, others = plan
            if others and some is not None:
                doubt[flagged] |= hits(some, "|".join(_literal(k) for k in others))
            doubt &= hit
            todo[s].append(rows[doubt])
            sure = hit & ~doubt
            outs[s][rows[sure]] = r
            if sure.any():
                at = np.flatnonzero(sure)
                founds[s].setdefault(r, []).append((rows[sure], got if len(at) == len(got) else got.take(pa.array(at))))
    for s, (patterns, keys) in enumerate(sets):
        left = np.sort(np.concatenate(again[s])) if again[s] else np.zeros(0, np.int64)
        if len(left):
            more: dict = {}
            outs[s][left] = rules_by_wording(texts.take(pa.array(left)), patterns, keys, hint[left], more)
            for r, pieces in more.items():
                founds[s].setdefault(r, []).extend((left[at], got) for at, got in pieces)
        rest = np.sort(np.concatenate(todo[s])) if todo[s] else np.zeros(0, np.int64)
        if len(rest):
            outs[s][rest] = first_rule(texts.take(pa.array(rest)), patterns)
    return list(zip(outs, founds))
