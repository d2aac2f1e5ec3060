"""Logs of clients that are not Java (librdkafka, kafka-python, franz-go, Sarama, Spring Boot 3.2)
and the JVM's own output outside log4j (stderr, hs_err_pid*.log): read into the same tables as
the Java clients' and brokers' logs, and the findings a bundle of them alone gives.

Fixtures under tests/fixtures/clients/real are short public excerpts (sources in
tests/fixtures/clients/SOURCES.md); the few constructed ones say so there.
"""

from pathlib import Path

import pandas as pd
import pytest

import kitlib
from kitlib.findings import triage
from kitlib.formats import detect
from kitlib.formats.logs.clients import FRANZ_GO, LIBRDKAFKA, SARAMA, parse_client_bytes
from kitlib.investigations.consumer_groups import groups

REAL = Path(__file__).parent / "fixtures" / "clients" / "real"


def utc(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def values(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return [tuple(None if pd.isna(v) else v for v in r) for r in df[cols].itertuples(index=False)]


def findings_of(path: Path) -> dict[str, list]:
    result = triage(kitlib.load_bundle(path))
    out: dict[str, list] = {}
    for f in result.findings:
        out.setdefault(f.id, []).append(f)
    return out


# --- formats: real excerpts into events ----------------------------------------------------


def test_librdkafka_stderr_lines_into_events():
    data = (REAL / "maxpoll-cp552" / "app" / "consumer.log").read_bytes()
    assert detect(data).name == "librdkafka"
    ev, un = parse_client_bytes(data, LIBRDKAFKA, host="app", rel="app/consumer.log")
    # the application's own line before the first record is kept, with its reason
    assert values(un, ["line", "text", "reason"]) == [(1, "long process", "no record header before this line")]
    assert len(ev) == 7 and ev["line"].tolist() == list(range(2, 9))
    assert (ev["host"] == "app").all() and (ev["file"] == "app/consumer.log").all()
    assert set(ev["logger"]) == {"rdkafka"}
    maxpoll = ev[ev["message"].str.startswith("MAXPOLL")].iloc[0]
    # syslog 4 is a warning; the epoch 1610634034.520 is the record's time (UTC)
    assert (maxpoll["level"], maxpoll["ts"], int(maxpoll["line"])) == ("WARN", utc("2021-01-14 14:20:34.520"), 6)
    assert maxpoll["message"].startswith("MAXPOLL [rdkafka#consumer-1] [thrd:main]: Application maximum poll interval")
    assert ev.loc[ev["line"] == 2, "level"].item() == "DEBUG"


def test_librdkafka_other_printers():
    # an application's prefix before the library's line (its epoch wins), .NET's console logger
    # (instance before facility, a local date), the C example's and the C++ example's callbacks
    data = (
        b"Mar 24 14:48:26 web-1 app[321]: %3|1742827708.322|FAIL|rdkafka#producer-1| [thrd:main]: boom\n"
        b"7|2020-03-20 10:00:00.123|rdkafka#consumer-1|FETCH| [thrd:main]: fetch\n"
        b'1524281199.398 RDKAFKA-7-MEMBERID: rdkafka#consumer-1: [thrd:app]: Group "g": updating member id\n'
        + (REAL / "cpp-example-rd2981" / "app" / "consumer.log").read_bytes()
    )
    ev, un = parse_client_bytes(data)
    assert un.empty
    assert values(ev, ["line", "level", "nlines"]) == [
        (1, "ERROR", 1),
        (2, "DEBUG", 1),
        (3, "DEBUG", 1),
        (4, "DEBUG", 1),
        (5, "DEBUG", 2),  # the example's own '% Created consumer' line continues the record
    ]
    assert ev["message"].tolist()[:4] == [
        "FAIL [rdkafka#producer-1] [thrd:main]: boom",
        "FETCH [rdkafka#consumer-1] [thrd:main]: fetch",
        'MEMBERID [rdkafka#consumer-1] [thrd:app]: Group "g": updating member id',
        'MEMBERID [thrd:app]: Group "new_cons_gp": updating member id "(not-set)" -> ""',
    ]
    assert ev["ts"].tolist()[:4] == [
        utc("2025-03-24 14:48:28.322"),
        utc("2020-03-20 10:00:00.123"),
        utc("2018-04-21 03:26:39.398"),
        utc("2021-02-10 08:49:34.484"),  # the application's date: the C++ example prints no time
    ]
    assert pd.isna(ev["ts"].iloc[4])


def test_kafka_python_default_layout():
    path = REAL / "kafka-python-1896" / "app" / "consumer.log"
    assert detect(path.read_bytes()).name == "python-logging"
    ev, un = parse_client_bytes(path.read_bytes(), "layout")
    assert un.empty and len(ev) == 8
    assert values(ev.head(2), ["ts", "level", "logger", "line"]) == [
        (utc("2019-09-03 14:46:45.363"), "WARN", "kafka.coordinator", 1),
        (utc("2019-09-03 14:46:45.365"), "WARN", "kafka.coordinator", 2),
    ]
    assert ev["message"].iloc[-1] == "(Re-)joining group group1"
    assert ev["logger"].iloc[6] == "BalanceListener"


def test_sarama_standard_logger():
    for name, n in (("sarama-546", 5), ("sarama-2215", 4)):
        data = next((REAL / name / "app").iterdir()).read_bytes()
        assert detect(data).name == "sarama"
        ev, un = parse_client_bytes(data, SARAMA)
        assert un.empty and len(ev) == n and set(ev["logger"]) == {"sarama"}
        assert ev["level"].isna().all()  # Go's standard logger writes no level
    ev, _ = parse_client_bytes((REAL / "sarama-546" / "app" / "consumer.log").read_bytes(), SARAMA)
    assert values(ev.head(1), ["ts", "line"]) == [(utc("2015-09-28 19:59:43"), 1)]
    assert ev["message"].iloc[0].startswith("consumer/broker/1 disconnecting due to error processing FetchRequest")


FRANZ = (
    b"[INFO] joining group; group: orders\n"
    b"[INFO] joined; group: orders, member_id: kgo-0b1c, instance_id: <nil>, generation: 7, leader: true\n"
    b"[INFO] heartbeat errored; group: orders, err: REBALANCE_IN_PROGRESS: The group is rebalancing, so a rejoin "
    b"is needed.\n"
    b"[ERROR] default commit failed; group: orders, err: UNKNOWN_MEMBER_ID: The coordinator is not aware of this "
    b"member.\n"
    b"[INFO] leaving group; group: orders, member_id: kgo-0b1c\n"
)


def test_franz_go_basic_logger_and_its_group_lines():
    assert detect(FRANZ).name == "franz-go"
    ev, un = parse_client_bytes(FRANZ, FRANZ_GO)
    assert un.empty and ev["level"].tolist() == ["INFO", "INFO", "INFO", "ERROR", "INFO"]
    ge = groups.build(ev)
    assert values(ge, ["kind", "group", "generation", "member"]) == [
        ("rejoining", "orders", None, None),
        ("joined", "orders", 7, "kgo-0b1c"),
        ("heartbeat_rebalancing", "orders", None, None),
        ("commit_failed", "orders", None, None),
        ("leaving", "orders", None, None),
    ]


def test_spring_boot_32_console_layout():
    data = (
        b"2024-05-02T10:15:22.123+02:00  INFO 4242 --- [orders-svc] [ntainer#0-0-C-1] "
        b"o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-orders-1, groupId=orders] "
        b"Request joining group due to: need to re-join with the given member-id\n"
        b"2024-05-02T10:15:25.001+02:00  WARN 4242 --- [orders-svc] [ntainer#0-0-C-1] "
        b"o.a.k.c.c.internals.ConsumerCoordinator  : [Consumer clientId=consumer-orders-1, groupId=orders] "
        b"Offset commit failed on partition orders-0 at offset 42: The coordinator is not aware of this member.\n"
    )
    assert detect(data).name == "python-logging"  # the client layouts' format
    ev, un = parse_client_bytes(data, "layout")
    assert un.empty
    assert values(ev, ["ts", "level", "logger"]) == [
        (utc("2024-05-02 08:15:22.123"), "INFO", "o.a.k.c.c.internals.ConsumerCoordinator"),
        (utc("2024-05-02 08:15:25.001"), "WARN", "o.a.k.c.c.internals.ConsumerCoordinator"),
    ]
    ge = groups.build(ev)
    assert values(ge, ["kind", "group", "client_id"]) == [("commit_failed", "orders", "consumer-orders-1")]
    # Boot 3.0/3.1 (no application name) is the layout inference's already: left to it
    older = data.replace(b"[orders-svc] ", b"")
    assert detect(older).name == "log-layout"


# --- client-side tables and findings ---------------------------------------------------------


def test_librdkafka_group_lines():
    ev, _ = parse_client_bytes((REAL / "rebalance-fg524" / "app" / "consumer.log").read_bytes())
    ge = groups.build(ev)
    assert values(ge, ["kind", "group", "client_id", "reason"]) == [
        ("heartbeat_rebalancing", "unused", "rdkafka#consumer-1", None),
        ("rejoining", "unused", "rdkafka#consumer-1", "rebalance in progress"),
    ]
    ev, _ = parse_client_bytes((REAL / "maxpoll-cp552" / "app" / "consumer.log").read_bytes())
    ge = groups.build(ev)
    assert values(ge, ["line", "kind", "group"]) == [(6, "poll_timeout", None), (7, "leaving", "my_consumer_unique_id")]


@pytest.mark.slow
def test_sasl_failure_seen_by_a_librdkafka_client():
    b = kitlib.load_bundle(REAL / "sasl-dotnet2102")
    af = b.auth_failures
    assert values(af, ["kind", "address", "mechanism", "line"]) == [
        ("client", "b-3.test.kafka.us-east-1.amazonaws.com:9096", "SCRAM-SHA-512", 4)
    ]
    found = findings_of(REAL / "sasl-dotnet2102")
    assert "b-3.test.kafka.us-east-1.amazonaws.com:9096" in found["auth-failures"][0].summary
    # kafka-python in pytest's captured-log layout: the broker from its BrokerConnection, no date
    found = findings_of(REAL / "sasl-kafka-python-kop493")["auth-failures"][0]
    assert found.summary.startswith(
        "1 authentication/authorization failures: 10.110.85.56:9092 1x (client SCRAM-SHA-512"
    )
    # a client shutting down while authenticating ('Local: Broker handle destroyed') is no failure
    assert kitlib.load_bundle(REAL / "shutdown-rd5003").auth_failures.empty


@pytest.mark.parametrize(
    "name,client", [("fenced-rd3928", "rdkafka#producer-3"), ("fenced-cp1125", "rdkafka#producer-2")]
)
def test_fenced_transactional_producer(name, client):
    b = kitlib.load_bundle(REAL / name)
    te = b.txn_events
    assert len(te) and set(te["kind"]) == {"fenced"} and set(te["client_id"]) == {client}
    f = findings_of(REAL / name)["transaction-timeouts"][0]
    assert f.numbers["fenced_clients"] == client and f"producer {client} fenced" in f.summary


@pytest.mark.slow
def test_healthy_and_quiet_client_logs_are_silent():
    for name in ("healthy-rd1810", "sarama-2215", "kafka-python-1896", "rebalance-fg524"):
        found = findings_of(REAL / name)
        assert not found, (name, list(found))


def storm_log() -> bytes:
    # librdkafka's debug=cgrp wording (rdkafka_cgrp.c), a consumer rebalancing every minute
    lines = []
    for i in range(6):
        t = 1700000000 + 60 * i
        lines += [
            f'%7|{t}.100|HEARTBEAT|payments-svc#consumer-1| [thrd:main]: Group "payments" heartbeat error response '
            "in state up (join-state steady, 4 partition(s) assigned): Broker: Group rebalance in progress",
            f'%7|{t}.101|REBALANCE|payments-svc#consumer-1| [thrd:main]: Group "payments" is rebalancing (EAGER) in '
            "state up (join-state steady) with 4 assigned partition(s): rebalance in progress",
            f"%7|{t + 3}.500|JOINGROUP|payments-svc#consumer-1| [thrd:main]: JoinGroup response: GenerationId "
            f"{40 + i}, Protocol range, LeaderId rdkafka-77aa, my MemberId rdkafka-77aa, member metadata count 2: "
            "(no error)",
        ]
    return ("\n".join(lines) + "\n").encode()


def test_librdkafka_consumer_stuck_in_rebalance(tmp_path):
    (tmp_path / "app-1").mkdir()
    (tmp_path / "app-1" / "consumer.log").write_bytes(storm_log())
    f = findings_of(tmp_path)["rebalance-storm"][0]
    assert f.numbers["group"] == "payments" and f.numbers["rebalances"] == 6
    assert f.numbers["clients"] == "payments-svc#consumer-1"
    assert "generation 40 -> 45" in f.summary


def test_a_storm_in_clients_logs_alone_names_its_clients_from_an_ingest_output(tmp_path):
    """On an ingest output the counts read the group lines without their client ids; the storm's
    clients are read for its own rows, and the finding is the one the bundle in memory gives."""
    bundle = tmp_path / "bundle"
    (bundle / "app-1").mkdir(parents=True)
    (bundle / "app-1" / "consumer.log").write_bytes(storm_log())
    kitlib.ingest(bundle, tmp_path / "out", progress=False)
    stored = kitlib.load_bundle(tmp_path / "out")
    f = triage(stored).findings
    assert [g.id for g in f] == ["rebalance-storm"] and f[0].numbers["clients"] == "payments-svc#consumer-1"
    assert f[0].to_dict() == findings_of(bundle)["rebalance-storm"][0].to_dict()
    assert "group_events" not in stored.tables


# --- JVM output outside log4j ------------------------------------------------------------------


def test_jvm_stderr_and_hs_err_into_jvm_errors():
    b = kitlib.load_bundle(REAL / "jvm-uncaught-strimzi6579")
    je = b.jvm_errors
    assert values(je, ["kind", "line", "host"])[:2] == [("oom_uncaught", 1, "kafka-0"), ("oom_uncaught", 3, "kafka-0")]
    assert je["thread"].tolist()[-1] == "group-metadata-manager-0"
    assert b.unparsed.empty

    b = kitlib.load_bundle(REAL / "jvm-native-kd357")
    je = b.jvm_errors
    assert values(je, ["kind", "bytes", "line"]) == [
        ("commit_failed", 1073741824, 2),
        ("native_oom", None, 4),
        ("native_oom", 1073741824, 5),
    ]
    # the compose service's own line is no JVM line: kept, with its reason
    assert values(b.unparsed, ["line", "reason"]) == [(1, "not a JVM error line")]

    b = kitlib.load_bundle(REAL / "jvm-hserr-corretto215")
    je = b.jvm_errors
    row = je.iloc[0]
    assert len(je) == 1 and row["kind"] == "fatal_error" and row["error"] == "SIGSEGV (0xb)"
    assert (row["pid"], row["process"], row["heap_max"]) == (2775295, "kafka.Kafka", "6G")
    assert row["frame"].startswith("J 26432 c2 org.apache.kafka.storage.internals.log.AbstractIndex.binarySearch")
    assert row["ts"] == utc("2025-02-07 10:12:31") and row["jre"].startswith("OpenJDK Runtime Environment Corretto")
    assert b.unparsed.empty  # the rest of an hs_err report is its structure


@pytest.mark.slow
def test_jvm_findings_name_the_host_and_process():
    f = findings_of(REAL / "jvm-uncaught-strimzi6579")["jvm-out-of-memory"][0]
    assert f.severity == "critical" and f.numbers["host"] == "kafka-0" and f.numbers["threads_died"] == 4
    assert "ExitOnOutOfMemoryError" in f.recommendation
    f = findings_of(REAL / "jvm-native-kd357")["jvm-out-of-memory"][0]
    assert f.numbers["native_memory_refused"] and "lower -Xmx" in f.recommendation
    f = findings_of(REAL / "jvm-hserr-corretto215")["jvm-crash"][0]
    assert f.summary.startswith("JVM crashed on broker broker-1 (kafka.Kafka, -Xmx6G): SIGSEGV (0xb)")


def test_jvm_reader_leaves_logs_to_the_log_readers():
    # a log whose records carry an OutOfMemoryError in a stack trace is a log, not JVM output
    log = (
        b"2022-03-27 22:50:38,006 ERROR [ExpirationReaper-0-Fetch]: Error due to (kafka.server.Foo) [x]\n"
        b"java.lang.OutOfMemoryError: Java heap space\n"
    )
    assert detect(log).name != "jvm-errors"
    assert detect(b"Terminating due to java.lang.OutOfMemoryError: Java heap space\n").name == "jvm-errors"


# --- the command -----------------------------------------------------------------------------


@pytest.mark.slow
def test_triage_exit_codes_on_client_only_bundles(kit, tmp_path):
    r = kit("triage", REAL / "fenced-rd3928")
    assert r.returncode == 1, r.stderr  # a finding: no longer 'no file the kit recognises'
    assert "librdkafka: 1" in r.stdout and "transaction-timeouts" in r.stdout
    r = kit("triage", REAL / "healthy-rd1810")
    assert r.returncode == 0, r.stderr
    (tmp_path / "notes.txt").write_text("nothing a Kafka reader knows\n")
    assert kit("triage", tmp_path).returncode == 2


def test_client_connection_lines():
    from kitlib.investigations.client_requests import connections

    ev, _ = parse_client_bytes((REAL / "sarama-546" / "app" / "consumer.log").read_bytes(), SARAMA)
    ev2, _ = parse_client_bytes((REAL / "sarama-2215" / "app" / "producer.log").read_bytes(), SARAMA)
    rd, _ = parse_client_bytes(
        # librdkafka's wording (rdkafka_broker.c, rdkafka_transport.c)
        b"%3|1700000000.100|FAIL|orders#consumer-1| [thrd:ssl://b-1.example.com:9094/1]: ssl://b-1.example.com:9094/1: "
        b"Disconnected (after 600123ms in state UP)\n"
        b"%3|1700000001.100|FAIL|orders#consumer-1| [thrd:ssl://b-2.example.com:9094/2]: ssl://b-2.example.com:9094/2: "
        b"Connect to ipv4#10.0.0.2:9094 failed: Connection refused (after 0ms in state CONNECT)\n"
        b"%3|1700000001.200|ERROR|orders#consumer-1| [thrd:app]: 2/2 brokers are down\n"
    )
    fg, _ = parse_client_bytes(
        b"[INFO] broker is throttling us in response; broker: 1, req: Produce, throttle_millis: 250, "
        b"throttle_after_response: true\n",
        FRANZ_GO,
    )
    cc = connections.build(pd.concat([ev, ev2.head(1), rd, fg], ignore_index=True))
    assert values(cc, ["kind", "client_id", "broker", "throttle_ms"]) == [
        ("disconnected", None, "1", None),
        ("connection_error", None, "-1", None),
        ("disconnected", "orders#consumer-1", "b-1.example.com:9094", None),
        ("connect_failed", "orders#consumer-1", "b-2.example.com:9094", None),
        ("all_brokers_down", "orders#consumer-1", None, None),
        ("throttled", None, "1", 250),
    ]
    assert cc["reason"].iloc[0] == "processing FetchRequest: read tcp <DEAD BROKER IP>:9092: i/o timeout"


def test_jvm_exit_on_out_of_memory_lines(tmp_path):
    # the JVM's own wording (HotSpot's ExitOnOutOfMemoryError / OnOutOfMemoryError / uncaught exception
    # printer), behind a docker compose prefix; the frames under the error are its structure
    (tmp_path / "broker-2").mkdir()
    (tmp_path / "broker-2" / "kafka.out").write_text(
        'kafka-2  | Exception in thread "kafka-log-cleaner-thread-0" java.lang.OutOfMemoryError: Java heap space\n'
        "kafka-2  | \tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)\n"
        "kafka-2  | #\n"
        "kafka-2  | # java.lang.OutOfMemoryError: Java heap space\n"
        'kafka-2  | # -XX:OnOutOfMemoryError="kill -9 %p"\n'
        "kafka-2  | Terminating due to java.lang.OutOfMemoryError: Java heap space\n"
    )
    b = kitlib.load_bundle(tmp_path)
    assert values(b.jvm_errors, ["line", "kind", "error", "thread"]) == [
        (1, "oom", "Java heap space", "kafka-log-cleaner-thread-0"),
        (4, "oom", "Java heap space", None),
        (6, "oom_exit", "Java heap space", None),
    ]
    assert b.unparsed.empty  # the frame and the banner's other lines are the error's structure
    f = triage(b).findings
    assert [x.id for x in f] == ["jvm-out-of-memory"]
    assert "the JVM exited on it" in f[0].summary and "ExitOnOutOfMemoryError" not in f[0].recommendation
