"""Consumer groups and transactions: group_events and txn_events from broker and client lines
(Kafka's layout through a bundle, kafka-python's layout as the events rows a layout parser yields),
the lag window rules, and each detector on positive and negative input.

Fixtures are constructed from Kafka's and kafka-python's source wording (tests/fixtures/clients/SOURCES.md).
"""

from pathlib import Path

import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib.bundle import Bundle
from kitlib.investigations.consumer_groups import groups, lag, rebalances, stalled, transaction_timeouts

FIX = Path(__file__).parent.parent / "fixtures" / "clients"


@pytest.fixture(scope="module")
def storm():
    return kitlib.load_bundle(FIX / "storm")


@pytest.fixture(scope="module")
def txn():
    return kitlib.load_bundle(FIX / "txn")


def rows(df, cols):
    return [tuple(None if pd.isna(v) else v for v in r) for r in df[cols].itertuples(index=False)]


def test_group_events_from_coordinator_and_java_client(storm):
    ge = storm.group_events
    assert storm.unparsed.empty
    # every group-related line of both files is a row (the broker file has 37 lines, all about groups)
    assert ge["file"].value_counts().to_dict() == {"broker-1/server.log": 37, "app-1/consumer.log": 7}
    co = ge[ge["file"] == "broker-1/server.log"]
    assert rows(
        co.head(6),
        ["line", "kind", "group", "generation", "member", "client_id", "members", "state", "coordinator_partition"],
    ) == [
        (1, "elected", None, None, None, None, None, None, "__consumer_offsets-17"),
        (2, "loaded", None, None, None, None, None, None, "__consumer_offsets-17"),
        (
            3,
            "unknown_member_join",
            "order-enricher",
            None,
            "enricher-1-3b0c3f0e-7a1e-4b6e-9a57-1f0c2d9b8e11",
            "enricher-1",
            None,
            "Empty",
            None,
        ),
        (4, "prepare_rebalance", "order-enricher", 0, None, None, None, "PreparingRebalance", "__consumer_offsets-17"),
        (5, "stabilized", "order-enricher", 1, None, None, 1, None, "__consumer_offsets-17"),
        (
            6,
            "assignment",
            "order-enricher",
            1,
            "enricher-1-3b0c3f0e-7a1e-4b6e-9a57-1f0c2d9b8e11",
            "enricher-1",
            1,
            None,
            None,
        ),
    ]
    left = co[co["line"] == 7].iloc[0]
    assert (left["kind"], left["member"], left["reason"]) == (
        "member_left",
        "enricher-1-3b0c3f0e-7a1e-4b6e-9a57-1f0c2d9b8e11",
        "consumer poll timeout has expired.",
    )
    assert (
        co[co["line"] == 15].iloc[0]["reason"]
        == "removing member enricher-2-8d2f6c1a-0b3e-4f5d-a6c7-2e9f1b3d4c55 on heartbeat expiration"
    )
    static = co[co["kind"] == "static_member_replaced"].iloc[0]
    assert (static["group"], static["instance_id"], static["state"]) == ("billing", "billing-a", "Stable")
    assert set(co["source"]) == {"coordinator"}
    cl = ge[ge["file"] == "app-1/consumer.log"]
    assert rows(cl, ["line", "source", "kind", "group", "client_id", "generation"]) == [
        (1, "client", "rejoining", "order-enricher", "enricher-1", None),
        (2, "client", "joined", "order-enricher", "enricher-1", 1),
        (3, "client", "poll_timeout", "order-enricher", "enricher-1", None),
        (4, "client", "poll_timeout", "order-enricher", "enricher-1", None),
        (5, "client", "commit_failed", "order-enricher", "enricher-1", None),
        (6, "client", "revoking", "order-enricher", "enricher-1", None),
        (7, "client", "heartbeat_rebalancing", "order-enricher", "enricher-1", None),
    ]


