"""Logs in layouts other than Kafka's default: public excerpts of each layout (tests/fixtures/
real_logs, sources in its SOURCES.md), pattern compilation from layout definitions, inference,
container prefixes, JSON logs, and that Kafka's own layout still takes the numpy fast path."""

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import kitlib
from kitlib import formats
from kitlib.events import to_pandas
from kitlib.formats import Context
from kitlib.formats.logs import inference, parse_bytes
from kitlib.formats.logs.inference import patterns_in_definition
from kitlib.formats.logs.layouts import PatternError, compile_pattern
from kitlib.sources import discover, head

REAL = Path(__file__).parent / "fixtures" / "real_logs"
FIXTURES = sorted((d.name, s.rel) for d in REAL.iterdir() if d.is_dir() for s in discover(d))
# the compose excerpt ends inside a config dump, before the ' (kafka.server.KafkaConfig)' line
CUT_BEFORE_LOGGER = {"docker_compose"}
EXPECTED_FORMAT = {"docker_compose": "log4j", "kubectl_timestamps": "log4j", "hazelcast_forced": "log-layout-manifest"}


def load(folder: str, rel: str):
    """(format, events frame, unparsed count, context) for one fixture file, detected as a
    bundle loader would (bundle.yaml of the folder applies)."""
    src = next(s for s in discover(REAL / folder) if s.rel == rel)
    fmt = formats.detect(head(src), src)
    ctx = Context(src)
    ev, n_un = [], 0
    for name, chunk in (fmt.parse if fmt else formats.unknown_lines)(src, ctx):
        if name == "events":
            ev.append(chunk)
        else:
            n_un += len(chunk)
    frame = to_pandas(pa.concat_tables(ev)) if ev else None
    return (fmt.name if fmt else None), frame, n_un, ctx


@pytest.mark.parametrize("folder,rel", FIXTURES)
def test_public_excerpt_parses_into_events(folder, rel):
    fmt, ev, n_un, ctx = load(folder, rel)
    expected = EXPECTED_FORMAT.get(folder, "jsonlog" if folder.startswith("json") else "log-layout")
    assert fmt == expected
    assert ctx.parsed + n_un == ctx.lines and not ctx.error
    assert ctx.parsed >= 0.95 * ctx.lines
    assert ev is not None and ev["level"].notna().all()
    if folder not in CUT_BEFORE_LOGGER:
        assert (ev["logger"] != "").mean() >= 0.75


def test_sources_file_names_every_fixture_folder():
    text = (REAL / "SOURCES.md").read_text()
    for d in REAL.iterdir():
        if d.is_dir():
            assert f"`{d.name}/`" in text


# --- exact rows --------------------------------------------------------------------------------
def test_strimzi_broker_rows_thread_dropped_and_config_dump_whole():
    _, ev, _, _ = load("strimzi_broker", "kafka-0.log")
    r = ev.iloc[0]
    assert r["ts"] == pd.Timestamp("2020-03-23 21:37:44.941", tz="UTC")
    assert (r["level"], r["logger"]) == ("DEBUG", "kafka.controller.ControllerChannelManager")
    assert r["message"] == "[Channel manager on controller 0]: Controller 0 trying to connect to broker 1"
    assert "thread" not in ev.columns and not ev["message"].str.contains(r"\[main\]$").any()
    dump = (
        b"2020-03-23 21:37:45,061 INFO ProducerConfig values: \n\tacks = -1\n\tbatch.size = 16384\n"
        b" (org.apache.kafka.clients.producer.ProducerConfig) [main]\n"
        b"2020-03-23 21:37:45,062 INFO after (kafka.Foo) [main]\n"
    )
    ev2, un2 = parse_bytes(dump, "%d{ISO8601} %p %m (%c) [%t]%n")
    assert len(un2) == 0
    assert ev2.loc[0, "logger"] == "org.apache.kafka.clients.producer.ProducerConfig"
    assert ev2.loc[0, "message"] == "ProducerConfig values:\n\tacks = -1\n\tbatch.size = 16384"
    assert ev2["nlines"].tolist() == [4, 1]


