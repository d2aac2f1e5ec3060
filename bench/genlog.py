"""Generate a realistic Kafka broker server.log of a given size for benchmarks and tests.

Message shapes follow what Kafka 3.x brokers write (request handling, replication, log
segments, group coordinator, cleaner, controller, Connect-style loggers with ':line'), with
about 2 % of lines belonging to stack traces. Deterministic for a given seed.

Example:
    python bench/genlog.py --size-mb 64 --out /tmp/server.log
"""

from __future__ import annotations

import argparse
import random
import sys

SHAPES = [
    (
        "INFO",
        "[LocalLog partition={t}-{p}, dir=/var/lib/kafka/data] Rolled new log segment at offset {o} in {ms} ms.",
        "kafka.log.LocalLog",
    ),
    (
        "INFO",
        "[ProducerStateManager partition={t}-{p}] Wrote producer snapshot at offset {o} with {n} producer ids in {ms} ms.",
        "org.apache.kafka.storage.internals.log.ProducerStateManager",
    ),
    (
        "INFO",
        "[UnifiedLog partition={t}-{p}, dir=/var/lib/kafka/data] Deleting segment LogSegment(baseOffset={o}, size={b}, lastModifiedTime={e}, largestRecordTimestamp={e}) due to log retention time 604800000ms breach based on the largest record timestamp in the segment",
        "kafka.log.UnifiedLog",
    ),
    (
        "INFO",
        "[LocalLog partition={t}-{p}, dir=/var/lib/kafka/data] Deleting segment files LogSegment(baseOffset={o}, size={b}, lastModifiedTime={e}, largestRecordTimestamp={e})",
        "kafka.log.LocalLog$",
    ),
    ("INFO", "Deleted log /var/lib/kafka/data/{t}-{p}/{o20}.log.deleted.", "kafka.log.LogSegment"),
    ("INFO", "Deleted offset index /var/lib/kafka/data/{t}-{p}/{o20}.index.deleted.", "kafka.log.LogSegment"),
    (
        "INFO",
        "[GroupCoordinator {b1}]: Preparing to rebalance group {g} in state PreparingRebalance with old generation {n} (__consumer_offsets-{p}) (reason: Adding new member consumer-{g}-{n}-{u} with group instance id None; client reason: rebalance failed due to MemberIdRequiredException)",
        "kafka.coordinator.group.GroupCoordinator",
    ),
    (
        "INFO",
        "[GroupCoordinator {b1}]: Stabilized group {g} generation {n} (__consumer_offsets-{p}) with {n} members",
        "kafka.coordinator.group.GroupCoordinator",
    ),
    (
        "INFO",
        "[GroupCoordinator {b1}]: Assignment received from leader consumer-{g}-1-{u} for group {g} for generation {n}. The group has {n} members, 0 of which are static.",
        "kafka.coordinator.group.GroupCoordinator",
    ),
    (
        "INFO",
        "[GroupMetadataManager brokerId={b1}] Removed {n} expired offsets in {ms} milliseconds.",
        "kafka.coordinator.group.GroupMetadataManager",
    ),
    (
        "INFO",
        "[ReplicaFetcherManager on broker {b1}] Removed fetcher for partitions Set({t}-{p})",
        "kafka.server.ReplicaFetcherManager",
    ),
    (
        "INFO",
        "[ReplicaFetcher replicaId={b1}, leaderId={b2}, fetcherId=0] Truncating partition {t}-{p} with TruncationState(offset={o}, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, partition={p}, leaderEpoch={n}, endOffset={o})",
        "kafka.server.ReplicaFetcherThread",
    ),
    (
        "INFO",
        "[Partition {t}-{p} broker={b1}] ISR updated to {b1},{b2}  and version updated to {n}",
        "kafka.cluster.Partition",
    ),
    (
        "INFO",
        "[Partition {t}-{p} broker={b1}] Log loaded for partition {t}-{p} with initial high watermark {o}",
        "kafka.cluster.Partition",
    ),
    (
        "INFO",
        "[BrokerLifecycleManager id={b1}] The broker has caught up. Transitioning from STARTING to RECOVERY.",
        "kafka.server.BrokerLifecycleManager",
    ),
    (
        "INFO",
        "[SocketServer listenerType=BROKER, nodeId={b1}] Enabling request processing.",
        "kafka.network.SocketServer",
    ),
    (
        "INFO",
        "[BrokerMetadataPublisher id={b1}] Updating metadata.version to 3.9-IV0 at offset OffsetAndEpoch(offset={o}, epoch={n}).",
        "kafka.server.metadata.BrokerMetadataPublisher",
    ),
    (
        "INFO",
        "[MetadataLoader id={b1}] handleLoadSnapshot(Snapshot(offset={o}, epoch={n})): incrementing HandleLoadSnapshotCount to {n}.",
        "org.apache.kafka.image.loader.MetadataLoader",
    ),
    (
        "INFO",
        "[SnapshotGenerator id={b1}] Creating new KRaft snapshot file snapshot {o}-{n} because we have replayed at least {n} bytes.",
        "org.apache.kafka.image.publisher.SnapshotGenerator",
    ),
    (
        "INFO",
        "[RaftManager id={b1}] Completed transition to FollowerState(fetchTimeoutMs=2000, epoch={n}, leader={b2}, voters=[1, 2, 3], highWatermark=Optional[LogOffsetMetadata(offset={o}, metadata=Optional.empty)], fetchingSnapshot=Optional.empty) from ResignedState",
        "org.apache.kafka.raft.QuorumState",
    ),
    ("INFO", "Cleaner 0: Beginning cleaning of log __consumer_offsets-{p}", "kafka.log.LogCleaner"),
    (
        "INFO",
        "[TransactionCoordinator id={b1}] Completed loading transaction metadata from __transaction_state-{p} for coordinator epoch {n}",
        "kafka.coordinator.transaction.TransactionCoordinator",
    ),
    (
        "INFO",
        "[Admin Manager on Broker {b1}]: Updating topic {t} with new configuration : retention.ms -> 604800000",
        "kafka.server.ZkAdminManager",
    ),
    (
        "INFO",
        "[KafkaApi-{b1}] Auto creation of topic {t} with 3 partitions and replication factor 3 is successful",
        "kafka.server.DefaultAutoTopicCreationManager",
    ),
    (
        "WARN",
        "[ReplicaFetcher replicaId={b1}, leaderId={b2}, fetcherId=0] Error in response for fetch request (type=FetchRequest, replicaId={b1}, maxWait=500, minBytes=1, maxBytes=10485760, fetchData={{{t}-{p}=PartitionData(topicId={u}, fetchOffset={o}, logStartOffset=0, maxBytes=1048576, currentLeaderEpoch=Optional[{n}], lastFetchedEpoch=Optional[{n}])}}, isolationLevel=READ_UNCOMMITTED, removed=, replaced=, metadata=(sessionId={n}, epoch={n}), rackId=)",
        "kafka.server.ReplicaFetcherThread",
    ),
    (
        "WARN",
        "[SocketServer listenerType=BROKER, nodeId={b1}] Unexpected error from /10.0.{p}.{n}; closing connection",
        "kafka.network.Processor",
    ),
    (
        "WARN",
        "[Producer clientId=connector-producer-orders-{n}] Got error produce response with correlation id {o} on topic-partition {t}-{p}, retrying (2147483646 attempts left). Error: NOT_LEADER_OR_FOLLOWER",
        "org.apache.kafka.clients.producer.internals.Sender:692",
    ),
    (
        "ERROR",
        "[ReplicaManager broker={b1}] Error processing append operation on partition {t}-{p}",
        "kafka.server.ReplicaManager",
    ),
    (
        "DEBUG",
        "[Controller id={b1}] Processing BrokerHeartbeatRequest(brokerId={b2}, brokerEpoch={o}, currentMetadataOffset={o}, wantFence=false, wantShutDown=false)",
        "org.apache.kafka.controller.QuorumController",
    ),
    (
        "INFO",
        "[orders-source|task-{n}|offsets] WorkerSourceTask{{id=orders-source-{n}}} Committing offsets for {n} acknowledged messages",
        "org.apache.kafka.connect.runtime.WorkerSourceTask:236",
    ),
]
TOPICS = ["orders", "payments", "retriever-mutation", "__consumer_offsets", "clicks.v2", "audit_log"]
TRACE = [
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader, this error indicates that the broker is not the current leader.",
    "\tat kafka.server.ReplicaManager.appendToLocalLog(ReplicaManager.scala:1296)",
    "\tat kafka.server.ReplicaManager.appendRecords(ReplicaManager.scala:804)",
    "\tat kafka.server.KafkaApis.handleProduceRequest(KafkaApis.scala:742)",
    "\tat kafka.server.KafkaApis.handle(KafkaApis.scala:193)",
    "\tat kafka.server.KafkaRequestHandler.run(KafkaRequestHandler.scala:154)",
    "\tat java.base/java.lang.Thread.run(Thread.java:840)",
    "Caused by: java.io.IOException: Connection reset by peer",
    "\tat java.base/sun.nio.ch.SocketDispatcher.read0(Native Method)",
    "\t... 5 more",
]