def python_logging_events(path: Path) -> pd.DataFrame:
    """The events rows a layout parser makes of kafka-python's Python-logging layout
    (``%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s``)."""
    lines = path.read_text().splitlines()
    parts = pd.Series(lines).str.extract(
        r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>\w+) (?P<logger>\S+) \[(?P<thread>[^\]]*)\] (?P<message>.*)$"
    )
    assert parts["message"].notna().all()
    return pd.DataFrame(
        {
            "ts": pd.to_datetime(parts["ts"], format="%Y-%m-%d %H:%M:%S,%f", utc=True),
            "level": parts["level"].replace({"WARNING": "WARN"}),
            "logger": parts["logger"],
            "message": parts["message"].astype("string"),
            "host": "app-2",
            "file": "app-2/consumer.log",
            "line": range(1, len(lines) + 1),
        }
    )


def test_group_events_from_kafka_python_layout():
    ev = python_logging_events(FIX / "kafka-python.log")
    # what the extractor's selection keeps: loggers that name a coordinator or consumer, and the
    # application's own (lower-case, not kafka-python's other loggers), which logs CommitFailedError
    wanted = ev[[kitlib.extract.EXTRACTORS["group_events"].wants(lg) for lg in ev["logger"]]]
    assert list(wanted["logger"].unique()) == [
        "kafka.coordinator.consumer",
        "kafka.coordinator",
        "app",
        "kafka.coordinator.heartbeat",
    ]
    ge = groups.build(wanted)
    assert rows(ge, ["line", "kind", "group", "generation"]) == [
        (1, "revoking", "order-enricher", None),
        (2, "rejoining", "order-enricher", None),
        (3, "joined", "order-enricher", 4),
        (4, "poll_timeout", None, None),
        (5, "session_expired", None, None),
        (6, "commit_failed", None, None),
        (7, "commit_failed", None, None),
        (8, "heartbeat_rebalancing", "order-enricher", None),
        (9, "leaving", "order-enricher", None),
        (11, "poll_timeout", None, None),  # kafka-python 3.x wording from here on
        (12, "heartbeat_rebalancing", "order-enricher", None),
        (13, "lost_membership", "order-enricher", None),
        (14, "assigned", "order-enricher", None),
    ]
    assert set(ge["source"]) == {"client"}


def test_txn_events_rows(txn):
    te = txn.txn_events
    assert rows(
        te[te["file"] == "broker-1/server.log"],
        ["line", "source", "kind", "transactional_id", "producer_id", "epoch", "partition", "error"],
    ) == [
        (1, "coordinator", "initialized", "payments-tx", 1000, 0, "__transaction_state-31", None),
        (2, "coordinator", "initialized", "ledger-tx", 1001, 0, "__transaction_state-8", None),
        (3, "coordinator", "initialized", "ledger-tx", 1001, 2, "__transaction_state-8", None),
        (4, "coordinator", "end_refused", "ledger-tx", None, None, None, "PRODUCER_FENCED"),
        (5, "coordinator", "timeout_rollback", "payments-tx", None, None, None, None),
        (6, "leader", "old_epoch", None, 1001, 0, "ledger-0", None),
        (8, "coordinator", "initialized", "audit-tx", 1002, 0, "__transaction_state-2", None),
        (9, "coordinator", "initialized", "audit-tx", 1002, 1, "__transaction_state-2", None),
    ]
    client = te[te["file"] == "app-1/producer.log"].iloc[0]
    assert (client["kind"], client["transactional_id"], client["client_id"]) == (
        "fenced",
        "ledger-tx",
        "ledger-writer-a",
    )


def test_rebalance_storm_names_the_group_and_the_settings(storm):
    found = rebalances.rebalance_storm(storm)
    assert [f.numbers["group"] for f in found] == ["order-enricher"]
    f = found[0]
    assert (
        f.numbers["rebalances"],
        f.numbers["busiest_10min"],
        f.numbers["members_failed"],
        f.numbers["members_left"],
        f.numbers["poll_timeouts_in_client_logs"],
    ) == (7, 6, 3, 3, 2)
    assert "max.poll.interval.ms" in f.recommendation and "session.timeout.ms" in f.recommendation
    assert "generation 0 -> 7" in f.summary
    assert {e["file"] for e in f.evidence} == {"broker-1/server.log", "app-1/consumer.log"}


def test_rebalance_storm_silent_on_a_few_rebalances(storm):
    ge = storm.group_events
    # the same group with its rebalances spread out: one every 15 minutes is churn, not a storm
    slow = ge.copy()
    prep = slow["kind"] == "prepare_rebalance"
    slow.loc[prep, "ts"] = (
        pd.Timestamp("2026-05-04 10:00", tz="UTC") + pd.to_timedelta(range(prep.sum()), unit="m") * 15
    )
    assert rebalances.rebalance_storm(Bundle("x", {"group_events": slow})) == []
    assert rebalances.rebalance_storm(Bundle("x", {"group_events": ge[ge["group"] == "billing"]})) == []


