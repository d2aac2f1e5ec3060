"""The redaction rules: every spelling of a secret the README promises to keep out, planted in
random surrounding text, never survives; text without secrets comes out unchanged; whole Arrow
columns and pandas tables give the same result as the text function."""

from __future__ import annotations

import string

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kitlib import redact
from kitlib.redact import PREFILTER, REDACTED, RULES, redact_array, redact_text

# (template, secret): {s} is where the secret goes; each is a spelling seen in real configs,
# logs, captures and HTTP traces
SPELLINGS = [
    ("password={s}", None),
    ("password: {s}", None),
    ("password = {s}", None),
    ("passwd={s}", None),
    ("pwd={s}", None),
    ("secret={s}", None),
    ("client_secret={s}", None),
    ("token={s}", None),
    ("api.key={s}", None),
    ("apikey={s}", None),
    ("api_key: {s}", None),
    ("credentials={s}", None),
    ("access.key={s}", None),
    ("aws.secret.access.key={s}", None),
    ("basic.auth.user.info=user:{s}", None),
    ("ldap.bind.pw={s}", None),
    ("ssl.keystore.password={s}", None),
    ("ssl.key.password = {s}", None),
    ("ssl.truststore.password: {s}", None),
    ("database.password = {s}", None),
    ('"password": "{s}"', None),
    ('{{"password":"{s}","user":"bob"}}', None),
    ("'password': '{s}'", None),
    ('password=\\"{s}\\"', None),
    ('"client_secret": "{s}"', None),
    (
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="{s}";',
        None,
    ),
    (
        'sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username="a" '
        'password="{s}";',
        None,
    ),
    (
        '{{"sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username=\\"a\\" '
        'password=\\"{s}\\";"}}',
        None,
    ),
    ('user_alice="{s}"', None),
    ("Authorization: Bearer {s}", None),
    ("authorization: Basic {s}", None),
    ("X-Api-Key: {s}", None),
    ("x-api-key={s}", None),
    ("Bearer {s}", None),
    ("https://app:{s}@db.example:5432/x", None),
    ("jdbc:mysql://app:{s}@db:3306/x", None),
    ("-Djavax.net.ssl.keyStorePassword={s}", None),
    ("KAFKA_OPTS=-Dpassword={s}", None),
    ('kafka_server_x{{password="{s}",topic="t"}} 1', None),
    ("sasl.oauthbearer.client.credentials.client.secret={s}", None),
    ("ssl.keystore.key={s}", None),
    ("{s}", "AKIA"),
    ("{s}", "ASIA"),
    ("{s}", "ghp_"),
    ("{s}", "xoxb-"),
    ("{s}", "AIza"),
]
_ALPHA = string.ascii_letters + string.digits


def _secret(prefix: str | None, draw) -> str:
    if prefix in ("AKIA", "ASIA"):
        return prefix + draw(st.text(string.ascii_uppercase + string.digits, min_size=16, max_size=16))
    if prefix == "ghp_":
        return prefix + draw(st.text(_ALPHA, min_size=36, max_size=40))
    if prefix == "xoxb-":
        return prefix + draw(st.text(_ALPHA, min_size=12, max_size=20))
    if prefix == "AIza":
        return prefix + draw(st.text(_ALPHA, min_size=35, max_size=35))
    # a value with a digit so no rule could take it for a plain word
    return draw(st.text(_ALPHA + "-_.+/", min_size=5, max_size=30)) + draw(st.sampled_from("0123456789")) + "Qz"


# surrounding text: log-like words and punctuation, never a secret's key word
_WORDS = [
    "INFO",
    "broker",
    "Completed",
    "fetch",
    "partition",
    "orders-3",
    "offset",
    "=",
    ":",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    "leader",
    "epoch",
    "42",
    "kafka.server.ReplicaManager",
    "ms",
    "-",
    "\t",
    "a.b.c",
    '"x"',
    "user=bob",
    "host=10.0.0.1",
    "topic=t",
    "batch.size = 16384",
    "Asia/Tokyo",
    "OAUTHBEARER",
    "bearer 42",
]
_noise = st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join)


@st.composite
def planted(draw):
    template, prefix = draw(st.sampled_from(SPELLINGS))
    secret = _secret(prefix, draw)
    return draw(_noise) + " " + template.format(s=secret) + " " + draw(_noise), secret


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted())
def test_a_planted_secret_never_survives(case):
    text, secret = case
    out = redact_text(text)
    assert secret not in out, (text, out)
    assert out.count("\n") == text.count("\n")
    assert redact_text(out) == out  # redacting twice changes nothing more


@settings(max_examples=300, deadline=None)
@given(_noise)
def test_text_without_secrets_is_unchanged(text):
    assert redact_text(text) == text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_keeps_its_lines_and_is_stable(text):
    out = redact_text(text)
    assert out.count("\n") == text.count("\n")
    assert redact_text(out) == out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(planted(), _noise.map(lambda t: (t, None))), min_size=1, max_size=30))
def test_a_column_is_redacted_like_each_text(rows):
    texts = [t for t, _ in rows]
    col = redact_array(pa.array(texts, pa.large_string())).to_pylist()
    assert col == [redact_text(t) for t in texts]
    for (_text, secret), got in zip(rows, col):
        if secret:
            assert secret not in got


def test_every_rule_catches_its_own_example_and_the_prefilter_sees_it():
    import pyarrow.compute as pc

    for rule in RULES:
        example = rule.example.replace(" (on a line of its own)", "")
        out = redact_text("x\n" + example + "\ny")
        assert REDACTED in out, rule.name
        assert pc.match_substring_regex(pa.array([example]), PREFILTER)[0].as_py(), rule.name


