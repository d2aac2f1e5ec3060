"""Authentication and authorization failures -> ``auth_failures``.

Broker side: the selector's ``Failed authentication with /10.1.2.3 (channelId=...) (Authentication
failed: Invalid username or password)`` and ``Failed re-authentication ...`` (SASL, and ``SSL
handshake failed`` for TLS), and the authorizer's denials in kafka-authorizer.log
(``Principal = User:bob is Denied operation = READ from host = 10.1.2.3 on resource =
Topic:LITERAL:orders for request = Fetch ...``). Client side: the Java client's ``Connection to
node ... failed authentication due to: ...`` and the authentication/authorization exceptions of
any client. Only who, from where, how and why are kept: messages were redacted at ingest and no
column holds a credential.

Example:
    >>> import pandas as pd
    >>> ev = pd.DataFrame({"ts": pd.to_datetime(["2026-01-01"], utc=True), "level": ["INFO"],
    ...     "logger": ["org.apache.kafka.common.network.Selector"], "host": ["b1"], "file": ["server.log"], "line": [3],
    ...     "message": ["[SocketServer listenerType=BROKER, nodeId=1] Failed authentication with /10.0.0.7 "
    ...                 "(channelId=10.0.0.5:9094-10.0.0.7:51000-3) (Authentication failed: Invalid username or password)"]})
    >>> build(ev)[["kind", "address", "mechanism", "reason"]].iloc[0].tolist()
    ['authentication', '10.0.0.7', 'PLAIN', 'Authentication failed: Invalid username or password']
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.extract import extractor
from kitlib.extract.rules import Layout, Rule, in_slices, labels, logger_keywords, match

tables.declare(
    "auth_failures",
    "Authentication and authorization failures (broker selector and authorizer lines, "
    "client exceptions), one per record; never a credential.",
    [
        ("ts", "ts", "record time"),
        (
            "kind",
            "category",
            "authentication, reauthentication, ssl_handshake, authorization (a denied "
            "ACL check) or client (a client's own failure line)",
        ),
        ("principal", "str", "principal (authorizer lines), e.g. User:bob"),
        ("address", "str", "client address (broker lines) or the broker address (client lines)"),
        ("listener", "str", "broker endpoint of the connection (host:port from the channel id)"),
        ("mechanism", "str", "SASL mechanism when the line names or implies it (PLAIN, SCRAM-SHA-512, ...)"),
        ("reason", "str", "why it failed, as logged"),
        ("operation", "str", "denied operation (authorizer lines)"),
        ("resource", "str", "resource the operation was denied on, e.g. Topic:LITERAL:orders"),
        ("request", "str", "request the check was made for (Fetch, Produce, Metadata, ...)"),
        ("level", "category", "log level"),
        ("message", "str", "the record's first line (500 characters at most)"),
    ],
)

RULES = [
    Rule(
        "authorization",
        r"(?i)Principal = (?P<principal>\S+) is Denied operation = (?P<operation>\S+) from host = "
        r"(?P<address>\S+) on resource = (?P<resource>\S+)(?: for request = (?P<request>\w+))?",
    ),
    Rule(
        "reauthentication",
        r"Failed re-authentication with (?P<address>\S+?)(?: \(channelId=(?P<channel>[^)]*)\))? "
        r"\((?P<reason>.*)\)\s*$",
    ),
    Rule(
        "authentication",
        r"Failed authentication with (?P<address>\S+?)(?: \(channelId=(?P<channel>[^)]*)\))? "
        r"\((?P<reason>.*)\)\s*$",
        # the selector's line with its channel id: the lazy address stops at the first space (what
        # follows must start with one), the channel at its first ')', the reason at the text's last ')'
        layouts=(
            Layout(
                "Failed authentication with ",
                r"[^\s()]+ \(channelId=[^()\n]*\) \([^\n]*\)",
                (("address", " (channelId=", False), ("channel", ") (", False), ("reason", ")", True)),
            ),
        ),
    ),
    Rule(
        "client",
        r"Connection to node (?P<node>\S+) \((?P<address>[^)]*)\) failed authentication due to: "
        r"(?P<reason>.*)$"
        # 1.0-2.0 clients name the node only: "Connection to node 1 failed authentication due to: ..."
        r"|Connection to node (?P<address2>\S+) failed authentication due to: (?P<reason2>.*)$",
    ),
    # librdkafka: '<proto>://<host:port>/<id>: SASL authentication error: Authentication failed ...'
    # (a credential refused; the same words after 'SaslAuthenticateRequest failed: Local: ...' are a
    # client shutting down); franz-go and Sarama carry the broker's error name or text
    Rule(
        "client",
        r"(?P<reason>SASL authentication error: .*(?:Authentication failed|invalid credentials|Invalid username or "
        r"password).*)$|(?P<reason2>SASL_AUTHENTICATION_FAILED.*)$",
    ),
    Rule("ssl_handshake", r"(?P<reason>SSL handshake failed.*)$"),
    Rule(
        "client",
        r"(?P<reason>(?:SaslAuthenticationFailed|SaslAuthentication|SslAuthentication|TopicAuthorization|"
        r"GroupAuthorization|ClusterAuthorization|TransactionalIdAuthorization)(?:Exception|Error)\S*:? ?.*)$",
    ),
    Rule("client", r"(?i)(?P<reason>Authentication failed(?: for user \S+)?[:.]?.*)$"),
]
_MECH = r"(?P<mechanism>SCRAM-SHA-256|SCRAM-SHA-512|PLAIN|GSSAPI|OAUTHBEARER)"
_SSL_KINDS = ("authentication", "reauthentication")  # a TLS handshake failing reads as one of these
_MECH_ANY = _MECH.replace("(?P<mechanism>", "(?:")  # the lines naming one (no group: a quicker pass)
_BROKER = (
    r"(?i)(?:sasl_ssl|sasl_plaintext|ssl|plaintext)://(?P<broker>[^\s/\]]+:\d+)(?:/\w+)?: |"
    r"<BrokerConnection[^>]*? host=(?P<broker2>[^\s/>]+:\d+)"  # kafka-python's connection
)
_ANCHORS = r"(?i)authenticat|SSL handshake|is Denied operation|AuthorizationException|AuthorizationError"


@extractor(
    "auth_failures",
    match=logger_keywords(
        "selector",
        "authorizer",
        "security",
        "ssl",
        "sasl",
        "authenticat",
        "networkclient",
        "kafka.conn",
        "socketserver",
        "clients",
        "rdkafka",
        "confluent",
        "kgo",
        "sarama",
    ),
    contains=_ANCHORS + "|SASL_AUTHENTICATION_FAILED",
    blockwise=True,
)
@in_slices
def build(events: pd.DataFrame) -> pd.DataFrame:
    if not len(events):
        return tables.empty("auth_failures")
    m = match(events, RULES)
    if not len(m):
        return tables.empty("auth_failures")
    # the fields stay Arrow strings to the frame: no Python value per record
    first, kinds, f = m.first, m.kinds, m.fields
    reason = f["reason"]
    ssl = np.asarray(
        pc.fill_null(pc.match_substring(reason, "SSL handshake failed"), False).to_numpy(zero_copy_only=False), bool
    )
    if ssl.any():  # (the kinds by their rule's index: no comparison of strings per record)
        kinds[ssl & np.isin(m.which, [i for i, r in enumerate(RULES) if r.kind in _SSL_KINDS])] = "ssl_handshake"
    # the mechanism a line names (read only from the lines that name one), else PLAIN where the
    # reason is PlainServerCallbackHandler's wording; kept in Arrow
    named = pc.fill_null(pc.match_substring_regex(first, _MECH_ANY), False)
    mech = pa.nulls(len(first), pa.string())
    if pc.any(named).as_py():
        got = pc.struct_field(pc.extract_regex(first.filter(named), _MECH), "mechanism").cast(pa.string())
        mech = pc.replace_with_mask(mech, named, pc.if_else(pc.equal(got, ""), pa.scalar(None, pa.string()), got))
    plain = pc.fill_null(pc.match_substring(reason, "Invalid username or password"), False)
    mech = pc.if_else(pc.and_(pc.is_null(mech), plain), pa.scalar("PLAIN", pa.string()), mech)
    addr = f["address"].cast(pa.string())
    # a client line names the broker as librdkafka does ('sasl_ssl://b-1.example:9096/1: ...')
    # (read only from the lines that hold '://' or '<BrokerConnection': a broker's lines have neither)
    maybe = pc.fill_null(
        # ("://" as RE2: it finds a literal several times faster than Arrow's plain search)
        pc.or_(
            pc.match_substring_regex(first, "://"), pc.match_substring(first, "<BrokerConnection", ignore_case=True)
        ),
        False,
    )
    if pc.any(maybe).as_py():
        got = pc.extract_regex(first.filter(maybe), _BROKER)
        for g in ("broker", "broker2"):
            named = pc.struct_field(got, g).cast(pa.string())
            named = pc.if_else(pc.equal(named, ""), pa.scalar(None, pa.string()), named)
            addr = pc.coalesce(addr, pc.replace_with_mask(pa.nulls(len(first), pa.string()), maybe, named))
    addr = pc.replace_substring_regex(addr, r"^.*/", "")  # '/10.0.0.7' and 'host/10.0.0.7' -> 10.0.0.7
    channel = f["channel"]
    listener = pc.replace_substring_regex(channel, r"^([^-]+)-.*$", r"\1")
    return m.frame(
        {
            "kind": labels(kinds),
            "principal": f["principal"],
            "address": addr,
            "listener": listener,
            "mechanism": mech,
            "reason": reason,
            "operation": f["operation"],
            "resource": f["resource"],
            "request": f["request"],
        }
    )
