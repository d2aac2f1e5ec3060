"""Secrets in the shapes real deployments write them (synthetic values): every shape is masked as a
log message, as lines of the unparsed table (one line a row, the record spread over rows), by the
compiled scan's pre-check as by the numpy path, across the pieces a file is read in, and in the
lines a report cites; and the innocent look-alikes next to them stay readable."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kitlib.formats import unknown_lines, unparsed_frame
from kitlib.formats.logs import parse_bytes, records
from kitlib.redact import PREFILTER, REDACTED, LineCarry, redact_lines, redact_text, redact_value
from kitlib.sources import SourceFile

# (text, secret): each a shape seen in real configs, logs, manifests and shell history
SHAPES = [
    # lower-case bearer in a stack trace, a blank instead of '=', split key/value JSON fields
    ("Caused by: java.io.IOException: server rejected bearer tok-s3cr3t-01", "tok-s3cr3t-01"),
    ("OAuth settings oauth.client.secret s3cr3t-02 oauth.client.id broker", "s3cr3t-02"),
    ('overrides "key": "ssl.truststore.password", "value": "s3cr3t-03"', "s3cr3t-03"),
    ('{"name":"ssl.keystore.password","type":"PASSWORD","value":"s3cr3t-04"}', "s3cr3t-04"),
    ("KAFKA_SSL_KEYSTORE_PASSWORD=s3cr3t-05", "s3cr3t-05"),
    ("-Djavax.net.ssl.keyStorePassword=s3cr3t-06 -Xmx1G", "s3cr3t-06"),
    ("-Dcom.sun.management.jmxremote.password=s3cr3t-07", "s3cr3t-07"),
    ("ssl.truststore.password: s3cr3t-08", "s3cr3t-08"),
    # values on the line after their key
    (
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="u" \\\n    password="s3cr3t-09";',
        "s3cr3t-09",
    ),
    (
        "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\\n"
        "    clientId=broker \\\n    oauth.client.pin=s3cr3t-10 ;",
        "s3cr3t-10",
    ),
    ("ssl.key.password: |\n  s3cr3t-11\nssl.keystore.type: JKS", "s3cr3t-11"),
    ("sasl.jaas.config: >-\n  org.example.LoginModule required\n  pin=s3cr3t-12;\nother: 1", "s3cr3t-12"),
    ('{\n  "name": "connection.password",\n  "value": "s3cr3t-13"\n}', "s3cr3t-13"),
    ("- name: KAFKA_SASL_PASSWORD\n  value: s3cr3t-14\n- name: KAFKA_HEAP_OPTS", "s3cr3t-14"),
    ("ssl.truststore.password=\\\n    s3cr3t-15", "s3cr3t-15"),
    ("oauth.client.secret:\n  s3cr3t-16\noauth.client.id: broker", "s3cr3t-16"),
    # Java maps, JDBC and cache URLs, cloud credentials
    ("{name=ssl.keystore.password, value=s3cr3t-17}", "s3cr3t-17"),
    ("{value=s3cr3t-18, name=database.password}", "s3cr3t-18"),
    ("jdbc:oracle:thin:scott/s3cr3t-19@db:1521/ORCL", "s3cr3t-19"),
    ("redis://:s3cr3t-20@cache:6379/0", "s3cr3t-20"),
    (
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=s3cr3t-21==;EndpointSuffix=core.windows.net",
        "s3cr3t-21",
    ),
    ("https://a.blob.core.windows.net/c/b?sv=2021-08-06&sp=r&sig=s3cr3t-22%3D&se=2026", "s3cr3t-22"),
    (
        "Authorization: AWS4-HMAC-SHA256 Credential=KEYID/20261123/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=5e3cr3t23deadbeef",
        "5e3cr3t23deadbeef",
    ),
    ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=5e3cr3t24cafe", "5e3cr3t24cafe"),
    ("aws_access_key_id=MINIOKEYS3CR3T25", "MINIOKEYS3CR3T25"),
    ("s3.access.key=MINIOKEYS3CR3T26", "MINIOKEYS3CR3T26"),
    ("aws.access.key.id = MINIOKEYS3CR3T27", "MINIOKEYS3CR3T27"),
    # HTTP headers in maps and JSON arrays, URL-encoded pairs
    ("{Authorization=Basic s3cr3t-28, Accept=application/json}", "s3cr3t-28"),
    ("{Cookie=JSESSIONID=s3cr3t-29, Accept=*/*}", "s3cr3t-29"),
    ('[["X-Api-Key", "s3cr3t-30"], ["Accept", "*/*"]]', "s3cr3t-30"),
    ('[["Set-Cookie", "session=s3cr3t-31; Path=/"]]', "s3cr3t-31"),
    ('{"Authorization":["Basic s3cr3t-32"]}', "s3cr3t-32"),
    ('{"Cookie":["sid=s3cr3t-33"]}', "s3cr3t-33"),
    ("notify?user=ops&token%3Ds3cr3t-34%26x%3D1", "s3cr3t-34"),
    ("form password%3Ds3cr3t-35&next=1", "s3cr3t-35"),
    # command lines in shell history
    ("mysql -h db -u app -p s3cr3t-36 orders", "s3cr3t-36"),
    ("mysql -h db -u app -ps3cr3t-37 orders", "s3cr3t-37"),
    ("vault login --password s3cr3t-38", "s3cr3t-38"),
    ("keytool -list -keystore k.jks -storepass s3cr3t-39", "s3cr3t-39"),
    ("keytool -genkeypair -keystore k.jks -keypass s3cr3t-40 -alias b", "s3cr3t-40"),
    ("keytool -importkeystore -srcstorepass s3cr3t-41 -deststorepass s3cr3t-42", "s3cr3t-41"),
    ("keytool -importkeystore -srcstorepass s3cr3t-41 -deststorepass s3cr3t-42", "s3cr3t-42"),
    ("openssl pkcs12 -export -passout pass:s3cr3t-43 -out b.p12", "s3cr3t-43"),
    ("curl -u admin:s3cr3t-44 http://connect:8083/connectors", "s3cr3t-44"),
    ("curl --user ops:s3cr3t-45 https://sr:8081", "s3cr3t-45"),
    ("redis-cli -h cache -a s3cr3t-46 ping", "s3cr3t-46"),
    ("sshpass -p s3cr3t-47 ssh kafka@broker-1", "s3cr3t-47"),
    ("kafka-topics.sh --bootstrap-server b:9093 --client-secret s3cr3t-48", "s3cr3t-48"),
    # JMX password files, XML
    ("monitorRole s3cr3t-49", "s3cr3t-49"),
    ("controlRole   s3cr3t-50", "s3cr3t-50"),
    ("<server><id>nexus</id><password>s3cr3t-51</password></server>", "s3cr3t-51"),
    ("<password>\n    s3cr3t-52\n  </password>", "s3cr3t-52"),
    ('<entry key="ssl.key.password">s3cr3t-53</entry>', "s3cr3t-53"),
    ('<property name="sasl.password" value="s3cr3t-54"/>', "s3cr3t-54"),
    ("<property>\n  <name>fs.s3a.secret.key</name>\n  <value>s3cr3t-55</value>\n</property>", "s3cr3t-55"),
    ("<property><name>fs.s3a.access.key</name><value>S3CR3TKEY56</value></property>", "S3CR3TKEY56"),
    # a config marked sensitive=false whose name says it is a key
    ("confluent.license.key=s3cr3t-57", "s3cr3t-57"),
    ("encryption.key: s3cr3t-58", "s3cr3t-58"),
]

# look-alikes that hold no secret: they stay as they are
INNOCENT = [
    "password.encoder.iterations=4096",
    "sasl.mechanism=PLAIN",
    "ssl.keystore.type=JKS",
    "password=null",
    "ssl.truststore.password = [hidden]",
    "ssl.keystore.location=/etc/kafka/broker.jks",
    "sasl.oauthbearer.token.endpoint.url=https://idp/token",
    "delegation.token.expiry.time.ms=86400000",
    "Config ssl.keystore.password was supplied but isn't a known config.",
    "ssl.truststore.password is not set",
    "kafka-topics.sh --bootstrap-server broker-1:9092 --describe --topic orders",
    "docker run -p 9092:9092 apache/kafka",
    "Failed to validate the bearer token",
    "-Dcom.sun.management.jmxremote.password.file=/etc/kafka/jmxremote.password",
    "ssl.key.password: |",
    "Completed fetch of partition orders-3 with key=user-42",
    "key.converter=org.apache.kafka.connect.storage.StringConverter",
    "- name: KAFKA_HEAP_OPTS\n  value: -Xmx1G",
    '{"name": "batch.size", "value": "16384"}',
    "{name=tasks.max, value=4}",
    '<entry key="ssl.keystore.type">JKS</entry>',
    "credentials:\n  username: alice",
    "http://broker-1:8080/metrics",
    "jdbc:postgresql://db:5432/orders",
]


@pytest.mark.parametrize("text,secret", SHAPES, ids=[s for _, s in SHAPES])
def test_each_shape_is_masked_as_a_message(text, secret):
    out = redact_text(text)
    assert secret not in out, out
    assert REDACTED in out
    assert out.count("\n") == text.count("\n")  # a redacted text keeps its lines


@pytest.mark.parametrize("text,secret", SHAPES, ids=[s for _, s in SHAPES])
def test_each_shape_is_masked_as_unparsed_lines(text, secret):
    """One line a row, as the unparsed table holds a file; filler lines around the record."""
    rows = ["nothing here", "still nothing", *text.split("\n"), "after the record"]
    out = redact_lines(pa.array(rows, pa.large_string())).to_pylist()
    assert not [r for r in out if secret in r], out
    assert out[0] == "nothing here" and out[-1] == "after the record"


@pytest.mark.parametrize("text", INNOCENT)
def test_innocent_look_alikes_stay_readable(text):
    assert redact_text(text) == text
    assert redact_lines(pa.array(text.split("\n"), pa.large_string())).to_pylist() == text.split("\n")


def test_redact_value_masks_a_key_named_config_marked_not_sensitive():
    for key in (
        "confluent.license.key",
        "encryption.key",
        "listener.name.internal.ssl.key.password",
        "aws_access_key_id",
        "s3.access.key",
    ):
        assert redact_value(key, "abc123") == REDACTED, key
    for key in ("log.retention.ms", "ssl.keystore.type", "password.encoder.iterations", "key.converter"):
        assert redact_value(key, "4096") == "4096", key


def test_the_compiled_pre_check_flags_every_shape():
    """The log4j scan decides in C which messages go to the rules: every shape, and every line of it,
    must be flagged there whenever the RE2 pre-check would flag it."""
    scan = pytest.importorskip("kitlib.formats.logs._scan")
    import pyarrow.compute as pc

    texts = [t for t, _ in SHAPES] + [ln for t, _ in SHAPES for ln in t.split("\n")] + INNOCENT
    re2 = pc.match_substring_regex(pa.array(texts), PREFILTER).to_pylist()
    missed = [t for t, r in zip(texts, re2) if r and not scan.flag(t.encode())]
    assert not missed
    assert all(scan.flag(t.encode()) for t, _ in SHAPES)


@pytest.mark.parametrize("native", [True, False])
def test_log_records_are_masked_on_both_parser_paths(native, monkeypatch):
    """Each shape as a log4j record's message (multi-line ones spread over the record's lines),
    through the compiled scan and through the numpy path: the same messages, no secret."""
    monkeypatch.setattr(records, "NATIVE", native)
    lines = []
    for i, (text, _) in enumerate(SHAPES):
        lines.append(f"[2026-11-23 08:{i // 60:02d}:{i % 60:02d},000] INFO {text} (io.example.C{i})")
    ev, un = parse_bytes(("\n".join(lines) + "\n").encode())
    assert len(ev) == len(SHAPES) and un.empty
    joined = "\n".join(ev.message)
    assert not [s for _, s in SHAPES if s in joined]
    if native:
        monkeypatch.setattr(records, "NATIVE", False)
        ev2, _ = parse_bytes(("\n".join(lines) + "\n").encode())
        assert list(ev.message) == list(ev2.message)


def _src(tmp_path, name="notes.txt"):
    return SourceFile(tmp_path / name, f"broker-1/{name}", "broker-1")


def test_a_record_crossing_the_pieces_of_an_unparsed_file_is_masked(tmp_path):
    """The unparsed table of a file is built in pieces: a PEM block and a key/value record that
    cross a piece boundary are masked only because the pieces carry their state."""
    lines = [
        "note 1",
        "-----BEGIN PRIVATE KEY-----",
        "PemBodyOne",
        "PemBodyTwo",
        "-----END PRIVATE KEY-----",
        "note 2",
        "ssl.truststore.password:",
        "   NextPieceValue",
        "note 3",
    ]
    carry = LineCarry()
    out = []
    for piece in ([0, 3], [3, 7], [7, 9]):  # BEGIN | body | END ... key | value
        ns = list(range(piece[0] + 1, piece[1] + 1))
        out += list(unparsed_frame(_src(tmp_path), ns, lines[piece[0] : piece[1]], "unknown format", carry).text)
    assert out[2:4] == [REDACTED, REDACTED] and out[7].strip() == REDACTED
    assert out[1] == lines[1] and out[4] == lines[4] and out[5] == "note 2" and out[8] == "note 3"
    # without the carried state the pieces leak: the carry is what masks them
    alone = []
    for piece in ([0, 3], [3, 7], [7, 9]):
        ns = list(range(piece[0] + 1, piece[1] + 1))
        alone += list(unparsed_frame(_src(tmp_path), ns, lines[piece[0] : piece[1]], "unknown format").text)
    assert "PemBodyTwo" in alone and "NextPieceValue" in alone[7]


def test_unknown_files_carry_records_across_their_pieces(tmp_path):
    from kitlib.formats import Context

    p = tmp_path / "notes.txt"
    body = [f"line {i}" for i in range(1, 9)]
    body[3:6] = ["-----BEGIN RSA PRIVATE KEY-----", "ShortBodyLine", "-----END RSA PRIVATE KEY-----"]
    body += ["password:", "  TheValueAfter", "end"]
    p.write_text("\n".join(body) + "\n")
    src = SourceFile(p, "broker-1/notes.txt", "broker-1")
    ctx = Context(src)
    text = [t for _, df in unknown_lines(src, ctx, chunk_rows=5) for t in df.text]  # BEGIN | body
    assert len(text) == len(body) and "ShortBodyLine" not in text and not [t for t in text if "TheValueAfter" in t]


def test_a_password_file_keeps_only_its_user_names(tmp_path):
    rows = ["# JMX users", "monitorRole  QED-s3cr3t", "opsuser s3cr3t-ops", "s3cr3t-alone", ""]
    out = list(unparsed_frame(_src(tmp_path, "jmxremote.password"), [1, 2, 3, 4, 5], rows, "unknown format").text)
    assert out == ["# JMX users", f"monitorRole {REDACTED}", f"opsuser {REDACTED}", REDACTED, ""]
    same = list(unparsed_frame(_src(tmp_path, "jmxremote.access"), [1, 2], ["opsuser readwrite", "x y"], "u").text)
    assert same == ["opsuser readwrite", "x y"]


def test_cited_lines_are_redacted_with_their_context(tmp_path):
    from kitlib.report import cited_lines

    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "server.log").write_text(
        "[2026-11-23 07:00:00,000] INFO a (x.Y)\n"
        "[2026-11-23 07:00:01,000] ERROR Failed with env:\n"
        "- name: KAFKA_SASL_PASSWORD\n"
        "  value: CitedS3cr3t\n"
        " (x.Y)\n"
    )
    got = cited_lines(tmp_path, [{"file": "broker-1/server.log", "line": 2}])
    before, line, after = got[("broker-1/server.log", 2)]
    assert "CitedS3cr3t" not in "\n".join([*before, line, *after])
    assert after[0] == "- name: KAFKA_SASL_PASSWORD" and after[1] == f"  value: {REDACTED}"


def test_a_secret_key_followed_by_punctuation_in_prose_keeps_its_text():
    """The kit's own advice names keys in prose (``fix its sasl.jaas.config / username``): a key
    followed by a blank and something holding no letter or digit is no key and value."""
    text = "fix its sasl.jaas.config / username and password"
    assert redact_text(text) == text
    assert redact_text('ssl.key.password "s3cr3t-quoted"') == 'ssl.key.password "[redacted]"'