def test_iso_dates_with_zones_and_the_file_zone():
    data = (
        b"2024-05-22T02:32:03.023+02:00 WARN  [main] kafka.server.KafkaServer - east\n"
        b"2024-05-22T00:32:03,023Z ERROR [main] kafka.server.KafkaServer - zulu\n"
        b"2024-05-22T02:32:03.023 INFO  [main] kafka.server.KafkaServer - local\n"
    )
    ev, un = parse_bytes(data, None, tz="Europe/Berlin")
    assert len(un) == 0
    utc = pd.Timestamp("2024-05-22 00:32:03.023", tz="UTC")
    assert ev["ts"].tolist() == [utc, utc, utc]  # the zone-less one is read in Berlin time
    assert ev["message"].tolist() == ["east", "zulu", "local"]


def test_logback_client_stack_trace_whole_and_no_date_means_null_ts():
    _, ev, _, _ = load("logback_client", "orders-consumer.log")
    assert ev["ts"].isna().all()
    err = ev[ev["level"] == "ERROR"].iloc[0]
    assert err["logger"] == "com.example.orders.OrderConsumer"
    assert err["message"] == (
        "poll failed\norg.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms "
        "expired before the position for partition orders-0 could be determined"
    )
    assert err["nlines"] == 2 and err["line"] == 9
    cfg = ev.iloc[0]
    assert cfg["nlines"] == 6 and cfg["message"].endswith("group.id = orders-svc")


def test_lines_without_timestamp_kept_with_null_ts():
    _, ev, n_un, _ = load("no_timestamp", "kafka-export.log")
    assert n_un == 0 and ev["ts"].isna().all()
    assert ev["line"].tolist() == [1, 2, 3, 4, 9]
    oom = ev.iloc[3]
    assert oom["logger"] == "kafka.server.KafkaServer" and oom["nlines"] == 5
    assert oom["message"].endswith("\tat kafka.log.LogCleaner$CleanerThread.<init>(LogCleaner.scala:299)")
    # text after the '(logger)' group (as pasted): the record is kept whole, the logger left empty
    assert ev.iloc[2]["logger"] == "" and ev.iloc[2]["message"].endswith("Java heap space")


def test_cri_partial_lines_joined_and_line_numbers_kept():
    _, ev, n_un, ctx = load("cri", "0.log")
    assert n_un == 0 and ctx.lines == 7
    joined = ev.iloc[2]
    assert joined["logger"] == "kafka.server.DelayedOperationPurgatory$ExpiredOperationReaper"
    assert joined["message"] == "[ExpirationReaper-0-AlterAcls]: Starting"
    assert (joined["line"], joined["nlines"]) == (3, 2)
    assert ev.iloc[3]["line"] == 5
    assert ev.iloc[0]["ts"] == pd.Timestamp("2020-03-23 21:37:44.941", tz="UTC")  # the record's own stamp


def test_container_stamp_used_when_the_line_has_none():
    data = (
        b"2024-05-22T00:32:03.023456789Z INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Shutting down"
        b" (kafka.server.ReplicaFetcherThread)\n"
        b"2024-05-22T00:32:04.5Z ERROR oops (kafka.server.X)\n"
        b"2024-05-22T00:32:04.6Z java.lang.RuntimeException: x\n"
        b"2024-05-22T00:32:04.7Z \tat a.B(B.java:1)\n"
    )
    ev, un = parse_bytes(data, None)
    assert len(un) == 0
    assert ev["ts"].tolist() == [
        pd.Timestamp("2024-05-22 00:32:03.023", tz="UTC"),
        pd.Timestamp("2024-05-22 00:32:04.5", tz="UTC"),
    ]
    assert ev.loc[1, "message"] == "oops\njava.lang.RuntimeException: x\n\tat a.B(B.java:1)"


