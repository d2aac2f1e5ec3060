"""Partition and node state from the broker and controller logs -> ``partition_changes`` (ISR
shrink/expand/update, leaders and followers, offline and unclean elections) and ``node_events``
(controller changes, fencing and session loss, log-directory failures, out-of-memory).

Wording read from Apache Kafka's source (3.9 and the 2.x/3.x ZooKeeper-mode classes):

- ``kafka.cluster.Partition``: ``[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2.
  Leader: (highWatermark: 9, endOffset: 12). Out of sync replicas: (brokerId: 3, endOffset: 9, ...)``,
  ``Expanding ISR from 1,2 to 1,2,3``, ``ISR updated to 1,2 (under-min-isr) and version updated to 7``
  (``zkVersion`` in 2.x);
- ``state.change.logger``: ``[Broker id=2] Leader orders-0 ... starts at leader epoch 5 ... ISR [1,2]``,
  ``Follower orders-0 starts at leader epoch 5 ... Current leader is 2``, ``Unable to bring up new local
  leader ... offline log directory``; ZooKeeper mode ``[Controller id=1 epoch=3] Changed partition
  orders-0 from OnlinePartition to OfflinePartition`` / ``... with state LeaderAndIsr(leader=2, ...)``;
- ``QuorumController``: ``Becoming the active controller at epoch 7``, ``Renouncing the leadership due to
  a metadata log event``, ``In the new epoch 8, the leader is (none)``; ``ReplicationControlManager``:
  ``Fencing broker 3 because its session has timed out`` (4.x: ``Fencing broker 3 at epoch 10 because
  ...``), ``Setting new leader for topicId ..., partition 0 to 3 using an unclean election``;
  ``BrokerHeartbeatManager``: ``The request from broker 3 to unfence has been granted``, ``Unfenced broker 3
  has requested and been granted a controlled shutdown``;
- ZooKeeper mode ``KafkaController``: ``2 successfully elected as the controller. Epoch incremented to 5``,
  ``Resigning``, ``Broker failure callback for 3``, ``No broker in ISR is alive for ... There's potential
  data loss.``; ZooKeeper clients: ``Client session timed out, have not heard from server in 6669ms for
  sessionid 0x...``, ``Session expired.``, ``Unable to reconnect to ZooKeeper service, session 0x... has
  expired``;
- log directories: ``Error while appending records to orders-5 in dir /data/kafka``
  (``LogDirFailureChannel``), ``Stopping serving logs in dir ...`` (``LogManager``), ``Stopping serving
  replicas in dir ...``, ``Shutdown broker because all log dirs in ... have failed``, ``Halting broker
  because dir ... is offline`` (``ReplicaManager``), with the cause (``No space left on device``...) taken
  from the stack trace;
- ``java.lang.OutOfMemoryError`` anywhere in a record.
- older brokers (wording and releases from the catalogue, ``kitlib templates``): 0.8-0.10
  ``Partition [orders,24] on broker 1: Shrinking ISR for partition [orders,24] from 1,0,2 to 1`` (and
  ``Expanding``; the partition is read as ``orders-24``), ``N successfully elected as leader``
  (``ZookeeperLeaderElector``), the broker-change handler's ``Newly added brokers: , deleted brokers: 1,
  ...`` (0.8-trunk; one row with the ``Broker failure callback`` that follows it), controllers writing
  ``[Controller 3]: `` (0.8-0.11: ``Broker 3 resigned as the controller``, ``Controller resigning, broker
  id 3``); KRaft brokers' ``Recorded new controller, from now on will use node host:9093 (id: 3 rack:
  null)`` (2.7-3.7, ``broker`` before 3.3.2), a ``controller_epoch`` row without an epoch; 0.11's
  ``Partition [orders,24] on broker 1: Shrinking ISR from 1,0,2 to 1``; the KRaft controller's 2.8-3.x
  prefix ``[Controller 1] `` beside ``[QuorumController id=1] ``, 2.8-3.2's ``Renouncing the leadership at
  oldEpoch 5 due to ...``, 3.0+'s ``UNCLEAN partition change for orders-1 with topic ID ...: ... leader: 1 -> 0``;
  a checkpoint write failing (``Error while writing to checkpoint file <dir>/<topic-N>/leader-epoch-checkpoint``,
  1.0+) and, before 1.0, ``Halting due to unrecoverable I/O error while handling produce request``.

Records are picked by an Arrow regex over the messages of every logger except the request,
authorizer and cleaner logs; classification and captures are Arrow regex kernels over the picked
first lines, each wording (template id, else logger) tried on the rule its first record matches
(:func:`_rule_of`), and the rows are put together column by column.

Example:
    >>> classify("[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 9, "
    ...          "endOffset: 12). Out of sync replicas: (brokerId: 3, endOffset: 9).")["removed"]
    '3'
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import arrow_messages, extractor, first_lines, first_rule, group_arrays

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

IDS = r"[\d, ]*"
# (kind, pattern on the first line); capture groups are read by position in _fields()
PARTITION_RULES = [
    ("isr_shrink", r"\[Partition (\S+) broker=(\d+)\] Shrinking ISR from (" + IDS + r") to (" + IDS + r")(?:\.|$)"),
    ("isr_expand", r"\[Partition (\S+) broker=(\d+)\] Expanding ISR from (" + IDS + r") to (" + IDS + r")(?:\.|$| )"),
    # 0.8-0.10: "Partition [orders,24] on broker 1: Shrinking ISR for partition [orders,24] from 1,0,2 to 1"
    # (0.10.2's expand names the partition orders-24); 0.11 keeps the prefix and drops "for partition ...":
    # "Partition [orders,24] on broker 1: Shrinking ISR from 1,0,2 to 1"; the partition is read as "orders,24"
    (
        "isr_shrink",
        r"Partition \[(\S+?,\d+)\] on broker (\d+): Shrinking ISR (?:for partition \S+ )?from ("
        + IDS
        + r") to ("
        + IDS
        + r")(?:\.|$)",
    ),
    (
        "isr_expand",
        r"Partition \[(\S+?,\d+)\] on broker (\d+): Expanding ISR (?:for partition \S+ )?from ("
        + IDS
        + r") to ("
        + IDS
        + r")(?:\.|$| )",
    ),
    ("isr_updated", r"\[Partition (\S+) broker=(\d+)\] ISR updated to (" + IDS + r")(?: ?(\(under-min-isr\)))?\s*and "),
    (
        "leader",
        r"\[Broker id=(\d+)\] Leader (\S+?)(?: with topic id \S+)? starts at leader epoch (\d+) .*?ISR \[("
        + IDS
        + r")\]",
    ),
    (
        "follower",
        r"\[Broker id=(\d+)\] Follower (\S+?)(?: with topic id \S+)? starts at leader epoch (\d+) .*?"
        r"Current leader is (-?\d+)",
    ),
    ("offline", r"\[Controller id=(\d+)[^\]]*\] Changed partition (\S+?) (?:state )?from \w+ to OfflinePartition"),
    (
        "leader_change",
        r"\[Controller id=(\d+)[^\]]*\] Changed partition (\S+?) from \w+ to OnlinePartition with state "
        r"LeaderAndIsr\(leader=(-?\d+), leaderEpoch=(\d+), isr=List\((" + IDS + r")\)",
    ),
    (
        "offline_dir_leader",
        r"\[Broker id=(\d+)\] Unable to bring up new local leader (\S+?)(?: with topic id \S+)? "
        r"because it resides in an offline log directory",
    ),
    ("unclean", r"Setting new leader for topicId (\S+), partition (\d+) to (\d+) using an unclean election"),
    ("unclean", r"No broker in ISR is alive for \[?([^\],\s]+)(?:,(\d+))?\]?\. Elect leader (\d+) from live brokers"),
    # a follower ahead of its new leader, refusing to truncate because unclean elections are off: the
    # leader was elected without the records this replica holds (ReplicaFetcherThread). 0.8-0.11 name the
    # leader: "Exiting because log truncation is not allowed for partition [orders,0], Current leader 1's
    # latest offset 5 is less than replica's latest offset 9" ("Halting ... for topic orders" before 0.10.1);
    # 1.0-2.0 only in the thread's prefix (not read: the empty groups)
    (
        "unclean",
        r"(?:Exiting|Halting) because log truncation is not allowed for (?:partition|topic) \[?([^\],\s]+)(?:,(\d+))?"
        r"\]?, [Cc]urrent leader (\d+)'s latest offset",
    ),
    (
        "unclean",
        r"Exiting because log truncation is not allowed for partition (\S+?)(), current leader's latest offset \d+ "
        r"is less than replica's latest offset \d+()",
    ),
    # KRaft 3.0+ (PartitionRegistration): "UNCLEAN partition change for orders-1 with topic ID <id>: replicas:
    # [1] -> [0], isr: [1] -> [0], leader: 1 -> 0, ..."; the leader after the arrow
    ("unclean", r"UNCLEAN partition change for (\S+)-(\d+)(?: with topic ID \S+?)?: .*?\bleader: -?\d+ -> (-?\d+)"),
]
NODE_RULES = [
    (
        "controller_active",
        r"\[(?:QuorumController id=|Controller )(\d+)\] Becoming the active controller at epoch (\d+)",
    ),
    ("controller_active", r"(\d+) successfully elected as the controller(?:\. Epoch incremented to (\d+))?"),
    # 0.8-0.10 ZookeeperLeaderElector (no prefix; the empty group stands for the epoch)
    ("controller_active", r"(?:^|\] )(\d+) successfully elected as leader()$"),
    (
        "controller_renounce",
        r"\[(?:QuorumController id=|Controller )(\d+)\] Renouncing the leadership(?: at oldEpoch \d+)? due to "
        r"([^.]*)\.(?: We were the "
        r"leader at epoch (\d+))?",
    ),
    # "[Controller id=3] Resigning" (1.0+); 0.9-0.11 "[Controller 3]: Broker 3 resigned as the controller",
    # "[Controller 3]: Controller resigning, broker id 3"
    (
        "controller_renounce",
        r"\[Controller (?:id=)?(\d+)\]:? (?:Resigning|Broker \d+ resigned as the controller|Controller resigning, "
        r"broker id \d+)",
    ),
    (
        "controller_epoch",
        r"\[(?:QuorumController id=|Controller )(\d+)\] In the new epoch (\d+), the leader is (\(none\)|\d+)",
    ),
    # a KRaft broker learns the new controller (2.7-3.7 BrokerToControllerRequestThread /
    # NodeToControllerRequestThread): "[BrokerToControllerChannelManager broker=1 name=forwarding]: Recorded
    # new controller, from now on will use node kafka-3:9093 (id: 3 rack: null)" ("broker" before 3.3.2);
    # no epoch (the empty group)
    (
        "controller_epoch",
        r"(?:^\[[^\]]*?(?:BrokerToControllerChannelManager broker=|broker-)(\d+)[^\]]*\]:? )?()Recorded new "
        r"controller, from now on will use (?:broker|node) \S+ \(id: (\d+)",
    ),
    (
        "fenced",
        # 4.x names the broker's epoch: "Fencing broker 3 at epoch 10 because its session has timed out."
        r"\[(?:QuorumController id=|Controller )(\d+)\] Fencing broker (\d+) (?:at epoch \d+ )?because "
        r"(its session has timed out)",
    ),
    ("broker_failed", r"\[Controller (?:id=)?(\d+)[^\]]*\]:? Broker failure callback for (\d+)"),
    # the broker-change handler: "[BrokerChangeListener on Controller 3]: " (0.8-0.10), "[Controller 3]: "
    # (0.11), "[Controller id=3] " (1.0+); only the first deleted broker is read, as in the callback
    (
        "broker_failed",
        r"\[(?:BrokerChangeListener on )?Controller (?:id=)?(\d+)[^\]]*\]:? Newly added brokers: [\d,]*, "
        r"deleted brokers: (\d+)",
    ),
    (
        "unfenced",
        r"\[(?:QuorumController id=|Controller )(\d+)\] The request from broker (\d+) to unfence has been granted",
    ),
    (
        "controlled_shutdown",
        r"\[(?:QuorumController id=|Controller )(\d+)\] Unfenced broker (\d+) has requested and been granted "
        r"(?:a controlled|an immediate) shutdown",
    ),
    ("heartbeat_timeout", r"\[BrokerLifecycleManager id=(\d+)\] (.*?(?:heartbeat.*timed out|timed out.*heartbeat).*)"),
    (
        "zk_session_timeout",
        r"(Client session timed out), have not heard from server in (\d+)ms for session ?id "
        r"(0x[0-9a-fA-F]+)",
    ),
    (
        "zk_session_expired",
        r"(?:^|\] )(Session expired)\.?$|(Unable to reconnect to ZooKeeper service, session "
        r"0x[0-9a-fA-F]+ has expired)",
    ),
    # the exception may follow on the message's own line (Quarkus: "... in dir /data: java.io.IOException: ...")
    (
        "log_dir_error",
        r"(Error while [a-z ]+?) (?:records to |the |for )?(\S+) in dir (\S+?)(?:: [\w.$]+(?:Exception|Error)\b.*)?\.?$",
    ),
    # a checkpoint write or read failing (CheckpointFile, logged by LogDirFailureChannel, 1.0+): the file is
    # <dir>/recovery-point-offset-checkpoint or <dir>/<topic-N>/leader-epoch-checkpoint; dir before partition
    (
        "log_dir_error",
        r"(Error while (?:writing to|reading) checkpoint file) (\S+?)(?:/([^/\s]+-\d+)/(?:leader-epoch-checkpoint|"
        r"partition\.metadata)|/[^/\s]+)$",
    ),
    ("log_dir_offline", r"Stopping serving (?:logs|replicas) in dir (\S+?)(?: with uuid \S+)?(?: because|\.?$)"),
    (
        "log_dir_offline",
        r"Logs for partitions (\S*) are offline and logs for future partitions \S* are offline due to "
        r"failure on log directory (\S+?)\.?$",
    ),
    # 1.1+ ReplicaManager, on its own the sign of an offline log dir: "Broker 0 stopped fetcher for partitions
    # t-0,t-1 and stopped moving logs for partitions  because they are in the failed log directory /data/kafka."
    (
        "log_dir_offline",
        r"Broker \d+ stopped fetcher for partitions (\S*) and stopped moving logs for partitions \S* because they "
        r"are in the failed log directory (\S+?)\.?$",
    ),
    ("log_dir_shutdown", r"(Shutdown broker because all log dirs in (.*?) have failed)"),
    ("log_dir_halt", r"(Halting broker because dir (\S+) is offline)"),
    # 0.8-0.11, before log directories could fail alone: "Halting due to unrecoverable I/O error while handling
    # produce request: " (KafkaApis, then ReplicaManager) halts the broker; no dir named (the empty group)
    ("log_dir_halt", r"(Halting due to unrecoverable I/O error while (?:handling \w+ request|flushing logs))()"),
    ("oom", r"(java\.lang\.OutOfMemoryError(?:: [^\n]*)?)"),
]
REPORTER = (
    r"^\[(?:QuorumController|Controller|Broker|BrokerServer|KafkaServer|BrokerLifecycleManager|KafkaRaftServer|"
    r"ControllerServer|ReplicaManager) (?:id|broker|nodeId)=(\d+)|^\[Partition \S+ broker=(\d+)\]"
    # 0.8-0.11 controllers: "[Controller 3]: ", "[BrokerChangeListener on Controller 3]: "
    r"|^\[(?:BrokerChangeListener on )?Controller (\d+)\]:? "
)
CAUSES = (
    r"(No space left on device|Read-only file system|Input/output error|Disk quota exceeded|Permission denied|"
    r"Too many open files|Structure needs cleaning|Stale file handle)"
)
_ALL = [p for _, p in PARTITION_RULES] + [p for _, p in NODE_RULES]
CONTAINS = "(?m)" + "|".join(f"(?:{p})" for p in _ALL)  # (?m): a record's message spans lines
SKIP_LOGGERS = (
    "kafka.request.logger",
    "kafka.authorizer.logger",
    "kafka.log.LogCleaner",
    "kafka.log.LogCleaner$",
    "kafka.log.LogCleanerManager$",
)


def wanted_logger(name: str) -> bool:
    """Every logger but the request, authorizer and cleaner logs (state lines come from many classes)."""
    return name not in SKIP_LOGGERS


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _ids(s: str | None) -> list[int]:
    return [int(x) for x in (s or "").replace(" ", "").split(",") if x.strip().lstrip("-").isdigit()]


def _join(ids) -> str | None:
    return ",".join(str(i) for i in ids) if ids else None


def _tp(name) -> tuple[str | None, int | None]:
    if not isinstance(name, str) or not name:
        return None, None
    topic, _, p = name.rpartition("-")
    return (topic, int(p)) if p.isdigit() and topic else (name, None)


def _partition_fields(kind: str, g: list) -> dict:
    """Columns of one partition_changes row from its rule's capture groups."""
    r: dict = {"kind": kind}
    if kind in ("isr_shrink", "isr_expand"):
        tp = g[0].replace(",", "-") if g[0] else g[0]  # 0.8-0.10 name it [orders,24]; topics have no comma
        before = (g[2] or "").replace(" ", "").strip(",")
        after = (g[3] or "").replace(" ", "").strip(",")
        b, a = before.split(","), after.split(",")
        r.update(
            tp=tp,
            reporter=int(g[1]),
            isr_before=before or None,
            isr_after=after or None,
            removed=",".join(x for x in b if x and x not in a) or None,
            added=",".join(x for x in a if x and x not in b) or None,
        )
    elif kind == "isr_updated":
        r.update(tp=g[0], reporter=_int(g[1]), isr_after=_join(_ids(g[2])), under_min_isr=bool(g[3]))
    elif kind == "leader":
        r.update(reporter=_int(g[0]), tp=g[1], epoch=_int(g[2]), isr_after=_join(_ids(g[3])), leader=_int(g[0]))
    elif kind == "follower":
        r.update(reporter=_int(g[0]), tp=g[1], epoch=_int(g[2]), leader=_int(g[3]))
    elif kind == "offline":
        r.update(reporter=_int(g[0]), tp=g[1], leader=-1)
    elif kind == "leader_change":
        r.update(reporter=_int(g[0]), tp=g[1], leader=_int(g[2]), epoch=_int(g[3]), isr_after=_join(_ids(g[4])))
    elif kind == "offline_dir_leader":
        r.update(reporter=_int(g[0]), tp=g[1])
    elif kind == "unclean":
        if g[1] not in (None, "") and not g[0].startswith("["):  # KRaft: topic id + partition, or 1.x [topic,p]
            r.update(topic=g[0], partition=_int(g[1]), leader=_int(g[2]))
        else:
            r.update(tp=g[0], leader=_int(g[2]))
    return r


