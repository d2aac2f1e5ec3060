"""Lifecycle steps, context of a window rather than changes: a node's start-up (from the first
line its process logs to Kafka's "started" line) and shutdown, topics and partitions created,
coordinators loading or unloading their partitions, and what follows those within the step (see
:data:`CREATION`, :data:`FOLLOWS`). :func:`mark_steps` finds their records with DuckDB on the view
``src`` of :func:`kitlib.changes.changes`; :func:`step_context` counts them per step and says them in
words."""

from __future__ import annotations

import pandas as pd

from kitlib.formats.logs import lineage as lineages
from kitlib.formats.logs import statements as st

# Kafka's own lifecycle statements (logger and wording, every release's: 0.8's "Started", 0.8.1 to
# 3.x's "[KafkaServer id=N] started", KRaft's "Transition from STARTING to STARTED" and "Kafka
# Server started"). A node's start-up runs from the first line a Kafka process logs (its signal
# handlers, its log4j MBean, "starting"; else the end of its previous shutdown, else its first
# record) to its "started" line; its shutdown from "shutting down" to "shut down completed" (or
# its next start, or its last record).
SERVER_LOGGERS = (
    "kafka.server.KafkaServer", "kafka.server.KafkaRaftServer", "kafka.server.BrokerServer",
    "kafka.server.ControllerServer", "kafka.Kafka",
)  # fmt: skip
BOOT_LOGGERS = ("kafka.utils.Log4jControllerRegistration$", "org.apache.kafka.common.utils.LoggingSignalHandler")
BOOTING = (
    r"(?i)^registered signal handlers|^registered kafka:type=kafka\.log4jcontroller|(^|\] )starting\s*$|"
    r"transition from \w+ to starting\b"
)
STARTED = r"(?i)(^|\] )(kafka server )?started\.?\s*$|transition from \w+ to started\b"
STOPPING = r"(?i)(^|\] )shutting down\b|transition from \w+ to shutting_down\b"
STOPPED = r"(?i)shut ?down complete"
# the statements of a topic or partition being created, and of a group or transaction coordinator
# loading or unloading its partitions (the offsets topic created on a group's first use, moved,
# or released at shutdown): context of the window, not a change of the running cluster
CREATION = (
    r"^(\{any\} ?)?(Replayed TopicRecord|Replayed PartitionRecord for new partition|Creating new partition|"
    r"Created log for partition|No checkpointed highwatermark is found for partition|"
    r"Elected as the (group|transaction) coordinator|Resigned as the (group|transaction) coordinator|"
    r"Scheduling (loading|unloading) of (offsets and group|transaction) metadata|"
    r"Finished (loading|unloading) (offsets and group metadata|transaction metadata|\{)|"
    r"Unloaded transaction metadata|Loading transaction metadata|Completed loading transaction metadata|"
    r"Creating topic|Created topic|CreateTopics result|Sent auto-creation request)"
)
# what follows a lifecycle step: partitions loaded and their leaders and followers starting,
# fetcher threads started, nodes registering, configs and producer id blocks replayed. These are
# set aside only within a step: a node's start-up or shutdown, or a burst of creation statements
# (records at most BURST_GAP apart), each widened by BURST_GAP on both sides
FOLLOWS = (
    r"^(\{any\} ?)?(Log loaded for partition|Loading producer state till offset|"
    r"Truncating partition .* due to local high watermark|Truncating to .* has no effect|Starting$|"
    r"Replayed .* modifying the registration for broker|Replaying ProducerIdsRecord|Replayed ConfigRecord for|"
    r"Added fetcher to broker|Removed fetcher for partitions)"
    r"|\} starts at leader epoch|partition\(s\) to local leaders"
)
BURST_GAP = 5000  # ms
PHASES = {"start-up": "started", "shutdown": "shut down", "creation": "creation"}


_IDS: dict[str, list[str]] = {}


def statement_ids(pattern: str) -> list[str]:
    """The lineage ids of the catalogue's statements (any release's wording) matching ``pattern``
    (:data:`CREATION`, :data:`FOLLOWS`)."""
    if pattern not in _IDS:
        import re

        cat = st.load()
        fam = lineages.lineage(cat)
        rx = re.compile(pattern)
        _IDS[pattern] = sorted({fam[s.id] for s in cat.statements if rx.search(s.typed())})
    return _IDS[pattern]


