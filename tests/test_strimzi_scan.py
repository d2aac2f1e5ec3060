"""The compiled scan reads Strimzi's layout (``%d{ISO8601} %p %m (%c) [%t]%n``) as the general
layout path does.

The general path (:func:`kitlib.formats.logs.patterned.parse_block` with the scan switched off) is the
reference: blocks are parsed both ways and compared column by column, on generated Strimzi logs
and on blocks that mix what such logs hold with what could be read another way (threads with
brackets, loggers that are no names, tails alone on a record's last line, blank lines, CRLF,
dates in another form). Where the scan cannot be sure it reads a block as the general path would,
it must leave the block to that path."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsecheck import assert_same

from kitlib.formats.logs import inference, layouts, patterned, records
from kitlib.sources import SourceFile, head

scan = pytest.importorskip("kitlib.formats.logs._scan", reason="the compiled scan is not built")
ROOT = Path(__file__).resolve().parents[1]
INFERRED = layouts.compile_pattern("%d{ANY_ISO} %p %m (%c) [%t]%n")
GIVEN = layouts.compile_pattern("%d{ISO8601} %p %X{connector.context}%m (%c) [%t]%n")


class Src:
    host, rel, tz, first_line = "kafka-0", "kafka-0/kafka.log", "Europe/Paris", 1


def both_ways(block: bytes, layout=INFERRED):
    """(scan's result, general path's result, whether the scan took the block)."""
    took = scan.scan(block, 1) is not None
    old = records.NATIVE
    try:
        records.NATIVE = True
        native = patterned.parse_block(block, 7, Src, layout)
        records.NATIVE = False
        reference = patterned.parse_block(block, 7, Src, layout)
    finally:
        records.NATIVE = old
    return native, reference, took


def strimzi_log(size: int) -> bytes:
    """The benchmark generator's broker log with its headers rewritten into Strimzi's layout."""
    import io
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import genlog
        from layout_bench import to_strimzi_layout
    finally:
        sys.path.pop(0)
    buf = io.BytesIO()
    genlog.generate(size, buf)
    data = to_strimzi_layout(buf.getvalue())
    return data[: data.rfind(b"\n20") + 1]


def test_strimzi_layouts_are_the_ones_the_scan_reads():
    assert layouts.scan_style(INFERRED) == layouts.scan_style(GIVEN) == 1
    for other in ("%d{ISO8601} %-5p [%t] %c - %m%n", "[%d] %p %m (%c)%n", "%d{ISO8601} %p %m (%c)%n"):
        assert layouts.scan_style(layouts.compile_pattern(other)) is None


@pytest.mark.slow
def test_a_generated_strimzi_log_is_taken_by_the_scan_and_parses_the_same():
    data = strimzi_log(2 << 20)
    for layout in (INFERRED, GIVEN):
        native, reference, took = both_ways(data, layout)
        assert took
        assert native[0].num_rows > 5000
        assert_same(native, reference)


def test_a_strimzi_file_is_inferred_and_read_through_the_scan(tmp_path, monkeypatch):
    # the whole parse (layout inferred from the file's first lines, blocks cut, scan taken)
    from kitlib.formats import Context

    p = tmp_path / "kafka.log"
    p.write_bytes(strimzi_log(1 << 20))
    src = SourceFile(p, "kafka-0/kafka.log", "kafka-0", "UTC")
    assert layouts.scan_style(inference.choose_layout(head(src), src)) == 1
    taken = []
    real = scan.scan
    monkeypatch.setattr(records.SCAN, "scan", lambda b, style=0: taken.append(style) or real(b, style))
    ctx = Context(src)
    rows = sum(c.num_rows for name, c in patterned.parse(src, ctx, block_size=256 << 10) if name == "events")
    assert rows > 2000 and taken and set(taken) == {1}
    assert ctx.parsed == ctx.lines and not ctx.error


# --- generated blocks -------------------------------------------------------------------------
WORDS = st.sampled_from(
    [
        "Partition",
        "(",
        ")",
        " (",
        "[",
        "]",
        " [",
        ":",
        "=",
        "\t",
        "  ",
        "password=hunter2",
        "PLAINTEXT://b1:9092",
        "eyJabcdefgh.eyJabcdefgh.sig",
        "(kafka.Foo)",
        "(kafka.Foo) [main]",
        "(x y)",
        "é",
        ":12",
    ]
)
LOGGERS = st.sampled_from(
    [
        "kafka.server.ReplicaManager",
        "org.apache.kafka.connect.runtime.WorkerTask:271",
        "$Anon",
        "a-b.c",
        "1bad",
        "has space",
        "",
        "x:1:2",
        "x:",
        ":7",
        "ok_$.-name",
        "é.x",
    ]
)
THREADS = st.sampled_from(
    ["main", "data-plane-kafka-request-handler-3", "", "pool-1 (x)", "a [b", "kafka-producer-network-thread | p-1"]
)
LEVEL = st.sampled_from(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "INFO", "info", "WARNING", "NOTICE"])
GAP = st.sampled_from([" ", " ", "  ", "\t", ""])


@st.composite
def tail(draw, threads=THREADS) -> str:
    after = draw(st.sampled_from(["", " ", "\t", " \t"]))
    return f"{draw(GAP)}({draw(LOGGERS)}){draw(GAP)}[{draw(threads)}]{after}"


PLAIN_THREADS = st.sampled_from(["main", "data-plane-kafka-request-handler-3", "", "pool-1 (x)", "p | q", "a [b"])


@st.composite
def record(draw, plain: bool = False) -> str:
    """One record; ``plain``: its header and tails are of the form the scan reads (its message,
    logger, thread and continuation lines still vary), else anything the general path meets."""
    if plain:
        header = f"2024-05-{draw(st.sampled_from(['22', '31']))} 00:32:03,023{draw(st.sampled_from([' ', '  ']))}"
        header += draw(st.sampled_from(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]))
    else:
        y = draw(st.sampled_from(["2024", "2024", "2024", "1677", "2262"]))
        mo = draw(st.sampled_from(["05", "05", "12", "13"]))
        d = draw(st.sampled_from(["22", "31", "32"]))
        sep = draw(st.sampled_from([" ", " ", " ", "T"]))
        frac = draw(st.sampled_from([",023", ",023", ",023", ".023", ",0234", ""]))
        header = f"{y}-{mo}-{d}{sep}00:32:03{frac}{draw(st.sampled_from([' ', ' ', '  ', 'Z ']))}{draw(LEVEL)}"
    threads = PLAIN_THREADS if plain else THREADS
    msg = "".join(draw(st.lists(WORDS | st.text("abc ()[]:\t", max_size=6), max_size=6)))
    if draw(st.booleans()):
        msg += draw(tail(threads))
    gaps = [" ", " ", "  "] if plain else [" ", " ", "  ", "\t", ""]
    lines = [header + draw(st.sampled_from(gaps)) + msg]
    more = [
        "\tat kafka.Foo.bar(Foo.scala:12)",
        "java.io.IOException: broken (pipe)",
        "",
        "   ",
        "\tcleaner.io.buffer.size = 524288",
        "[2024-05-22 00:32:03,023] INFO Kafka's own layout (kafka.Foo)",
        " (kafka.Foo) [main]",
    ]
    if not plain:
        more += ["2024-05-22 00:32:03,023 nolevel here", "12 partitions"]
    for _ in range(draw(st.integers(0, 3))):
        lines.append(draw(st.sampled_from(more)))
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["", " ", "\t ", "  "])) + draw(tail(threads)))
        if draw(st.booleans()):
            lines.append("")
    return "\n".join(lines)


@st.composite
def block(draw, plain: bool = False) -> bytes:
    recs = draw(st.lists(record(plain), min_size=1, max_size=10))
    first = "2024-05-22 00:00:00,000 INFO start (kafka.Kafka) [main]"
    text = "\n".join([first, *recs]) + draw(st.sampled_from(["\n", ""]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text.encode()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block(plain=True))
def test_blocks_of_plain_headers_are_taken_and_parse_the_same_both_ways(data):
    # messages, loggers (names or not, ':line'), threads, tails on the header line or alone on
    # the last line, blank lines, stack traces, CRLF, secrets, text beyond ASCII
    native, reference, took = both_ways(data)
    assert took
    assert_same(native, reference)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block())
def test_any_block_parses_the_same_both_ways(data):
    # dates and levels of other forms too: the scan takes the block or leaves it whole
    native, reference, _ = both_ways(data)
    assert_same(native, reference)


def test_blocks_the_scan_must_leave_to_the_general_path():
    ok = b"2024-05-22 00:00:00,000 INFO start (kafka.Kafka) [main]\n"
    assert scan.scan(ok, 1) is not None
    for bad in (
        b"2024-05-22T00:00:01,000 INFO iso with T (k.K) [main]\n",  # another date form
        b"2024-05-22 00:00:01.000 INFO dot (k.K) [main]\n",
        b"2024-05-22 00:00:01,000 info lower case (k.K) [main]\n",
        b"2024-05-22 00:00:01,000 WARNING other name (k.K) [main]\n",
        b"2024-13-22 00:00:01,000 INFO month 13 (k.K) [main]\n",  # a header with no time there
        b"1677-05-22 00:00:01,000 INFO too early (k.K) [main]\n",
        b"2024-05-22 00:00:01,000 INFO nul \x00 (k.K) [main]\n",
        b"2024-05-22 00:00:01,000 INFO bad utf-8 \xff (k.K) [main]\n",
    ):
        assert scan.scan(ok + bad, 1) is None, bad
    assert scan.scan(b"orphan line\n" + ok, 1) is None  # lines before the first header
    with pytest.raises(ValueError):
        scan.scan(ok, 2)


def test_the_leftmost_tail_wins_as_in_the_general_path():
    # an unclosed '[' in the message, a thread with '[' in it, a '(...)' that is no logger, and
    # the tail alone on the last line after a blank one: each read as the general path reads it
    data = (
        b"2024-05-22 00:00:00,000 INFO start (kafka.Kafka) [main]\n"
        b"2024-05-22 00:00:01,000 WARN [ unclosed (kafka.server.ReplicaManager) [main]\n"
        b"2024-05-22 00:00:02,000 WARN thread (k.K) [pool [1]\n"
        b"2024-05-22 00:00:03,000 WARN not a name (x y) [main]\n"
        b"2024-05-22 00:00:04,000 INFO KafkaConfig values:\n\tbroker.id = 0\n\n \t (kafka.server.KafkaConfig) [main]\n\n"
        b"2024-05-22 00:00:05,000 INFO  (k.K) [main]\n"
    )
    native, reference, took = both_ways(data)
    assert took
    assert_same(native, reference)
    ev = native[0]
    assert ev.column("logger").to_pylist() == [
        "kafka.Kafka",
        "kafka.server.ReplicaManager",
        "k.K",
        "",
        "kafka.server.KafkaConfig",
        "",
    ]
    assert ev.column("message").to_pylist()[1:4] == ["[ unclosed", "thread", "not a name (x y) [main]"]


def test_a_real_strimzi_broker_log_is_taken_and_parses_the_same():
    # tests/fixtures/real_logs/strimzi_broker: a public excerpt of a Strimzi broker's log
    path = ROOT / "tests" / "fixtures" / "real_logs" / "strimzi_broker" / "kafka-0.log"
    src = SourceFile(path, "kafka-0/kafka-0.log", "kafka-0", "UTC")
    layout = inference.choose_layout(head(src), src)
    assert layout is not None and layouts.scan_style(layout) == 1
    data = path.read_bytes()
    native, reference, took = both_ways(data, layout)
    assert took and native[0].num_rows == data.count(b"\n") == 9
    assert_same(native, reference)
