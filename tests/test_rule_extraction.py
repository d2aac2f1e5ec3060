"""The Arrow rule extraction (kitlib.extract.rules) against a plain reading of the same rules
with Python's ``re``, one line at a time, on the messages of real and sample bundles and on
the client wordings of the consumer-group rules: the same kind and the same fields for every
line, so the fast path changes no derived table."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kitlib
from kitlib import extract
from kitlib.extract import first_lines
from kitlib.extract import rules as rules_module
from kitlib.extract.rules import Rule, classify, match
from kitlib.investigations.client_requests import auth, connections
from kitlib.investigations.consumer_groups import groups, transactions

ROOT = Path(__file__).parent.parent
# small bundles read through the kit (their messages as the parsers yield them)
BUNDLES = [
    ROOT / "tests" / "fixtures" / "clients" / "storm",
    ROOT / "tests" / "fixtures" / "clients" / "txn",
    ROOT / "tests" / "fixtures" / "clients" / "real" / "rebalance-fg524",
    ROOT / "tests" / "fixtures" / "clients" / "real" / "fenced-rd3928",
    ROOT / "tests" / "fixtures" / "clients" / "real" / "sarama-546",
]
# bigger sample bundles: their raw lines that name a rule's anchor word, the whole line as the text
SAMPLES = ["rebalance-storm", "auth-failures", "consumer-stalled", "transactions", "quota-throttling"]
ANCHOR = re.compile(
    r"(?i)group|commit|heartbeat|poll|transaction|fenced|epoch|authenticat|authoriz|denied|ssl|sasl|"
    r"disconnect|connect|broker|throttl"
)
# client wordings the rules name (franz-go, librdkafka, kafka-python, the Java client), and
# lines that match more than one rule or none
EXTRA = [
    "joined; group: orders, member_id: kgo-0b1c, instance_id: <nil>, generation: 7, leader: true",
    "joining group; group: orders",
    "leaving group; group: orders, member_id: kgo-0b1c",
    "heartbeat errored; group: orders, err: REBALANCE_IN_PROGRESS: The group is rebalancing",
    "heartbeat errored; group: orders, err: UNKNOWN_MEMBER_ID: The coordinator is not aware",
    "unable to commit offset for topic partition; group: orders, topic: t, partition: 0",
    'CGRPOP [payments-svc#consumer-1] Group "payments" is rebalancing in state up (join-state steady): revoke',
    'HEARTBEAT [payments-svc#consumer-1] Group "payments" heartbeat error response in state up '
    "(join-state steady, 2 partition(s) assigned): Broker: Group rebalance in progress",
    "JOINGROUP [payments-svc#consumer-1] JoinGroup response: GenerationId 12, Protocol range, LeaderId "
    "rdkafka-1 (me), my MemberId rdkafka-1, member metadata count 1: (no error)",
    "MAXPOLL [payments-svc#consumer-1] Application maximum poll interval (300000ms) exceeded by 12ms",
    "[Consumer clientId=consumer-billing-1, groupId=billing] Offset commit failed on partition t-0 at offset 9",
    "[Consumer instanceId=i-1, clientId=c-1, groupId=g] Successfully joined group with generation "
    "Generation{generationId=5, memberId='c-1-0a', protocol='range'}",
    "Successfully joined group billing with generation 3",
    "Heartbeat failed for group billing because it is rebalancing",
    "[GroupCoordinator 1]: Member MemberMetadata(memberId=app-1-0f8c2c5e-8f0e-4c1c-9d5d-3c1b2a0e9f11, "
    "groupInstanceId=None, clientId=app-1) in group g has failed, removing it from the group",
    "[GroupCoordinator 2]: Preparing to rebalance group g in state PreparingRebalance with old generation 4 "
    "(__consumer_offsets-7) (reason: Adding new member app-2 (with (parens)); client reason: x)",
    "[GroupCoordinator 2]: Preparing to restabilize group g with old generation 0",
    "[GroupCoordinator 2]: Elected as the group coordinator for partition 12 in epoch 3",
    "Stabilized group  generation 1",  # an empty group name: the field is null, not ''
    # client connections and authentication (librdkafka, the Java clients, kafka-python, Sarama, franz-go)
    "FAIL [rdkafka#producer-1] sasl_ssl://b-1.example:9096/1: Disconnected (after 6001ms in state UP)",
    "FAIL [rdkafka#producer-1] b-2.example:9092/bootstrap: Connect to ipv4#10.0.0.7:9092 failed: Connection refused",
    "REQTMOUT [rdkafka#consumer-2] ssl://b-3:9093/3: Timed out 4 in-flight, 0 retry-queued, 0 out-queue",
    "1/3 brokers are down",
    "[Producer clientId=p-1] Node 2 disconnected.",
    "[Consumer clientId=c-1, groupId=g] Connection to node 1 (/10.0.0.5:9092) could not be established. "
    "Node may not be available.",
    "[AdminClient clientId=adminclient-1] Disconnecting from node 3 due to request timeout.",
    "Connect attempt to <BrokerConnection node_id=1 host=b1:9092 <connecting> [IPv4 ('10.0.0.5', 9092)]> "
    "returned error 111. Disconnecting.",
    "<BrokerConnection node_id=1 host=b1:9092 <connected> [IPv4 ('10.0.0.5', 9092)]>: Closing connection. "
    "KafkaConnectionError: socket disconnected",
    "consumer/broker/2 disconnecting due to error processing FetchRequest: EOF",
    "Failed to connect to broker b1:9092: dial tcp 10.0.0.5:9092: connect: connection refused",
    "broker is throttling us in response; broker: 1, req: Produce, throttle_millis: 250, throttle_until: x",
    "read from broker errored, killing connection; req: Fetch, addr: b1:9092, id: 1, err: EOF",
    "[SocketServer listenerType=ZK_BROKER, nodeId=1] Failed authentication with /10.0.0.9 "
    "(channelId=10.0.0.1:9093-10.0.0.9:50412-3) (Authentication failed: Invalid username or password)",
    "Failed re-authentication with host/10.0.0.9 (Authentication failed during authentication due to invalid "
    "credentials with SASL mechanism SCRAM-SHA-512)",
    "Principal = User:bob is Denied operation = Read from host = 10.0.0.9 on resource = Topic:LITERAL:orders "
    "for request = Fetch with resourceRefCount = 1",
    "[Consumer clientId=c-1, groupId=g] Connection to node -1 (b1/10.0.0.5:9094) failed authentication due to: "
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256",
    "FAIL [rdkafka#consumer-1] sasl_ssl://b1:9096/bootstrap: SASL authentication error: Authentication failed "
    "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 (after 310ms)",
    "SSL handshake failed (after 12ms in state SSL_HANDSHAKE)",
    "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access topics: [orders]",
    "nothing here at all",
    "",
]


def reference(texts: list, rules: list[Rule]) -> tuple[list, dict[str, list]]:
    """The first rule each text matches, and its fields (a later group of the same field wins
    where both took part; '' counts as absent), read with Python's re one text at a time."""
    compiled = [re.compile(r.pattern) for r in rules]
    fields = sorted({f for r in rules for f in r.fields})
    kinds: list = []
    cols: dict[str, list] = {f: [] for f in fields}
    for t in texts:
        got: dict[str, str] = {}
        kind = None
        for rule, rx in zip(rules, compiled):
            m = rx.search(t) if t is not None else None
            if m:
                kind = rule.kind
                for g in rule.groups:
                    if m.group(g):
                        got[re.sub(r"(?<=[A-Za-z_])\d+$", "", g)] = m.group(g)
                break
        kinds.append(kind)
        for f in fields:
            cols[f].append(got.get(f))
    return kinds, cols


