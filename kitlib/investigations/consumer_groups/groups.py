"""The story of consumer groups in the logs -> ``group_events``: the group coordinator's lines on
the brokers (rebalances, generations, members failing, leaving, joining, static members
replaced, coordinator partitions loaded and unloaded) and the consumers' own lines (poll
timeouts, failed commits, heartbeats refused during a rebalance, partitions revoked, rejoining).

Client wording covered: the Java client (``[Consumer clientId=..., groupId=...]`` prefix),
kafka-python (``kafka.coordinator`` loggers), librdkafka (``MAXPOLL`` / ``Application maximum
poll interval ... exceeded``, and with ``debug=cgrp`` its rebalances, JoinGroup responses, leaves,
heartbeat errors and failed commits; the client is its instance, ``rdkafka#consumer-1``) and
franz-go (``joined; group: ..., generation: N`` and the like). Lines are chosen by their wording, not their layout: any logger
whose name suggests a coordinator or consumer (or none at all) is read, so a logback or
Python-logging layout that yields ``events`` rows works the same as Kafka's own.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2026-01-01"], utc=True), "level": ["INFO"],
    ...     "logger": ["kafka.coordinator.group.GroupCoordinator"], "host": ["b1"], "file": ["server.log"],
    ...     "line": [1], "message": ["[GroupCoordinator 1]: Stabilized group billing generation 7 "
    ...                              "(__consumer_offsets-12) with 2 members"]})
    >>> print(*build(ev)[["kind", "group", "generation", "members"]].iloc[0])
    stabilized billing 7 2
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import extractor
from kitlib.extract.rules import (
    Layout,
    Rule,
    categorical,
    fields_of,
    fields_where,
    in_slices,
    ints,
    labels,
    logger_keywords,
    match,
)

tables.declare(
    "group_events",
    "Consumer-group lines: the group coordinator's (rebalances, generations, members "
    "removed) and the consumers' own (poll timeouts, failed commits, rejoins), one per record.",
    [
        ("ts", "ts", "record time"),
        ("source", "category", "coordinator (a broker's group coordinator) or client (a consumer's log)"),
        (
            "kind",
            "category",
            "coordinator: prepare_rebalance, stabilized, member_failed, member_left, "
            "unknown_member_join, static_member_replaced, assignment, group_empty, "
            "group_loaded, loaded, unloading, unloaded, elected, resigned; client: "
            "poll_timeout, commit_failed, heartbeat_rebalancing, lost_membership, "
            "session_expired, assigned, revoking, rejoining, joined, leaving",
        ),
        ("group", "str", "consumer group id (client lines: from the Java prefix or the line itself)"),
        ("generation", "int", "generation: the old one on prepare_rebalance lines, the new one otherwise"),
        ("member", "str", "member id the line names"),
        ("client_id", "str", "client.id (the Java prefix, or the member id's client part)"),
        ("instance_id", "str", "group.instance.id of a static member"),
        ("members", "int", "members in the group after the rebalance (stabilized, assignment lines)"),
        ("state", "str", "group state the line names (PreparingRebalance, Stable, Empty, ...)"),
        ("reason", "str", "why a rebalance started (Kafka 2.4+ '(reason: ...)'), or a client's reason"),
        ("coordinator_partition", "str", "the __consumer_offsets partition holding the group"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line (500 characters at most)"),
    ],
)

_COORD = "__consumer_offsets-\\d+"
RULES = [
    # the group coordinator (kafka.coordinator.group.GroupCoordinator up to 3.x, the new coordinator in 4.x)
    # 0.9-0.10 "Preparing to restabilize group G with old generation N" and "Stabilized group G generation N",
    # 0.11-2.0 with "(__consumer_offsets-K)", 2.1+ "in state S ... (reason: ...)", the new coordinator (3.6+,
    # GroupMetadataManager) without the partition and with a closing period
    Rule(
        "prepare_rebalance",
        r"Preparing to (?:rebalance|restabilize) group (?P<group>\S+)(?: in state (?P<state>\w+))? with old "
        rf"generation (?P<generation>-?\d+)(?: \((?P<coordinator_partition>{_COORD})\))?"
        r"(?: \(reason: (?P<reason>.*)\))?",
        # 2.1+ with the partition and the reason: the group and state end at the first space, the
        # reason at the text's last ')' (its greedy '.*'), which ends the text
        layouts=(
            Layout(
                "Preparing to ",
                rf"rebalance group \S+ in state \w+ with old generation -?\d+ \({_COORD}\) \(reason: [^\n]*\)",
                (
                    ("", "rebalance group ", False),
                    ("group", " in state ", False),
                    ("state", " with old generation ", False),
                    ("generation", " (", False),
                    ("coordinator_partition", ") (reason: ", False),
                    ("reason", ")", True),
                ),
            ),
        ),
    ),
    Rule(
        "stabilized",
        r"Stabilized group (?P<group>\S+) generation (?P<generation>-?\d+)"
        rf"(?: \((?P<coordinator_partition>{_COORD})\))?(?: with (?P<members>\d+) members?)?",
        layouts=(
            Layout(
                "Stabilized group ",
                rf"\S+ generation -?\d+ \({_COORD}\) with \d+ members?",
                (
                    ("group", " generation ", False),
                    ("generation", " (", False),
                    ("coordinator_partition", ") with ", False),
                    ("members", " member", False),
                ),
            ),
        ),
    ),
    Rule("member_failed", r"Member (?P<member>\S+) in group (?P<group>\S+) has failed, removing it from the group"),
    Rule(
        "member_left",
        # 3.7+'s group coordinator names the group in its prefix: '[Group g] Member m has left group through ...'
        r"(?:Member (?P<member>.+?) has left group (?P<group>\S+)|\[Group (?P<group2>\S+)\] (?:Dynamic |Static |Pending )?"
        r"[Mm]ember (?P<member2>\S+)(?: with instance id \S+)? has left group) through explicit \W?LeaveGroup\W?"
        r"(?: request)?(?:; client reason: (?P<reason>.*))?",
    ),
    Rule(
        "unknown_member_join",
        r"(?i)Dynamic member with unknown member id (?:re)?joins group (?P<group>\S+) in "
        r"(?P<state>\w+) state\. Created a new member id (?P<member>\S+)",
    ),
    Rule(
        "static_member_replaced",
        r"Static member with groupInstanceId=(?P<instance_id>\S+) and unknown member id "
        r"(?:re)?joins group (?P<group>\S+) in (?P<state>\w+) state\. Replacing previously "
        r"mapped member (?P<member>\S+)",
    ),
    Rule(
        "assignment",
        r"Assignment received from leader(?: (?P<member>\S+))? for group (?P<group>\S+) for generation "
        r"(?P<generation>-?\d+)(?:\. The group has (?P<members>\d+) members)?",
    ),
    Rule(
        "group_empty",
        r"Group (?P<group>\S+) with generation (?P<generation>-?\d+) is now empty"
        rf"(?: \((?P<coordinator_partition>{_COORD})\))?",
    ),
    Rule("group_loaded", r"Loading group metadata for (?P<group>\S+) with generation (?P<generation>-?\d+)"),
    Rule("loaded", rf"Finished loading offsets and group metadata from (?P<coordinator_partition>{_COORD})"),
    Rule("unloading", rf"Scheduling unloading of offsets and group metadata from (?P<coordinator_partition>{_COORD})"),
    Rule("unloaded", rf"Finished unloading (?P<coordinator_partition>{_COORD})"),
    Rule("elected", r"Elected as the group coordinator for partition (?P<coordinator_partition>\d+)"),
    Rule("resigned", r"Resigned as the group coordinator for partition (?P<coordinator_partition>\d+)"),
    # the consumers: Java client, kafka-python, librdkafka
    Rule(
        "poll_timeout",
        r"(?i)consumer poll timeout has expired|Heartbeat poll expired|maximum poll interval "
        r"\(\d+ ?ms\) exceeded|MAX_POLL_EXCEEDED|\|MAXPOLL\|",
    ),
    # librdkafka (messages 'FACILITY [instance] ...', see kitlib.formats.logs.clients) and franz-go
    # ('message; key: value, ...'): placed before the generic client rules, which would take a
    # quoted group name with its quotes
    Rule(
        "rejoining",
        r'Group "(?P<group>[^"]+)" (?:is rebalancing|initiating rebalance)[^:]*: (?P<reason>.*)$|'
        r"^joining group; group: (?P<group2>[^,\s]+)",
    ),
    Rule(
        "joined",
        r"JoinGroup response: GenerationId (?P<generation>-?\d+), Protocol \S*, LeaderId \S*(?: \(me\))?, "
        r"my MemberId (?P<member>[^\s,]+)|^joined(?:, balancing group)?; group: (?P<group>[^,\s]+), member_id: "
        r"(?P<member2>[^,\s]+), instance_id: (?P<instance_id>[^,\s]+), generation: (?P<generation2>-?\d+)",
    ),
    Rule("leaving", r'Group "(?P<group>[^"]+)": leave \(in state|^leaving group; group: (?P<group2>[^,\s]+)'),
    Rule(
        "session_expired",
        r'Group "(?P<group>[^"]+)" heartbeat error response in state .*Broker: Unknown member|'
        r"^heartbeat errored; group: (?P<group2>[^,\s]+), err: UNKNOWN_MEMBER_ID",
    ),
    Rule(
        "heartbeat_rebalancing",
        r'Group "(?P<group>[^"]+)" heartbeat error response in state .*Broker: Group rebalance in progress|'
        r"^heartbeat errored; group: (?P<group2>[^,\s]+), err: REBALANCE_IN_PROGRESS",
    ),
    Rule(
        "commit_failed",
        r"Offset commit \([^)]*\) failed for \d+/\d+ partition\(s\) in join-state [\w-]+: (?P<reason>.*)$|"
        r"^(?:default commit failed|unable to commit offset for topic partition); group: (?P<group>[^,\s]+)",
    ),
    Rule(
        "commit_failed",
        r"(?i)Offset commit failed|CommitFailed(?:Exception|Error)|Commit cannot be completed since "
        r"the group has already rebalanced|auto-commit of offsets .* failed",
    ),
    Rule(
        "heartbeat_rebalancing",
        r"(?i)Attempt to heartbeat failed since group is rebalancing|(?:Heartbeat failed for )?"
        r"group (?P<group>\S+) (?:because it )?is rebalancing",
    ),
    Rule("lost_membership", r"(?i)Group (?P<group>\S+) lost membership"),
    Rule(
        "session_expired",
        r"(?i)Heartbeat session expired|Attempt to heartbeat failed since member id "
        r"(?P<member>\S+) is not valid|Heartbeat failed: local member id was not recognized",
    ),
    Rule(
        "assigned",
        r"(?i)Setting newly assigned partitions.*? for group (?P<group>\S+)|Setting newly assigned "
        r"partitions|Adding newly assigned partitions",
    ),
    Rule("revoking", r"(?i)Revoking previously assigned partitions(?:.* for group (?P<group>\S+))?"),
    Rule("rejoining", r"(?i)\(Re-\)joining group(?: (?P<group>[^\s(]+))?"),
    Rule(
        "joined",
        r"(?i)Successfully joined group(?: (?P<group>[^\s<]+))? (?:with generation "
        r"(?:Generation\{generationId=)?|<Generation )(?P<generation>-?\d+)",
    ),
    Rule("leaving", r"(?i)sending LeaveGroup request|Leaving consumer group(?: \(?(?P<group>[^\s()]+))?"),
]
COORDINATOR_KINDS = tuple(r.kind for r in RULES[: RULES.index(next(r for r in RULES if r.kind == "poll_timeout"))])
# a cheap first cut (checked on whole blocks by the extractor): every rule above contains one of these
_ANCHORS = (
    r"(?i)rebalanc|restabilize|Stabilized group|in group|left group|member id|Assignment received|is now empty|"
    r"group metadata|group coordinator|Finished unloading|poll timeout|poll expired|poll interval|MAX_?POLL|"
    r"ommit|heartbeat|Revoking|joining group|joined group|LeaveGroup|Leaving consumer group|lost membership|"
    r"newly assigned partitions|JoinGroup response|leave \(in state|\bjoined;|leaving group"
)
_JAVA_PREFIX = (
    r"\[Consumer (?:instanceId=(?P<instance>[^,\]]+), )?clientId=(?P<client>[^,\]]+)"
    r"(?:, groupId=(?P<group>[^,\]]+))?\]"
)
# librdkafka's client instance ('<client.id>#consumer-N') and the group its lines quote
_RDKAFKA_CLIENT = r"\[(?P<client>[^\]\s]+#(?:consumer|producer)-\d+)\]"
_NAMED_GROUP = r'Group "(?P<group>[^"]+)"|; group: (?P<group2>[^,\s]+)'
_UUID_TAIL = r"^(?P<client>.+)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

_CLIENT_KEYWORDS = logger_keywords("coordinator", "groupmetadata", "classicgroup", "consumer", "rdkafka", "confluent")


def wanted_logger(logger: str) -> bool:
    """The loggers read for group lines: a name that suggests a coordinator or consumer (or none),
    and the lower-case names of Python applications (``app``, ``__main__``, ``orders.worker``),
    which log the CommitFailedError kafka-python raises into them. A broker's loggers are Java
    class names (``kafka.server.ReplicaManager``) and are left out, so a broker log costs nothing.

    Example:
        >>> [wanted_logger(x) for x in ("kafka.coordinator", "order_enricher", "kafka.server.ReplicaManager",
        ...                             "state.change.logger")]
        [True, True, False, False]
    """
    if _CLIENT_KEYWORDS(logger):
        return True
    return logger == logger.lower() and not logger.endswith(".logger") and not logger.startswith("kafka.")


@extractor(
    "group_events",
    match=wanted_logger,
    contains=_ANCHORS,
    blockwise=True,
)
@in_slices
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("group_events")
    m = match(events, RULES)
    if not len(m):
        return tables.empty("group_events")
    # kept in Arrow from the regex kernels to the frame: no Python value per record
    first, kinds, cols = m.first, m.kinds, m.fields
    n = len(m)
    src_client = m.which >= len(COORDINATOR_KINDS)  # the coordinator's rules come first
    source = categorical(src_client.astype(np.int64), ["coordinator", "client"])
    # the Java client's prefix names the client and group; kafka-python names the group in the line
    prefix = fields_where(first, _JAVA_PREFIX, ["[Consumer "])  # (read only from the lines holding one)
    client = prefix["client"]
    group = pc.coalesce(cols["group"], prefix["group"])
    # librdkafka and franz-go name the group in their own words, librdkafka the client instance
    # (looked for only on the client lines that lack them: a broker's lines all name theirs)
    todo = src_client & ~_valid(group)
    if todo.any():
        named = fields_of(first.filter(pa.array(todo)), _NAMED_GROUP)
        group = pc.replace_with_mask(group, pa.array(todo), pc.coalesce(named["group"], named["group2"]))
    todo = src_client & ~_valid(client)
    if todo.any():
        found = fields_of(first.filter(pa.array(todo)), _RDKAFKA_CLIENT)["client"]
        client = pc.replace_with_mask(client, pa.array(todo), found)
    member = cols["member"]
    if member.null_count < n:  # null stays null
        member = pc.replace_substring_regex(member, r"^.*memberId=([^,)\s]+).*$", r"\1")  # MemberMetadata(memberId=...)
        member = pc.replace_substring_regex(member, r"[.,]$", "")
        client = pc.coalesce(client, fields_of(member, _UUID_TAIL)["client"])
    cp = cols["coordinator_partition"]
    bare = pc.fill_null(pc.match_substring_regex(cp, r"^[0-9]+$"), False)  # elected/resigned name the number
    if pc.any(bare).as_py():  # (else cp as it is: no copy)
        cp = pc.if_else(
            bare, pc.binary_join_element_wise(pa.scalar("__consumer_offsets-", cp.type), cp, pa.scalar("", cp.type)), cp
        )
    return m.frame(
        {
            "source": source,
            "kind": labels(kinds),
            "group": group,
            "generation": ints(cols["generation"]),
            "member": member,
            "client_id": client,
            "instance_id": cols["instance_id"],
            "members": ints(cols["members"]),
            "state": cols["state"],
            "reason": cols["reason"],
            "coordinator_partition": cp,
        }
    )


def _valid(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), bool)
