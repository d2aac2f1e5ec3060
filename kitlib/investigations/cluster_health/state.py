"""Partition and node state from the broker and controller logs -> ``partition_changes`` (ISR
shrink/expand/update, leaders and followers, offline and unclean elections) and ``node_events``
(controller changes, fencing and session loss, log-directory failures, out-of-memory).

The wording each table is read from, release by release, is in :mod:`.wording`.

Records are picked by an Arrow regex over the messages of every logger except the request,
authorizer and cleaner logs; classification and captures are Arrow regex kernels over the picked
first lines, each wording (template id, else logger) tried on the rule its first record matches,
the two tables' rules found in one search over a batch both builders read in turn
(:func:`.passes.rules`), and the rows are put together column by column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import (
    arrow_messages,
    extractor,
    first_lines,
    group_arrays,
    hits,
    quotes,
    rule_groups,
)
from kitlib.investigations.cluster_health.passes import rules, shared
from kitlib.investigations.cluster_health.wording import (
    CAUSES,
    CONTAINS,
    NODE_RULES,
    PARTITION_RULES,
    REPORTER,
    _partition_fields,
    wanted_logger,
)

tables.declare(
    "partition_changes",
    "Partition state seen in broker and controller logs: ISR shrink/expand/update, "
    "leader and follower transitions, offline partitions and unclean elections, one row per record.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "isr_shrink, isr_expand, isr_updated, leader, follower, leader_change, "
            "offline, offline_dir_leader, unclean",
        ),
        ("topic", "str", "topic (KRaft unclean-election lines name the topic id instead)"),
        ("partition", "int", "partition"),
        ("reporter", "int", "node id that wrote the line (from its prefix), when it names one"),
        ("leader", "int", "leader after the change (-1: none, the partition is offline)"),
        ("epoch", "int", "leader epoch, when given"),
        ("isr_before", "str", "ISR before (comma-separated broker ids)"),
        ("isr_after", "str", "ISR after"),
        ("removed", "str", "brokers that left the ISR (shrink) / out-of-sync replicas named"),
        ("added", "str", "brokers that joined the ISR (expand)"),
        ("under_min_isr", "bool", "the line says (under-min-isr)"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line"),
    ],
)
tables.declare(
    "node_events",
    "Broker and controller state seen in logs: controller elections and resignations, "
    "fencing, heartbeat and ZooKeeper session loss, log-directory failures, out-of-memory, one row per "
    "record.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "controller_active, controller_renounce, controller_epoch, fenced, "
            "broker_failed, unfenced, controlled_shutdown, heartbeat_timeout, "
            "zk_session_timeout, zk_session_expired, log_dir_error, log_dir_offline, "
            "log_dir_shutdown, log_dir_halt, oom",
        ),
        (
            "node",
            "int",
            "the node the event is about (the fenced broker, the new controller...); for "
            "events about the writer itself, the writer's id when the line names it",
        ),
        ("reporter", "int", "node id that wrote the line (from its prefix), when it names one"),
        ("epoch", "int", "controller epoch, when given"),
        ("dir", "str", "log directory (log-dir events)"),
        ("partitions", "str", "partitions named (log-dir events), comma-separated"),
        ("cause", "str", "why: 'No space left on device', the exception, 'session has timed out', ..."),
        ("waited_ms", "int", "ZooKeeper: ms without hearing from the server"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line"),
    ],
)


def _first_lines(msgs: pa.Array) -> pa.Array:
    """Each message up to its first newline (:func:`~kitlib.extract.first_lines`)."""
    return first_lines(msgs)


def _text(col: pd.Series) -> pd.Series:
    """``col.astype("string")``; a categorical one through its categories (each made once)."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return col.astype("string")
    names = col.cat.categories.astype("string").array
    return pd.Series(names.take(col.cat.codes.to_numpy(), allow_fill=True), index=col.index)