@pytest.fixture(scope="module")
def messages() -> list:
    texts: list = list(EXTRA)
    for b in BUNDLES:
        texts += kitlib.load_bundle(b).events["message"].astype(object).tolist()
    for name in SAMPLES:
        for f in sorted((ROOT / "sample_data" / name).rglob("*.log")):
            lines = f.read_text(errors="replace").splitlines()
            # the request log's JSON lines are left out: no extractor here reads that logger
            texts += [ln for ln in lines if ANCHOR.search(ln) and "Completed request" not in ln][:60]
    return texts


@pytest.mark.slow
@pytest.mark.parametrize(
    "rules",
    [groups.RULES, transactions.RULES, connections.RULES, auth.RULES],
    ids=["group_events", "txn_events", "client_connections", "auth_failures"],
)
def test_classify_equals_line_by_line_reading(messages, rules):
    first = first_lines(pa.array(messages, pa.large_string()))
    kinds, cols = classify(first, rules)
    want_kinds, want_cols = reference(first.to_pylist(), rules)
    assert sum(k is not None for k in want_kinds) >= 5  # the input exercises these rules
    assert kinds.tolist() == want_kinds
    assert sorted(cols) == sorted(want_cols)
    for f in cols:
        assert cols[f].tolist() == want_cols[f], f