def test_a_consumer_started_and_stopped_is_not_a_storm(storm):
    """One member joining an empty group and leaving it again, four times in a few minutes: each
    rebalance starts or ends with the group empty, so none of them is churn."""
    ge = storm.group_events
    start = ge[(ge["group"] == "billing") & ge["kind"].isin(["prepare_rebalance", "stabilized"])].iloc[:2]
    rows_, t0 = [], pd.Timestamp("2026-05-04 11:00", tz="UTC")
    for i in range(4):
        gen = 2 * i
        join = start.iloc[0].copy()
        join[["ts", "generation"]] = [t0 + pd.Timedelta(seconds=60 * i), gen]
        leave = join.copy()
        leave[["ts", "generation", "reason"]] = [
            t0 + pd.Timedelta(seconds=60 * i + 20),
            gen + 1,
            "Removing member m on LeaveGroup; client reason: not provided",
        ]
        empty = leave.copy()
        empty[["kind", "generation"]] = ["group_empty", gen + 2]
        rows_ += [join, leave, empty]
    ge2 = pd.DataFrame(rows_)
    assert (ge2["kind"] == "prepare_rebalance").sum() == 8
    s = rebalances.rebalance_summary(ge2)
    assert (s["rebalances"].iloc[0], s["churn_rebalances"].iloc[0]) == (8, 0)
    assert rebalances.rebalance_storm(Bundle("x", {"group_events": ge2})) == []


def snapshots(
    committed, end, group="g", topic="orders", partition=0, start="2026-05-04 10:00", every="30s", shape="group_offsets"
):
    """Lag snapshots in the shape of group_offsets (kafka-consumer-groups --describe) or consumer_lag (capture)."""
    ts = pd.date_range(start, periods=len(end), freq=every, tz="UTC")
    lagv = [e - c if c is not None else None for c, e in zip(committed, end)]
    if shape == "group_offsets":
        return pd.DataFrame(
            {
                "snapshot_ts": ts,
                "group": group,
                "topic": topic,
                "partition": partition,
                "current_offset": committed,
                "log_end_offset": end,
                "lag": lagv,
                "consumer_id": "c-1",
                "member_host": "/10.0.0.3",
                "client_id": "c",
                "host": "tools",
                "file": "tools/describe.txt",
                "line": range(1, len(end) + 1),
            }
        )
    return pd.DataFrame(
        {
            "ts": ts,
            "group": group,
            "topic": topic,
            "partition": partition,
            "committed": committed,
            "end_offset": end,
            "lag": lagv,
            "host": "live",
            "file": "live/lag.jsonl",
            "line": range(1, len(end) + 1),
        }
    )


def status_of(committed, end, **kw):
    h = snapshots(committed, end, shape="consumer_lag", **kw)
    return lag.partition_status(h.assign(consumer_id=None, client_id=None, group_state=None))["status"].tolist()


def test_lag_rules():
    assert status_of([100, 100, 100, 100], [100, 140, 190, 260]) == ["stalled"]  # caught up, then stopped
    assert status_of([0, 50, 90, 120, 140], [100, 160, 210, 250, 290]) == ["lagging"]  # moving, lag only grows
    assert status_of([0, 80, 160, 240], [100, 180, 260, 340]) == ["ok"]  # keeps pace
    assert status_of([0, 90, 200, 300], [100, 200, 250, 300]) == ["ok"]  # caught up at the end
    assert status_of([10], [50_010]) == ["over-threshold"]  # absolute rule, one snapshot
    assert status_of([500, 500, 500], [500, 500, 500]) == ["ok"]  # idle topic, nothing to read
    assert status_of([100, 100], [100, 101]) == ["ok"]  # one record, one snapshot


def test_lag_history_merges_describe_output_and_captures():
    b = Bundle("x", {"consumer_lag": snapshots([1, 2], [5, 6], group="a", shape="consumer_lag")})
    h = lag.lag_history(b)
    assert rows(h, ["group", "committed", "end_offset", "lag", "source"]) == [
        ("a", 1, 5, 4, "consumer_lag"),
        ("a", 2, 6, 4, "consumer_lag"),
    ]