def _node_fields(kind: str, g: list, rule: str) -> dict:
    r: dict = {"kind": kind}
    if kind == "controller_active":
        r.update(node=_int(g[0]), epoch=_int(g[1]))
    elif kind == "controller_renounce":
        r.update(node=_int(g[0]), cause=g[1] if len(g) > 1 else "resigned", epoch=_int(g[2]) if len(g) > 2 else None)
    elif kind == "controller_epoch":
        r.update(reporter=_int(g[0]), epoch=_int(g[1]), node=-1 if g[2] == "(none)" else _int(g[2]))
    elif kind in ("fenced", "broker_failed", "unfenced", "controlled_shutdown"):
        r.update(reporter=_int(g[0]), node=_int(g[1]), cause=g[2] if len(g) > 2 else None)
    elif kind == "heartbeat_timeout":
        r.update(node=_int(g[0]), cause=g[1])
    elif kind == "zk_session_timeout":
        r.update(cause=f"{g[0]} after {g[1]} ms (session {g[2]})", waited_ms=_int(g[1]))
    elif kind == "zk_session_expired":
        r.update(cause=g[0] or g[1])
    elif kind == "log_dir_error":
        if "checkpoint file" in rule:  # its groups name the dir first, then the partition
            r.update(cause=g[0], dir=g[1], partitions=g[2] or None)
        else:
            r.update(cause=g[0], partitions=g[1], dir=g[2])
    elif kind == "log_dir_offline":
        if "Logs for partitions" in rule or "stopped fetcher" in rule:
            r.update(partitions=g[0] or None, dir=g[1])
        else:
            r.update(dir=g[0])
    elif kind in ("log_dir_shutdown", "log_dir_halt"):
        r.update(cause=g[0], dir=g[1] or None)
    elif kind == "oom":
        r.update(cause=g[0])
    return r


