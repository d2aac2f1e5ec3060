"""Pasted excerpts read as bundles: the same Kafka lines behind indentation, shell prompts, line
numbers, a log shipper's column or a search tool's time column give the same events as the
clean lines; what a paste adds (prose, fences, prompts, commands) lands in ``unparsed`` with its
reason; lines that lost their date keep their place; ``kitlib triage`` diagnoses a pasted
ticket (fixtures and their sources: tests/fixtures/excerpts/SOURCES.md)."""

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from kitlib import formats
from kitlib.events import to_pandas
from kitlib.formats import Context
from kitlib.sources import discover, head

EXCERPTS = Path(__file__).parent / "fixtures" / "excerpts"

# the records of the ticket fixture, as the broker wrote them (Kafka's default layout)
CLEAN = [
    "[2021-06-14 09:12:01,101] INFO [Partition orders-3 broker=1] Shrinking ISR from 1,2,3 to 1,3. Leader: "
    "(highWatermark: 4411, endOffset: 4420). Out of sync replicas: (brokerId: 2, endOffset: 4411). (kafka.cluster.Partition)",
    "[2021-06-14 09:12:01,105] INFO [Partition orders-3 broker=1] ISR updated to 1,3 and zkVersion updated to 12 "
    "(kafka.cluster.Partition)",
    "[2021-06-14 09:12:05,002] ERROR [ReplicaManager broker=1] Error processing append operation on partition "
    "orders-7 (kafka.server.ReplicaManager)",
    "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR Set(1) is insufficient",
    "\tat kafka.cluster.Partition.appendRecordsToLeader(Partition.scala:1264)",
]


def read(path: Path):
    """(format name, events frame, unparsed frame, context) of the one file under ``path``."""
    src = next(iter(discover(path)))
    fmt = formats.detect(head(src), src)
    assert fmt is not None
    ctx = Context(src)
    ev, un = [], []
    for name, chunk in fmt.parse(src, ctx):
        (ev if name == "events" else un).append(chunk)
    frame = to_pandas(pa.concat_tables(ev)) if ev else None
    unparsed = pd.concat(un, ignore_index=True) if un else pd.DataFrame(columns=["line", "reason", "text"])
    # every line is in a record or in unparsed, once
    assert ctx.parsed + len(unparsed) == ctx.lines
    return fmt.name, frame, unparsed, ctx


