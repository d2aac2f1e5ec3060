"""Severity from evidence: every finding says how much it rests on (``extent``: lines, hosts,
files, first and last time), measured in one place by triage; one line of a strong signal (a
broker fenced or deleted, an out-of-memory error, a log directory taken offline, a producer fenced
by a newer one) is a finding on its own, one line of an ambiguous one is not, or is low.

The one-line bundles are lines copied from the public excerpts (tests/fixtures/public, sources in
its SOURCES.md) and the excerpt fixtures (tests/fixtures/excerpts, SOURCES.md), each cut to the
record named; lines marked ``constructed`` are written here in Kafka's (or the JVM's) own wording,
with made-up names and times.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from samples import NAMES, SAMPLE_DATA, sample

import kitlib
from kitlib.display import findings_html
from kitlib.findings import Extent, Finding, Severity, evidence_extent, triage_text

FIXTURES = Path(__file__).parent / "fixtures"
PUBLIC = FIXTURES / "public"
EXCERPTS = FIXTURES / "excerpts"


def fixture_lines(path: Path, first: int, last: int | None = None) -> str:
    """Lines ``first``..``last`` (1-based, inclusive) of a fixture file, as published."""
    lines = path.read_text().splitlines()
    return "\n".join(lines[first - 1 : last or first]) + "\n"


def one_bundle(tmp_path: Path, rel: str, text: str) -> list[Finding]:
    f = tmp_path / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    b = kitlib.load_bundle(tmp_path)
    # every line was read into a record: what the detectors say comes from weighing it
    assert len(b.events) + len(b.table("jvm_errors")) >= 1 and not len(b.unparsed), b.unparsed
    return kitlib.triage(b).findings


# (name, file in the one-line bundle, text, finding id, words its summary must hold, lowest severity)
STRONG = [
    (
        "deleted-broker-0.8",
        "broker-3/controller.log",
        fixture_lines(PUBLIC / "broker-failed-0.8-mesos-kafka-113/broker-3/controller.log", 2),
        "broker-fenced",
        ["Broker 1", "declared failed"],
        "high",
    ),
    (
        "fenced-broker-kraft",
        "controller-0/controller.log",
        fixture_lines(PUBLIC / "fenced-unclean-kraft-automq-686/controller-0/controller.log", 1),
        "broker-fenced",
        ["Broker 1", "fenced by the controller"],
        "high",
    ),
    (
        "oom-log4j-record",  # the record and its exception line
        "kafka-0/kafka.log",
        fixture_lines(PUBLIC / "oom-strimzi-6579/kafka-0/kafka.log", 4, 5),
        "gc-pauses",
        ["kafka-0", "OutOfMemoryError"],
        "critical",
    ),
    (
        "offline-log-dir-shutdown-no-broker-id",  # the same line on a host whose name gives no broker id
        "logs/kafka.log",
        fixture_lines(PUBLIC / "log-dir-strimzi-4844/kafka-0/kafka-0.log", 6),
        "log-dir-failure",
        ["The broker on host logs", "/var/lib/kafka/data-0/kafka-log0", "halted"],
        "critical",
    ),
    (
        "oom-exit-constructed",  # -XX:+ExitOnOutOfMemoryError's last words, as the issue quotes them
        "kafka-0/stderr.log",
        "Terminating due to java.lang.OutOfMemoryError: Java heap space\n",
        "jvm-out-of-memory",
        ["kafka-0", "the JVM exited on it"],
        "critical",
    ),
    (
        "offline-log-dir-stopped",
        "kafka-0/kafka-0.log",
        fixture_lines(PUBLIC / "log-dir-strimzi-4844/kafka-0/kafka-0.log", 1),
        "log-dir-failure",
        ["Broker 0", "/var/lib/kafka/data-0/kafka-log0"],
        "high",
    ),
    (
        "offline-log-dir-shutdown",  # no broker id on the line: the host kafka-0 names broker 0
        "kafka-0/kafka-0.log",
        fixture_lines(PUBLIC / "log-dir-strimzi-4844/kafka-0/kafka-0.log", 6),
        "log-dir-failure",
        ["Broker 0", "/var/lib/kafka/data-0/kafka-log0", "halted"],
        "critical",
    ),
    (
        "fenced-producer-transaction-manager",  # the kubectl time column stays in front, as pasted
        "order-writer/chat.txt",
        fixture_lines(EXCERPTS / "ticket_fenced/chat.txt", 4),
        "transaction-timeouts",
        ["tx-orders-0", "fenced by a newer producer"],
        "medium",
    ),
    (
        "fenced-producer-sender",  # the Sender's record (o.a.k.c.p.i.Sender) and its exception line
        "order-writer/chat.txt",
        fixture_lines(EXCERPTS / "ticket_fenced/chat.txt", 5, 6),
        "transaction-timeouts",
        ["tx-orders-0", "fenced by a newer producer"],
        "medium",
    ),
    (
        "fenced-producer-librdkafka",
        "app/producer.log",
        fixture_lines(PUBLIC / "txn-fenced-librdkafka-3928/app/producer.log", 2),
        "transaction-timeouts",
        ["rdkafka#producer-3", "fenced by a newer instance"],
        "medium",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", STRONG, ids=[c[0] for c in STRONG])
def test_one_line_of_a_strong_signal_is_a_finding(case, tmp_path):
    _, rel, text, fid, words, lowest = case
    found = [f for f in one_bundle(tmp_path, rel, text) if f.id == fid]
    assert len(found) == 1, [(f.id, f.summary) for f in one_bundle(tmp_path / "again", rel, text)]
    f = found[0]
    assert all(w in f.summary for w in words), f.summary
    assert f.severity >= Severity.of(lowest), (f.severity, f.summary)
    # it says it rests on that one record, from one host and file, at one moment
    ext = f.extent
    assert ext is not None and ext.lines == 1 and ext.other == 0 and ext.files == 1
    assert ext.hosts == (rel.split("/")[0],)
    assert ext.first == ext.last and (ext.first is None) == ("stderr" in rel)
    assert ext.text().startswith(f"rests on 1 line from host {ext.hosts[0]}")


# (name, file, text) of one ambiguous signal: nothing above low may come of it
WEAK = [
    (
        "one-rebalance",  # one whole rebalance of a running group: prepare, stabilize, assignment
        "broker-188/server.log",
        fixture_lines(PUBLIC / "rebalance-2.3-jaeger-1774/broker-188/server.log", 1, 3),
    ),
    (
        "rebalance-at-start-up-constructed",  # Kafka 3.x GroupCoordinator wording, a group's first generation
        "broker-1/server.log",
        "[2024-05-01 10:00:03,090] INFO [GroupCoordinator 1]: Dynamic member with unknown member id joins group "
        "orders in Empty state. Created a new member id consumer-orders-1-5d1c8f2e-3b1a-4a51-9a7e-1f1f2f3f4f5f and "
        "request the member to rejoin with this id. (kafka.coordinator.group.GroupCoordinator)\n"
        "[2024-05-01 10:00:03,100] INFO [GroupCoordinator 1]: Preparing to rebalance group orders in state "
        "PreparingRebalance with old generation 0 (__consumer_offsets-12) (reason: Adding new member "
        "consumer-orders-1-5d1c8f2e-3b1a-4a51-9a7e-1f1f2f3f4f5f with group instance id None; client reason: need to "
        "re-join with the given member-id) (kafka.coordinator.group.GroupCoordinator)\n"
        "[2024-05-01 10:00:06,101] INFO [GroupCoordinator 1]: Stabilized group orders generation 1 "
        "(__consumer_offsets-12) with 1 members (kafka.coordinator.group.GroupCoordinator)\n",
    ),
    (
        "one-member-removed-constructed",
        "broker-1/server.log",
        "[2024-05-01 10:05:03,090] INFO [GroupCoordinator 1]: Member "
        "consumer-orders-1-5d1c8f2e-3b1a-4a51-9a7e-1f1f2f3f4f5f in group orders has failed, removing it from the "
        "group (kafka.coordinator.group.GroupCoordinator)\n",
    ),
    (
        "one-disconnect-constructed",  # Kafka 3.x NetworkClient
        "app/app.log",
        "[2024-05-01 10:00:03,100] WARN [Consumer clientId=consumer-orders-1, groupId=orders] Connection to node 1 "
        "(kafka-1/10.0.0.5:9092) could not be established. Broker may not be available. "
        "(org.apache.kafka.clients.NetworkClient)\n",
    ),
    (
        "one-node-disconnected-constructed",
        "app/app.log",
        "[2024-05-01 10:00:03,100] INFO [Consumer clientId=consumer-orders-1, groupId=orders] Node 1 disconnected. "
        "(org.apache.kafka.clients.NetworkClient)\n",
    ),
    (
        "controller-elected-at-start-up-constructed",  # Kafka 3.x QuorumController, the first epoch
        "controller-1/controller.log",
        "[2024-05-01 10:00:00,500] INFO [QuorumController id=1] Becoming the active controller at epoch 1, next "
        "write offset 1. (org.apache.kafka.controller.QuorumController)\n",
    ),
    (
        "one-failed-authentication-constructed",  # Kafka 3.x Selector
        "broker-1/server.log",
        "[2024-05-01 10:00:03,100] INFO [SocketServer listenerType=BROKER, nodeId=1] Failed authentication with "
        "/10.0.0.7 (channelId=10.0.0.5:9092-10.0.0.7:51234-3) (Authentication failed: Invalid username or password) "
        "(org.apache.kafka.common.network.Selector)\n",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", WEAK, ids=[c[0] for c in WEAK])
def test_one_ambiguous_signal_is_no_finding_above_low(case, tmp_path):
    _, rel, text = case
    loud = [(f.id, str(f.severity), f.summary) for f in one_bundle(tmp_path, rel, text) if f.severity > "low"]
    assert loud == []


@pytest.mark.slow
def test_one_failed_authentication_is_low_and_repeats_raise_it(tmp_path):
    line = WEAK[-1][2]
    (one,) = one_bundle(tmp_path / "one", WEAK[-1][1], line)
    assert (one.id, str(one.severity), one.numbers["failures"]) == ("auth-failures", "low", 1)
    (two,) = one_bundle(tmp_path / "two", WEAK[-1][1], line + line.replace("10:00:03,100", "10:00:04,100"))
    assert (two.id, str(two.severity), two.numbers["failures"]) == ("auth-failures", "medium", 2)
    assert two.extent is not None and two.extent.lines == 2 and two.extent.span_s == 1.0


# --- the extent in JSON, the terminal, the notebook and the report ---

EXTENT_KEYS = {"records": int, "lines": int, "other": int, "hosts": list, "files": int}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rebalance-storm", "log-dir-failure"])
def test_extent_in_json(name):
    for f in kitlib.triage(sample(name)).findings:
        d = json.loads(json.dumps(f.to_dict(), allow_nan=False))["extent"]
        assert set(d) == {*EXTENT_KEYS, "first", "last", "span_s"}
        assert all(isinstance(d[k], t) for k, t in EXTENT_KEYS.items()), d
        assert d["records"] == d["lines"] + d["other"] >= 1 and d["hosts"] == sorted(d["hosts"])
        assert all(isinstance(h, str) and h for h in d["hosts"])
        first, last = (pd.Timestamp(d[k]) for k in ("first", "last"))
        assert first <= last and d["span_s"] == (last - first).total_seconds()


def test_extent_of_a_finding_built_outside_triage_reads_its_evidence():
    f = Finding(
        "demo-finding",
        "low",
        "two lines",
        evidence=[
            {"file": "b1/server.log", "line": 7, "host": "b1", "ts": "2026-11-23T10:00:00+00:00", "text": "x"},
            {"file": "b1/server.log", "line": 7, "host": "b1", "ts": "2026-11-23T10:00:00+00:00", "text": "x"},
            {"file": "b2/server.log", "line": 9, "host": "b2", "ts": "2026-11-23T10:03:00+00:00", "text": "y"},
            {"file": "", "line": None, "host": "b2", "ts": "2026-11-23T10:01:00+00:00", "text": "URP=1"},
        ],
    )
    assert f.extent is None
    ext = evidence_extent(f)
    assert (ext.lines, ext.other, ext.hosts, ext.files, ext.span_s) == (2, 1, ("b1", "b2"), 2, 180.0)
    assert f.to_dict()["extent"] == ext.to_dict()
    assert ext.text() == (
        "rests on 2 lines and 1 record without a line number from 2 hosts (2 files) over 3 min, "
        "2026-11-23 10:00:00 → 10:03:00 UTC"
    )
    assert Finding("demo-finding", "low", "nothing cited").rests_on() == Extent(0, 0, (), 0, None, None)


@pytest.mark.slow
def test_terminal_shows_one_extent_line_under_each_finding():
    result = kitlib.triage(sample("rebalance-storm"))
    text = triage_text(result).splitlines()
    heads = [i for i, ln in enumerate(text) if ln.startswith(tuple(f"{n}. [" for n in range(1, 50)))]
    assert len(heads) == len(result.findings) >= 1
    for i, f in zip(heads, result.findings):
        assert text[i + 1] == "   " + f.extent.text()
    assert sum("rests on " in ln for ln in text) == len(result.findings)


@pytest.mark.slow
def test_notebook_html_and_report_summary_show_the_extent():
    from types import SimpleNamespace

    from kitlib.report.summary import summary_view

    b = sample("log-dir-failure")
    result = kitlib.triage(b)
    html = findings_html(result.findings).html
    for f in result.findings:
        assert f"<p class='kit-extent' style='margin:2px 0;color:#555'>{f.extent.text()}</p>" in html
    plan = SimpleNamespace(summary=b.summary, triage=result, bundle_path=SAMPLE_DATA / "log-dir-failure", up_href="")
    view = summary_view(plan, [])
    assert [v["extent"] for v in view["findings"]] == [
        f.extent.text() for f in sorted(result.findings, key=lambda f: (f.risk, Severity.rank_of(f.severity)))
    ]


@pytest.mark.slow
def test_counted_rows_are_the_ones_pandas_query_selects():
    """An extent selects a finding's counted rows clause by clause, each clause once per table;
    the rows are those ``DataFrame.query`` returns for the whole query, whatever its form."""
    from kitlib.findings.extent import _conjuncts, _selected

    b = sample("rebalance-storm")
    ge = b.table("group_events")
    group = ge["group"].dropna().iloc[0]
    files = sorted(ge.loc[ge["group"].isna(), "file"].astype(str).unique())[:2]
    queries = [q for f in kitlib.triage(b).findings for t, q in f.counted_from.values() if t == "group_events"]
    assert queries  # the storm's own counts
    queries += [
        f"kind == 'member_failed' and (group == {group!r} or (group.isna() and file in {files!r}))",
        f"kind == 'member_left' and (group == {group!r} or (group.isna() and file in {files!r}))",
        f"kind == 'member_left' or group == {group!r}",  # no top-level and: one clause
        f"kind == 'member_left' & group == {group!r}",  # pandas' & binds as and
        f"`group` == {group!r} and line > 3",  # backticks: read whole
        "index == index",
        f"group == {group!r} and kind.str.startswith('member')",
    ]
    masks: dict = {}
    for q in queries:
        want = ge.index.isin(ge.query(q, engine="python").index)
        assert (_selected(ge, "group_events", q, masks) == want).all(), q
    # one mask per distinct clause of a top-level and, shared by the queries that repeat it
    clauses = {c for q in queries for c in _conjuncts(q)}
    # (besides them: the codes of a column a clause compares with a text, made once)
    assert {k for k in masks if isinstance(k[1], str)} == {("group_events", c) for c in clauses}
    assert {k[1][1] for k in masks if not isinstance(k[1], str)} == {"kind", "group"}
    assert len(clauses) < sum(len(_conjuncts(q)) for q in queries)
    assert "kind == 'member_left' or group == " + repr(group) in clauses  # an or is one clause


def test_a_clause_comparing_a_column_with_a_text_selects_what_pandas_query_does():
    """A ``column == 'text'`` clause is answered from the column's codes; the rows are those
    ``DataFrame.query`` selects on text, categorical and mixed object columns, with missing values,
    unused categories, a text no row has, a duplicated index and a column that is not text."""
    import pandas as pd

    from kitlib.findings.extent import _selected

    frame = pd.DataFrame(
        {
            "s": pd.array(["a", None, "b", "a", "", "b"], dtype="string"),
            "c": pd.Categorical(["x", "y", None, "x", "y", "x"], categories=["z", "y", "x"]),
            "o": pd.Series(["1", 1, None, "1", 1.0, b"1"], dtype=object),
            "n": [1, 2, 3, 1, 2, 3],
        },
        index=[5, 5, 6, 7, 8, 8],
    )
    masks: dict = {}
    queries = ["s == 'a'", "s == ''", "s == 'q'", "c == 'x'", "c == 'z'", "o == '1'", "s == 'b' and c == 'x'"]
    for q in [*queries, "s == 'b'", "c == 'y'"]:  # the last two from codes made for the first ones
        want = frame.reset_index(drop=True).query(q, engine="python").index
        got = _selected(frame, "t", q, masks)
        assert got.tolist() == [i in set(want) for i in range(len(frame))], q
    assert ("t", ("codes", "s")) in masks and ("t", ("codes", "n")) not in masks


def test_evidence_rows_read_from_their_columns_match_rows_of_the_whole_frame():
    """evidence() takes a frame's file, line, host, ts and quoted column alone; the rows it makes
    are those the frame's own rows (iterrows, as for a text function) give, missing values too."""
    import numpy as np
    import pandas as pd

    from kitlib.findings import evidence

    df = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2026-11-23 10:00:01.5", None, "2026-11-23 10:00:03.0"], utc=True),
            "file": pd.Categorical(["b1/server.log", None, "b2/server.log"]),
            "line": pd.array([7, None, 9], dtype="Int64"),
            "host": pd.Categorical(["b1", "b2", None]),
            "message": pd.array(["boom", None, "x" * 600], dtype="string"),
            "lag": [1.5, np.nan, 3.0],
            "other": pd.array([1, 2, None], dtype="Int64"),
        }
    )
    by_row = evidence(df, text=lambda r: r["message"])
    assert evidence(df) == by_row
    assert [e["line"] for e in by_row] == [7, None, 9] and by_row[1]["host"] == "b2" and by_row[2]["host"] == ""
    assert evidence(df, text="lag") == evidence(df, text=lambda r: r["lag"])
    nums = df[["line", "lag"]]  # numbers alone: a row of one number type
    assert evidence(nums, text="lag") == evidence(nums, text=lambda r: r["lag"])