def classify(message: str) -> dict:
    """The row one record gives (partition_changes or node_events fields), or ``{"kind": None}``."""
    import re

    first = message.split("\n", 1)[0]
    for kind, p in PARTITION_RULES:
        m = re.search(p, first)
        if m:
            r = _partition_fields(kind, list(m.groups()))
            if r.get("tp"):
                r["topic"], r["partition"] = _tp(r.pop("tp"))
            return r
    for kind, p in NODE_RULES:
        m = re.search(p, message if kind == "oom" else first)
        if m:
            return _node_fields(kind, list(m.groups()), p)
    return {"kind": None}


def _literal_keys(pattern: str) -> tuple[str, ...]:
    """Literal texts one of which every match of ``pattern`` holds (the longest run of plain
    characters the pattern always takes; one per branch of a pattern that is an alternation at
    its top), or ``()`` when the pattern has no such run."""
    import re._parser as sre  # type: ignore[import-not-found]

    def flat(items) -> list:  # a group without flags or repeat is its items in line
        out = []
        for op, arg in items:
            if op is sre.SUBPATTERN and not arg[1] and not arg[2]:
                out.extend(flat(arg[3]))
            else:
                out.append((op, arg))
        return out

    def runs(items) -> list[str]:
        out: list[str] = []
        cur = ""
        for op, arg in flat(items):
            if op is sre.LITERAL:
                cur += chr(arg)
            else:
                out.append(cur)
                cur = ""
        return [r for r in [*out, cur] if r]

    parsed = list(sre.parse(pattern))
    if len(parsed) == 1 and parsed[0][0] is sre.BRANCH:
        each = [max(runs(b), key=len, default="") for b in parsed[0][1][1]]
        return tuple(each) if all(each) else ()
    best = max(runs(parsed), key=len, default="")
    return (best,) if best else ()