def _base(events: pd.DataFrame, rows: np.ndarray, first: pa.Array, reporter: pd.Series | None = None) -> pd.DataFrame:
    """The columns every row has (time, level, first line, host, file, line) and the writer's id
    from the line's prefix (read only where ``reporter``, what the rules found, is NA)."""
    ev = events[["ts", "level", "host", "file", "line"]].iloc[rows].reset_index(drop=True)
    texts = first.take(pa.array(rows))
    if reporter is None:
        rep = _to_int(pc.coalesce(*group_arrays(texts, REPORTER)))
    else:
        rep = reporter.astype("Int64").reset_index(drop=True)
        todo = np.flatnonzero(rep.isna().to_numpy())
        if len(todo):
            found = _to_int(pc.coalesce(*group_arrays(texts.take(pa.array(todo)), REPORTER)))
            rep.iloc[todo] = found.to_numpy(dtype=object, na_value=pd.NA)
    return pd.DataFrame(
        {
            "ts": ev["ts"],
            "reporter": rep,
            "level": _text(ev["level"]),
            "message": pd.array(quotes(texts), dtype=pd.StringDtype("pyarrow")),
            "host": _text(ev["host"]),
            "file": _text(ev["file"]),
            "line": ev["line"],
        }
    )


# the frequent kinds are built column by column (no Python per row): column <- (group, conversion)
COLUMNS = {
    "isr_updated": {"tp": (0, "s"), "reporter": (1, "i"), "isr_after": (2, "ids"), "under_min_isr": (3, "flag")},
    "leader": {"reporter": (0, "i"), "tp": (1, "s"), "epoch": (2, "i"), "isr_after": (3, "ids"), "leader": (0, "i")},
    "follower": {"reporter": (0, "i"), "tp": (1, "s"), "epoch": (2, "i"), "leader": (3, "i")},
    "offline": {"reporter": (0, "i"), "tp": (1, "s")},
    "leader_change": {
        "reporter": (0, "i"),
        "tp": (1, "s"),
        "leader": (2, "i"),
        "epoch": (3, "i"),
        "isr_after": (4, "ids"),
    },
    "offline_dir_leader": {"reporter": (0, "i"), "tp": (1, "s")},
}


# these tables read as timelines across hosts: time first
TIME_ORDER = ("ts", "host", "file", "line")


def _time_sorted(df: pd.DataFrame) -> pd.DataFrame:
    """``df.sort_values(list(TIME_ORDER), kind="stable")`` with a fresh index, from one numpy
    lexsort of integer keys (times and line numbers as they are, names by their sorted codes;
    missing values last, as pandas puts them)."""
    keys = []
    for c in reversed(TIME_ORDER):
        col = df[c]
        na = col.isna().to_numpy(dtype=bool)
        if c == "ts" and col.dtype.kind == "M":  # (NaT: the smallest int64, made last by ``na``)
            v = np.asarray(col.array.asi8, np.int64)
        elif c == "line" and col.dtype.kind in "iu":
            v = col.to_numpy(dtype=np.int64, na_value=0)
        else:
            v = pd.factorize(col, sort=True)[0]
        keys += [v, na] if na.any() else [v]
    return df.take(np.lexsort(keys)).reset_index(drop=True)


def _to_int(values: pa.Array) -> pd.Series:
    """A capture-group column of (optionally signed) digits as Int64, NA where absent or not an
    integer of 64 bits (a whole column: no Python per row)."""
    plain = pc.ascii_is_decimal(values)  # (the usual column: ASCII digits only, short enough: cast as it is)
    if pc.all(plain).as_py() is not False and (pc.max(pc.binary_length(values)).as_py() or 0) <= 18:
        v = pc.cast(values, pa.int64())
    else:
        ok = pc.match_substring_regex(values, r"^-?\d{1,18}$")
        v = pc.cast(pc.if_else(ok, values, pa.scalar(None, values.type)), pa.int64())
    return pd.Series(pd.array(v, dtype=pd.ArrowDtype(pa.int64())).astype("Int64"))