def test_compose_prefix_on_another_layout():
    data = (
        b"connect-1  | 2024-05-22 00:32:03,023 INFO  [main] o.a.k.connect.runtime.Worker - Worker started\n"
        b"connect-1  | 2024-05-22 00:32:04,000 ERROR [task-1] o.a.k.connect.runtime.WorkerTask - failed\n"
        b"connect-1  | org.apache.kafka.connect.errors.ConnectException: boom\n"
    )
    ev, un = parse_bytes(data, None)
    assert len(un) == 0
    assert ev["logger"].tolist() == ["o.a.k.connect.runtime.Worker", "o.a.k.connect.runtime.WorkerTask"]
    assert ev.loc[1, "message"] == "failed\norg.apache.kafka.connect.errors.ConnectException: boom"


def test_json_logs_rows():
    _, ecs, _, _ = load("json_ecs", "kafka-ecslayout.log")
    warn = ecs.iloc[1]
    assert (warn["level"], warn["logger"]) == ("WARN", "kafka.server.ReplicaFetcherThread")
    assert (
        warn["message"].split("\n")[1]
        == "java.io.IOException: Connection to 2 was disconnected before the response was read"
    )
    assert warn["message"].endswith("(ReplicaFetcherBlockingSend.scala:110)")
    _, q, _, _ = load("json_ecs", "quarkus-ecs.log")
    assert q.loc[0, "ts"] == pd.Timestamp("2022-11-18 10:44:56.862", tz="UTC")  # +01:00 converted
    _, l2, _, _ = load("json_log4j2", "server.json.log")
    assert l2.loc[0, "ts"] == pd.Timestamp("2024-05-22 00:32:03.023", tz="UTC")  # instant{epochSecond,nano}
    assert l2.loc[1, "message"].startswith(
        "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error in response for fetch request\njava.io.IOException"
    )
    _, ls, _, _ = load("json_logstash", "orders-service.log")
    assert ls.loc[0, "ts"] == pd.Timestamp("2024-05-22 07:14:03.412", tz="UTC")
    assert ls["logger"].tolist() == ["org.apache.kafka.clients.NetworkClient", "com.example.orders.OrderPublisher"]
    _, je, _, _ = load("json_jsonevent", "strimzi-kafka-0.log")
    assert je.loc[1, "message"].startswith("Closed socket connection for client /127.0.0.1:51756")


def test_json_bad_lines_go_to_unparsed_and_types_may_vary():
    data = (
        b'{"@timestamp":"2024-05-22T00:32:03.023Z","level":"INFO","logger_name":"a.B","message":"one","n":1}\n'
        b"Picked up JAVA_TOOL_OPTIONS: -Xmx1g\n"
        b'{"@timestamp":"2024-05-22T00:32:04.023Z","level":"WARN","logger_name":"a.B","message":"two","n":"x"}\n'
        b'{"@timestamp":"2024-05-22T00:32:05.023Z","level":"INFO","logger_name":"a.B","message":"cut\n'
    )
    ev, un = parse_bytes(data, "json")
    assert ev["message"].tolist() == ["one", "two"] and ev["line"].tolist() == [1, 3]
    assert un["line"].tolist() == [2, 4] and set(un["reason"]) == {"not a JSON record"}