@pytest.mark.slow
def test_first_rule_of_many_texts_equals_line_by_line_reading(messages):
    # enough texts, most of them matching no rule, that the texts no rule matches are set aside
    # by one pass of the rules joined first (their named groups made plain: several rules name
    # 'group'); then the rules of the rest in turn, the last one not tried
    texts = (messages * (2 * extract.SAMPLE // len(messages) + 2))[: 3 * extract.SAMPLE]
    texts[::97] = [None] * len(texts[::97])
    arr = pa.array(texts, pa.large_string())
    rules = groups.RULES
    want_kinds, _ = reference(texts, rules)
    unmatched = sum(k is None for k in want_kinds)
    assert unmatched * len(rules) > extract.JOIN_COST * len(texts)  # the joined pass pays here
    which = extract.first_rule(arr, [r.pattern for r in rules])
    assert [rules[i].kind if i >= 0 else None for i in which.tolist()] == want_kinds
    assert which.tolist() == extract.first_match(arr, [r.pattern for r in rules]).tolist()
    # the same when every text matches one rule (no joined pass: the rules in turn only)
    took = [t for t, k in zip(texts, want_kinds) if k is not None]
    took = pa.array((took * (2 * extract.SAMPLE // len(took) + 1))[: 2 * extract.SAMPLE], pa.large_string())
    assert extract.first_rule(took, [r.pattern for r in rules]).tolist() == (
        extract.first_match(took, [r.pattern for r in rules]).tolist()
    )


def test_match_second_pass_on_whole_messages():
    # a fenced producer's line under a generic first line is found in the stack trace; the
    # fields of the first pass's rules that did not match stay empty
    rules = [Rule("first", r"alpha (?P<a>\w+)"), Rule("fenced", r"ProducerFencedException: (?P<b>[^\n]+)")]
    ev = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2026-01-01"] * 4, utc=True),
            "level": ["ERROR"] * 4,
            "host": ["h"] * 4,
            "file": ["a.log"] * 4,
            "line": [1, 2, 3, 4],
            "message": [
                "Sending failed\norg.apache.kafka.common.errors.ProducerFencedException: epoch 3 is old",
                "alpha one\nProducerFencedException: not read, the first line matched",
                "nothing\nat all",
                "alpha two",
            ],
        }
    )
    m = match(ev, rules, whole=("fenced",))
    assert m.kinds.tolist() == ["fenced", "first", "first"]
    assert m.events["line"].tolist() == [1, 2, 4]
    assert m.cols["a"].tolist() == [None, "one", "two"]
    assert m.cols["b"].tolist() == ["epoch 3 is old", None, None]
    assert m.which.tolist() == [1, 0, 0]
    assert m.first.to_pylist() == ["Sending failed", "alpha one", "alpha two"]


def test_first_lines_cuts_at_the_first_newline_only_where_there_is_one():
    texts = pa.array(["one\ntwo\nthree", None, "", "tail\n", "\nlead", "plain", "ü\nx"], pa.large_string())
    for arr in (texts, texts.slice(2), texts.cast(pa.string())):
        got = first_lines(arr)
        assert got.type == arr.type
        assert got.to_pylist() == [None if t is None else t.split("\n")[0] for t in arr.to_pylist()]
    many = pa.array(np.array(["a b c"] * 1000, dtype=object))
    assert first_lines(many) is many  # nothing to cut: the same array, no copy


def _layout_texts() -> list[str]:
    """Lines in the wordings the rules' layouts read, with values drawn from awkward characters
    (parentheses, brackets, commas, non-ASCII, the layouts' own words), and near misses: a second
    lead, a trailing word, a missing part, a tab, a newline."""
    rng = np.random.default_rng(29)
    alphabet = list("abcXYZ019-_.:/,;()[]=é€") + ["in state", "generation", "(", ")", " ", "\t"]

    def word(spaces: bool = False) -> str:
        picks = rng.choice(alphabet, size=int(rng.integers(1, 7)))
        w = "".join(picks)
        return w if spaces else "".join(w.split()) or "g"

    out = []
    for i in range(400):
        g, s, r, a, c, t = word(), word(), word(True), word(), word(True), word()
        pre = ["", "[GroupCoordinator 1]: ", "[x) (y] ", "Preparing to go: ", "Stabilized group q "][i % 5]
        out += [
            f"{pre}Preparing to rebalance group {g} in state {s} with old generation {i - 3} "
            f"(__consumer_offsets-{i}) (reason: {r})",
            f"{pre}Preparing to rebalance group {g} in state {s} with old generation {i} (__consumer_offsets-{i}) "
            f"(reason: {r}){[')', ' ', '', ' x', chr(10) + 'at y)'][i % 5]}",
            f"{pre}Stabilized group {g} generation {i} (__consumer_offsets-{i}) with {i % 4} member{'s' * (i % 2)}",
            f"{pre}Stabilized group {g} generation {i} (__consumer_offsets-{i}) with {i} members{[' ', 'x', ''][i % 3]}",
            f"[SocketServer listenerType=BROKER, nodeId=1] Failed authentication with /{a} (channelId={c}) ({r})",
            f"{pre}Failed authentication with {a} (channelId={c}) ({r}){[' ', ')', '', ' (z)'][i % 4]}",
            f"[TransactionCoordinator id=1] Completed rollback of ongoing transaction for transactionalId {t} "
            f"due to timeout{['', ' ', 'x', ' due to timeout'][i % 4]}",
        ]
    return out


@pytest.mark.parametrize("rules", [groups.RULES, transactions.RULES, auth.RULES], ids=["groups", "txn", "auth"])
def test_layouts_read_what_the_regex_reads(rules):
    # every text a rule with a layout takes: the cut fields equal the rule's regex groups, text by text
    from kitlib.extract.rules import classify_arrow, extract

    texts = pa.array(_layout_texts() + EXTRA, pa.large_string())
    which, fields = classify_arrow(texts, rules)
    cut = 0
    for i, rule in enumerate(rules):
        sel = np.flatnonzero(which == i)
        if not rule.layouts or not len(sel):
            continue
        mine = texts.take(pa.array(sel))
        want = extract(mine, rule.pattern)
        for f in rule.fields:
            assert fields[f].take(pa.array(sel)).to_pylist() == want[f].to_pylist(), (rule.kind, f)
        for layout in rule.layouts:
            ok, got = layout.cut(mine)
            cut += int(ok.sum())
            assert ok.sum() < len(sel)  # the near misses are left to the regex
            for f, vals in got.items():
                assert vals.to_pylist() == want[f].filter(pa.array(ok)).to_pylist(), (rule.kind, f)
    assert cut >= 80  # the layouts read many of these texts (and the regex the rest)


@pytest.mark.skipif(rules_module._cut is None, reason="the compiled cuts are not built here")
@pytest.mark.parametrize("kind", [pa.large_string(), pa.string()])
def test_compiled_cuts_equal_arrows_splits(kind):
    """The compiled cuts give what Arrow's splits give, layout by layout of every rule: which
    texts a layout reads, each field's values, nulls and type; on texts with nulls, a slice
    (an array's offset), texts in chunks, and layouts ending on a piece without an end and on a
    cut at the last occurrence of its end."""
    from kitlib.extract.rules import Layout

    layouts = [
        layout for rules in (groups.RULES, transactions.RULES, auth.RULES) for r in rules for layout in r.layouts
    ]
    layouts += [
        Layout("with ", r"[^ ]+ \(.*\)", (("first", " (", False), ("", "", False), ("whole", ")", True))),
        Layout("é ", r"[^,]*,.*", (("a", ",", False), ("b", "", False))),
        Layout("the end", r"|x", (("tail", "", False),)),  # pieces all empty, or one byte
    ]
    assert len(layouts) >= 6
    raw = _layout_texts() + EXTRA + [None, "", "with ", "with x (y) (z)", "é a,b,c", "é ,", "x é é ,", "the end"]
    raw += ["at the end", "the endx", "the end y"]
    texts = pa.array(raw, kind)
    shapes = [texts, texts.slice(7, 500), pa.chunked_array([texts.slice(0, 300), texts.slice(300)])]
    compared = 0
    for layout in layouts:
        for t in shapes:
            ok, got = layout.cut(t)
            want_ok, want = layout._split(t.combine_chunks() if isinstance(t, pa.ChunkedArray) else t)
            assert np.array_equal(ok, want_ok), layout.lead
            assert got.keys() == want.keys(), layout.lead
            for f in got:
                assert got[f].type == want[f].type and got[f].to_pylist() == want[f].to_pylist(), (layout.lead, f)
            compared += int(ok.sum())
    assert compared > 500
    # a layout whose form lets a text without a piece's end through is refused on it either way
    loose = Layout("é ", r".*", (("a", ",", False),))
    for cut in (loose.cut, loose._split):
        with pytest.raises(ValueError):
            cut(pa.array(["é a,b", "é ab"], kind))


def test_labels_are_the_categoricals_conform_makes():
    """A rule table's kind, source, level, host and file made from codes are the categoricals
    conform makes of the same values as strings (categories present and sorted, nulls kept), also
    when the slices of a long log are put together."""
    from kitlib.extract.rules import _same_categories, categorical, labels

    values = np.array(["stabilized", None, "commit_failed", "stabilized", "Élu", ""], dtype=object)
    source = pd.Series(["b-2", "b-10", None, "b-2"], dtype="string").astype("category")
    source = source.cat.set_categories(["zz-unused", "b-2", "b-10"])
    for got, plain in (
        (labels(values), pd.Series(values)),
        (labels(source), source.astype("string")),
        (categorical(np.array([1, -1, 0, 2, 1]), ["client", "coordinator", "client"]), None),
    ):
        plain = pd.Series(["coordinator", None, "client", "client", "coordinator"]) if plain is None else plain
        want = plain.astype("string").astype("category")
        got = pd.Series(got)
        assert got.dtype == want.dtype and got.equals(want)
        assert list(got.cat.categories) == list(want.cat.categories)
    parts = [pd.DataFrame({"k": labels(np.array(v, dtype=object))}) for v in (["b", "a"], ["c", None], ["a"])]
    joined = pd.concat(_same_categories(parts), ignore_index=True)["k"]
    want = pd.Series(["b", "a", "c", None, "a"]).astype("string").astype("category")
    assert joined.dtype == want.dtype and joined.equals(want)


def test_fields_where_reads_what_fields_of_reads():
    from kitlib.extract.rules import fields_of, fields_where

    texts = pa.array(
        [
            "[Consumer clientId=c1, groupId=g1] Offset commit failed",
            "[Consumer instanceId=i1, clientId=c2] x",
            "Stabilized group g generation 4",
            None,
            "[Producer clientId=p1, transactionalId=t1] fenced",
            "[TransactionalId t2] aborting",
            "no prefix [Consumer clientId=c3]",
        ],
        pa.large_string(),
    )
    for pattern, literals in (
        (groups._JAVA_PREFIX, ["[Consumer "]),
        (transactions._JAVA_PREFIX, ["[Producer clientId=", "[TransactionalId"]),
    ):
        for part in (texts, texts.slice(2, 2), texts.slice(0, 2)):  # some, none, all holding one
            want = fields_of(part, pattern)
            got = fields_where(part, pattern, literals)
            assert {k: v.to_pylist() for k, v in got.items()} == {k: v.to_pylist() for k, v in want.items()}
            assert all(got[k].type == want[k].type for k in want)


@pytest.mark.skipif(extract._cut is None, reason="the compiled cuts are not built")
def test_rows_with_a_newline_are_found_alike_in_compiled_code_and_numpy(monkeypatch):
    # newlines first, last, alone and twice in a row; empty texts and nulls; a slice; both string types
    rng = np.random.default_rng(3)
    pieces = ["a", "bc", "\n", " ", "é", "\r\n", "xyz" * 20]
    texts = ["".join(rng.choice(pieces, int(rng.integers(0, 6)))) for _ in range(3000)]
    texts = [None if i % 17 == 0 else t for i, t in enumerate(texts)]
    for kind in (pa.string(), pa.large_string()):
        for arr in (pa.array(texts, kind), pa.array(texts, kind)[5:2900]):
            compiled = extract._has_newline(arr)
            monkeypatch.setattr(extract, "_cut", None)
            numpy_way = extract._has_newline(arr)
            monkeypatch.undo()
            assert compiled is not None and numpy_way is not None
            assert compiled.tolist() == numpy_way.tolist()
            want = [t is not None and "\n" in t for t in arr.to_pylist()]
            assert compiled.tolist() == want
    # a null row whose slot still holds bytes with a newline: found, as a scan of the bytes finds it
    base = pa.array(["a\nb", "c"], pa.large_string())
    valid = pa.array([False, True]).buffers()[1]
    masked = pa.Array.from_buffers(pa.large_string(), 2, [valid, *base.buffers()[1:]], null_count=1)
    assert extract._has_newline(masked).tolist() == [True, False]