def _convert(values: pa.Array, how: str) -> pd.Series:
    if how == "i":
        return _to_int(values)
    if how == "ids":
        values = pc.utf8_trim(pc.replace_substring_regex(values, r"[^\d,]", ""), ",")
    elif how == "flag":
        return pd.Series(pd.array(pc.is_valid(values), dtype="boolean"))
    return pd.Series(pd.array(values, dtype=pd.StringDtype("pyarrow")))


def _id_list(values: pa.Array) -> pa.Array:
    """'1, 2,3,' -> '1,2,3' over a whole capture-group column ('' where absent)."""
    s = pc.replace_substring(values.fill_null(""), " ", "")
    return pc.utf8_trim(s, ",")


def _minus(b: pa.Array, a: pa.Array) -> pa.Array:
    """Per row, the ids of list ``b`` that are not in list ``a``, in ``b``'s order, comma-joined
    (null where none): a set difference over whole columns, no Python per row."""
    return _minus_lists(_id_lists(b), _id_lists(a), len(b))


def _id_lists(values: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray]:
    """A column of comma-separated id lists split once (:func:`_minus` reads each list of a pair
    twice): each id's row, the ids as text and as integers ('' -> -1), and the lists' offsets
    from 0."""
    lists = pc.split_pattern(values, ",")
    parent = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False), np.int64)
    flat = pc.list_flatten(lists)
    v = pc.if_else(pc.equal(flat, ""), "-1", flat)  # the lists hold digits only (IDS)
    ids = np.asarray(pc.cast(v, pa.int64()).to_numpy(zero_copy_only=False), np.int64)
    off = np.asarray(lists.offsets.to_numpy(zero_copy_only=False), np.int64)
    return parent, flat, ids, off - off[0]


def _minus_lists(b: tuple, a: tuple, n: int) -> pa.Array:
    """:func:`_minus` of two columns of ``n`` rows split by :func:`_id_lists`."""
    bp, bf, ib, _ = b
    ap, _, ia, a_off = a
    width = int(np.diff(a_off).max(initial=0))
    if width <= 16:  # ISRs are short: each row's list of ``a`` as a row of a small matrix, compared at once
        table = np.full((n, max(width, 1)), -2, np.int64)
        table[ap, np.arange(len(ia)) - a_off[ap]] = ia
        kept = (ib >= 0) & ~(table[bp] == ib[:, None]).any(axis=1)
    else:  # (row, id) as one integer: broker ids are 31-bit, so row * 2^32 + id never collides
        kept = (ib >= 0) & ~np.isin((bp << 32) + ib, (ap << 32) + ia)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(bp[kept], minlength=n))]).astype(np.int32)
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array(offsets), bf.filter(pa.array(kept))), pa.scalar(",", bf.type)
    )
    return pc.if_else(pc.equal(joined, ""), pa.scalar(None, joined.type), joined)


def _isr_change_frame(kind: str, gs: list) -> pd.DataFrame:
    """Rows of ISR shrinks or expansions from their rule's groups (partition, reporter, ISR
    before and after): the brokers removed and added are set differences of the two lists."""
    before, after = _id_list(gs[2]), _id_list(gs[3])
    tp = pc.replace_substring(gs[0], ",", "-")  # 0.8-0.10 name it [orders,24]
    lb, la = _id_lists(before), _id_lists(after)  # each list split once for both differences

    def text(a: pa.Array) -> pd.Series:
        return pd.Series(pd.array(pc.if_else(pc.equal(a, ""), pa.scalar(None, a.type), a), dtype="string"))

    return pd.DataFrame(
        {
            "kind": kind,
            "tp": pd.array(tp, dtype="string"),
            "reporter": _to_int(gs[1]),
            "isr_before": text(before),
            "isr_after": text(after),
            "removed": pd.array(_minus_lists(lb, la, len(before)), dtype="string"),
            "added": pd.array(_minus_lists(la, lb, len(before)), dtype="string"),
        }
    )