def mark_steps(con, keep: str) -> str:
    """Tables ``phases`` (host, phase, lo, hi: each node's start-up and shutdown, from the server
    loggers' own lines), ``marks`` (host, t, kind S/D/E), ``steps`` and ``lifeord`` (the ``ord`` of
    each record of ``src`` logged while a node starts or shuts down, or of a following statement
    within a step) on the connection; returns the ``where`` condition of a record of ``src`` set
    aside as lifecycle (one of those, or a creation statement).

    A phase covers the records of every host, not only the node's own: what the other brokers log
    while one starts or stops (fetchers to it, its partitions' leaders moving) and the last lines a
    node writes just after its "started" line are part of that step."""
    servers = ", ".join(f"'{x}'" for x in (*SERVER_LOGGERS, *BOOT_LOGGERS))
    h = "coalesce(cast(host as varchar), '')"
    con.execute(
        f"create temp table marks as select * from (select {h} as host, t, case "
        f"when regexp_matches(message, '{STOPPED}') then 'E' when regexp_matches(message, '{STOPPING}') then 'D' "
        f"when regexp_matches(message, '{STARTED}') then 'S' when regexp_matches(message, '{BOOTING}') then 'B' "
        f"end as kind from src "
        f"where cast(logger as varchar) in ({servers}) and t > 0 and {keep}) where kind is not null"
    )
    con.execute(
        f"create temp table hspan as select {h} as host, min(t) as lo, max(t) as hi from src where t > 0 group by all"
    )
    con.execute(
        "create temp table phases as "
        # a start-up ends at a "started" line and begins at the first boot line after the node's
        # previous lifecycle line (its host's first record when there is none before)
        "select host, 'start-up' as phase, lo, max(hi) as hi from (select x.host, x.hi, case when x.prev is null "
        "then h.lo else coalesce((select min(e.t) from marks e where e.host = x.host and e.kind = 'B' "
        "and e.t > x.prev and e.t <= x.hi), x.hi) end as lo from (select s.host, s.t as hi, (select max(e.t) "
        "from marks e where e.host = s.host and e.kind in ('S', 'D', 'E') and e.t < s.t) as prev from marks s "
        "where s.kind = 'S') x join hspan h using (host)) group by all "
        "union all select host, 'shutdown', min(lo), hi from (select d.host, d.t as lo, coalesce("
        "(select min(e.t) from marks e where e.host = d.host and e.kind in ('E', 'S') and e.t > d.t), h.hi) as hi "
        "from marks d join hspan h using (host) where d.kind = 'D') group by all"
    )
    ids = ", ".join(f"'{x}'" for x in statement_ids(CREATION)) or "''"
    follows = ", ".join(f"'{x}'" for x in statement_ids(FOLLOWS)) or "''"
    con.execute(
        f"create temp table steps as select min(t) - {BURST_GAP} as lo, max(t) + {BURST_GAP} as hi from ("
        f"select t, sum(cast(t - gap > {BURST_GAP} as int)) over (order by t) as g from (select t, "
        f"lag(t, 1, t) over (order by t) as gap from src where t > 0 and cast(template_id as varchar) in ({ids}) "
        f"and {keep})) group by g "
        f"union all select lo - {BURST_GAP}, hi + {BURST_GAP} from phases"
    )
    # two range joins on the few phases and steps, not a correlated condition per record (DuckDB
    # kept every record's time apart for it: most of the comparison's CPU on a 1 GB store)
    con.execute(
        f"create temp table lifeord as with x as (select ord, t, cast(template_id as varchar) as tid "
        f"from src where t > 0 and {keep}) "
        f"select ord from x join phases p on x.t between p.lo and p.hi "
        f"union select ord from x join steps s on x.t between s.lo and s.hi where x.tid in ({follows})"
    )
    return f"coalesce(cast(template_id as varchar) in ({ids}) or ord in (select ord from lifeord), false)"


def step_context(con, span: tuple[int, int], in_w: str, in_b: str, included: bool) -> tuple[dict, list[str]]:
    """The lifecycle records per phase in the window and the baseline, and the steps in the window
    in words ("broker-1 started in the window", "the offsets topic was created or loaded")."""
    got = con.execute(
        f"select phase, {in_w} as w, count(*) as n from lev where {in_w} or {in_b} group by all"
    ).fetchall()
    counts: dict = {}
    for phase, w, n in got:
        counts.setdefault(phase, {"window": 0, "baseline": 0})["window" if w else "baseline"] += int(n)
    words: list[str] = []
    fmt = lambda t: pd.Timestamp(int(t), unit="ms", tz="UTC").strftime("%H:%M:%S")
    for host, kind, t in con.execute(
        f"select host, kind, min(t) from marks where {in_w} and kind in ('S', 'E') group by all order by 3, 1"
    ).fetchall():
        words.append(f"{host or 'the node'} {'started' if kind == 'S' else 'shut down'} in the window ({fmt(t)})")
    for host, phase in con.execute(
        f"select host, phase from phases p where p.lo < {span[1]} and p.hi >= {span[0]} group by all order by 1"
    ).fetchall():
        said = f"{host or 'the node'} {'started' if phase == 'start-up' else 'shut down'} in the window"
        if not any(w.startswith(said) for w in words):
            words.append(f"{host or 'the node'} was {'starting' if phase == 'start-up' else 'shutting down'} "
                         "in the window")  # fmt: skip
    # the coordinators' loggers tell the offsets topic and the transaction state topic from the rest
    offsets = "regexp_matches(logger, 'Group(MetadataManager|Coordinator)|coordinator\\.group')"
    txn = "regexp_matches(logger, 'Transaction(StateManager|Coordinator)|coordinator\\.transaction')"
    row = con.execute(
        f"select count(*), count(distinct host), bool_or({offsets}), bool_or({txn}), "
        f"count(*) filter (where not {offsets} and not {txn}) from lev where phase = 'creation' and {in_w}"
    ).fetchall()[0]
    if row and row[0]:
        n, hosts, offsets, txn, other = row
        if offsets:
            words.append("the offsets topic (__consumer_offsets) was created, loaded or unloaded by its coordinators")
        if txn:
            words.append("the transaction state topic was created, loaded or unloaded by its coordinators")
        if other:
            words.append(
                f"topics or partitions were created or moved ({other:,} record{'s' * (other != 1)} on "
                f"{hosts} host{'s' * (hosts != 1)})"
            )
    if counts and not included:
        n_w = sum(v["window"] for v in counts.values())
        n_b = sum(v["baseline"] for v in counts.values())
        words.append(f"{n_w:,} records of these steps in the window and {n_b:,} in the baseline were set aside")
    return counts, words