def decorate(kind: str) -> str:
    n = len(CLEAN)
    if kind == "indent":
        return "".join("    " + ln + "\n" for ln in CLEAN)
    if kind == "numbers":
        return "".join(f"{i + 40:4d}: {ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "bars":
        return "".join(f"{i + 7} | {ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "cat_n":
        return "".join(f"{i + 1:6d}\t{ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "cri":  # containerd / CRI-O files under /var/log/pods
        return "".join(f"2021-06-14T09:12:0{i}.123456789Z stdout F {ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "kubectl":  # kubectl logs --timestamps
        return "".join(f"2021-06-14T09:12:0{i}.123456789Z {ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "kubectl_prefix":  # kubectl logs --prefix --timestamps
        return "".join(f"[pod/kafka-1/kafka] 2021-06-14T09:12:0{i}.123456789Z {ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "compose":
        return "".join(f"kafka-1  | {ln}\n" for ln in CLEAN)
    if kind == "kibana":  # a Kibana Discover copy: its @timestamp column first
        return "".join(f"Jun 14, 2021 @ 09:12:0{i}.123\t{ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "graylog":  # an export with the @timestamp column first
        return "".join(f"2021-06-14T09:12:0{i}.123Z,{ln}\n" for i, ln in enumerate(CLEAN))
    if kind == "glued_prompt":  # a terminal copy: the prompt glued onto the first line
        return "root@kafka-0:/opt/kafka# " + "\n".join(CLEAN) + "\n"
    if kind == "glued_end":  # a file printed without its last newline, then the prompt
        return "\n".join(CLEAN) + "root@kafka-0:/opt/kafka# "
    if kind == "crlf":  # a ticket system's line ends
        return decorate("numbers").replace("\n", "\r\n")
    if kind == "quoted":  # a chat's quote marker, then indentation
        return "".join("> " + ln + "\n" for ln in CLEAN)
    if kind == "prompts":
        return "$ tail -n 5 server.log\n" + "".join(ln + "\n" for ln in CLEAN) + "kafka@broker-1:~$ \n"
    if kind == "fenced":
        return "From broker 1:\n```log\n" + "".join(ln + "\n" for ln in CLEAN) + "```\nThanks\n"
    raise AssertionError(n)


KINDS = [
    "indent",
    "numbers",
    "bars",
    "cat_n",
    "cri",
    "kubectl",
    "compose",
    "kubectl_prefix",
    "kibana",
    "graylog",
    "glued_prompt",
    "glued_end",
    "crlf",
    "quoted",
    "prompts",
    "fenced",
]


@pytest.fixture(scope="module")
def clean_events(tmp_path_factory):
    d = tmp_path_factory.mktemp("clean")
    (d / "server.log").write_text("".join(ln + "\n" for ln in CLEAN))
    name, ev, un, _ = read(d)
    assert name == "log4j" and len(un) == 0 and len(ev) == 3
    return ev


@pytest.mark.parametrize("kind", KINDS)
def test_decorated_lines_give_the_same_events(kind, clean_events, tmp_path):
    (tmp_path / "pasted.txt").write_text(decorate(kind))
    name, ev, un, ctx = read(tmp_path)
    cols = ["ts", "level", "logger", "message", "nlines"]
    if kind == "crlf":  # a multi-line message keeps its inner line ends, as in any CRLF log
        ev = ev.assign(message=ev["message"].str.replace("\r\n", "\n"))
    assert ev[cols].reset_index(drop=True).equals(clean_events[cols].reset_index(drop=True)), kind
    assert not ctx.error
    # what a paste adds is set aside with its reason; the records' own lines are not
    added = {"prompts": [1, 7], "fenced": [1, 2, 8, 9]}.get(kind, [])
    assert sorted(un["line"].tolist()) == added
    if kind == "prompts":
        assert set(un["reason"]) == {
            "a shell prompt or command of a pasted excerpt",
            "only the decoration of a pasted excerpt (line number, prompt, code fence)",
        }
        assert un["text"].iloc[0] == "$ tail -n 5 server.log"  # kept whole


def test_lines_in_order_with_their_line_numbers(tmp_path):
    (tmp_path / "pasted.txt").write_text(decorate("numbers"))
    _, ev, _, _ = read(tmp_path)
    assert ev["line"].tolist() == [1, 2, 3] and ev["file"].tolist() == ["pasted.txt"] * 3


def test_lines_without_a_date_keep_their_place(tmp_path):
    # a paste that lost the date column of some lines (copied from a viewer that hid it)
    text = "".join("  " + (ln[26:] if i == 1 else ln) + "\n" for i, ln in enumerate(CLEAN))
    (tmp_path / "pasted.txt").write_text(text)
    name, ev, un, _ = read(tmp_path)
    assert name == "log-excerpt" and len(un) == 0
    assert ev["line"].tolist() == [1, 2, 3]
    assert ev["ts"].isna().tolist() == [False, True, False]
    assert ev.iloc[1]["message"].startswith("[Partition orders-3 broker=1] ISR updated to 1,3")
    assert ev.iloc[1]["logger"] == "kafka.cluster.Partition"


def test_a_level_word_alone_does_not_start_a_record(tmp_path):
    # in an excerpt a dateless record must still end with its logger: prose starting with a
    # level word stays in the record before it
    text = "    " + CLEAN[0] + "\n    INFO: we restarted broker 2 here\n    " + CLEAN[1] + "\n"
    (tmp_path / "pasted.txt").write_text(text)
    _, ev, _, _ = read(tmp_path)
    assert len(ev) == 2 and ev.iloc[0]["nlines"] == 2


def test_ordinary_logs_keep_their_readers(tmp_path):
    # an indented stack frame or a '# ' line inside an ordinary log is no excerpt
    (tmp_path / "server.log").write_text("".join(ln + "\n" for ln in CLEAN) + "    at x.Y.z(Y.java:1)\n" * 3)
    assert read(tmp_path)[0] == "log4j"


def test_ticket_fixture_reads_every_record(tmp_path):
    name, ev, un, ctx = read(EXCERPTS / "ticket_isr")
    assert name == "log-excerpt" and not ctx.error
    assert len(ev) == 6 and ev["ts"].notna().all()
    assert ev["message"].str.contains("Shrinking ISR from").sum() == 2
    fetch = ev[ev["logger"] == "kafka.server.ReplicaFetcherThread"].iloc[0]
    # the editor's line numbers go, the stack frame keeps its tab
    assert fetch["message"].endswith(
        "\n\tat kafka.server.ReplicaFetcherBlockingSend.sendRequest(ReplicaFetcherBlockingSend.scala:103)"
    )
    assert {"a shell prompt or command of a pasted excerpt", "no record header before this line"} <= set(un["reason"])


@pytest.mark.slow
def test_triage_of_a_pasted_ticket_names_the_broker(kit):
    run = kit("triage", EXCERPTS / "ticket_isr")
    assert run.returncode == 1, run.stderr
    assert "isr-shrink" in run.stdout and "broker = 2" in run.stdout
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_triage_of_one_pasted_file(kit, tmp_path):
    f = tmp_path / "from-chat.txt"
    f.write_text("we see this on broker 1:\n" + decorate("numbers"))
    run = kit("triage", f)
    assert run.returncode == 1, run.stderr
    assert "isr-shrink" in run.stdout and "broker = 2" in run.stdout


@pytest.mark.slow
def test_folder_with_nothing_readable_still_exits_2(kit, tmp_path):
    (tmp_path / "notes.txt").write_text("$ kubectl get pods\nkafka-0   1/1   Running\n> looks fine to me\n")
    run = kit("triage", tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr


def test_fenced_producer_chat_fixture():
    name, ev, un, ctx = read(EXCERPTS / "ticket_fenced")
    assert name == "log-excerpt" and not ctx.error
    assert ev["logger"].tolist() == ["o.a.k.c.p.i.TransactionManager", "o.a.k.c.p.i.Sender", "c.e.orders.Writer"]
    # the kubectl stamp of a continuation line goes with the layout's own date on record lines
    assert ev.iloc[1]["message"].endswith(
        "due to fatal error\norg.apache.kafka.common.errors.ProducerFencedException: "
        "There is a newer producer with the same transactionalId which fences the current one."
    )
    assert ev.iloc[0]["ts"] == pd.Timestamp("2023-03-02 11:04:17.330", tz="UTC")
    assert un.set_index("line")["reason"].to_dict() == {
        1: "no record header before this line",
        2: "no record header before this line",
        3: "a shell prompt or command of a pasted excerpt",
        8: "only the decoration of a pasted excerpt (line number, prompt, code fence)",
        9: "follows a prompt, command or fence of a pasted excerpt",
        10: "follows a prompt, command or fence of a pasted excerpt",
    }


@pytest.mark.slow
def test_triage_of_a_pasted_fenced_producer_names_the_transactional_id(kit):
    run = kit("triage", EXCERPTS / "ticket_fenced")
    assert run.returncode == 1, run.stderr
    assert "transaction-timeouts" in run.stdout and "transactional_ids = tx-orders-0" in run.stdout
    assert "fenced = 1" in run.stdout