def _topic_partition(tp: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    r"""'orders-24' -> 'orders', '24': what ``^(.*)-(\d+)$`` captures, without a regex pass (the names,
    read from ``\S`` runs, hold no line break): split at the last '-', kept where ASCII digits follow
    it; null both where not."""
    if isinstance(tp, pa.ChunkedArray):
        tp = tp.combine_chunks()
    parts = pc.split_pattern(tp, "-", max_splits=1, reverse=True)
    ok = np.asarray(pc.equal(pc.list_value_length(parts), 2).fill_null(False).to_numpy(zero_copy_only=False), bool)
    two = parts.filter(pa.array(ok))
    head, tail = pc.list_element(two, 0), pc.list_element(two, 1)
    digits = np.asarray(pc.ascii_is_decimal(tail).fill_null(False).to_numpy(zero_copy_only=False), bool)
    at = np.full(len(tp), -1, np.int64)
    at[np.flatnonzero(ok)[digits]] = np.flatnonzero(digits)
    where = pa.array(at, mask=at < 0)
    return head.take(where), tail.take(where)


def _partition_frame(events: pd.DataFrame) -> tuple[pd.DataFrame, pa.Array]:
    """Rows of ``partition_changes`` (without the base columns), one frame per rule, concatenated
    in record order (``row``: the record's index in ``events``), and the records' first lines."""
    _, first, _ = shared(events)
    which, found = rules(events)[0]  # found: rule -> the groups its wordings' pass already extracted
    parts = []
    for i, (kind, pattern) in enumerate(PARTITION_RULES):
        sel = np.flatnonzero(which == i)
        if not len(sel):
            continue
        sel, gs = rule_groups(first, pattern, sel, found.get(i))  # (rows in any order: sorted below)
        if kind in COLUMNS:
            f = pd.DataFrame({c: _convert(gs[g], how) for c, (g, how) in COLUMNS[kind].items()})
            if kind == "offline":
                f["leader"] = -1
        elif kind in ("isr_shrink", "isr_expand"):  # an ISR storm's bulk: column by column too
            f = _isr_change_frame(kind, gs)
        else:  # unclean (two wordings): rare, field by field
            py = [g.to_pylist() for g in gs]
            f = pd.DataFrame([_partition_fields(kind, [col[j] for col in py]) for j in range(len(sel))])
        f["kind"] = kind
        f["row"] = sel
        parts.append(f)
    if not parts:
        return pd.DataFrame(), first
    f = pd.concat(parts, ignore_index=True).sort_values("row", kind="stable").reset_index(drop=True)
    if "tp" in f:
        t, part = _topic_partition(pa.array(f.pop("tp").astype(pd.StringDtype("pyarrow")).array))
        topic = pd.Series(pd.array(t, dtype=pd.StringDtype("pyarrow")))
        f["topic"] = topic.fillna(f["topic"].astype("string")) if "topic" in f else topic
        part = _to_int(part)
        f["partition"] = (
            part.fillna(pd.to_numeric(f["partition"], errors="coerce").astype("Int64")) if "partition" in f else part
        )
    return f, first


@extractor("partition_changes", match=wanted_logger, contains=CONTAINS, blockwise=True, order=TIME_ORDER)
def build_partition_changes(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("partition_changes")
    f, first = _partition_frame(events)
    if not len(f):
        return tables.empty("partition_changes")
    rows = f.pop("row").to_numpy()
    df = _base(events, rows, first, f.pop("reporter") if "reporter" in f else None)
    for c in f.columns:
        df[c] = f[c].array
    return _time_sorted(df)


def _node_columns(kind: str, rule: str, g: list[pa.Array]) -> dict[str, pa.Array | str]:
    """The columns of ``node_events`` rows of one rule from its capture groups (as
    :func:`_node_fields` reads them), whole columns of text: ``kind`` -> value or group array."""
    if kind == "controller_active":
        return {"node": g[0], "epoch": g[1]}
    if kind == "controller_renounce":
        return {"node": g[0], "cause": g[1] if len(g) > 1 else "resigned", "epoch": g[2] if len(g) > 2 else None}
    if kind == "controller_epoch":
        none = pc.equal(g[2], "(none)")
        return {"reporter": g[0], "epoch": g[1], "node": pc.if_else(none, pa.scalar("-1", g[2].type), g[2])}
    if kind in ("fenced", "broker_failed", "unfenced", "controlled_shutdown"):
        return {"reporter": g[0], "node": g[1], "cause": g[2] if len(g) > 2 else None}
    if kind == "heartbeat_timeout":
        return {"node": g[0], "cause": g[1]}
    if kind == "zk_session_timeout":
        text = [pc.cast(x, pa.string()) for x in (g[0], g[1], g[2])]
        parts = [text[0], pa.scalar(" after "), text[1], pa.scalar(" ms (session "), text[2], pa.scalar(")")]
        return {"cause": pc.binary_join_element_wise(*parts, ""), "waited_ms": g[1]}
    if kind == "zk_session_expired":
        return {"cause": pc.coalesce(g[0], g[1])}
    if kind == "log_dir_error":
        if "checkpoint file" in rule:  # its groups name the dir first, then the partition
            return {"cause": g[0], "dir": g[1], "partitions": g[2]}
        return {"cause": g[0], "partitions": g[1], "dir": g[2]}
    if kind == "log_dir_offline":
        if "Logs for partitions" in rule or "stopped fetcher" in rule:
            return {"partitions": g[0], "dir": g[1]}
        return {"dir": g[0]}
    if kind in ("log_dir_shutdown", "log_dir_halt"):
        return {"cause": g[0], "dir": g[1]}
    return {"cause": g[0]}  # oom


NODE_INTS = ("node", "reporter", "epoch", "waited_ms")
NODE_TEXTS = ("cause", "dir", "partitions")


def _node_frame(events: pd.DataFrame) -> tuple[pd.DataFrame, pa.Array, pa.Array]:
    """Rows of ``node_events`` from the rules' groups (without the base columns), in record order
    (``row``: the record's index in ``events``), column by column; the records' messages and
    first lines."""
    msgs, first, _ = shared(events)
    which, found = rules(events)[1]  # found: rule -> the groups its wordings' pass already extracted
    which = which.copy()  # (shared: the out-of-memory rows are marked in a copy)
    oom = next(i for i, (k, _) in enumerate(NODE_RULES) if k == "oom")
    if (which < 0).any():  # an OutOfMemoryError may be the cause deep in a stack trace
        rest = np.flatnonzero(which < 0)
        hit = hits(msgs.take(pa.array(rest)), NODE_RULES[oom][1])
        which[rest[hit]] = oom
    rows = np.flatnonzero(which >= 0)
    rule = which[rows]
    names = ("kind", "rule_reporter", "node", "epoch", "waited_ms") + NODE_TEXTS
    pieces: dict[str, list[pa.Array]] = {c: [] for c in names}
    placed = []  # the rows' positions, rule by rule: the pieces' order
    for i, (kind, pattern) in enumerate(NODE_RULES):
        at = np.flatnonzero(rule == i)
        if not len(at):
            continue
        if kind == "oom":  # (its groups are read from the whole message)
            gs = group_arrays(msgs.take(pa.array(rows[at])), pattern)
        else:  # the rows in any order (``back`` puts them in record order)
            got_rows, gs = rule_groups(first, pattern, rows[at], found.get(i))
            at = np.searchsorted(rows, got_rows)
        placed.append(at)
        got = {("rule_reporter" if c == "reporter" else c): v for c, v in _node_columns(kind, pattern, gs).items()}
        got["kind"] = kind
        for c in names:
            v = got.get(c)
            if v is None:
                v = pa.nulls(len(at), pa.string())
            elif isinstance(v, str):
                v = pa.array([v], pa.string()).take(pa.array(np.zeros(len(at), np.int64)))
            pieces[c].append(pc.cast(v, pa.string()))
    back = np.empty(len(rows), np.int64)  # from the pieces' order back to record order
    back[np.concatenate(placed) if placed else np.zeros(0, np.int64)] = np.arange(len(rows))
    cols = {c: pa.concat_arrays(p).take(pa.array(back)) if p else pa.nulls(0, pa.string()) for c, p in pieces.items()}
    f = pd.DataFrame({"row": rows})
    for c, v in cols.items():
        f[c] = _to_int(v).array if c in NODE_INTS or c == "rule_reporter" else pd.array(v, dtype="string")
    return f, msgs, first


@extractor("node_events", match=wanted_logger, contains=CONTAINS, blockwise=True, order=TIME_ORDER)
def build_node_events(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("node_events")
    f, msgs, first = _node_frame(events)
    if not len(f):
        return tables.empty("node_events")
    rows = f.pop("row").to_numpy()
    # the id the rule read, else the one in the line's prefix
    df = _base(events, rows, first, f.pop("rule_reporter"))
    for c in f.columns:
        df[c] = f[c].array
    # the cause of a log-dir error is in its stack trace
    dir_err = np.flatnonzero(f["kind"].isin(["log_dir_error", "log_dir_offline"]).to_numpy())
    if len(dir_err):
        whole = arrow_messages(events, rows[dir_err])
        found = group_arrays(whole, CAUSES)[0]
        caused = group_arrays(whole, r"\nCaused by: ([^\n]+)")[0]
        exc = group_arrays(whole, r"^[^\n]*\n([\w.$]+(?:Exception|Error)(?:: [^\n]*)?)")[0]
        cause = pc.coalesce(found, pc.utf8_slice_codeunits(pc.coalesce(caused, exc), 0, 300))
        ok = np.asarray(pc.is_valid(cause).to_numpy(zero_copy_only=False), bool)
        if ok.any():
            df.loc[dir_err[ok], "cause"] = pd.array(cause.filter(pa.array(ok)), dtype="string")
    # the broker-change handler's "deleted brokers: 3" is followed within the second by the same
    # controller's "Broker failure callback for 3": one row for the pair (the handler's line alone, as
    # in an excerpt, still makes one)
    failed = (df["kind"] == "broker_failed").to_numpy(dtype=bool)
    listed = failed.copy()  # (only the failure rows' messages are searched)
    listed[failed] = (
        df["message"][failed].str.contains("deleted brokers: ", regex=False).fillna(False).to_numpy(dtype=bool)
    )
    if listed.any() and (failed & ~listed).any():
        keys = ["host", "file", "node"]
        pairs = (
            df[listed][keys + ["ts"]]
            .reset_index()
            .merge(df[failed & ~listed][keys + ["ts"]], on=keys, suffixes=("", "_cb"))
        )
        later = pairs["ts_cb"] - pairs["ts"]
        df = df.drop(index=pairs.loc[(later >= pd.Timedelta(0)) & (later <= pd.Timedelta(seconds=1)), "index"].unique())
    # these kinds concern the node that logs them (whatever other records were built with them:
    # a batch of only such records has no node column yet)
    if "node" not in df:
        df["node"] = pd.Series(pd.NA, index=df.index, dtype="Int64")
    none = df["node"].isna() & df["kind"].isin(
        ["heartbeat_timeout", "log_dir_error", "log_dir_offline", "log_dir_shutdown", "log_dir_halt", "oom"]
    )
    if none.any():  # (an empty assignment into an int64 column from an object one raises in pandas)
        df.loc[none, "node"] = df.loc[none, "reporter"]
    return _time_sorted(df)
