"""The log4j record parser on realistic Kafka lines (shapes from Kafka 2.x-4.x and the seeds)."""

import gzip

import pandas as pd
import pytest

from kitlib.formats import detect
from kitlib.formats.logs import parse_bytes, records


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def block_parser(request, monkeypatch):
    """Every test here runs through the compiled scan and through the numpy path (the reference)."""
    monkeypatch.setattr(records, "NATIVE", request.param == "compiled")
    return request.param


SERVER = b"""[2024-05-22 00:32:03,023] INFO Migrating tier partition state file format for flE-6I70RCyT2gK2Qc3YBw:retriever-mutation-10 (kafka.tier.state.FileTierPartitionState)
[2024-05-22 00:32:29,962] INFO tier partition state file format migration complete for topicIdPartition flE-6I70RCyT2gK2Qc3YBw:retriever-mutation-10, state file size changed from 508509470 to 591531390 (kafka.tier.state.FileTierPartitionState)                                   
[2022-02-20 17:18:49,545] ERROR [KafkaServer id=0] Fatal error during KafkaServer startup. Prepare to shutdown (kafka.server.KafkaServer)
java.lang.OutOfMemoryError: Java heap space
\tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)
\tat kafka.log.SkimpyOffsetMap.<init>(OffsetMap.scala:45)
\tat kafka.log.LogCleaner$CleanerThread.<init>(LogCleaner.scala:299)
[2017-05-24 09:39:34,637] ERROR [ReplicaFetcherThread-0-175], Error for partition [__consumer_offsets,15] to broker 175:org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition. (kafka.server.ReplicaFetcherThread)
"""

CLEANER = b"""[2026-11-23 03:17:40,988] INFO Cleaner 0: Beginning cleaning of log orders-3 (kafka.log.LogCleaner)
[2026-11-23 03:17:40,990] INFO Cleaner 0: Building offset map for log orders-3 for 31 segments in offset range [0, 412977). (kafka.log.LogCleaner)
[2026-11-23 03:17:44,901] INFO [kafka-log-cleaner-thread-0]: 
\tLog cleaner thread 0 cleaned log orders-3 (dirty section = [0, 412977])
\t212.4 MB of log processed in 3.9 seconds (54.5 MB/sec).
\tIndexed 212.4 MB in 2.0 seconds (106.2 Mb/sec, 51.3% of total time)
\tBuffer utilization: 90.0%
\tCleaned 212.4 MB in 1.9 seconds (111.8 Mb/sec, 48.7% of total time)
\tStart size: 212.4 MB (412,977 messages)
\tEnd size: 118.0 MB (229,410 messages)
\t44.4% size reduction (44.4% fewer messages)
 (kafka.log.LogCleaner)
"""

CONNECT = b"""[2026-11-23 14:01:55,040] INFO [orders-source|task-0] ProducerConfig values: 
\tacks = -1
\tbatch.size = 16384
\tsasl.jaas.config = [hidden]
\tssl.keystore.password = null
 (org.apache.kafka.clients.producer.ProducerConfig:371)
[2026-11-23 14:02:29,104] ERROR [orders-source|task-0|offsets] WorkerSourceTask{id=orders-source-0} Timed out waiting to flush offsets to storage; will try again on next flush interval with latest offsets (org.apache.kafka.connect.runtime.WorkerSourceTask:315)
[2026-11-23 14:02:31,118] INFO [orders-source|task-0|offsets] WorkerSourceTask{id=orders-source-0} Committing offsets for 2210 acknowledged messages (org.apache.kafka.connect.runtime.WorkerSourceTask:236)
"""


def test_single_line_records_fields():
    ev, un = parse_bytes(SERVER)
    assert len(un) == 0
    assert ev["line"].tolist() == [1, 2, 3, 8]
    assert ev["nlines"].tolist() == [1, 1, 5, 1]
    assert ev["level"].tolist() == ["INFO", "INFO", "ERROR", "ERROR"]
    assert ev.loc[0, "logger"] == "kafka.tier.state.FileTierPartitionState"
    # trailing blanks after the logger (as pasted in seed 004) do not break the logger
    assert ev.loc[1, "logger"] == "kafka.tier.state.FileTierPartitionState"
    assert ev.loc[1, "message"].endswith("changed from 508509470 to 591531390")
    assert ev.loc[0, "ts"] == pd.Timestamp("2024-05-22 00:32:03.023", tz="UTC")
    assert str(ev["ts"].dtype) == "datetime64[ns, UTC]"