def stalled_bundle():
    stopped = snapshots([100, 100, 100, 100, 100], [100, 100, 150, 220, 300], group="ledger", partition=0)
    fine = snapshots([0, 90, 180, 270, 300], [100, 180, 260, 300, 300], group="ledger", partition=1)
    other = snapshots([0, 100, 200, 300, 400], [50, 150, 250, 350, 450], group="billing")
    df = pd.concat([stopped, fine, other], ignore_index=True)
    return df.rename(columns={"snapshot_ts": "ts", "current_offset": "committed", "log_end_offset": "end_offset"})


def test_consumer_stalled_names_the_group():
    b = Bundle("x", {"consumer_lag": stalled_bundle()})
    found = stalled.consumer_stalled(b)
    assert [(f.id, f.severity, f.numbers["group"], f.numbers["stalled_partitions"]) for f in found] == [
        ("consumer-stalled", "high", "ledger", 1)
    ]
    f = found[0]
    assert f.numbers["total_lag"] == 200 and "since 2026-05-04 10:01:00 UTC" in f.summary
    assert [e["line"] for e in f.evidence] == [1, 5]


def test_consumer_stalled_silent_when_consumers_keep_up():
    df = stalled_bundle()
    healthy = df[df["group"] == "billing"]
    assert stalled.consumer_stalled(Bundle("x", {"consumer_lag": healthy})) == []
    assert stalled.consumer_stalled(Bundle("x", {})) == []


def test_transaction_timeouts_names_the_ids(txn):
    found = transaction_timeouts.transaction_timeouts(txn)
    assert len(found) == 1
    f = found[0]
    assert f.numbers["transactional_ids"] == "ledger-tx, payments-tx"
    assert (f.numbers["timeout_rollbacks"], f.numbers["refused_old_epoch_writes"]) == (1, 1)
    assert "audit-tx" not in f.summary  # a clean restart bumps the epoch by one: not fencing
    assert "transaction.timeout.ms" in f.recommendation and "transactional.id" in f.recommendation


def test_transaction_timeouts_silent_on_clean_inits(txn):
    te = txn.txn_events
    clean = te[te["transactional_id"] == "audit-tx"]
    assert transaction_timeouts.transaction_timeouts(Bundle("x", {"txn_events": clean})) == []


def test_late_transactions_metric_alone_is_a_finding():
    m = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2026-05-04 10:00", "2026-05-04 10:01"], utc=True),
            "mbean": "kafka.server:type=ReplicaManager,name=PartitionsWithLateTransactionsCount",
            "attribute": "Value",
            "value": [0.0, 2.0],
            "host": "broker-1",
            "file": "jmx/b1.csv",
            "line": [2, 3],
        }
    )
    found = transaction_timeouts.transaction_timeouts(Bundle("x", {"metrics": m}))
    assert found[0].severity == "high" and found[0].numbers["late_transaction_partitions_max"] == 2
    assert "find-hanging" in found[0].recommendation


def test_consumer_stalled_on_real_describe_snapshots():
    """kafka-consumer-groups --describe run three times on a real 3.9 broker while records were
    produced and the group had no member (fixture recorded with the CLI-output parsers)."""
    b = kitlib.load_bundle(
        Path(__file__).parent.parent / "fixtures" / "cli" / "real-3.9-consumer-groups-lag-history-date.txt"
    )
    found = stalled.consumer_stalled(b)
    assert len(found) == 1
    f = found[0]
    assert (
        f.numbers["group"],
        f.numbers["stalled_partitions"],
        f.numbers["total_lag"],
        f.numbers["members_owning"],
    ) == ("billing", 3, 100, "none")
    assert f.summary.endswith("(group has no active members)")
    assert "No member owns these partitions" in f.recommendation


def test_a_storm_explains_the_stall(storm):
    """Lag snapshots of a storming group that froze: one finding (the storm, with the lag it cost),
    not a second consumer-stalled one."""
    snaps = snapshots(
        [100, 100, 100, 100],
        [100, 150, 220, 300],
        group="order-enricher",
        start="2026-05-04 10:00:30",
        shape="consumer_lag",
    )
    b = Bundle("x", {"group_events": storm.group_events, "consumer_lag": snaps})
    assert stalled.consumer_stalled(b) == []
    (f,) = rebalances.rebalance_storm(b)
    assert f.numbers["partitions_behind"] == 1 and "lag 200" in f.summary