def _escape(text: str) -> str:
    """``text`` as a regex matching it literally (RE2 and Python alike)."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def _hits(texts: pa.Array, pattern: str) -> np.ndarray:
    return np.asarray(pc.match_substring_regex(texts, pattern).to_numpy(zero_copy_only=False), bool)


def _codes(col: pd.Series) -> np.ndarray:
    """Integer codes of a column's values (-1: missing), without a Python object per row."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return np.asarray(col.cat.codes.to_numpy(), np.int64)
    return np.asarray(pd.factorize(col, use_na_sentinel=True)[0], np.int64)


def _kinds_of(events: pd.DataFrame) -> np.ndarray:
    """Which wording each record is, as far as the ingest tells (its template id, else its
    logger): records of one code are classified together (:func:`_rule_of`)."""
    logger = _codes(events["logger"]) if "logger" in events else np.zeros(len(events), np.int64)
    if "template_id" not in events:
        return logger
    tid = _codes(events["template_id"])
    return np.where(tid >= 0, tid, tid.max(initial=-1) + 1 + logger)


def _rule_of(texts: pa.Array, patterns: list[str], keys: list[tuple[str, ...]], hint: np.ndarray) -> np.ndarray:
    """Index of the first of ``patterns`` each text matches (-1: none), as
    :func:`~kitlib.extract.first_rule` gives it, without trying every pattern on every text.

    A text holding none of the patterns' literal ``keys`` (:func:`_literal_keys`) matches none
    (one pass). The rest is taken by groups of one ``hint`` code (one wording, as a rule): the
    pattern the group's first text matches is tried on the group at once, and a text it matches
    is that pattern's unless it may match an earlier one too (it holds that pattern's key, or
    its key is part of this one's: then that pattern is tried). What a group leaves over is
    taken the same way; texts that match nothing so found, or may match an earlier pattern, are
    tried on every pattern in order."""
    import re

    out = np.full(len(texts), -1, dtype=np.int16)
    if not len(texts):
        return out
    if not all(keys):
        return first_rule(texts, patterns)
    every = sorted({k for ks in keys for k in ks})
    cand = np.flatnonzero(_hits(texts, "|".join(_escape(k) for k in every)))
    order = cand[np.argsort(hint[cand], kind="stable")]
    starts = np.flatnonzero(np.r_[True, hint[order][1:] != hint[order][:-1]])
    groups = np.split(order, starts[1:]) if len(order) else []
    todo = []
    for group in groups:
        left = np.sort(group)
        for _ in range(len(patterns)):  # a new pattern each time round
            if not len(left):
                break
            sample = texts[int(left[0])].as_py()
            r = next((i for i, p in enumerate(patterns) if re.search(p, sample)), -1)
            if r < 0:
                break
            part = texts if len(left) == len(texts) else texts.take(pa.array(left))
            hit = _hits(part, patterns[r])
            if not hit[0]:  # (Python's and Arrow's regexes disagree on it): in order, below
                todo.append(left[:1])
                left = left[1:]
                continue
            mine, left = left[hit], left[~hit]
            sub = texts if len(mine) == len(texts) else texts.take(pa.array(mine))
            doubt = np.zeros(len(mine), bool)
            others: list[str] = []
            for j in range(r):
                if any(kj in kr for kj in keys[j] for kr in keys[r]):  # it holds j's key: try j
                    doubt |= _hits(sub, patterns[j])
                else:
                    others += keys[j]
            if others:
                doubt |= _hits(sub, "|".join(_escape(k) for k in sorted(set(others))))
            todo.append(mine[doubt])
            out[mine[~doubt]] = r
        todo.append(left)
    rest = np.sort(np.concatenate(todo)) if todo else np.zeros(0, np.int64)
    if len(rest):
        out[rest] = first_rule(texts.take(pa.array(rest)), patterns)
    return out


