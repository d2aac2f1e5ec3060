"""Each incident class the kit detects, read in the wording of every era that logged it: 0.8-0.11 and
1.x, 2.x (ZooKeeper) and 3.x/4.x (KRaft). GENERATED LINES: every message below is built from a template
of the catalogue of Kafka's own log statements (``kitlib templates``; kitlib/formats/logs/statements.py),
looked up by its words and checked to be logged by the release named (for 4.4.0, which the catalogue
does not hold yet, from the templates of that release's classes in :data:`SAID_IN_4_4`), its slots filled with made-up
values; the prefixes (``logIdent``) a class adds are written as that release's source writes them. Each
test asserts the finding and the broker, group, transactional id, task, address or partition it names.
Lines not built from a template say so in their test (a message Kafka builds in code of its own).

Coverage, by finding and era (ZK = ZooKeeper mode, trunk = apache/kafka of October 2024, taken for 4.x):

====================================  =====================================================================
finding (what logs it)                releases whose wording is tested
====================================  =====================================================================
isr-shrink                            0.10.2, 0.11.0, 2.0, 3.9, trunk, 4.4
broker-fenced: controller             ZK 0.10.1, 1.1, 2.8; KRaft 3.0, 3.9, trunk, 4.4
broker-fenced: ZK session expired     0.10 (ZooKeeper client's own line), 1.1, 2.7 (ZK only)
log-dir-failure                       0.10.2 (halt), 1.1, 2.8, 3.9, trunk
unclean-election                      ZK 0.10.2; follower refusing truncation 0.10.2-2.0; KRaft 3.3, 3.9,
                                      trunk (ZK 2.1-2.8 log no such line: JMX only)
controller-failover                   0.10.2, 2.8, 3.0, 3.9, trunk, 4.4
rebalance-storm                       0.10.2, 1.1, 2.8, 3.9, trunk, 4.4; members removed 0.11.0.1, 2.8, 3.9,
                                      trunk (TRACE before); members leaving 3.2, 3.9, trunk; consumers'
                                      poll time-outs 2.1, 3.0, 3.9, trunk
transaction-timeouts                  rollback 0.11, 2.4, 2.8, 3.9, trunk; producer fenced (coordinator)
                                      0.11, 2.8, 3.9, trunk; (producer) 0.11, 1.1, 2.8, 3.9, trunk
auth-failures                         client 1.1, 2.8, 3.9, trunk; broker 2.8, 3.9, trunk; authorizer
                                      denials 0.10.2 (template), 1.1, 2.8, 3.9 (from source)
offset-commit-timeouts                source flush 0.9, 0.10.2, 2.8; sink commit 0.10.2, 1.1, 2.8, 3.9, trunk
cleaner-stalled                       uncleanable 2.1, 2.8, 3.9, trunk; thread died 0.10.2, 1.1, 2.8, 3.9,
                                      trunk
cleaner-buffer-too-small,             statistics block (from the format string) 0.10.2, 2.8, 3.9, trunk,
cleaner-no-reclaim                    4.1 (storage-module logger)
remote-copy-errors                    3.6, 3.9, trunk (tiered storage: 3.6+ only)
broker-versions-mixed                 0.10.2/0.11, 1.1/2.1.1, 2.1.1/2.2, 2.8/3.9, 3.9/trunk
quota-throttling (request log)        1.1, 2.7, 2.8, 3.9 (0.10 logs no throttle time)
down-conversion (request log)         2.8, 3.9 (1.0-2.7 name the API as 'apiKey=FETCH', which the
                                      redaction masks); the requests table's text forms: 0.10.2, 1.1, 2.7
====================================  =====================================================================

Log-driven but not in the matrix: request-saturation and clients-on-removed-protocol (the same request
log rows as above, with JMX), tierstate-metadata-growth (Confluent Server's lines, not Apache Kafka's).
Not Kafka's wording: gc-pauses, heap-too-small (GC logs), jvm-out-of-memory, jvm-crash (JVM output).
Not log-driven: consumer-stalled (lag snapshots), broker-io-imbalance (file I/O samples) and the other
cluster_config findings (replication-factor-low, replication-factor-above-brokers, internal-topic-rf-low,
min-isr-blocks-writes, min-isr-too-low, unclean-election-enabled, partition-skew, leader-skew,
preferred-leader-imbalance, replicas-on-one-rack, controller-quorum-size, disk-use-skew, log-dir-filling,
io-threads-short, network-threads-short, replica-fetchers-short, controller-combined-busy: configuration,
describe output, log-dir listings and JMX)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kitlib
from kitlib.formats.logs import statements

# 117 small bundles written, loaded and triaged (about 25 CPU-s): in make test, not the fast lane
pytestmark = pytest.mark.slow


# 4.x wording that the catalogue does not hold while its apache/kafka history ends at trunk of
# October 2024 (no 4.x release tag): the templates as the classes of the 4.4.0 release hold them (read
# from the jars of kitlib.lab's 4.x line), a slot written {}. ``said`` takes them for a release the
# catalogue does not know.
SAID_IN_4_4 = {
    "Fencing broker": "Fencing broker {} at epoch {} because its session has timed out.",  # reworded in 4.x
    # as in 3.9 and trunk
    "Shrinking ISR from": "Shrinking ISR from {} to {}. Leader: (highWatermark: {}, endOffset: {}). "
    "Out of sync replicas: {}.",
    "Becoming the active controller at epoch": "Becoming the active controller at epoch {}, next write offset {}.",
    "Preparing to rebalance group": "Preparing to rebalance group {} in state {} with old generation {} (reason: {}).",
    "Stabilized group": "Stabilized group {} generation {} with {} members.",
}


def said(words: str, release: str, *values, logger: str | None = None) -> str:
    """The message a release logs for the catalogue's template containing ``words`` (and logged by
    ``logger`` when given), its ``{}`` slots filled with ``values`` in order; for 4.4.0 while the
    catalogue has no such release, the template of :data:`SAID_IN_4_4`."""
    cat = statements.load()
    hits = [
        s
        for s in cat.statements
        if words in s.template and release in s.releases and (logger is None or s.logger == logger)
    ]
    if not hits and release == "4.4.0" and not any(release in s.releases for s in cat.statements):
        hits = [statements.Statement("", logger or "", "info", SAID_IN_4_4[words], (), (), (release,))]
    assert hits, f"no template with {words!r} in {release}"
    t = hits[0].template
    assert t.count("{}") == len(values), (t, values)
    for v in values:
        t = t.replace("{}", str(v), 1)
    return t


def write(root: Path, host: str, name: str, lines: list[tuple[str, str, str, str]]) -> None:
    """Lines in Kafka's default layout: (time, level, message, logger); a stack trace after the
    message's first line follows the record's line, as log4j writes it."""
    d = root / host
    d.mkdir(parents=True, exist_ok=True)
    with open(d / name, "a") as f:
        for ts, level, msg, logger in lines:
            first, nl, trace = msg.partition("\n")
            f.write(f"[{ts}] {level} {first} ({logger})\n{trace}{nl}")


def found(root: Path, finding: str) -> list:
    """The findings ``finding`` of the bundle at ``root``, from the detectors of the investigation
    that owns that id (the other investigations' detectors have nothing to say on its wording)."""
    from kitlib import registry

    registry.load()
    owner = registry.owner(finding)
    assert owner is not None, f"no investigation declares {finding!r}"
    got = kitlib.triage(kitlib.load_bundle(root), investigations=[owner.name])
    return [f for f in got.findings if f.id == finding]


def at(minute: int, second: int = 0) -> str:
    return f"2020-03-01 10:{minute:02d}:{second:02d},000"


# --- under-replication: ISR shrinks -------------------------------------------------------------

PARTITION = "kafka.cluster.Partition"


@pytest.mark.parametrize(
    "release,prefix",
    [
        ("0.10.2.0", lambda t, p: f"Partition [{t},{p}] on broker 1: "),
        ("0.11.0.0", lambda t, p: f"Partition [{t},{p}] on broker 1: "),  # 0.11 dropped "for partition ..."
        ("2.0.0", lambda t, p: f"[Partition {t}-{p} broker=1] "),
        ("3.9.0-rc3", lambda t, p: f"[Partition {t}-{p} broker=1] "),
        ("trunk", lambda t, p: f"[Partition {t}-{p} broker=1] "),  # 4.x
        ("4.4.0", lambda t, p: f"[Partition {t}-{p} broker=1] "),
    ],
)
def test_isr_shrink_in_every_era(tmp_path, release, prefix):
    lines = []
    for i, (t, p) in enumerate([("orders", 3), ("payments", 0)]):
        if release.startswith("0.10"):
            msg = said("Shrinking ISR for partition", release, t, p, "1,2,3", "1,3")
        elif release.startswith(("0.11", "2.0")):
            msg = said("Shrinking ISR from", release, "1,2,3", "1,3", logger=PARTITION)
        else:
            msg = said("Shrinking ISR from", release, "1,2,3", "1,3", 9, 12, "(brokerId: 2, endOffset: 9)")
        lines.append((at(0, 10 * i), "INFO", prefix(t, p) + msg, PARTITION))
    write(tmp_path, "broker-1", "server.log", lines)
    f = found(tmp_path, "isr-shrink")
    assert f and f[0].numbers["broker"] == 2 and "Broker 2" in f[0].summary


# --- broker failure: fenced or declared failed ----------------------------------------------------


@pytest.mark.parametrize(
    "release,prefix,logger",
    [
        (
            "0.10.1.0",
            "[BrokerChangeListener on Controller 1]: ",
            "kafka.controller.ReplicaStateMachine$BrokerChangeListener",
        ),
        ("1.1.0", "[Controller id=1] ", "kafka.controller.KafkaController"),
        ("2.8.0", "[Controller id=1] ", "kafka.controller.KafkaController"),
    ],
)
def test_broker_declared_failed_by_a_zookeeper_controller(tmp_path, release, prefix, logger):
    values = ("", "2", "1,3") if release < "2.2" else ("", "2", "", "1,3")
    msg = prefix + said("Newly added brokers: ", release, *values)
    write(tmp_path, "broker-1", "controller.log", [(at(5), "INFO", msg, logger)])
    f = found(tmp_path, "broker-fenced")
    assert f and f[0].numbers["broker"] == 2


@pytest.mark.parametrize(
    "release,prefix",
    [
        ("3.0.0", "[Controller 1] "),
        ("3.9.0-rc3", "[QuorumController id=1] "),
        ("trunk", "[QuorumController id=1] "),
        ("4.4.0", "[QuorumController id=1] "),  # 4.x adds the broker's epoch
    ],
)
def test_broker_fenced_by_a_kraft_controller(tmp_path, release, prefix):
    msg = prefix + said("Fencing broker", release, *((2, 7) if release.startswith("4.") else (2,)))
    write(
        tmp_path,
        "controller-1",
        "controller.log",
        [(at(5), "INFO", msg, "org.apache.kafka.controller.ReplicationControlManager")],
    )
    f = found(tmp_path, "broker-fenced")
    assert f and f[0].numbers["broker"] == 2 and "fenced" in f[0].summary


# --- log directory failures ------------------------------------------------------------------------

IOERR = "java.io.IOException: No space left on device\n\tat sun.nio.ch.FileDispatcherImpl.write0(Native Method)"


def test_log_dir_failure_before_jbod_halts_the_broker(tmp_path):
    """0.9-0.11: an I/O error on a produce halts the whole broker (ReplicaManager)."""
    msg = said("Halting due to unrecoverable I/O error while handling produce request", "0.10.2.0")
    write(tmp_path, "broker-3", "server.log", [(at(1), "FATAL", msg + "\n" + IOERR, "kafka.server.ReplicaManager")])
    f = found(tmp_path, "log-dir-failure")
    assert f and "Broker 3" in f[0].summary and f[0].numbers["halted"]


@pytest.mark.parametrize("release", ["1.1.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_log_dir_failure_with_jbod(tmp_path, release):
    lines = [
        # not from a template: the log builds this message and LogDirFailureChannel logs it as given
        (
            at(1),
            "ERROR",
            "Error while appending records to orders-0 in dir /data/k1",
            "kafka.server.LogDirFailureChannel",
        ),
        (at(1, 1), "WARN", said("Stopping serving logs in dir", release, "/data/k1"), "kafka.log.LogManager"),
        (
            at(1, 2),
            "ERROR",
            said("Shutdown broker because all log dirs in", release, "/data/k1"),
            "kafka.log.LogManager",
        ),
    ]
    write(tmp_path, "broker-3", "server.log", lines)
    f = found(tmp_path, "log-dir-failure")
    assert f and "Broker 3" in f[0].summary and "/data/k1" in f[0].summary


def test_log_dir_failure_on_a_checkpoint_write(tmp_path):
    """Not generated from a template: CheckpointFile builds this message and hands it to
    LogDirFailureChannel, which logs it as given (the catalogue shows that call's slot only)."""
    msg = "Error while writing to checkpoint file /data/k1/orders-0/leader-epoch-checkpoint"
    write(
        tmp_path, "broker-3", "server.log", [(at(1), "ERROR", msg + "\n" + IOERR, "kafka.server.LogDirFailureChannel")]
    )
    f = found(tmp_path, "log-dir-failure")
    assert f and "Broker 3" in f[0].summary and "/data/k1" in f[0].summary


# --- unclean leader elections ----------------------------------------------------------------------


def test_unclean_election_zookeeper_0_10(tmp_path):
    msg = said("No broker in ISR is alive for", "0.10.2.0", "[orders,3]", 2, "2,3")
    write(
        tmp_path,
        "broker-1",
        "controller.log",
        [(at(2), "WARN", msg, "kafka.controller.OfflinePartitionLeaderSelector")],
    )
    f = found(tmp_path, "unclean-election")
    assert f and "orders-3" in f[0].summary


@pytest.mark.parametrize("release", ["3.3.0", "3.9.0-rc3", "trunk"])
def test_unclean_election_kraft_3_x(tmp_path, release):
    prefix = "[Controller 1] " if release < "3.9" else "[QuorumController id=1] "
    msg = prefix + said(
        "UNCLEAN partition change for",
        release,
        "orders-3 with topic ID Fs3yVbY9S2qtNEF8A-xMSA",
        "replicas: [2] -> [3], isr: [2] -> [3], leader: 2 -> 3, leaderEpoch: 8 -> 9, partitionEpoch: 8 -> 9",
    )
    write(
        tmp_path,
        "controller-1",
        "controller.log",
        [(at(2), "INFO", msg, "org.apache.kafka.metadata.PartitionRegistration")],
    )
    f = found(tmp_path, "unclean-election")
    assert f and "orders-3" in f[0].summary


# --- controller failover ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "release,prefix,logger",
    [
        ("0.10.2.0", lambda n: "", "kafka.server.ZookeeperLeaderElector"),
        ("2.8.0", lambda n: f"[Controller id={n}] ", "kafka.controller.KafkaController"),
        ("3.0.0", lambda n: f"[Controller {n}] ", "org.apache.kafka.controller.QuorumController"),
        ("3.9.0-rc3", lambda n: f"[QuorumController id={n}] ", "org.apache.kafka.controller.QuorumController"),
        ("trunk", lambda n: f"[QuorumController id={n}] ", "org.apache.kafka.controller.QuorumController"),
        ("4.4.0", lambda n: f"[QuorumController id={n}] ", "org.apache.kafka.controller.QuorumController"),
    ],
)
def test_controller_failover_in_every_era(tmp_path, release, prefix, logger):
    def elected(n: int, epoch: int) -> str:
        if release.startswith("0.10"):
            return said("successfully elected as leader", release, n)
        if release.startswith("2."):
            return said("successfully elected as the controller", release, n, epoch, epoch)
        if release.startswith("3.0"):
            return said("Becoming the active controller at epoch", release, epoch, 100, epoch - 1)
        return said("Becoming the active controller at epoch", release, epoch, 100)

    write(tmp_path, "broker-1", "controller.log", [(at(0), "INFO", prefix(1) + elected(1, 4), logger)])
    write(tmp_path, "broker-2", "controller.log", [(at(30), "INFO", prefix(2) + elected(2, 5), logger)])
    f = found(tmp_path, "controller-failover")
    assert f and "2" in f[0].summary


# --- consumer group rebalance storms ---------------------------------------------------------------


@pytest.mark.parametrize(
    "release,prefix,logger",
    [
        ("0.10.2.0", "[GroupCoordinator 1]: ", "kafka.coordinator.GroupCoordinator"),
        ("1.1.0", "[GroupCoordinator 1]: ", "kafka.coordinator.group.GroupCoordinator"),
        ("2.8.0", "[GroupCoordinator 1]: ", "kafka.coordinator.group.GroupCoordinator"),
        (
            "3.9.0-rc3",
            "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ",
            "org.apache.kafka.coordinator.group.GroupMetadataManager",
        ),
        (
            "trunk",
            "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ",
            "org.apache.kafka.coordinator.group.GroupMetadataManager",
        ),
        (
            "4.4.0",
            "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ",
            "org.apache.kafka.coordinator.group.GroupMetadataManager",
        ),
    ],
)
def test_rebalance_storm_in_every_era(tmp_path, release, prefix, logger):
    lines = []
    for i in range(5):
        gen = 10 + i
        if release.startswith("0.10"):
            prep = said("Preparing to restabilize group", release, "orders-app", gen)
            stab = said("Stabilized group", release, "orders-app", gen + 1)
        elif release.startswith("1."):
            prep = said("Preparing to rebalance group", release, "orders-app", gen, "__consumer_offsets", 7)
            stab = said("Stabilized group", release, "orders-app", gen + 1, "__consumer_offsets", 7)
        elif release.startswith("2."):
            prep = said(
                "Preparing to rebalance group",
                release,
                "orders-app",
                "PreparingRebalance",
                gen,
                "__consumer_offsets",
                7,
                "removing member orders-app-1-x on heartbeat expiration",
                logger="kafka.coordinator.group.GroupCoordinator",
            )
            stab = said(
                "Stabilized group",
                release,
                "orders-app",
                gen + 1,
                "__consumer_offsets",
                7,
                2,
                logger="kafka.coordinator.group.GroupCoordinator",
            )
        else:  # the new group coordinator (3.6+, the only one in 4.x)
            prep = said(
                "Preparing to rebalance group",
                release,
                "orders-app",
                "PreparingRebalance",
                gen,
                "removing member orders-app-1-x on heartbeat expiration",
                logger=logger,
            )
            stab = said("Stabilized group", release, "orders-app", gen + 1, 2, logger=logger)
        lines += [(at(i, 0), "INFO", prefix + prep, logger), (at(i, 3), "INFO", prefix + stab, logger)]
    write(tmp_path, "broker-1", "server.log", lines)
    f = found(tmp_path, "rebalance-storm")
    assert f and "orders-app" in f[0].summary


# --- transactions rolled back on timeout -----------------------------------------------------------


@pytest.mark.parametrize("release", ["0.11.0.0", "2.4.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_transaction_timeout_rollback_in_every_era(tmp_path, release):
    words = "Completed rollback ongoing transaction of" if release <= "2.4.0" else "Completed rollback of ongoing"
    msg = "[TransactionCoordinator id=1] " + said(words, release, "payments-tx")
    write(
        tmp_path,
        "broker-1",
        "server.log",
        [(at(3), "INFO", msg, "kafka.coordinator.transaction.TransactionCoordinator")],
    )
    f = found(tmp_path, "transaction-timeouts")
    assert f and "payments-tx" in f[0].summary


# --- authentication failures -----------------------------------------------------------------------


@pytest.mark.parametrize("release", ["1.1.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_client_authentication_failure(tmp_path, release):
    err = "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed: Invalid username or password"
    if release == "1.1.0":
        msg = said("failed authentication due to", release, 1, err)
    else:
        msg = said("failed authentication due to", release, 1, "kafka-1/10.0.0.5:9093", err)
    lines = [
        (
            at(4, s),
            "ERROR",
            "[Consumer clientId=billing-1, groupId=billing] " + msg,
            "org.apache.kafka.clients.NetworkClient",
        )
        for s in (0, 5, 10)
    ]
    write(tmp_path, "app-1", "consumer.log", lines)
    f = found(tmp_path, "auth-failures")
    who = "1" if release == "1.1.0" else "10.0.0.5:9093"
    assert f and f[0].numbers["who"] == who


@pytest.mark.parametrize("release", ["2.8.0", "3.9.0-rc3", "trunk"])
def test_broker_authentication_failure(tmp_path, release):
    msg = said("authentication with", release, "", "/10.0.0.7", "Authentication failed: Invalid username or password")
    lines = [
        (
            at(4, s),
            "INFO",
            "[SocketServer listenerType=ZK_BROKER, nodeId=1] " + msg,
            "org.apache.kafka.common.network.Selector",
        )
        for s in (0, 5, 10)
    ]
    write(tmp_path, "broker-1", "server.log", lines)
    f = found(tmp_path, "auth-failures")
    assert f and f[0].numbers["who"] == "10.0.0.7"


# --- Connect offset commits that time out ----------------------------------------------------------


@pytest.mark.parametrize("release", ["0.9.0.0", "0.10.2.0", "2.8.0"])
def test_connect_flush_timeout_in_every_era(tmp_path, release):
    task = "WorkerSourceTask{id=cdc-orders-0}"
    if release.startswith("0.9"):
        fail = said("waiting for producer to flush outstanding", release, task, 31120, "{orders-0=12}")
    elif release.startswith("0.10"):
        fail = said("waiting for producer to flush outstanding", release, task, 31120)
    else:
        fail = said("Failed to flush, timed out", release, task, 31120)
    logger = "org.apache.kafka.connect.runtime.WorkerSourceTask"
    lines = []
    for m in range(3):
        lines += [
            (at(m, 0), "INFO", f"{task} flushing 31120 outstanding messages for offset commit", logger),
            (at(m, 5), "ERROR", fail, logger),
            (
                at(m, 5),
                "ERROR",
                f"{task} Failed to commit offsets",
                "org.apache.kafka.connect.runtime.SourceTaskOffsetCommitter",
            ),
        ]
    write(tmp_path, "connect-1", "connect.log", lines)
    f = found(tmp_path, "offset-commit-timeouts")
    assert f and "cdc-orders-0" in f[0].summary


# --- a follower ahead of its new leader (the trace an unclean election leaves) -----------------------


@pytest.mark.parametrize("release", ["0.10.2.0", "0.11.0.0", "1.1.0", "2.0.0"])
def test_follower_refusing_truncation_in_every_era(tmp_path, release):
    if release < "1.0":
        msg = said("log truncation is not allowed for partition", release, "[orders,3]", 1, 2051, 2, 2391)
    else:
        prefix = "[ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
        msg = prefix + said("log truncation is not allowed for partition", release, "orders-3", 2051, 2391)
    write(tmp_path, "broker-2", "server.log", [(at(6), "FATAL", msg, "kafka.server.ReplicaFetcherThread")])
    f = found(tmp_path, "unclean-election")
    assert f and "orders-3" in f[0].summary


# --- producers fenced by a newer one with the same transactional id ----------------------------------

COORD = "kafka.coordinator.transaction.TransactionCoordinator"


@pytest.mark.parametrize(
    "release,prefix",
    [
        ("0.11.0.0", "[Transaction Coordinator 1]: "),
        ("2.8.0", "[TransactionCoordinator id=1] "),
        ("3.9.0-rc3", "[TransactionCoordinator id=1] "),
        ("trunk", "[TransactionCoordinator id=1] "),
    ],
)
def test_producer_fenced_seen_by_the_transaction_coordinator(tmp_path, release, prefix):
    """A second producer initialising the id while the first one's transaction is open: the epoch goes
    up by two (one bump aborts the open transaction, one is the new producer's) with no timeout rollback."""
    lines = [
        (
            at(7, s),
            "INFO",
            prefix + said("Initialized transactionalId", release, "payments-tx", 4000, e, "__transaction_state", 12),
            COORD,
        )
        for s, e in ((0, 0), (40, 2))
    ]
    write(tmp_path, "broker-1", "server.log", lines)
    f = found(tmp_path, "transaction-timeouts")
    assert f and "payments-tx" in f[0].summary and "fenced" in f[0].summary
    assert f[0].numbers["transactional_ids"] == "payments-tx"


FENCED = (
    "org.apache.kafka.common.errors.ProducerFencedException: Producer attempted an operation with an old epoch."
    "\n\tat org.apache.kafka.clients.producer.internals.TransactionManager$InitProducerIdHandler.handleResponse"
    "(TransactionManager.java:1156)"
)


@pytest.mark.parametrize("release", ["0.11.0.0", "1.1.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_producer_fenced_seen_by_the_producer(tmp_path, release):
    if release.startswith("0.11"):  # the TransactionManager's own prefix, before the clients' LogContext
        msg = said("Aborting producer batches due to fatal error", release, "[TransactionalId payments-tx] ")
        logger, level, trace = "org.apache.kafka.clients.producer.internals.Sender", "ERROR", "\n" + FENCED
    elif release.startswith("1."):
        msg = "[Producer clientId=pay-1, transactionalId=payments-tx] " + said(
            "Aborting producer batches due to fatal error", release
        )
        logger, level, trace = "org.apache.kafka.clients.producer.internals.Sender", "ERROR", "\n" + FENCED
    else:
        msg = "[Producer clientId=pay-1, transactionalId=payments-tx] " + said(
            "Transiting to fatal error state due to", release, FENCED.split("\n")[0]
        )
        logger, level, trace = "org.apache.kafka.clients.producer.internals.TransactionManager", "INFO", ""
    write(tmp_path, "app-1", "producer.log", [(at(7), level, msg + trace, logger)])
    f = found(tmp_path, "transaction-timeouts")
    assert f and "payments-tx" in f[0].summary and "fenced" in f[0].summary


# --- a broker losing its ZooKeeper session ------------------------------------------------------------


@pytest.mark.parametrize(
    "release,prefix",
    [("1.1.0", "[ZooKeeperClient] "), ("2.7.2", "[ZooKeeperClient Kafka server] ")],
)
def test_zookeeper_session_expired(tmp_path, release, prefix):
    msg = prefix + said("Session expired.", release)
    write(tmp_path, "broker-2", "server.log", [(at(8), "INFO", msg, "kafka.zookeeper.ZooKeeperClient")])
    f = found(tmp_path, "broker-fenced")
    assert f and f[0].numbers.get("zk_session_expired") == 1
    assert f[0].numbers["broker"] == 2 or f[0].numbers.get("host") == "broker-2"


def test_zookeeper_session_expired_0_10(tmp_path):
    """Not from a template: 0.10 and 0.11 brokers use the ZooKeeper client library, whose own line
    (org.apache.zookeeper.ClientCnxn) says the session expired."""
    msg = "Unable to reconnect to ZooKeeper service, session 0x16b4fa2c3d70002 has expired, closing socket connection"
    write(tmp_path, "broker-2", "server.log", [(at(8), "INFO", msg, "org.apache.zookeeper.ClientCnxn")])
    f = found(tmp_path, "broker-fenced")
    assert f and f[0].numbers.get("zk_session_expired") == 1
    assert f[0].numbers["broker"] == 2 or f[0].numbers.get("host") == "broker-2"


# --- the log cleaner stopping ---------------------------------------------------------------------------

CLEANER_ERROR = (
    "java.lang.IllegalStateException: Offset map is full\n\tat kafka.log.Cleaner.buildOffsetMap(LogCleaner.scala:871)"
)


@pytest.mark.parametrize("release", ["2.1.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_cleaner_marks_a_partition_uncleanable(tmp_path, release):
    log = "Log(dir=/data/k1/users-3, topic=users, partition=3, highWatermark=9120, lastStableOffset=9120, logStartOffset=0, logEndOffset=9120)"
    msg = "[kafka-log-cleaner-thread-0]: " + said(
        "Unexpected exception thrown when cleaning log", release, log, "users-3"
    )
    write(
        tmp_path, "broker-1", "log-cleaner.log", [(at(9), "WARN", msg + "\n" + CLEANER_ERROR, "kafka.log.LogCleaner")]
    )
    f = found(tmp_path, "cleaner-stalled")
    assert f and "users-3" in f[0].summary and f[0].evidence[0]["host"] == "broker-1"


@pytest.mark.parametrize(
    "release,ident,logger",
    [
        ("0.10.2.0", "[kafka-log-cleaner-thread-0], ", "kafka.log.LogCleaner"),
        ("1.1.0", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner"),
        ("2.8.0", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner"),
        # 3.5+: the Java ShutdownableThread logs under the thread's own class
        ("3.9.0-rc3", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner$CleanerThread"),
        ("trunk", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner$CleanerThread"),
    ],
)
def test_cleaner_thread_dies(tmp_path, release, ident, logger):
    msg = ident + said("Error due to", release).rstrip()
    write(tmp_path, "broker-1", "log-cleaner.log", [(at(9), "ERROR", msg + "\n" + CLEANER_ERROR, logger)])
    f = found(tmp_path, "cleaner-stalled")
    assert f and f[0].numbers["errors"] == 1 and f[0].evidence[0]["host"] == "broker-1"


# --- tiered storage: segment copies to the remote store failing (3.6+) ----------------------------------


@pytest.mark.parametrize(
    "release,logger",
    [
        ("3.6.0", "kafka.log.remote.RemoteLogManager$RLMTask"),
        ("3.9.0-rc3", "kafka.log.remote.RemoteLogManager$RLMCopyTask"),
        ("trunk", "kafka.log.remote.RemoteLogManager$RLMCopyTask"),
    ],
)
def test_remote_copy_errors(tmp_path, release, logger):
    tp = "Fs3yVbY9S2qtNEF8A-xMSA:orders-3"
    prefix = f"[RemoteLogManager=1 partition={tp}] "
    err = "org.apache.kafka.server.log.remote.storage.RemoteStorageException: Access Denied\n\tat com.example.S3RemoteStorageManager.copyLogSegmentData(S3RemoteStorageManager.java:88)"
    lines = [
        (
            at(10, s),
            "ERROR",
            prefix + said("Error occurred while copying log segments of partition", release, tp) + "\n" + err,
            logger,
        )
        for s in (0, 30)
    ]
    write(tmp_path, "broker-1", "server.log", lines)
    f = found(tmp_path, "remote-copy-errors")
    assert f and "orders-3" in f[0].summary and f[0].numbers["copy_errors"] == 2


# --- Connect sink tasks whose offset commits fail ------------------------------------------------------


@pytest.mark.parametrize("release", ["0.10.2.0", "1.1.0", "2.8.0", "3.9.0-rc3", "trunk"])
def test_connect_sink_commit_timeout_in_every_era(tmp_path, release):
    task = "WorkerSinkTask{id=es-sink-0}"
    if release < "1.0":
        msg = said("offsets timed out", release, task)
    else:
        msg = said("Commit of offsets timed out", release, task)
    logger = "org.apache.kafka.connect.runtime.WorkerSinkTask"
    write(tmp_path, "connect-1", "connect.log", [(at(m), "WARN", msg, logger) for m in range(3)])
    f = found(tmp_path, "offset-commit-timeouts")
    assert f and "es-sink-0" in f[0].summary


# --- members removed or leaving during a rebalance storm ---------------------------------------------

OLD_GC = "kafka.coordinator.group.GroupCoordinator"
NEW_GC = "org.apache.kafka.coordinator.group.GroupMetadataManager"


def storm_lines(release: str, prefix: str, logger: str, extra) -> list:
    """Five rebalances of orders-app, each set off by ``extra(i)``: (message, logger) of the line
    that removes or loses a member."""
    lines = []
    for i in range(5):
        gen = 10 + i
        if release.startswith(("0.11", "1.", "2.0")):
            prep = said("Preparing to rebalance group", release, "orders-app", gen, "__consumer_offsets", 7)
            stab = said("Stabilized group", release, "orders-app", gen + 1, "__consumer_offsets", 7)
        elif logger == OLD_GC:
            why = "removing member on heartbeat expiration"
            prep = said(
                "Preparing to rebalance group",
                release,
                "orders-app",
                "Stable",
                gen,
                "__consumer_offsets",
                7,
                why,
                logger=logger,
            )
            members = (2,) if release >= "2.8" else ()  # 2.8 added the member count
            stab = said(
                "Stabilized group", release, "orders-app", gen + 1, "__consumer_offsets", 7, *members, logger=logger
            )
        else:
            why = "removing member on heartbeat expiration"
            prep = said("Preparing to rebalance group", release, "orders-app", "Stable", gen, why, logger=logger)
            stab = said("Stabilized group", release, "orders-app", gen + 1, 2, logger=logger)
        msg, who = extra(i)
        lines += [
            (at(i, 0), "INFO", msg, who),
            (at(i, 1), "INFO", prefix + prep, logger),
            (at(i, 4), "INFO", prefix + stab, logger),
        ]
    return lines


@pytest.mark.parametrize(
    "release,prefix,logger",
    [
        # 0.9-0.10 log a failed member at TRACE only
        ("0.11.0.1", "[GroupCoordinator 1]: ", OLD_GC),
        ("2.8.0", "[GroupCoordinator 1]: ", OLD_GC),
        ("3.9.0-rc3", "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ", NEW_GC),
        ("trunk", "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ", NEW_GC),
    ],
)
def test_members_removed_on_session_expiry_in_a_storm(tmp_path, release, prefix, logger):
    def failed(i):
        member = f"consumer-orders-app-1-{i:04d}-5f1c"
        return prefix + said(
            "has failed, removing it from the group", release, member, "orders-app", logger=logger
        ), logger

    write(tmp_path, "broker-1", "server.log", storm_lines(release, prefix, logger, failed))
    f = found(tmp_path, "rebalance-storm")
    assert f and "orders-app" in f[0].summary and f[0].numbers["members_failed"] == 5


@pytest.mark.parametrize(
    "release,prefix,logger",
    [
        ("3.2.0", "[GroupCoordinator 1]: ", OLD_GC),
        ("3.9.0-rc3", "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ", NEW_GC),
        ("trunk", "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ", NEW_GC),
    ],
)
def test_members_leaving_in_a_storm(tmp_path, release, prefix, logger):
    def left(i):
        member = f"consumer-orders-app-1-{i:04d}-5f1c"
        reason = "the consumer is being closed"
        if logger == OLD_GC:
            msg = said(
                "has left group {} through explicit `LeaveGroup`; client reason", release, member, "orders-app", reason
            )
        else:  # the new coordinator names the group in its own prefix
            msg = said("] Member {} has left group through explicit", release, "orders-app", member, reason)
        return prefix + msg, logger

    write(tmp_path, "broker-1", "server.log", storm_lines(release, prefix, logger, left))
    f = found(tmp_path, "rebalance-storm")
    assert f and "orders-app" in f[0].summary and f[0].numbers["members_left"] == 5


@pytest.mark.parametrize("release", ["2.1.0", "3.0.0", "3.9.0-rc3", "trunk"])
def test_consumer_poll_timeouts_in_a_storm(tmp_path, release):
    """The consumers' side: each rebalance set off by a member whose poll loop stalled."""
    client = "org.apache.kafka.clients.consumer.internals.AbstractCoordinator"

    def poll(i):
        words = "consumer poll timeout has expired" if release >= "3" else "This member will leave the group because"
        return (
            f"[Consumer clientId=orders-app-{i}, groupId=orders-app] " + said(words, release, logger=client),
            client,
        )

    if release.startswith("2."):
        prefix, logger = "[GroupCoordinator 1]: ", OLD_GC
    else:
        prefix, logger = (
            ("[GroupCoordinator 1]: ", OLD_GC)
            if release < "3.6"
            else (
                "[GroupCoordinator id=1 topic=__consumer_offsets partition=7] ",
                NEW_GC,
            )
        )
    lines = storm_lines(release, prefix, logger, poll)
    write(tmp_path, "broker-1", "server.log", [x for x in lines if x[3] != client])
    write(tmp_path, "app-1", "consumer.log", [x for x in lines if x[3] == client])
    f = found(tmp_path, "rebalance-storm")
    assert f and "orders-app" in f[0].summary and f[0].numbers["poll_timeouts_in_client_logs"] == 5


# --- brokers started with different Kafka versions (a rolling upgrade half done) ------------------------

SERVER = "kafka.server.KafkaServer"


def logged(template: str, release: str, logger: str) -> str:
    """``template`` itself, checked to be one the release logs under ``logger`` (no slots)."""
    cat = statements.load()
    assert any(s.template == template and s.logger == logger and release in s.releases for s in cat.statements), (
        template,
        release,
    )
    return template


def banner(release: str, broker: int, minute: int) -> list:
    """A broker's start-up lines as ``release`` logs them: its first line, the version, 'started'."""
    if release < "1.1":  # no Log4jController line yet; KafkaServer sets its prefix after 'starting'
        first = (logged("starting", release, SERVER), SERVER)
    else:
        logger = "kafka.utils.Log4jControllerRegistration$"
        first = (said("Registered kafka:type=kafka.Log4jController MBean", release, logger=logger), logger)
    ident = f"[Kafka Server {broker}], " if release < "1.0" else f"[KafkaServer id={broker}] "
    words = "Kafka version : " if release < "2.2" else "Kafka version: "
    version = release.split("-")[0] if release != "trunk" else "4.0.0-SNAPSHOT"
    return [
        (at(minute, 0), "INFO", first[0], first[1]),
        (at(minute, 5), "INFO", said(words, release, version), "org.apache.kafka.common.utils.AppInfoParser"),
        (at(minute, 9), "INFO", ident + logged("started", release, SERVER), SERVER),
    ]


@pytest.mark.parametrize(
    "old,new",
    [("0.10.2.0", "0.11.0.0"), ("1.1.0", "2.1.1"), ("2.1.1", "2.2.0"), ("2.8.0", "3.9.0-rc3"), ("3.9.0-rc3", "trunk")],
)
def test_brokers_on_mixed_versions(tmp_path, old, new):
    write(tmp_path, "broker-1", "server.log", banner(new, 1, 0))
    write(tmp_path, "broker-2", "server.log", banner(old, 2, 1))
    f = found(tmp_path, "broker-versions-mixed")
    old_v = old.split("-")[0]
    assert f and f"{old_v} on broker-2" in f[0].summary and "on broker-1" in f[0].summary


# --- the authorizer denying a principal ------------------------------------------------------------------


@pytest.mark.parametrize("release", ["0.10.2.0", "1.1.0", "2.8.0", "3.9.0-rc3"])
def test_authorizer_denials_in_every_era(tmp_path, release):
    """0.9-0.11 from the catalogue's template; 1.0+ build the line in a function of their own, which
    the catalogue cannot read: those lines are written as that release's source builds them
    (SimpleAclAuthorizer 1.x, AclAuthorizer 2.x, the KRaft StandardAuthorizer 3.x)."""
    if release < "1.0":
        msg = said(
            "Operation = {} from host = {} on resource = {}",
            release,
            "User:bob",
            "Denied",
            "Read",
            "10.0.0.7",
            "Topic:orders",
        )
    elif release < "2.0":
        msg = "Principal = User:bob is Denied Operation = Read from host = 10.0.0.7 on resource = Topic:orders"
    elif release < "3.0":
        msg = (
            "Principal = User:bob is Denied Operation = Read from host = 10.0.0.7 on resource = Topic:LITERAL:orders "
            "for request = Fetch with resourceRefCount = 1"
        )
    else:
        msg = (
            "Principal = User:bob is Denied operation = READ from host = 10.0.0.7 on resource = Topic:LITERAL:orders "
            "for request = FETCH with resourceRefCount = 1 based on rule DefaultRule(result=DENIED)"
        )
    lines = [(at(4, s), "INFO", msg, "kafka.authorizer.logger") for s in (0, 5, 10)]
    write(tmp_path, "broker-1", "kafka-authorizer.log", lines)
    f = found(tmp_path, "auth-failures")
    assert f and "User:bob" in f[0].summary


# --- log cleaner passes: a full dedupe buffer, nothing reclaimed -----------------------------------------


@pytest.mark.parametrize(
    "release,ident,logger",
    [
        ("0.10.2.0", "[kafka-log-cleaner-thread-0], ", "kafka.log.LogCleaner"),
        ("2.8.0", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner"),
        ("3.9.0-rc3", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner"),
        ("trunk", "[kafka-log-cleaner-thread-0]: ", "kafka.log.LogCleaner"),
        # 4.1 moved the cleaner to the storage module: the same block under its Java logger
        ("4.1", "[kafka-log-cleaner-thread-0]: ", "org.apache.kafka.storage.internals.log.LogCleaner"),
    ],
)
def test_cleaner_statistics_in_every_era(tmp_path, release, ident, logger):
    """Not from a template: LogCleaner builds its statistics block with a format string (the same one in
    the sources of 0.10.2.0, 2.8.0, 3.9.0-rc3 and trunk; 4.1's Java cleaner keeps its wording), one record
    of many lines that ends with a line break, so log4j writes the logger on a line of its own."""
    blocks = []
    for i in range(3):
        lo, hi = 39321 * i, 39321 * (i + 1)
        stats = [
            f"Log cleaner thread 0 cleaned log users-3 (dirty section = [{lo:d}, {hi:d}])",
            "4.6 MB of log processed in 0.3 seconds (17.2 MB/sec).",
            "Indexed 4.5 MB in 0.1 seconds (40.4 Mb/sec, 41.5% of total time)",
            "Buffer utilization: 90.0%",
            "Cleaned 4.6 MB in 0.2 seconds (29.4 Mb/sec, 58.5% of total time)",
            "Start size: 4.6 MB (39,334 messages)",
            "End size: 4.6 MB (39,334 messages)",
            "0.0% size reduction (0.0% fewer messages)",
        ]
        blocks.append(f"[{at(9, 10 * i)}] INFO {ident}\n" + "".join(f"\t{s}\n" for s in stats) + f" ({logger})\n")
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "log-cleaner.log").write_text("".join(blocks))
    full = found(tmp_path, "cleaner-buffer-too-small")
    assert full and "users-3 on broker-1" in full[0].summary and full[0].numbers["full_buffer_runs"] == 3
    none = found(tmp_path, "cleaner-no-reclaim")
    assert none and "users-3" in none[0].summary


# --- the request log: clients throttled by a quota ------------------------------------------------------


def request_line(release: str, client: str, throttle_ms: int, n: int) -> str:
    """One 'Completed request' line of a Produce, as RequestChannel builds it (not from a template: the
    request logger writes a built string). 1.0-2.7: the header's toString, ',response:', then the
    times with throttleTime; 2.8+: RequestConvertToJson's JSON."""
    conn = f"10.0.0.5:9092-10.0.0.7:{5000 + n}-3"
    if release < "2.8":
        return (
            f"Completed request:RequestHeader(apiKey=PRODUCE, apiVersion=5, clientId={client}, correlationId={n}) -- "
            "{acks=-1,timeout=30000,partitionSizes=[orders-0=1048]},response:{responses=[{topic=orders,"
            f"partition_responses=[{{partition=0,error_code=0,base_offset={n}}}]}}],throttle_time_ms={throttle_ms}}} "
            f"from connection {conn};totalTime:{throttle_ms + 4},requestQueueTime:0.1,localTime:3.2,remoteTime:0.0,"
            f"throttleTime:{throttle_ms},responseQueueTime:0.1,sendTime:0.4,securityProtocol:PLAINTEXT,"
            "principal:User:ANONYMOUS,listener:PLAINTEXT"
        )
    return (
        'Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":0,"requestApiVersion":9,'
        f'"correlationId":{n},"clientId":"{client}","requestApiKeyName":"PRODUCE"}},"request":{{}},"response":{{}},'
        f'"connection":"{conn}","totalTimeMs":{throttle_ms + 4},"requestQueueTimeMs":0.1,"localTimeMs":3.2,'
        f'"remoteTimeMs":0.0,"throttleTimeMs":{throttle_ms},"responseQueueTimeMs":0.1,"sendTimeMs":0.4,'
        '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
        '{"softwareName":"apache-kafka-java","softwareVersion":"3.9.0"}}'
    )


@pytest.mark.parametrize("release", ["1.1.0", "2.7.0", "2.8.0", "3.9.0-rc3"])
def test_quota_throttling_from_the_request_log(tmp_path, release):
    lines = [
        (at(11, s), "DEBUG", request_line(release, "bulk-loader", 480 if s % 2 else 0, s), "kafka.request.logger")
        for s in range(12)
    ]
    write(tmp_path, "broker-1", "kafka-request.log", lines)
    f = found(tmp_path, "quota-throttling")
    assert f and "bulk-loader: 6 of 12 requests throttled" in f[0].summary


@pytest.mark.parametrize("release", ["0.10.2.0", "1.1.0", "2.7.0"])
def test_request_log_text_forms_name_the_client(tmp_path, release):
    """0.10 wrote the header as a struct ('{api_key=0,api_version=2,...}') and no ',response:'; 1.0-2.7
    RequestHeader's toString. Either way the row names the client, its API version and address."""
    if release < "1.0":
        msg = (
            "Completed request:{api_key=0,api_version=2,correlation_id=7,client_id=bulk-loader} -- "
            "{acks=-1,timeout=30000} from connection 10.0.0.5:9092-10.0.0.7:5007;totalTime:4,requestQueueTime:0,"
            "localTime:3,remoteTime:0,responseQueueTime:0,sendTime:1,securityProtocol:PLAINTEXT,"
            "principal:User:ANONYMOUS,listener:PLAINTEXT"
        )
    else:
        msg = request_line(release, "bulk-loader", 0, 7)
    write(tmp_path, "broker-1", "kafka-request.log", [(at(11), "TRACE", msg, "kafka.request.logger")])
    r = kitlib.load_bundle(tmp_path).table("requests")
    assert len(r) == 1 and r["client_id"].iloc[0] == "bulk-loader" and r["client_address"].iloc[0] == "10.0.0.7:5007"
    assert r["api_version"].iloc[0] == (2 if release < "1.0" else 5)


@pytest.mark.parametrize("release", ["2.8.0", "3.9.0-rc3"])
def test_down_conversion_from_the_request_log(tmp_path, release):
    """An old consumer's Fetch v2 down-converted, in the 2.8+ JSON request log (the 1.0-2.7 text form
    names the API only as 'apiKey=FETCH', which the redaction masks: see the module's table)."""
    lines = []
    for n in range(5):
        line = request_line(release, "secor-0.8", 0, n).replace(
            '"requestApiKey":0,"requestApiVersion":9', '"requestApiKey":1,"requestApiVersion":2'
        )
        line = line.replace('"PRODUCE"', '"FETCH"').replace(
            '"softwareName":"apache-kafka-java","softwareVersion":"3.9.0"}}',
            '"softwareName":"unknown","softwareVersion":"unknown"},"temporaryMemoryBytes":2134628,"messageConversionsTime":12.0}',
        )
        lines.append((at(12, n), "DEBUG", line, "kafka.request.logger"))
    write(tmp_path, "broker-1", "kafka-request.log", lines)
    f = found(tmp_path, "down-conversion")
    assert f and "secor-0.8 at 10.0.0.7:" in f[0].summary and "FETCH v2" in f[0].summary