# --- the extent counted from codes is the one counted from the rows' text ---


def extent_from_text(f: Finding, bundle) -> tuple:
    """A finding's extent counted the plain way, as an oracle: every part's rows with their names
    as text (a missing one ""), joined, each distinct (file, line) or (file, host, ts, text) once,
    evidence first; the table's rows as ``DataFrame.query`` selects them."""
    from kitlib.findings.extent import _line_numbers

    cols = ["file", "line", "host", "ts", "text"]
    parts = []
    if f.evidence:
        ev = pd.DataFrame(f.evidence, columns=cols)
        ev["ts"] = pd.to_datetime(
            ev["ts"].where(ev["ts"].map(type).eq(str)), utc=True, errors="coerce", format="ISO8601"
        )
        parts.append(ev)
    picked: dict[str, set] = {}
    for table, query in f.counted_from.values():
        whole = bundle.table(table).reset_index(drop=True)
        picked.setdefault(table, set()).update(whole.query(query, engine="python").index)
    for table, at in picked.items():
        rows = bundle.table(table).reset_index(drop=True).iloc[sorted(at)]
        got = rows[[c for c in cols[:4] if c in rows.columns]].reindex(columns=cols[:4]).assign(text=None)
        got["ts"] = pd.to_datetime(got["ts"], utc=True, errors="coerce")
        parts.append(got)
    if not parts:
        return (0, 0, (), 0, None, None)
    d = pd.concat(
        [
            p.assign(
                file=p["file"].map(lambda v: "" if pd.isna(v) else str(v)),
                host=p["host"].map(lambda v: "" if pd.isna(v) else str(v)),
                line=_line_numbers(p["line"]),
                text=p["text"].map(lambda v: None if pd.isna(v) else str(v)),
            )
            for p in parts
        ],
        ignore_index=True,
    )
    keyed = d[d["line"].notna()].drop_duplicates(["file", "line"])
    bare = d[d["line"].isna()].drop_duplicates(["file", "host", "ts", "text"])
    both = pd.concat([keyed, bare])
    ts = both["ts"].dropna()
    return (
        len(keyed),
        len(bare),
        tuple(sorted(h for h in both["host"].unique() if h != "")),
        sum(1 for x in both["file"].unique() if x != ""),
        ts.min() if len(ts) else None,
        ts.max() if len(ts) else None,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_extent_counted_from_codes_is_the_one_counted_from_text(name):
    b = sample(name)
    for f in kitlib.triage(b).findings:
        e = f.extent
        assert (e.lines, e.other, e.hosts, e.files, e.first, e.last) == extent_from_text(f, b), f.id


def test_an_exact_query_selects_the_counted_rows_and_no_other():
    """A count's query (``exact_query``) selects exactly the rows counted: the base query when it
    selects nothing more, else the base with the rows it selects beyond them left out by file and
    line; no query when the base misses a counted row, a row is counted twice, too many rows would
    be left out, or a row left out shares its file and line with a counted one."""
    from kitlib.findings.extent import exact_query

    t = pd.DataFrame(
        {
            "kind": ["fenced", "fenced", "unfenced", "fenced", "fenced", "fenced"],
            "node": pd.array([1, 1, 1, 2, 1, pd.NA], dtype="Int64"),
            "file": ["b1/server.log", "b1/server.log", "b1/server.log", "b2/server.log", "b2/server.log", "b1/x.log"],
            "line": [10, 11, 12, 10, 10, 3],
        }
    )

    def picked(query):
        return t.query(query, engine="python").index.tolist()

    base = "kind == 'fenced' and node == 1"
    assert exact_query(t, [0, 1, 4], base) == base
    # a row the detector left out (one a stall explains, say) is left out of the query too
    query = exact_query(t, [0, 4], base)
    assert query is not None and picked(query) == [0, 4]
    assert "file == 'b1/server.log' and line in [11]" in query
    assert exact_query(t, [0, 3], base) is None  # row 3 is about node 2: the base misses it
    assert exact_query(t, [0, 0, 1, 4], base) is None  # a row counted twice: no query counts it so
    assert exact_query(t, [0], base, most=1) is None  # two rows to leave out, one allowed
    # rows 3 and 4 share their file and line: leaving out one by file and line leaves out both
    assert exact_query(t, [3], "kind == 'fenced' and file == 'b2/server.log'") is None
    # a missing node is no node: a base naming the host's rows alike keeps them
    assert picked(exact_query(t, [5], "kind == 'fenced' and node.isna()")) == [5]