PARTITION_KEYS = [_literal_keys(p) for _, p in PARTITION_RULES]
NODE_KEYS = [_literal_keys(p) for _, p in NODE_RULES]


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
            "message": pd.array(pc.utf8_slice_codeunits(texts, 0, 500), dtype=pd.StringDtype("pyarrow")),
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


def _to_int(values: pa.Array) -> pd.Series:
    """A capture-group column of (optionally signed) digits as Int64, NA where absent or not an
    integer of 64 bits (a whole column: no Python per row)."""
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
    bl, al = pc.split_pattern(b, ","), pc.split_pattern(a, ",")
    bp = np.asarray(pc.list_parent_indices(bl).to_numpy(zero_copy_only=False), np.int64)
    ap = np.asarray(pc.list_parent_indices(al).to_numpy(zero_copy_only=False), np.int64)
    bf, af = pc.list_flatten(bl), pc.list_flatten(al)

    def ids(flat: pa.Array) -> np.ndarray:  # the lists hold digits only (IDS); '' -> -1
        v = pc.if_else(pc.equal(flat, ""), "-1", flat)
        return np.asarray(pc.cast(v, pa.int64()).to_numpy(zero_copy_only=False), np.int64)

    ib, ia = ids(bf), ids(af)
    a_off = np.asarray(al.offsets.to_numpy(zero_copy_only=False), np.int64)
    a_off -= a_off[0]
    width = int(np.diff(a_off).max(initial=0))
    if width <= 16:  # ISRs are short: each row's list of ``a`` as a row of a small matrix, compared at once
        table = np.full((len(a), max(width, 1)), -2, np.int64)
        table[ap, np.arange(len(ia)) - a_off[ap]] = ia
        kept = (ib >= 0) & ~(table[bp] == ib[:, None]).any(axis=1)
    else:  # (row, id) as one integer: broker ids are 31-bit, so row * 2^32 + id never collides
        kept = (ib >= 0) & ~np.isin((bp << 32) + ib, (ap << 32) + ia)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(bp[kept], minlength=len(b)))]).astype(np.int32)
    joined = pc.binary_join(
        pa.ListArray.from_arrays(pa.array(offsets), bf.filter(pa.array(kept))), pa.scalar(",", bf.type)
    )
    return pc.if_else(pc.equal(joined, ""), pa.scalar(None, joined.type), joined)