def test_stack_trace_stays_with_its_record():
    ev, _ = parse_bytes(SERVER)
    msg = ev.loc[2, "message"]
    assert msg.startswith("[KafkaServer id=0] Fatal error during KafkaServer startup. Prepare to shutdown\n")
    assert "java.lang.OutOfMemoryError: Java heap space" in msg
    assert msg.endswith("\tat kafka.log.LogCleaner$CleanerThread.<init>(LogCleaner.scala:299)")
    assert ev.loc[2, "logger"] == "kafka.server.KafkaServer"


def test_message_with_parentheses_and_brackets():
    ev, _ = parse_bytes(SERVER)
    assert ev.loc[3, "logger"] == "kafka.server.ReplicaFetcherThread"
    assert "[__consumer_offsets,15]" in ev.loc[3, "message"]


def test_cleaner_statistics_block_is_one_record_with_logger_on_last_line():
    ev, un = parse_bytes(CLEANER)
    assert len(ev) == 3 and len(un) == 0
    stats = ev.iloc[2]
    assert stats["logger"] == "kafka.log.LogCleaner"
    assert stats["nlines"] == 10
    assert "Start size: 212.4 MB (412,977 messages)" in stats["message"]
    assert stats["message"].rstrip().endswith("44.4% size reduction (44.4% fewer messages)")
    assert "(kafka.log.LogCleaner)" not in stats["message"]


def test_connect_layout_context_and_line_suffix():
    ev, _ = parse_bytes(CONNECT)
    assert ev["logger"].tolist() == [
        "org.apache.kafka.clients.producer.ProducerConfig",
        "org.apache.kafka.connect.runtime.WorkerSourceTask",
        "org.apache.kafka.connect.runtime.WorkerSourceTask",
    ]
    assert ev.loc[2, "message"].startswith("[orders-source|task-0|offsets] WorkerSourceTask{id=orders-source-0}")
    assert "\tbatch.size = 16384" in ev.loc[0, "message"]


def test_lines_before_first_header_and_custom_layout_are_kept():
    data = b"garbage preamble\n  more\n[2024-01-01 00:00:00,000] WARN no logger here\n[2024-01-01 00:00:01,000] INFO msg with (a b c)\n"
    ev, un = parse_bytes(data)
    assert un["line"].tolist() == [1, 2]
    assert set(un["reason"]) == {"no record header before this line"}
    assert ev["logger"].tolist() == ["", ""]
    assert ev.loc[1, "message"] == "msg with (a b c)"


def test_crlf_line_endings():
    ev, un = parse_bytes(SERVER.replace(b"\n", b"\r\n"))
    assert ev.loc[0, "logger"] == "kafka.tier.state.FileTierPartitionState"
    assert not ev.loc[0, "message"].endswith("\r")
    assert len(ev) == 4


def test_invalid_utf8_and_nul_lines_go_to_unparsed_with_reason():
    data = (
        b"[2024-01-01 00:00:00,000] INFO ok one (a.B)\n"
        b"[2024-01-01 00:00:01,000] INFO bad \xff\xfe bytes (a.B)\n"
        b"\x00\x00\x00binary\n"
        b"[2024-01-01 00:00:02,000] INFO ok two (a.B)\n"
    )
    ev, un = parse_bytes(data)
    assert ev["message"].tolist() == ["ok one", "ok two"]
    assert un["line"].tolist() == [2, 3]
    assert un.loc[0, "reason"] == "invalid UTF-8" and "\\xff" in un.loc[0, "text"]
    assert un.loc[1, "reason"].startswith("binary data")
    assert ev["nlines"].sum() + len(un) == 4


@pytest.mark.slow
def test_huge_line_and_timezone():
    big = b"x" * 5_000_000
    data = b"[2024-03-31 02:30:00,000] INFO " + big + b" (a.B)\n[2024-07-01 12:00:00,000] INFO y (a.B)\n"
    ev, un = parse_bytes(data, tz="Europe/Berlin")
    assert len(ev.loc[0, "message"]) == 5_000_000
    # 02:30 does not exist in Berlin on 2024-03-31 (DST gap): read with the offset before the
    # change (+01:00, a clock not yet moved on), never dropped, never collapsed onto 03:00
    assert ev.loc[0, "ts"] == pd.Timestamp("2024-03-31 01:30:00", tz="UTC")
    assert ev.loc[1, "ts"] == pd.Timestamp("2024-07-01 10:00:00", tz="UTC")


