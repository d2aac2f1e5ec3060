"""Where the cluster-health findings' counts come from (``counted_from``): each count as a pandas
query that selects exactly the rows it counts (:func:`~kitlib.findings.extent.exact_query`), so
that a finding rests on every line it counts (its extent) and anyone can select them again."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.findings.extent import exact_query


def fenced_counts(ne: pd.DataFrame, grp: pd.DataFrame, node, kinds: list[str]) -> dict[str, tuple[str, str]]:
    """Where :func:`~.detectors.detect_broker_fenced`'s counts of one node come from (``counted_from``): the
    ``node_events`` rows of ``grp`` (all of them: ``events``; those of each kind: the kind's own
    number), each as a query that selects exactly them (:func:`~kitlib.findings.extent.exact_query`). A
    node named by its host (its lines carry no broker id) is its rows without a node from that
    host; a node named by id is its rows with that id, and its rows without one from the hosts
    that wrote them when there are such."""
    plain = isinstance(ne.index, pd.RangeIndex) and ne.index.start == 0 and ne.index.step == 1
    at = grp.index.to_numpy(np.int64) if plain else ne.index.get_indexer(grp.index)
    if (at < 0).any():
        return {}
    if isinstance(node, str):
        whose = f"node.isna() and host == {node!r}"
    else:
        bare = grp["node"].isna().to_numpy(bool)
        hosts = sorted(set(grp["host"].iloc[np.flatnonzero(bare)].astype(str).tolist())) if bare.any() else []
        whose = f"(node == {int(node)} or (node.isna() and host in {hosts!r}))" if hosts else f"node == {int(node)}"
    query = exact_query(ne, at, f"kind in {sorted(kinds)!r} and {whose}")
    out = {} if query is None else {"events": ("node_events", query)}
    if len(kinds) == 1:  # the rows of its one kind are all of them
        return {**out, kinds[0]: out["events"]} if out else {}
    kind = grp["kind"].astype(str).to_numpy()
    for k in kinds:
        query = exact_query(ne, at[kind == k], f"kind == {k!r} and {whose}")
        if query is not None:
            out[k] = ("node_events", query)
    return out


def shrink_counts(pchg: pd.DataFrame, rows: np.ndarray, node: int) -> dict[str, tuple[str, str]]:
    """Where :func:`~.detectors.detect_isr_shrink`'s count of broker ``node``'s departures comes from
    (``counted_from``): the ``partition_changes`` shrinks at positions ``rows``, as a query that
    selects exactly them (:func:`~kitlib.findings.extent.exact_query`): the shrinks whose removed list
    names the broker, less those a stall, a GC pause or a controller failover explains."""
    base = f"kind == 'isr_shrink' and removed.str.contains('(?:^|,) *{node} *(?:,|$)', na=False)"
    query = exact_query(pchg, rows, base)
    return {} if query is None else {"shrinks": ("partition_changes", query)}