# --- patterns, definitions, inference ------------------------------------------------------------
@pytest.mark.parametrize(
    "pattern,line,expect",
    [
        (
            "%d{yyyy-MM-dd HH:mm:ss.SSS} %-5level [%thread] %logger{36} - %msg%n",
            "2024-05-22 00:32:03.023 WARN  [main] o.a.k.Foo - hi",
            ("WARN", "o.a.k.Foo", "hi", "2024-05-22 00:32:03.023"),
        ),
        (
            "%d{ISO8601_OFFSET_DATE_TIME_HHCMM} %p %c - %m%n",
            "2024-05-22T02:32:03,023+02:00 INFO kafka.Foo - hi",
            ("INFO", "kafka.Foo", "hi", "2024-05-22 00:32:03.023"),
        ),
        (
            "%d{dd MMM yyyy HH:mm:ss,SSS} %-5p [%c] %m%n",
            "22 May 2024 00:32:03,023 ERROR [kafka.Foo] hi",
            ("ERROR", "kafka.Foo", "hi", "2024-05-22 00:32:03.023"),
        ),
        (
            "%highlight{%d{HH:mm:ss.SSS} %-5level %logger{36}}{STYLE=Logback} - %msg%n",
            "00:32:03.023 DEBUG kafka.Foo - hi",
            ("DEBUG", "kafka.Foo", "hi", None),
        ),
        (
            "[%d] %p %X{connector.context}%m (%c:%L)%n",
            "[2024-05-22 00:32:03,023] INFO [sink|task-0] hi (o.a.k.Foo:12)",
            ("INFO", "o.a.k.Foo", "[sink|task-0] hi", "2024-05-22 00:32:03.023"),
        ),
        (
            "%d{UNIX_MILLIS} %p %c %m%n",
            "1716337923023 INFO kafka.Foo hi",
            ("INFO", "kafka.Foo", "hi", "2024-05-22 00:32:03.023"),
        ),
    ],
)
def test_compiled_patterns(pattern, line, expect):
    ev, un = parse_bytes((line + "\n").encode(), pattern)
    assert len(un) == 0
    r = ev.iloc[0]
    assert (r["level"], r["logger"], r["message"]) == expect[:3]
    assert pd.isna(r["ts"]) if expect[3] is None else r["ts"] == pd.Timestamp(expect[3], tz="UTC")


def test_pattern_errors_say_why():
    with pytest.raises(PatternError, match="no message"):
        compile_pattern("%d %p %c%n")
    with pytest.raises(PatternError, match="nothing before the message"):
        compile_pattern("%m%n")


LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.app.layout.ConversionPattern=%d{yyyy-MM-dd HH:mm:ss} %-5p %c{1}:%L - %m%n
"""
LOG4J2_XML = """<Configuration><Properties><Property name="pat">%d{ISO8601} | %-5level | %t | %c | %m%n</Property>
</Properties><Appenders><Console name="c"><PatternLayout pattern="${pat}"/></Console></Appenders></Configuration>"""
LOG4J2_YAML = """Configuration:
  Properties:
    Property:
      - name: "logPattern"
        value: "[%d] %p %m (%c)%n"
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "${logPattern}"
"""
LOG4J2_PROPS = """property.filename = x
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss} %-5p [%t] %c{1}:%L - %m%n
"""
LOGBACK = """<configuration><property name="P" value="%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n"/>
<appender name="S" class="ch.qos.logback.core.ConsoleAppender"><encoder><pattern>${P}</pattern></encoder></appender>
</configuration>"""


def test_patterns_in_definitions():
    assert patterns_in_definition(LOG4J1, "log4j.properties") == [
        "[%d] %p %m (%c)%n",
        "%d{yyyy-MM-dd HH:mm:ss} %-5p %c{1}:%L - %m%n",
    ]
    assert patterns_in_definition(LOG4J2_XML, "log4j2.xml") == ["%d{ISO8601} | %-5level | %t | %c | %m%n"]
    assert patterns_in_definition(LOG4J2_YAML, "log4j2.yaml") == ["[%d] %p %m (%c)%n"]
    assert patterns_in_definition(LOG4J2_PROPS, "log4j2.properties") == [
        "%d{yyyy-MM-dd HH:mm:ss} %-5p [%t] %c{1}:%L - %m%n"
    ]
    assert patterns_in_definition(LOGBACK, "logback.xml") == [
        "%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n"
    ]


def test_bundle_definition_then_manifest_then_fast_path(tmp_path):
    b = tmp_path / "bundle"
    (b / "app" / "config").mkdir(parents=True)
    (b / "broker-1").mkdir()
    (b / "connect").mkdir()
    (b / "app" / "config" / "log4j2.xml").write_text(LOG4J2_XML)
    # a layout inference does not know: only the definition in the bundle explains it
    (b / "app" / "app.log").write_text(
        "2024-05-22 00:32:03,023 | WARN  | main | kafka.Foo | hi\n"
        "2024-05-22 00:32:04,023 | ERROR | main | kafka.Bar | boom\njava.lang.IllegalStateException: x\n"
    )
    (b / "broker-1" / "server.log").write_text("[2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\n")
    (b / "connect" / "connect.log").write_text("00:32:03.023 <main> WARN kafka.Foo: hi\n")
    (b / "bundle.yaml").write_text(
        'layouts:\n  "connect/*.log": "%d{HH:mm:ss.SSS} <%t> %p %c: %m%n"\n  "broker-1/*.log": "[%d] %p %m (%c)%n"\n'
    )
    got = {s.rel: formats.detect(head(s), s).name for s in discover(b) if s.rel.endswith(".log")}
    assert got == {
        "app/app.log": "log-layout",
        "connect/connect.log": "log-layout-manifest",
        "broker-1/server.log": "log4j",
    }
    bundle = kitlib.load_bundle(b)
    ev = bundle.events
    app = ev[ev["file"] == "app/app.log"]
    assert app["logger"].tolist() == ["kafka.Foo", "kafka.Bar"]
    assert app["message"].tolist() == ["hi", "boom\njava.lang.IllegalStateException: x"]
    con = ev[ev["file"] == "connect/connect.log"]
    assert (con["level"].tolist(), con["logger"].tolist(), con["message"].tolist()) == (["WARN"], ["kafka.Foo"], ["hi"])
    files = bundle.files.set_index("file")
    assert files.loc["app/app.log", "format"] == "log-layout"
    assert (files["parsed"] + files["unparsed"] == files["lines"]).all()


def test_manifest_json(tmp_path):
    b = tmp_path / "b"
    b.mkdir()
    (b / "app.log").write_text('{"time":"2024-05-22T00:32:03.023Z","severity":"WARN","msg":"hi"}\n')
    (b / "bundle.yaml").write_text('layouts:\n  "*.log": json\n')
    src = next(s for s in discover(b) if s.rel == "app.log")
    assert formats.detect(head(src), src).name == "jsonlog"


def test_inference_picks_fields():
    lay, wrapped = inference.best_layout(
        inference.inferred_layouts(), b"10:15:30.123 [main] INFO  o.a.k.clients.consumer.KafkaConsumer - hi\n"
    )
    assert lay.pattern == "%d{ANY_TIME} [%t] %-5p %c - %m%n" and not wrapped
    lay, wrapped = inference.best_layout(
        inference.inferred_layouts(), b"kafka-1  | 2024-05-22 00:32:03,023 INFO hi (kafka.Foo) [main]\n"
    )
    assert lay.pattern == "%d{ANY_ISO} %p %m (%c) [%t]%n" and wrapped
    assert inference.best_layout(inference.inferred_layouts(), b"just some notes\nno log here\n")[0] is None


# --- detection: Kafka's default layout keeps the fast path ------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        b"[2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\n",
        b"kafka-1  | [2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\n",
        b"2024-05-22T00:32:03.023456789Z [2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\n",
        b"2024-05-22T00:32:03.023456789Z stdout F [2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\n",
        b"[2024-05-22 00:32:03,023] INFO [sink|task-0] Hello (org.apache.kafka.connect.runtime.WorkerSinkTask:123)\n",
    ],
)
def test_kafka_default_layout_takes_the_fast_path(data):
    assert formats.detect(data).name == "log4j"


def test_other_layouts_are_detected_as_log_layout_not_unknown():
    assert formats.detect(b"2024-05-22 00:32:03,023 INFO hi (kafka.Foo) [main]\n").name == "log-layout"
    assert (
        formats.detect(b"INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] x (kafka.server.R)\n").name
        == "log-layout"
    )
    assert formats.detect(b'{"@timestamp":"2024-05-22T00:32:03Z","message":"m","level":"INFO"}\n').name == "jsonlog"
    assert formats.detect(b"Just some notes\nabout the incident\n") is None


# --- blocks, bad bytes ---------------------------------------------------------------------------
def test_records_cross_block_boundaries_whole():
    rec = b"2024-05-22 00:32:03,023 ERROR [main] kafka.Foo - boom\njava.lang.IllegalStateException: x\n" + b"".join(
        b"\tat a.B.c%d(B.java:1)\n" % i for i in range(40)
    )
    data = rec * 50
    one, _ = parse_bytes(data, None, threads=1)
    small, un = parse_bytes(data, None, threads=2, block_size=997)
    assert len(un) == 0 and len(small) == 50
    assert small["message"].tolist() == one["message"].tolist() and (small["nlines"] == 42).all()
    assert small["line"].tolist() == list(range(1, 50 * 42, 42))


def test_bad_bytes_cost_only_their_line():
    data = (
        b"2024-05-22 00:32:03,023 INFO  [main] kafka.Foo - ok\n"
        b"2024-05-22 00:32:04,023 INFO  [main] kafka.Foo - bad \xff\xfe\n"
        b"2024-05-22 00:32:05,023 INFO  [main] kafka.Foo - ok again\n"
    )
    ev, un = parse_bytes(data, "%d %-5p [%t] %c - %m%n")
    assert ev["message"].tolist() == ["ok", "ok again"]
    assert un["line"].tolist() == [2] and un["reason"].tolist() == ["invalid UTF-8"]


def test_secrets_redacted_in_other_layouts():
    data = b'2024-05-22 00:32:03,023 INFO  [main] o.a.k.Foo - sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="hunter2";\n'
    ev, _ = parse_bytes(data, None)
    assert "hunter2" not in ev.loc[0, "message"]


# --- layouts common around Kafka that inference reads (public excerpts in tests/fixtures/excerpts)
EXCERPTS = Path(__file__).parent / "fixtures" / "excerpts"


def load_layout_fixture(folder: str):
    """(format name, chosen pattern, events frame, context) of the one file of an excerpt folder."""
    src = next(iter(discover(EXCERPTS / folder)))
    fmt = formats.detect(head(src), src)
    ctx = Context(src)
    ev = [chunk for name, chunk in fmt.parse(src, ctx) if name == "events"]
    assert ctx.parsed == ctx.lines and not ctx.error  # every line in a record
    return fmt.name, src.meta["layout_chosen"].pattern, to_pandas(pa.concat_tables(ev)), ctx


def test_spark_default_layout_two_digit_years():
    fmt, pattern, ev, _ = load_layout_fixture("spark_default")
    assert (fmt, pattern) == ("log-layout", "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n")
    r = ev.iloc[4]
    assert r["ts"] == pd.Timestamp("2017-06-09 20:10:42", tz="UTC")
    assert (r["level"], r["logger"]) == ("INFO", "executor.CoarseGrainedExecutorBackend")
    assert r["message"] == "Connecting to driver: spark://CoarseGrainedScheduler@10.10.34.11:48069"
    assert ev.iloc[3]["logger"] == "Remoting" and ev.iloc[3]["message"] == "Starting remoting"
    assert len(ev) == 8


def test_bracketed_level_thread_logger_layout():
    fmt, pattern, ev, _ = load_layout_fixture("bracketed_level_thread")
    assert pattern == "[%d{ANY_ISO}] [%-5p] [%t] [%c] - %m%n"
    assert len(ev) == 2 and ev["logger"].tolist() == ["state.change.logger"] * 2
    assert ev["level"].tolist() == ["WARN", "ERROR"]  # 'WARN ' padded inside the brackets
    assert ev.iloc[0]["ts"] == pd.Timestamp("2020-04-23 00:28:21.796", tz="UTC")
    assert ev.iloc[0]["message"].startswith("[Broker id=1] Ignoring LeaderAndIsr request from controller 1")
    assert "kafka-request-handler-7" not in ev.iloc[0]["message"]  # the thread is not in the message
    err = ev.iloc[1]
    assert err["message"].startswith("[Controller id=1 epoch=25] Controller 1 epoch 25 failed to change state")
    assert "StateChangeFailedException" in err["message"] and err["nlines"] == 5


def test_debezium_image_layout():
    _, pattern, ev, _ = load_layout_fixture("debezium_image")
    assert pattern.startswith("%d{ANY_ISO} %-5p  %X{dbz.connectorType}")
    assert ev["logger"].tolist() == [
        "org.apache.kafka.common.utils.AppInfoParser",
        "org.apache.kafka.connect.runtime.distributed.DistributedHerder",
    ]
    assert ev["message"].tolist() == [
        "Kafka version: 2.4.0",
        "[Worker clientId=connect-1, groupId=1] Starting connectors and tasks using config offset -1",
    ]
    assert ev.iloc[0]["ts"] == pd.Timestamp("2020-02-06 15:48:33.939", tz="UTC")
    # the connector's MDC filled in (type|name|context), as a running connector's task logs
    # (constructed from the image's pattern)
    text = (
        b"2021-09-07 15:26:05,166 ERROR  MySQL|dbserver1|binlog  Producer failure   [io.debezium.pipeline.ErrorHandler]\n"
        b"io.debezium.DebeziumException: Error processing binlog event\n"
        b"2021-09-07 15:26:05,263 INFO   ||  Stopping down connector   [io.debezium.connector.common.BaseSourceTask]\n"
    )
    ev2, un2 = parse_bytes(text, None)
    assert len(un2) == 0
    assert ev2["logger"].tolist() == [
        "io.debezium.pipeline.ErrorHandler",
        "io.debezium.connector.common.BaseSourceTask",
    ]
    assert ev2.iloc[0]["message"] == "Producer failure\nio.debezium.DebeziumException: Error processing binlog event"


def test_log4j2_layout_without_milliseconds():
    _, pattern, ev, _ = load_layout_fixture("log4j2_no_millis")
    assert pattern == "%d{ANY_ISO} %-5p [%t] %c - %m%n"
    w = ev.iloc[2]
    assert w["ts"] == pd.Timestamp("2024-06-18 17:35:44", tz="UTC")
    assert (w["level"], w["logger"]) == ("WARN", "NetworkClient")  # ':1253' dropped
    assert w["message"].startswith("[Producer clientId=producer-1] Error while fetching metadata")
    assert ev.iloc[3]["message"].endswith("Topic orders not present in metadata after 60000 ms.")


def test_export_of_messages_and_loggers_only():
    # no date and no level: each line ending with a Java logger is a record, in order, without a time
    fmt, pattern, ev, _ = load_layout_fixture("message_logger_export")
    assert (fmt, pattern) == ("log-layout", "%m (%c)%n")
    assert ev["ts"].isna().all() and ev["level"].isna().all() and ev["line"].tolist() == [1, 2, 3]
    assert ev["logger"].tolist() == [
        "org.apache.kafka.connect.runtime.WorkerSourceTask",
        "org.apache.kafka.connect.runtime.WorkerSourceTask",
        "org.apache.kafka.connect.runtime.SourceTaskOffsetCommitter",
    ]
    assert ev.iloc[2]["message"] == "WorkerSourceTask{id=test-1-5-7-0} Failed to commit offsets"
    # a stack frame ends with a file name in parentheses: it stays in its record
    text = (
        b"Task threw an uncaught and unrecoverable exception (org.apache.kafka.connect.runtime.WorkerTask:187)\n"
        b"java.lang.IllegalStateException: boom\n"
        b"\tat org.apache.kafka.connect.runtime.WorkerSourceTask.execute(WorkerSourceTask.java:244)\n"
        b"Stopping task (org.apache.kafka.connect.runtime.Worker:836)\n"
    )
    ev2, un2 = parse_bytes(text, None)
    assert len(un2) == 0 and ev2["nlines"].tolist() == [3, 1]
    assert ev2["logger"].tolist() == [
        "org.apache.kafka.connect.runtime.WorkerTask",
        "org.apache.kafka.connect.runtime.Worker",
    ]