def test_secrets_in_messages_are_redacted():
    data = (
        b"[2026-11-23 14:01:55,040] INFO [pg|task-0] ConnectorConfig values: \n"
        b"\tconnection.password = hunter2\n\tconnection.url = jdbc:postgresql://app:s3cr3t@db/x\n"
        b"\tdatabase.user = app\n (org.apache.kafka.connect.runtime.ConnectorConfig:371)\n"
        b'[2026-11-23 14:01:56,000] ERROR login failed with sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="pw123"; (a.B)\n'
    )
    ev, _ = parse_bytes(data)
    text = "\n".join(ev["message"])
    for secret in ("hunter2", "s3cr3t", "pw123"):
        assert secret not in text
    assert "database.user = app" in text


@pytest.mark.parametrize("block_size", [64, 1000, 4096])
def test_block_boundaries_do_not_change_the_result(block_size, tmp_path):
    import pyarrow as pa

    from kitlib.events import to_pandas
    from kitlib.formats import Context
    from kitlib.formats.logs.log4j import parse
    from kitlib.sources import SourceFile

    data = (SERVER + CLEANER + CONNECT) * 7
    p = tmp_path / "server.log"
    p.write_bytes(data)
    src = SourceFile(p, "server.log", "b1")
    ctx = Context(src)
    evs = [c for n, c in parse(src, ctx, block_size=block_size) if n == "events"]
    ev = to_pandas(pa.concat_tables(evs))
    ref, _ = parse_bytes(data)
    assert ev["line"].tolist() == ref["line"].tolist()
    assert ev["message"].tolist() == ref["message"].tolist()
    assert ctx.lines == data.count(b"\n") == ctx.parsed


def test_detection_by_content():
    assert detect(SERVER).name == "log4j"
    assert detect(b"java.lang.Foo\n\tat x\n" + CONNECT).name == "log4j"
    assert detect(b"hello world\nno logs here\n") is None
    assert detect(gzip.compress(SERVER)) is None  # detection sees decompressed content only


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_random_damage_never_loses_a_line(seed, tmp_path):
    """Truncate, splice junk and shuffle real lines at random: the parser never raises and
    records + unparsed always add up to the lines in the file."""
    import random

    from kitlib.formats import Context
    from kitlib.formats.logs.log4j import parse
    from kitlib.sources import SourceFile

    rnd = random.Random(seed)
    lines = (SERVER + CLEANER + CONNECT).split(b"\n")
    out = []
    for _ in range(400):
        ln = rnd.choice(lines)
        r = rnd.random()
        if r < 0.05:
            ln = ln[: rnd.randrange(len(ln) + 1)]  # cut short
        elif r < 0.08:
            ln = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 60)))  # junk
        elif r < 0.10:
            ln = b"[" + ln  # looks like a header, is not
        out.append(ln)
    data = b"\n".join(out) + (b"\n" if seed % 2 else b"")
    p = tmp_path / "server.log"
    p.write_bytes(data)
    src = SourceFile(p, "server.log", "b1")
    ctx = Context(src)
    n_un = n_rec_lines = 0
    for name, chunk in parse(src, ctx, block_size=rnd.choice([97, 1024, 1 << 20])):
        if name == "unparsed":
            n_un += len(chunk)
        else:
            n_rec_lines += int(chunk.column("nlines").to_numpy().sum())
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert ctx.lines == expected
    assert n_rec_lines + n_un == expected
    assert ctx.parsed == n_rec_lines


def test_docker_compose_prefixes_are_stripped():
    data = (
        b"kafka-1  | [2024-10-18 16:15:57,159] INFO Starting the log cleaner (kafka.log.LogCleaner)\n"
        b"kafka-1  | [2024-10-18 16:15:58,000] ERROR boom (kafka.server.KafkaApis)\n"
        b"kafka-1  | java.lang.IllegalStateException: x\n"
        b"kafka-1  | \tat kafka.server.KafkaApis.handle(KafkaApis.scala:1)\n"
        b"2025-04-06T22:35:14.123456789Z [2025-04-06 22:35:14,120] WARN late (a.B)\n"
    )
    assert detect(data).name == "log4j"
    ev, un = parse_bytes(data)
    assert len(un) == 0
    assert ev["logger"].tolist() == ["kafka.log.LogCleaner", "kafka.server.KafkaApis", "a.B"]
    assert (
        ev.loc[1, "message"]
        == "boom\njava.lang.IllegalStateException: x\n\tat kafka.server.KafkaApis.handle(KafkaApis.scala:1)"
    )
    assert ev["line"].tolist() == [1, 2, 5]