def test_pem_body_lines_in_a_column_of_lines_are_masked():
    lines = [
        "start",
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
        "abc",
        "xyz==",
        "-----END PRIVATE KEY-----",
        "after the key",
    ]
    out = redact_array(pa.array(lines), lines=True).to_pylist()
    assert out[0] == "start" and out[-1] == "after the key" and out[-2] == lines[-2]
    assert out[2:5] == [REDACTED] * 3


def test_kafka_values_that_look_like_secret_names_are_kept():
    keep = [
        '{"requestHeader":{"requestApiKey":18,"requestApiKeyName":"API_VERSIONS"}}',
        "delegation.token.expiry.time.ms = 86400000",
        "ssl.keystore.location = /etc/kafka/ks.jks",
        "ssl.keystore.password = [hidden]",
        "password.encoder.cipher.algorithm = AES/CBC/PKCS5Padding",
        "sasl.oauthbearer.token.endpoint.url = https://idp.example/token",
        "Asia/Tokyo",
        "ssl.truststore.password = ${file:/etc/kafka/secrets.properties:truststore}",
    ]
    for t in keep:
        assert redact_text(t) == t


def test_name_value_tables_mask_the_value_of_a_secret_name():
    import kitlib.metrics
    from kitlib import tables

    m = kitlib.metrics.with_keys(
        pd.DataFrame(
            {
                "mbean": ["java.lang:type=Runtime"] * 2,
                "attribute": ["SystemProperties.javax.net.ssl.keyStorePassword", "SystemProperties.user.name"],
                "value": [float("nan")] * 2,
                "text": ["s3cret-in-jvm", "kafka"],
            }
        )
    )
    out = tables.conform("metrics", m)
    assert out.text.tolist() == [REDACTED, "kafka"]


def test_the_rule_table_in_the_docs_is_current():
    from pathlib import Path

    doc = Path(__file__).resolve().parent.parent / "docs" / "redaction.md"
    assert doc.read_text() == redact.markdown(), "run: python -m kitlib.redact > docs/redaction.md"


# pieces that reach the pre-check and the quick tests that spare a text most rules when many are
# redacted at once, with the characters where Python's re and RE2 part ways (\v, \x1c, long s,
# Kelvin sign, dotless i)
_PIECES = st.sampled_from(
    [
        "password",
        "PassWord",
        "token",
        "user_bob",
        "api-key",
        "apiKey",
        "client.secret",
        "ssl.key.password",
        "=",
        ":",
        " ",
        "\t",
        "\n",
        '"',
        "'",
        '\\"',
        "-",
        "--",
        "-storepass",
        "s3cr3t",
        "AKIAIOSFODNN7EXAMPLE",
        "QmFzZTY0S2V5TGluZTAxMjM0NTY3ODlhYmNkZWZnaGlqa2xtbg",
        "\v",
        "\x1c",
        "\u017f",
        "\u212a",
        "\u0131",
        "is",
        "Invalid username or password)",
        "(channelId=10.0.1.2:9092-10.0.3.4:51234-0)",
    ]
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=12).map("".join), max_size=20))
def test_many_texts_at_once_are_redacted_like_each_text(texts):
    from kitlib.redact.text import redact_texts

    assert redact_texts(pa.array(texts, pa.large_string())) == [redact_text(t) for t in texts]


def test_a_failed_login_line_is_spared_the_key_rules_and_kept():
    import pyarrow.compute as pc

    from kitlib.redact.text import _GATES, redact_texts

    line = (
        "[SocketServer listenerType=BROKER, nodeId=1] Failed authentication with /10.0.7.12 (channelId="
        "10.0.7.12:9092-10.0.7.12:1534211-0) (Authentication failed: Invalid username or password)"
    )
    assert all(not pc.match_substring_regex(pa.array([line]), g)[0].as_py() for g in _GATES.values())
    assert all(w == w.lower() for rule in RULES for w in rule.needs)  # the words' RE2 tests ignore case
    assert redact_texts(pa.array([line, line.replace("password)", "password=hunter2)")])) == [
        line,
        line.replace("password)", "password=[redacted])"),
    ]


@pytest.mark.parametrize("n", [200_000])
def test_a_big_column_goes_through_the_prefilter_quickly(n):
    import time

    col = pa.array(
        [f"[2026-01-01 00:00:00,000] INFO Completed fetch of partition orders-{i % 64} offset {i}" for i in range(n)],
        pa.large_string(),
    )
    t = time.perf_counter()
    out = redact_array(col)
    assert out is col  # nothing to change: the column is returned as it is
    assert time.perf_counter() - t < 2.0


# request-log headers of Kafka 0.10 (a struct, the API by number), 1.0 to 2.7 (RequestHeader, by
# name) and 2.8+ (JSON, both): the API is no secret and must survive, so request rows keep it
KAFKA_REQUEST_HEADERS = [
    "Completed request:{api_key=1,api_version=3,correlation_id=42,client_id=consumer-1} -- {topics=[]}",
    "Completed request:RequestHeader(apiKey=FETCH, apiVersion=11, clientId=consumer-orders-1, correlationId=7)",
    '{"requestHeader":{"requestApiKey":0,"requestApiKeyName":"PRODUCE","requestApiVersion":9}}',
]


@pytest.mark.parametrize("line", KAFKA_REQUEST_HEADERS)
def test_kafka_request_log_keeps_the_api_it_names(line):
    assert redact_text(line) == line


@pytest.mark.parametrize(
    "line",
    ["apiKey=FETCHER-9f8a7c", "apiKey: NOTANAPI", "api_key=9f8a7c6d5e", "api_key=123456789", 'apiKey="x-7Hq2"'],
)
def test_an_api_key_that_names_no_kafka_api_is_masked(line):
    assert "[redacted]" in redact_text(line)
