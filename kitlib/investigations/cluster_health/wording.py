"""The wording of partition and node state in broker and controller logs: the rules that pick
and read a record for ``partition_changes`` and ``node_events`` (:mod:`.state` builds the tables),
and :func:`classify`, which reads one message by them.

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

Example:
    >>> classify("[Partition orders-0 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 9, "
    ...          "endOffset: 12). Out of sync replicas: (brokerId: 3, endOffset: 9).")["removed"]
    '3'
"""

from __future__ import annotations

import re

from kitlib.extract import literal_keys

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


PARTITION_KEYS = [literal_keys(p) for _, p in PARTITION_RULES]
NODE_KEYS = [literal_keys(p) for _, p in NODE_RULES]