def _isr_change_frame(kind: str, gs: list) -> pd.DataFrame:
    """Rows of ISR shrinks or expansions from their rule's groups (partition, reporter, ISR
    before and after): the brokers removed and added are set differences of the two lists."""
    before, after = _id_list(gs[2]), _id_list(gs[3])
    tp = pc.replace_substring(gs[0], ",", "-")  # 0.8-0.10 name it [orders,24]

    def text(a: pa.Array) -> pd.Series:
        return pd.Series(pd.array(pc.if_else(pc.equal(a, ""), pa.scalar(None, a.type), a), dtype="string"))

    return pd.DataFrame(
        {
            "kind": kind,
            "tp": pd.array(tp, dtype="string"),
            "reporter": _to_int(gs[1]),
            "isr_before": text(before),
            "isr_after": text(after),
            "removed": pd.array(_minus(before, after), dtype="string"),
            "added": pd.array(_minus(after, before), dtype="string"),
        }
    )


def _partition_frame(events: pd.DataFrame) -> tuple[pd.DataFrame, pa.Array]:
    """Rows of ``partition_changes`` (without the base columns), one frame per rule, concatenated
    in record order (``row``: the record's index in ``events``), and the records' first lines."""
    msgs = arrow_messages(events)
    first = _first_lines(msgs)
    which = _rule_of(
        first, [p for _, p in PARTITION_RULES], PARTITION_KEYS, _kinds_of(events)
    )  # (most records match one)
    parts = []
    for i, (kind, pattern) in enumerate(PARTITION_RULES):
        sel = np.flatnonzero(which == i)
        if not len(sel):
            continue
        gs = group_arrays(first.take(pa.array(sel)), pattern)
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
        tp = pc.extract_regex(pa.array(f.pop("tp").astype(pd.StringDtype("pyarrow")).array), r"^(?P<t>.*)-(?P<p>\d+)$")
        topic = pd.Series(pd.array(pc.struct_field(tp, "t"), dtype=pd.StringDtype("pyarrow")))
        part = pc.struct_field(tp, "p")
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
    return df.sort_values(list(TIME_ORDER), kind="stable").reset_index(drop=True)


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
    msgs = arrow_messages(events)
    first = _first_lines(msgs)
    which = _rule_of(first, [p for _, p in NODE_RULES], NODE_KEYS, _kinds_of(events))
    oom = next(i for i, (k, _) in enumerate(NODE_RULES) if k == "oom")
    if (which < 0).any():  # an OutOfMemoryError may be the cause deep in a stack trace
        rest = np.flatnonzero(which < 0)
        hit = _hits(msgs.take(pa.array(rest)), NODE_RULES[oom][1])
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
        placed.append(at)
        texts = (msgs if kind == "oom" else first).take(pa.array(rows[at]))
        got = {
            ("rule_reporter" if c == "reporter" else c): v
            for c, v in _node_columns(kind, pattern, group_arrays(texts, pattern)).items()
        }
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
    return df.sort_values(list(TIME_ORDER), kind="stable").reset_index(drop=True)