@pytest.mark.parametrize(
    "bundle, fid, key, name",
    [
        ("rebalance-storm", "rebalance-storm", "group", "order-enricher"),
        ("consumer-stalled", "consumer-stalled", "group", "billing"),
        ("transactions", "transaction-timeouts", "transactional_ids", "ledger-tx, payments-tx"),
    ],
)
def test_real_lab_bundles_name_the_group_or_transactional_id(bundle, fid, key, name):
    found = kitlib.triage(sample(bundle), investigations=["consumer_groups"]).findings
    assert [(f.id, f.numbers[key]) for f in found] == [(fid, name)]
    assert all(e["file"] and e["line"] for e in found[0].evidence)


def test_kafka_python_layout_through_a_bundle():
    """The same kafka-python file read by the kit's layout inference: every line is an event and the
    group's story comes out the same (line 7, logged by the application itself, counts too)."""
    b = kitlib.load_bundle(FIX / "kafka-python.log")
    assert len(b.events) == 14 and b.unparsed.empty
    assert rows(b.group_events, ["line", "kind"]) == [
        (1, "revoking"),
        (2, "rejoining"),
        (3, "joined"),
        (4, "poll_timeout"),
        (5, "session_expired"),
        (6, "commit_failed"),
        (7, "commit_failed"),
        (8, "heartbeat_rebalancing"),
        (9, "leaving"),
        (11, "poll_timeout"),
        (12, "heartbeat_rebalancing"),
        (13, "lost_membership"),
        (14, "assigned"),
    ]


def test_real_storm_bundle_has_the_clients_side():
    b = sample("rebalance-storm")
    ge = b.group_events
    client = ge[ge["source"] == "client"]
    assert ((client["kind"] == "poll_timeout").sum(), (ge["kind"] == "member_left").sum()) == (26, 26), (
        ge["source"].value_counts().to_dict()
    )
    (f,) = rebalances.rebalance_storm(b)
    assert f.numbers["poll_timeouts_in_client_logs"] == 26 and "max.poll.interval.ms" in f.recommendation


