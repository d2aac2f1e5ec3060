"""``kafka-consumer-groups --describe`` output (every view, Kafka 1.x to 4.x) -> ``group_offsets``,
``group_members``, ``group_states``.

Views and their header lines (columns are padded with spaces; a value is ``-`` when absent)::

    TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID          (1.x-2.2)
    GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID   (2.3+, --offsets)
    GROUP  TOPIC  PARTITION  LEADER-EPOCH  CURRENT-OFFSET  ...                                  (4.x --verbose)
    GROUP  CONSUMER-ID  HOST  CLIENT-ID  #PARTITIONS  [ASSIGNMENT]                              (--members [--verbose])
    GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS                              (--state)

The GROUP column of ``--members``/``--state`` arrived in 2.4; without it the group is unknown
(empty). Notes such as ``Consumer group 'billing' has no active members.``, ``... is
rebalancing.`` and ``... does not exist.`` become ``group_states`` rows with the note. Several
groups (``--all-groups``) and several snapshots in one file are fine: a line holding only a time
(``date`` output, ISO-8601, epoch seconds) sets ``snapshot_ts`` for the rows after it, so a lag
history saved in a loop loads as one table. A date glued to the end of a row (Kafka 3.9 ends the
output of a group with members without a newline, so the loop's next ``date`` lands on the last
row) is split off and starts the next snapshot. Rows before any time line take the time the file
name holds (``cg-20261123T104241Z.txt``, ``lag-2026-11-23_10-42-41.txt``, ``cg-1763894561.txt``:
one snapshot per file, as a cron job saves them); ``ts_source`` says which of the two it was.

Example (real 3.9 output):
    >>> detect(b"\\nGROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG"
    ...        b"             CONSUMER-ID     HOST            CLIENT-ID\\n"
    ...        b"billing         orders          1          60              100             40"
    ...        b"              -               -               -\\n", None)
    True
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib import tables
from kitlib.formats import Context, register
from kitlib.formats.cli.frame import Collector, ToolOutput, glued_stamp, head_lines, name_stamp, to_int
from kitlib.sources import SourceFile

_SNAP = (
    "snapshot_ts",
    "ts",
    "time of the snapshot: the last time line before it in the file "
    "(`date` output, ISO-8601, epoch; also one glued to the end of a row), else the time in the "
    "file's name (`cg-20261123T104241Z.txt`, `cg-1763894561.txt`); empty when neither holds one",
)
_TS_SOURCE = (
    "ts_source",
    "str",
    "where snapshot_ts came from: 'content' (a time line in the file), 'file name' (a stamp or "
    "epoch in the file's name), empty when the snapshot has no time",
)
tables.declare(
    "group_offsets",
    "Consumer group offsets and lag per partition, from `kafka-consumer-groups "
    "--describe` (and `--offsets`) output; one row per group, partition and snapshot.",
    [
        _SNAP,
        _TS_SOURCE,
        ("group", "str", "consumer group (empty in 1.x-2.2 output, which has no GROUP column)"),
        ("topic", "str", "topic ('-' rows of members without partitions have none)"),
        ("partition", "int", "partition"),
        ("leader_epoch", "int", "leader epoch of the committed offset (4.x --verbose only)"),
        ("current_offset", "int", "committed offset; empty when the group committed none"),
        ("log_end_offset", "int", "log end offset when the tool ran"),
        ("lag", "int", "log_end_offset - current_offset as the tool printed it; empty when unknown"),
        ("consumer_id", "str", "member id owning the partition, empty when no active member"),
        ("member_host", "str", "member's host as printed ('/10.0.0.12'), empty when none"),
        ("client_id", "str", "member's client.id, empty when none"),
    ],
)
tables.declare(
    "group_members",
    "Consumer group members from `kafka-consumer-groups --describe --members [--verbose]`.",
    [
        _SNAP,
        _TS_SOURCE,
        ("group", "str", "consumer group (empty before 2.4, which had no GROUP column)"),
        ("consumer_id", "str", "member id"),
        ("member_host", "str", "member's host as printed"),
        ("client_id", "str", "member's client.id"),
        ("partitions", "int", "number of partitions assigned"),
        ("assignment", "str", "assigned partitions as printed with --verbose, e.g. 'orders(0,1)'"),
    ],
)
tables.declare(
    "group_states",
    "Consumer group state from `kafka-consumer-groups --describe --state`, and "
    "the tool's notes about a group (no active members, rebalancing, does not exist).",
    [
        _SNAP,
        _TS_SOURCE,
        ("group", "str", "consumer group (empty before 2.4 for --state rows)"),
        ("coordinator", "str", "coordinator broker host:port"),
        ("coordinator_id", "int", "coordinator broker id"),
        ("assignment_strategy", "str", "partition assignor (range, roundrobin, ...); empty when none"),
        ("state", "str", "Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, ..."),
        ("members", "int", "number of members"),
        ("note", "str", "the tool's note: 'has no active members', 'is rebalancing', 'does not exist'"),
    ],
)

_NOTE = re.compile(
    r"^(?:Warning: |Error: )?Consumer group '(?P<group>.*)' (?P<note>has no active members|"
    r"is rebalancing|does not exist|is not a consumer group|has no committed offsets)"
)
_INFO = ("Note: This will not show information about old Zookeeper-based consumers.",)
_OFFSET_COLS = {
    "GROUP": "group",
    "TOPIC": "topic",
    "PARTITION": "partition",
    "LEADER-EPOCH": "leader_epoch",
    "CURRENT-OFFSET": "current_offset",
    "LOG-END-OFFSET": "log_end_offset",
    "LAG": "lag",
    "CONSUMER-ID": "consumer_id",
    "HOST": "member_host",
    "CLIENT-ID": "client_id",
}
_MEMBER_COLS = {
    "GROUP": "group",
    "CONSUMER-ID": "consumer_id",
    "HOST": "member_host",
    "CLIENT-ID": "client_id",
    "#PARTITIONS": "partitions",
    "ASSIGNMENT": "assignment",
}
_INT_COLS = {"partition", "leader_epoch", "current_offset", "log_end_offset", "lag", "partitions"}


def _header_kind(text: str) -> str | None:
    toks = text.split()
    if "CURRENT-OFFSET" in toks and "LOG-END-OFFSET" in toks and "PARTITION" in toks:
        return "offsets"
    if "#PARTITIONS" in toks and "CONSUMER-ID" in toks:
        return "members"
    if "ASSIGNMENT-STRATEGY" in toks and "#MEMBERS" in toks:
        return "state"
    return None


def detect(head: bytes, src) -> bool:
    for ln in head_lines(head, 40):
        if ln.startswith("[") and "] " in ln[:40]:
            return False  # a log4j record came first
        if _header_kind(ln) and ln.split()[0] in ("GROUP", "TOPIC", "CONSUMER-ID", "COORDINATOR"):
            return True
    return False


def _table_row(header: list[str], colmap: dict, text: str) -> dict | None:
    """Map a padded row onto the header's columns; the last column takes the rest of the line
    (client ids and --verbose assignments may hold spaces). Trailing empty columns may be missing."""
    vals = text.split(None, len(header) - 1)
    if len(vals) < len(header) - 1:
        return None
    row = {}
    for name, v in zip(header, vals):
        col = colmap.get(name)  # columns of later versions (GROUP-EPOCH, ...) are skipped
        v = v.strip()
        if col is None:
            continue
        if col in _INT_COLS:
            n = to_int(v)
            if n is None and v != "-":
                return None
            row[col] = n
        else:
            row[col] = None if v == "-" else v
    return row


def _state_row(header: list[str], text: str) -> dict | None:
    """``[GROUP] host:port (id) [STRATEGY] STATE [EPOCHS...] #MEMBERS``: the strategy is blank for
    groups without members, so the columns after ``(id)`` are matched from the right."""
    vals = text.split()
    i = 0
    row: dict = {}
    if header[0] == "GROUP":
        if not vals:
            return None
        row["group"], i = vals[0], 1
    m = re.fullmatch(r"\((-?\d+)\)", vals[i + 1]) if len(vals) > i + 1 else None
    if not m:
        return None
    row["coordinator"], row["coordinator_id"] = vals[i], int(m.group(1))
    after = header[header.index("(ID)") + 1 :]
    rest: list[str | None] = list(vals[i + 2 :])
    if len(rest) == len(after) - 1 and after[0] == "ASSIGNMENT-STRATEGY":
        rest.insert(0, None)
    if len(rest) != len(after):
        return None
    for name, v in zip(after, rest):
        if name == "ASSIGNMENT-STRATEGY":
            row["assignment_strategy"] = v
        elif name == "STATE":
            row["state"] = v
        elif name == "#MEMBERS":
            row["members"] = to_int(v)
    return row


class Groups(ToolOutput):
    """``kafka-consumer-groups --describe``: tables (offsets, members, state) under their header
    lines, the tool's notes, one snapshot or many."""

    def __init__(self, src: SourceFile, ctx: Context) -> None:
        super().__init__(src, ctx)
        self.kind: str | None = None  # the table under way, and its columns
        self.header: list[str] = []
        self.snap = name_stamp(src.rel, src.tz)  # until a time line says otherwise
        self.source = "file name" if self.snap is not None else None

    def banner(self, text: str) -> bool:
        return text.strip() in _INFO

    def time(self, t: pd.Timestamp) -> None:
        self.snap, self.source = t, "content"

    def line(self, n: int, text: str) -> None:
        text, glued = glued_stamp(text, self.src.tz)
        hk = _header_kind(text)
        if hk:
            self.kind, self.header = hk, text.split()
            self.out.structure()
        else:
            _row(self.out, n, text, self.kind, self.header, snapshot_ts=self.snap, ts_source=self.source)
        if glued is not None:  # the next snapshot's date, glued to the end of this line
            self.time(glued)


def _row(out: Collector, n: int, text: str, kind: str | None, header: list[str], **snap) -> None:
    """A tool's note or a row of the table under ``header``: added to ``out``, or kept as bad."""
    m = _NOTE.match(text.strip())
    if m:
        out.add("group_states", n, **snap, group=m.group("group"), note=m.group("note"))
        out.structure()
        return
    row, table = None, ""
    if kind == "offsets":
        row, table = _table_row(header, _OFFSET_COLS, text), "group_offsets"
    elif kind == "members":
        row, table = _table_row(header, _MEMBER_COLS, text), "group_members"
    elif kind == "state":
        row, table = _state_row(header, text), "group_states"
    if row is None:
        out.bad(n, text, "not a row of the consumer-groups table above it" if kind else "before any table header")
        return
    out.add(table, n, **snap, **row)
    out.structure()


register(
    "consumer_groups",
    detect=detect,
    parse=Groups.parse,
    tables=("group_offsets", "group_members", "group_states"),
    priority=26,
    doc="kafka-consumer-groups --describe output (offsets/lag, --members, --state; one or many snapshots)",
)