def generate(size_bytes: int, out, seed: int = 7, start_epoch: int = 1795392000) -> dict:
    """Write about ``size_bytes`` of log to the binary file object ``out``; returns counts."""
    rnd = random.Random(seed)
    written = lines = records = trace_lines = 0
    t = start_epoch * 1000
    buf = []
    while written < size_bytes:
        t += rnd.randint(0, 40)
        sec, ms = divmod(t, 1000)
        import time as _t

        stamp = _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(sec)) + f",{ms:03d}"
        level, shape, logger = SHAPES[rnd.randrange(len(SHAPES))]
        topic = rnd.choice(TOPICS)
        o = rnd.randint(0, 10**9)
        msg = shape.format(
            t=topic,
            p=rnd.randint(0, 49),
            o=o,
            o20=f"{o:020d}",
            ms=rnd.randint(0, 900),
            n=rnd.randint(1, 5000),
            b=rnd.randint(1000, 10**9),
            e=t,
            b1=rnd.randint(1, 9),
            b2=rnd.randint(1, 9),
            g=f"group-{rnd.randint(1, 40)}",
            u=f"{rnd.getrandbits(64):016x}",
        )
        line = f"[{stamp}] {level} {msg} ({logger})\n"
        buf.append(line)
        records += 1
        lines += 1
        written += len(line)
        if (level == "ERROR" and rnd.random() < 0.05) or rnd.random() < 0.001:
            k = rnd.randint(4, len(TRACE))
            tr = "\n".join(TRACE[:k]) + "\n"
            buf.append(tr)
            lines += k
            trace_lines += k
            written += len(tr)
        if len(buf) >= 4096:
            out.write("".join(buf).encode())
            buf = []
    out.write("".join(buf).encode())
    return {"bytes": written, "lines": lines, "records": records, "trace_lines": trace_lines}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate a realistic Kafka server.log for benchmarks.")
    ap.add_argument("--size-mb", type=float, default=64, help="approximate size in MiB (default 64)")
    ap.add_argument("--out", required=True, help="file to write")
    ap.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    a = ap.parse_args(argv)
    with open(a.out, "wb") as f:
        c = generate(int(a.size_mb * 1024 * 1024), f, a.seed)
    print(c, file=sys.stderr)


if __name__ == "__main__":
    main()