def test_reason_patterns_take_member_ids_out_as_python_would():
    """One RE2 pass over the reasons gives what Python's re gives with its Unicode \\S: a member id
    runs back to the nearest blank of any kind (a no-break space, an ideographic space)."""
    import re

    uuid = "0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10"
    reasons = [
        f"removing member consumer-g-1-{uuid} on heartbeat expiration",
        f"Removing member c\u00a0app-{uuid} on LeaveGroup; client reason: not provided",
        f"members x-{uuid}\u3000y-{uuid.upper()}\tz-{uuid} and (café-{uuid})",
        f"Adding new member {uuid} with group instance id None",
        "Leader consumer-1 re-joining group during Stable",
        None,
    ]
    python = re.compile(r"\S*-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
    want = ["(not logged)" if r is None else python.sub("<member>", r) for r in reasons]
    got = rebalances.reason_patterns(pd.Series(reasons, dtype="string")).tolist()
    assert got == want
    assert got[1] == "Removing member c\u00a0<member> on LeaveGroup; client reason: not provided"


def test_start_reasons_code_each_row_as_its_pattern_reads():
    """The codes of the rebalance starts' reasons, worked out on the distinct reasons only, stand
    for each row's own pattern (member ids out, "(not logged)" for none, a reason that reads so
    too), equal patterns share a code, and "Adding new member" is told from the reason itself."""
    import numpy as np
    import pyarrow as pa

    uuid, other = "0f8e4f4e-2c4a-4f7e-9d1b-3a6f2b8c9d10", "11111111-2222-3333-4444-555555555555"
    pool = [
        f"removing member a-{uuid} on heartbeat expiration",
        f"removing member b-{other} on heartbeat expiration",  # the same pattern as the first
        f"Adding new member c-{uuid} with group instance id None",
        "Adding new member consumer-1-901-26b94c7f9118bb16 with group instance id None",
        "(not logged)",  # a reason that reads like none given
        "Leader consumer-1 re-joining group during Stable",
        None,
    ]
    rng = np.random.default_rng(7)
    for with_literal in (True, False):
        choices = pool if with_literal else [r for r in pool if r != "(not logged)"]
        col = pd.Series([choices[i] for i in rng.integers(0, len(choices), 400)], dtype="string")
        at = np.sort(rng.choice(len(col), 150, replace=False))
        codes, names, adding = rebalances._start_reasons(col, at)
        want = rebalances.reason_patterns(col.iloc[at]).tolist()
        got = pa.array(names).take(pa.array(codes)).to_pylist()
        assert got == want
        assert len(set(names.to_pylist())) == len(names)  # one code a pattern
        assert adding.tolist() == [isinstance(r, str) and "Adding new member" in r for r in col.iloc[at]]


def _client_rows(file: str, ts: str, kind: str = "poll_timeout") -> dict:
    return {"ts": pd.Timestamp(ts, tz="UTC"), "source": "client", "kind": kind, "group": None, "file": file}


def _prepare(group: str, ts: str) -> dict:
    return {
        "ts": pd.Timestamp(ts, tz="UTC"),
        "source": "coordinator",
        "kind": "prepare_rebalance",
        "group": group,
        "file": "broker-1/server.log",
    }


def test_client_lines_naming_no_group_go_to_the_only_group_rebalancing_then():
    """A client log none of whose lines names a group (kafka-python at WARNING) is the group's that
    rebalanced while it was written; with two groups rebalancing then, it is nobody's."""
    ge = pd.DataFrame(
        [
            _prepare("orders", "2026-01-01 10:00:00"),
            _prepare("orders", "2026-01-01 10:02:00"),
            _prepare("billing", "2026-01-01 12:00:00"),
            _client_rows("app-1/consumer.log", "2026-01-01 10:01:00"),
            _client_rows("app-1/consumer.log", "2026-01-01 10:01:30", "commit_failed"),
            _client_rows("app-2/consumer.log", "2026-01-01 12:00:20"),
            _client_rows("app-3/consumer.log", "2026-01-01 16:00:00"),  # no group rebalanced then
        ]
    )
    got = rebalances.client_groups(ge)
    assert got["group"].astype(object).where(got["group"].notna(), None).tolist() == [
        "orders",
        "orders",
        "billing",
        "orders",
        "orders",
        "billing",
        None,
    ]
    assert rebalances.client_files(ge, "orders") == ["app-1/consumer.log"]
    both = pd.concat([ge, pd.DataFrame([_prepare("billing", "2026-01-01 10:01:10")])], ignore_index=True)
    assert rebalances.client_groups(both)["group"].iloc[3:5].isna().all()  # two groups then: left without


def test_top_messages_mask_member_ids(tmp_path):
    """A consumer's heartbeat failure repeated with a new member id each time is one message
    group, not one row per member id, in memory and from an ingest output (DuckDB) alike."""
    import uuid

    from kitlib.display import triage as page

    line = (
        "[2026-11-23 10:00:{s:02d},000] WARN [Consumer clientId=consumer-orders-{c}, groupId=orders] Attempt to "
        "heartbeat with Generation{{generationId={s}, memberId='consumer-orders-{c}-{u}', protocol='range'}} and "
        "group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation "
        "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
    )
    other = (
        "[2026-11-23 10:00:50,000] WARN [Consumer clientId=consumer-orders-1, groupId=orders] Offset commit "
        "failed on partition orders-0 at offset 42: The coordinator is not aware of this member. "
        "(org.apache.kafka.clients.consumer.internals.ConsumerCoordinator)"
    )
    lines = [line.format(s=s, c=s % 3 + 1, u=uuid.UUID(int=s * 7919 + 1)) for s in range(13)] + [other]
    (tmp_path / "app-1").mkdir()
    (tmp_path / "app-1" / "consumer.log").write_text("\n".join(lines) + "\n")
    mem = page.top_messages(kitlib.load_bundle(tmp_path))
    assert mem["count"].tolist() == [13, 1]
    kitlib.ingest(tmp_path, tmp_path.parent / "kit", progress=False)
    lazy = page.top_messages(kitlib.load(tmp_path.parent / "kit"))
    assert lazy["count"].tolist() == [13, 1] and lazy["message"].tolist() == mem["message"].tolist()
