"""The compiled log4j scan (kitlib/formats/logs/_scan.c) gives the numpy path's tables.

The numpy path is the reference: every block is parsed both ways and compared column by column,
on every log4j file of the sample bundles and test fixtures, and on generated blocks that mix
what real broker and Connect logs hold (stack traces, loggers on a line of their own, Connect's
``:line`` suffixes, brackets that are no loggers, trailing blanks, CRLF, secrets). The scan's
secret pre-check must flag every text the RE2 pre-check matches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsecheck import assert_same

from kitlib import redact
from kitlib.formats import detect
from kitlib.formats.logs import containers, log4j, records
from kitlib.sources import SourceFile, head

scan = pytest.importorskip("kitlib.formats.logs._scan", reason="the compiled scan is not built")
ROOT = Path(__file__).resolve().parents[1]


class Src:
    host, rel, tz, first_line = "broker-1", "broker-1/server.log", "UTC", 1


def both_ways(block: bytes, src=Src, monkeypatch=None):
    """parse_block through the compiled scan and through numpy; (native result, numpy result,
    whether the scan took the block)."""
    took = scan.scan(block) is not None
    old = records.NATIVE
    try:
        records.NATIVE = True
        native = log4j.parse_block(block, 0, src)
        records.NATIVE = False
        reference = log4j.parse_block(block, 0, src)
    finally:
        records.NATIVE = old
    return native, reference, took


def test_the_scan_is_built_by_the_install():
    # an install with a C compiler builds it (setup.py); without it every block takes numpy
    assert records.SCAN is not None and records.NATIVE


def log4j_files() -> list[Path]:
    found = []
    for base in (ROOT / "sample_data", ROOT / "tests" / "fixtures"):
        for p in sorted(base.rglob("*")):
            if not p.is_file() or p.suffix in (".gz", ".zst", ".parquet", ".md", ".json", ".yaml"):
                continue
            src = SourceFile(p, p.name, "h", "UTC")
            try:
                fmt = detect(head(src), src)
            except Exception:  # noqa: BLE001 - a file detection refuses is not a log4j file
                continue
            if fmt is not None and fmt.name == "log4j":
                found.append(p)
    return found


FILES = log4j_files()


def test_there_are_log4j_files_to_compare():
    assert len(FILES) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_every_log4j_file_of_the_samples_parses_the_same_both_ways(path):
    data = path.read_bytes()
    if log4j.wrapped(data[:65536]):  # container prefixes are stripped before blocks are cut
        data = containers.strip(data)
    native, reference, _ = both_ways(data)
    assert_same(native, reference)


def test_a_generated_broker_log_is_taken_by_the_scan_and_parses_the_same():
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import genlog  # the benchmark's log generator: every kind of record a broker writes
    finally:
        sys.path.pop(0)
    import io

    buf = io.BytesIO()
    genlog.generate(2 << 20, buf)
    data = buf.getvalue()
    block = data[: log4j.last_header_start(data)]
    native, reference, took = both_ways(block)
    assert took
    assert native[0].num_rows > 5000
    assert_same(native, reference)


# --- generated blocks -------------------------------------------------------------------------
WORDS = st.sampled_from(
    [
        "Partition",
        "topic-0",
        "(",
        ")",
        " (",
        "()",
        "[",
        "]",
        ":",
        "=",
        "9092",
        "leader",
        "epoch",
        "\t",
        "  ",
        "password=hunter2",
        "token",
        'user_bob="x"',
        "PLAINTEXT://b1:9092",
        "sasl://u:p@h",
        "eyJabcdefgh.eyJabcdefgh.sig",
        "AKIAIOSFODNN7EXAMPLE",
        "(kafka.Foo)",
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
        ":7",
        "ok_$.-name",
    ]
)
LEVEL = st.sampled_from(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "INFO", "NOTICE"])


@st.composite
def record(draw) -> str:
    y = draw(st.sampled_from(["2024", "2024", "1677", "2262", "0999"]))
    mo = draw(st.sampled_from(["05", "12", "13", "00"]))
    d = draw(st.sampled_from(["22", "31", "32"]))
    hh = draw(st.sampled_from(["00", "23", "24"]))
    header = f"[{y}-{mo}-{d} {hh}:32:03,023] {draw(LEVEL)}"
    msg = "".join(draw(st.lists(WORDS | st.text("abc ()[]:\t", max_size=6), max_size=8)))
    if draw(st.booleans()):
        msg += f" ({draw(LOGGERS)})"
    lines = [header + (" " + msg if msg or draw(st.booleans()) else "") + draw(st.sampled_from(["", " ", "\t ", ""]))]
    for _ in range(draw(st.integers(0, 3))):
        lines.append(
            draw(
                st.sampled_from(
                    [
                        "\tat kafka.Foo.bar(Foo.scala:12)",
                        "java.io.IOException: broken (pipe)",
                        "",
                        "[not a header]",
                        "[2024-05-22 00:32:03,023]INFO glued",
                        "\tcleaner.io.buffer.size = 524288",
                        "MIIEowIBAAKCAQEA7bq3xYz0PqR9aB3cD4eF5gH6iJ7kLmNoPq",
                        " (kafka.log.LogCleaner) ",
                    ]
                )
            )
        )
    if draw(st.booleans()):
        lines.append(f" ({draw(LOGGERS)})" + draw(st.sampled_from(["", " "])))
    return "\n".join(lines)


@st.composite
def block(draw) -> bytes:
    recs = draw(st.lists(record(), min_size=1, max_size=12))
    first = "[2024-05-22 00:00:00,000] INFO start (kafka.Kafka)"
    text = "\n".join([first, *recs]) + draw(st.sampled_from(["\n", ""]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text.encode()


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block())
def test_generated_blocks_parse_the_same_both_ways(data):
    native, reference, took = both_ways(data)
    assert_same(native, reference)
    # what the scan leaves to numpy: years the tables cannot hold, and a '(...)' holding text
    # beyond ASCII (Python's \w decides whether that is a logger name)
    far = any(f"[{y}-" in data.decode() for y in ("1677", "2262", "0999"))
    assert took or far or "é" in data.decode()


def test_blocks_the_scan_leaves_to_numpy():
    ok = b"[2024-05-22 00:32:03,023] INFO fine (kafka.Foo)\n"
    assert scan.scan(ok) is not None
    assert scan.scan(b"orphan line\n" + ok) is None  # lines before the first header
    assert scan.scan(ok + b"nul\x00\n") is None
    assert scan.scan(ok.replace(b"2024", b"1500")) is None  # a year the tables cannot hold
    assert scan.scan(b"") is None
    # text that is not UTF-8 as Python decodes it: the numpy path names the lines
    for bad in (b"\xff", b"caf\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf"):
        assert scan.scan(ok + b"x " + bad + b" y\n") is None, bad
    # a logger name beyond ASCII: Python's \w decides
    assert scan.scan(ok + b"[2024-05-22 00:32:04,023] INFO x (kafka.\xc3\x9cber)\n") is None


UTF8 = """[2024-05-22 00:32:03,023] INFO [Consumer clientId=caf\u00e9-1, groupId=g\u00fcnter] Joined (kafka.Foo)
[2024-05-22 00:32:04,023] WARN Record key '\u65e5\u672c\u8a9e' failed: \U0001f600 \u00e9t\u00e9 (org.x.Y:12)
java.lang.IllegalStateException: \u00fcber
\tat x.y(Z.java:1)
[2024-05-22 00:32:05,023] INFO to\u212aen=abc and pa\u017f\u017fword=hunter2 (kafka.Foo)
[2024-05-22 00:32:06,023] INFO password=s3cret caf\u00e9 (kafka.Foo)
[2024-05-22 00:32:07,023] INFO plain ascii line (kafka.Foo)
"""


def test_utf8_text_is_taken_by_the_scan_and_parses_the_same():
    data = UTF8.encode()
    native, reference, took = both_ways(data)
    assert took
    assert_same(native, reference)
    messages = native[0].column("message").to_pylist()
    assert messages[0] == "[Consumer clientId=café-1, groupId=günter] Joined"
    assert messages[1].startswith("Record key '日本語' failed: 😀 été")
    # RE2 and Python fold case beyond ASCII (the Kelvin sign is a k, the long s an s): the
    # messages with such text go to RE2's pre-check and are redacted as on the numpy path
    assert "hunter2" not in messages[2] and "s3cret" not in messages[3]
    assert messages[4] == "plain ascii line"


# --- the secret pre-check ------------------------------------------------------------------------
def re2_flags(texts: list[str]) -> list[bool]:
    hit = pc.fill_null(pc.match_substring_regex(pa.array(texts, pa.large_string()), redact.PREFILTER), False)
    return hit.to_pylist()


def test_every_rule_example_is_flagged():
    for rule in redact.RULES:
        example = rule.example.split(" (on a line")[0]
        assert scan.flag(example.encode()), rule.name


def test_ordinary_broker_text_is_not_flagged():
    quiet = [
        "[Partition topic-0 broker=1] ISR updated to 1,2,3 and version updated to 7",
        "Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://broker-1:9092",
        "[GroupCoordinator 1]: Preparing to rebalance group g1 in state PreparingRebalance",
        "Deleted log for partition orders-3 in /var/lib/kafka/data/orders-3.abc-delete.",
    ]
    assert [scan.flag(t.encode()) for t in quiet] == [False] * len(quiet)
    assert re2_flags(quiet) == [False] * len(quiet)


FRAGMENTS = st.sampled_from(
    "pass w PassW phrase pwd PWD secret SeCrEt token api . _ - key Key credential access auth user info bind pw "
    "jaas private keystore user_ authorization bearer :// : @ / eyj eyJ gh p o x xox a b aiza AIza AKIA akia ASIA "
    'ABIA ACCA apikey ApiKey = " QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo 0123456789 =='.split()
    + [" ", "\t", "\n"]
)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.lists(FRAGMENTS, max_size=14).map("".join))
def test_the_scan_flags_everything_re2_flags(text):
    if re2_flags([text])[0]:
        assert scan.flag(text.encode()), text


def test_flagged_messages_are_redacted_in_the_events_table():
    data = (
        b'[2024-05-22 00:32:03,023] INFO Connecting with sasl.jaas.config=x required password="s3cret"; (kafka.A)\n'
        b"[2024-05-22 00:32:04,023] INFO nothing to hide here (kafka.A)\n"
        b"[2024-05-22 00:32:05,023] INFO url http://app:pw0rd@db:80/x (kafka.A)\n"
    )
    native, reference, took = both_ways(data)
    assert took
    assert_same(native, reference)
    messages = native[0].column("message").to_pylist()
    assert "s3cret" not in messages[0] and "pw0rd" not in messages[2]
    assert messages[1] == "nothing to hide here"
    assert np.all(np.array([redact.REDACTED in m for m in messages]) == [True, False, True])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"\n", b"\n", b"\r\n", b"a", b"\x0a\x0b", b"\x8a", b"\x00", b"\xff", b"\x09"]), max_size=3000
    )
)
def test_count_newlines_counts_every_newline_byte(parts):
    # eight bytes at a time with per-byte sums: any length, any byte next to a newline
    data = b"".join(parts)
    assert scan.count_newlines(data) == data.count(b"\n")
    assert scan.count_newlines(memoryview(data)[1:]) == data[1:].count(b"\n")


def test_count_newlines_on_long_runs_of_newlines():
    # the per-byte sums are added up every 255 words (of 8 bytes, or 16 with SSE2): a buffer of
    # only newlines fills them
    for n in (0, 7, 8, 15, 16, 17, 2039, 2040, 2041, 4079, 4080, 4081, 255 * 8 * 3 + 5, 255 * 16 * 3 + 9, 1 << 20):
        assert scan.count_newlines(b"\n" * n) == n
    data = (b"x" * 199 + b"\n") * 5000
    assert scan.count_newlines(data) == 5000
    for start in range(17):  # a view may start anywhere against the 16-byte steps
        assert scan.count_newlines(memoryview(data)[start : start + 4099]) == data[start : start + 4099].count(b"\n")


# words of the pre-check that fit in the last four bytes of a text (where the scan's four-byte
# hash does not reach and each position is looked at alone), and base64 runs about 40 long
TAIL_WORDS = ["pwd", "PWD", "eyj", "eyJ", "pass", "PASS", "-u ", "-U\t", "sig=", "aiza", "AKIA", "asia", "jaas", "bind"]
B64_RUNS = [
    pad + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MTIzNDU2Nzg5"[:n] + eq + tail
    for n in (38, 39, 40, 41, 44)
    for pad in ("", " ", "\t ")
    for eq in ("", "=", "==")
    for tail in ("", " ")
]


def test_words_in_the_last_bytes_and_base64_lines_are_flagged_as_re2_flags_them():
    texts = [f + w for w in TAIL_WORDS for f in ("", "x", "xx", "x x", "xxx", "ab]x", "12345")]
    texts += B64_RUNS + ["(" + r for r in B64_RUNS] + [r + "!" for r in B64_RUNS]
    re2 = re2_flags(texts)
    assert 100 < sum(re2) < len(texts)  # the short runs, and the runs with other bytes, are not
    for text, hit in zip(texts, re2):
        one = scan.flag(text.encode())  # no newline: the text is one line
        assert one >= hit, text
        # the same text as one of several lines (each line looked at alone) flags the same
        assert scan.flag((text + "\n").encode()) == one, text
        assert scan.flag(("ok\n" + text).encode()) == one, text
        assert scan.flag(("ok\n" + text + "\nok").encode()) == one, text


def test_records_of_one_line_and_of_several_flag_the_same_texts_as_the_numpy_path():
    # messages of one line (the scan's base64 test takes the whole text as the line) and the same
    # texts with a continuation line, in one block, parsed both ways
    texts = [*(f"x {w}" for w in TAIL_WORDS), *B64_RUNS, "plain text", "no secret at all here (x)"]
    lines = []
    for i, t in enumerate(texts):
        lines.append(f"[2024-05-22 00:32:{i % 60:02d},023] INFO {t} (kafka.A)")
        lines.append(f"[2024-05-22 00:33:{i % 60:02d},023] WARN first line (kafka.B)\n{t}")
    block = ("\n".join(lines) + "\n").encode()
    native, reference, took = both_ways(block)
    assert took
    assert_same(native, reference)
    messages = native[0].column("message").to_pylist()
    assert sum(redact.REDACTED in m for m in messages) >= 2 * len([r for r in B64_RUNS if len(r.strip()) >= 42])


# every word of the pre-check, in either case, cut short or whole, at every position of texts of 0 to
# 50 bytes around it: the sixteen-at-a-time look (SSSE3, where the CPU has it) flags exactly the texts
# the hashed positions flag (flag(text, True)), vector ends and the last three bytes included
PRECHECK_WORDS = (
    "pass pwd private secret token api.key api_key api-key apikey aiza authorization auth.user.info access_key "
    "akia asia abia acca credential bearer bind.pw jaas keystore.key user_ eyj ://u:p@h ghp_ gho_ ghu_ ghs_ ghr_ "
    "xoxa- xoxb- xoxp- xoxr- xoxs- cookie accountkey encryptionkey signingkey licensekey hmackey masterkey "
    "cipherkey sig= signature= monitorrole controlrole jdbc:oracle mysql mariadb redis-cli curl --user "
    "--proxy-user"
).split() + ["-u ", "-U\t"]


def test_the_sixteen_position_look_flags_what_the_hashed_positions_flag():
    rng = np.random.default_rng(7)
    filler = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789-_.:/=@[]\t", np.uint8)
    texts = []
    for word in PRECHECK_WORDS:
        for cut in (len(word), len(word) - 1, 3):
            piece = "".join(c.upper() if rng.random() < 0.3 else c for c in word[:cut]).encode()
            for size in (0, 5, 14, 15, 16, 17, 18, 19, 20, 31, 35, 50):
                for at in range(0, size + 1, 3 if size > 20 else 1):
                    base = bytes(rng.choice(filler, size))
                    texts.append(base[:at] + piece + base[at:])
    flags = [scan.flag(t) for t in texts]
    assert flags == [scan.flag(t, True) for t in texts]
    assert 0.3 < sum(flags) / len(flags) < 0.95  # whole words flag, most cut ones do not
