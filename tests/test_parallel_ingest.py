"""A streaming ingest with derived tables that builds the blockwise ones in a second process
(a big bundle on two cores) writes the same tables, row for row, as the one-process ingest."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kitlib import extract
from kitlib.ingestion import pipeline
from kitlib.ingestion.store import ingest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

# a group's rebalance and an ISR change between records with stack traces, so that the blocks and
# the batches sent to the second process cut through multi-line records
TRACE = (
    "[2024-05-22 00:{m:02d}:{s:02d},{ms:03d}] ERROR [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
    "Error for partition orders-{p} at offset {o} (kafka.server.ReplicaFetcherThread)\n"
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only for the leader\n"
    + "".join(f"\tat org.apache.kafka.server.Frame{i}.call(Frame{i}.java:{i * 7})\n" for i in range(6))
)
ISR = (
    "[2024-05-22 00:{m:02d}:{s:02d},{ms:03d}] INFO [Partition orders-{p} broker=1] Shrinking ISR from 1,2,3 to 1 "
    "(kafka.cluster.Partition)\n"
)
GROUP = (
    "[2024-05-22 00:{m:02d}:{s:02d},{ms:03d}] INFO [GroupCoordinator 1]: Preparing to rebalance group g{p} in "
    "state PreparingRebalance with old generation {o} (__consumer_offsets-{p}) (reason: Adding new member) "
    "(kafka.coordinator.group.GroupCoordinator)\n"
)


def stored(out: Path) -> dict:
    """Every table of a store, and its summary without timings."""
    tabs = {p.stem: pq.read_table(p) for p in sorted(out.glob("*.parquet")) if p.stem != "files"}
    files = pq.read_table(out / "files.parquet").drop_columns(["seconds"])
    summary = json.loads((out / "summary.json").read_text())
    summary.pop("seconds")
    return {"tables": tabs, "files": files, "summary": summary}


def ingest_both(bundle: Path, tmp: Path, monkeypatch) -> tuple[dict, dict]:
    monkeypatch.setattr(pipeline, "cores", lambda: 2)
    monkeypatch.setattr(pipeline, "PARALLEL_BYTES", 1 << 60)
    ingest(bundle, tmp / "one", derive=True, progress=False)
    monkeypatch.setattr(pipeline, "PARALLEL_BYTES", 0)
    ingest(bundle, tmp / "two", derive=True, progress=False)
    return stored(tmp / "one"), stored(tmp / "two")


def assert_same(a: dict, b: dict) -> None:
    assert a["summary"] == b["summary"]
    assert a["files"].equals(b["files"])
    assert sorted(a["tables"]) == sorted(b["tables"])
    for name, t in a["tables"].items():
        assert t.equals(b["tables"][name]), name


@pytest.mark.parametrize("name", ["cluster-config", "rebalance-storm", "isr-flapping", "transactions", "auth-failures"])
def test_second_process_writes_the_same_tables_on_sample_bundles(name, tmp_path, monkeypatch):
    # batches of 40 records: many batches cross to the second process, in order
    monkeypatch.setattr(extract, "BATCH_ROWS", 40)
    one, two = ingest_both(ROOT / "sample_data" / name, tmp_path, monkeypatch)
    assert_same(one, two)
    derived = set(extract.EXTRACTORS)
    assert derived <= set(two["tables"])  # every derived table written, empty or not
    assert sum(two["summary"]["rows"].get(k, 0) for k in derived) > 0


def test_second_process_on_multiline_records_across_batches(tmp_path, monkeypatch):
    bundle = tmp_path / "bundle" / "broker-1"
    bundle.mkdir(parents=True)
    lines = []
    for i in range(3000):
        t = dict(m=(i // 600) % 60, s=(i // 10) % 60, ms=i % 1000, p=i % 5, o=i)
        lines.append((TRACE, ISR, GROUP)[i % 3].format(**t))
    (bundle / "server.log").write_text("".join(lines))
    monkeypatch.setattr(extract, "BATCH_ROWS", 97)
    one, two = ingest_both(bundle.parent, tmp_path, monkeypatch)
    assert_same(one, two)
    assert two["summary"]["rows"]["group_events"] > 0
    assert two["tables"]["events"].num_rows == 3000
    assert (
        pq.read_table(tmp_path / "two" / "files.parquet").column("lines")[0].as_py() == 1000 * 8 + 2000
    )  # a trace is 8 lines


@pytest.mark.parametrize("name", ["rebalance-storm", "isr-flapping", "transactions", "multiline"])
def test_batches_built_in_the_ingests_own_process_make_the_same_tables(name, tmp_path, monkeypatch):
    """With the second process taken as behind whenever a batch starts (the sending waited no
    time at all), the ingest's own process builds every batch it is free for and sends the
    pieces instead of the records; the rest go to the second process, cut where it cuts them.
    The stored tables are row for row those of one process."""
    from kitlib.ingestion import blockwise

    if name == "multiline":
        bundle = tmp_path / "bundle"
        (bundle / "broker-1").mkdir(parents=True)
        lines = [
            (TRACE, ISR, GROUP)[i % 3].format(m=(i // 600) % 60, s=(i // 10) % 60, ms=i % 1000, p=i % 5, o=i)
            for i in range(3000)
        ]
        (bundle / "broker-1" / "server.log").write_text("".join(lines))
    else:
        bundle = ROOT / "sample_data" / name
    built_here = []
    real = blockwise.BlockwiseProcess._build_here

    def spy(self, group, records):
        built_here.append(group)
        return real(self, group, records)

    monkeypatch.setattr(blockwise.BlockwiseProcess, "_build_here", spy)
    monkeypatch.setattr(blockwise, "BEHIND_S", 0.0)
    monkeypatch.setattr(extract, "BATCH_ROWS", 40)
    one, two = ingest_both(bundle, tmp_path, monkeypatch)
    assert built_here  # some batches were built here ...
    assert_same(one, two)  # ... and the tables are the same
    assert sum(two["summary"]["rows"].get(k, 0) for k in extract.EXTRACTORS) > 0


def test_the_two_processes_pick_between_them_what_one_process_picks(tmp_path):
    """With a second process the ingest picks for itself the groups that are not blockwise and
    those it builds block by block itself (authentication failures), and the other blockwise ones
    for the second process, each from the whole block: every group on one side only, and its
    records the ones a one-process ingest picks."""
    from kitlib.ingestion.blockwise import built_apart

    ingest(ROOT / "sample_data" / "transactions", tmp_path / "out", derive=False, progress=False)
    block = pq.read_table(tmp_path / "out" / "events.parquet")
    whole = extract.select(block)
    here = extract.select(block, lambda g: not built_apart(g))
    there = extract.select(block, built_apart)
    assert here and there and not set(here) & set(there)
    assert sorted({**here, **there}) == sorted(whole)
    for g, t in {**here, **there}.items():
        assert t.equals(whole[g]), g
    assert all(extract.EXTRACTORS[g].blockwise for g in there)
    assert extract.EXTRACTORS["auth_failures"].blockwise and not built_apart(extract.groups()["auth_failures"])


def test_small_bundle_stays_in_one_process(tmp_path, monkeypatch):
    seen = []
    real = pipeline.Sink

    def spy(*args, **kw):
        seen.append(kw.get("parallel"))
        return real(*args, **kw)

    monkeypatch.setattr(pipeline, "Sink", spy)
    ingest(ROOT / "sample_data" / "healthy", tmp_path / "out", derive=True, progress=False)
    monkeypatch.setattr(pipeline, "cores", lambda: 1)
    monkeypatch.setattr(pipeline, "PARALLEL_BYTES", 0)
    ingest(ROOT / "sample_data" / "healthy", tmp_path / "out2", derive=True, progress=False)
    monkeypatch.setenv("KITLIB_INGEST_PROCESSES", "2")
    ingest(ROOT / "sample_data" / "healthy", tmp_path / "out3", derive=False, progress=False)  # nothing to derive
    assert seen == [False, False, False]


def test_second_process_from_a_script_without_main_guard(tmp_path):
    # the second process is a fresh interpreter: a script that ingests at its top level (no
    # ``if __name__ == "__main__"``) is not run again in it
    script = tmp_path / "script.py"
    script.write_text(
        "from kitlib.ingestion.store import ingest\n"
        f"s = ingest({str(ROOT / 'sample_data' / 'rebalance-storm')!r}, {str(tmp_path / 'out')!r}, derive=True)\n"
        "print(s.rows['group_events'])\n"
    )
    env = {**os.environ, "KITLIB_INGEST_PROCESSES": "2"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout) > 0
    assert int(r.stdout) == pq.ParquetFile(tmp_path / "out" / "group_events.parquet").metadata.num_rows
    assert not list((tmp_path / "out").glob(".[sd]*"))  # no spill (.selected-*) or message file (.derive.err) left


def test_a_second_process_that_stopped_is_said_once_the_ingest_waits_for_it(tmp_path):
    """The end of the batches is sent on a thread of its own (the ingest builds its own tables
    meanwhile): a second process gone before it is said, as before, when the ingest waits for
    its tables, and nothing waits for ever."""
    from kitlib.ingestion.sink import BlockwiseProcess

    ingest(ROOT / "sample_data" / "transactions", tmp_path / "out", derive=False, progress=False)
    block = pq.read_table(tmp_path / "out" / "events.parquet")
    remote = BlockwiseProcess(tmp_path)
    remote.proc.kill()
    remote.proc.wait()
    for _ in range(8):  # more than the queue holds: the sender finds the process gone
        remote.add(block)
    remote.start_finish({})
    with pytest.raises(RuntimeError, match="the process building the derived tables stopped"):
        remote.wait()


def test_a_block_the_sender_cannot_pick_from_is_said_as_a_failed_build(tmp_path):
    """The blockwise groups' records are picked on the sending thread: a block it cannot pick
    from (here one without a logger column) stops the second process's work, said when the
    ingest waits for its tables, with the error that stopped it."""
    import pyarrow as pa

    from kitlib.ingestion.sink import BlockwiseProcess

    remote = BlockwiseProcess(tmp_path)
    remote.add(pa.table({"message": ["x"] * 10}))
    remote.start_finish({})
    with pytest.raises(RuntimeError, match="building the derived tables failed: KeyError"):
        remote.wait()
    assert remote.proc.poll() is not None  # the second process is stopped, not left waiting


def test_the_second_process_reads_ahead_within_its_byte_budget(monkeypatch):
    """The second process reads picked blocks off the socket ahead of its builds, but holds no
    more of them than its byte budget allows (always one): with a budget smaller than a block,
    no block is read into Arrow before the one taken before it is done with. The blocks come in
    order, then the end with the rows file formats filled."""
    import pickle
    import socket
    import threading
    import time
    from multiprocessing.connection import Connection

    import pyarrow as pa

    from kitlib.ingestion import blockwise

    monkeypatch.setattr(blockwise, "RECEIVE_AHEAD_BYTES", 1)
    opened = []
    real_open = pa.ipc.open_stream
    monkeypatch.setattr(blockwise.pa.ipc, "open_stream", lambda src: opened.append(1) or real_open(src))
    a, b = socket.socketpair()
    ours, theirs = Connection(a.detach()), Connection(b.detach())

    def send() -> None:
        for i in range(4):
            buf = pa.BufferOutputStream()
            records = pa.table({"line": [i] * 100})
            with pa.ipc.new_stream(buf, records.schema) as w:
                w.write_table(records)
            ours.send_bytes(b"E")
            ours.send_bytes(b"group_events")
            ours.send_bytes(buf.getvalue().to_pybytes())
        ours.send_bytes(b"F")
        ours.send_bytes(pickle.dumps({"group_events": []}))

    threading.Thread(target=send, daemon=True).start()
    got = blockwise.received(theirs)
    first = next(got)
    time.sleep(0.3)  # the reader has every block on its socket by now
    assert len(opened) == 1  # and read none of the rest into Arrow while the first is held
    rest = list(got)
    assert [t["group_events"].column("line")[0].as_py() for t in [first, *rest[:-1]]] == [0, 1, 2, 3]
    assert isinstance(rest[-1], blockwise.EndOfBlocks) and rest[-1].filled == {"group_events": []}
    ours.close()
    theirs.close()


FORK_SCRIPT = """
import json, os, sys, threading
from kitlib.ingestion import blockwise, sink
from kitlib.ingestion.store import ingest

kinds = []
real_init = sink.BlockwiseProcess.__init__

def spy(self, out):
    real_init(self, out)
    kinds.append(type(self.proc).__name__)

sink.BlockwiseProcess.__init__ = spy
bundle, tmp = sys.argv[1], sys.argv[2]

def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False

# a spare forked ahead builds the first ingest's blockwise tables; the second has none: an interpreter
assert blockwise.fork_ahead(sink.run_builder)
first = blockwise._SPARE.pid
ingest(bundle, tmp + "/forked", derive=True, progress=False)
ingest(bundle, tmp + "/started", derive=True, progress=False)
# a spare that died before its job: an interpreter instead, the same tables
assert blockwise.fork_ahead(sink.run_builder)
killed = blockwise._SPARE
killed.kill()
killed.wait()
ingest(bundle, tmp + "/after-kill", derive=True, progress=False)
# a spare no ingest took ends with end_spare (waited for: no process left behind)
assert blockwise.fork_ahead(sink.run_builder)
unused = blockwise._SPARE.pid
blockwise.end_spare()
# never forked while another thread of this process runs
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
refused = not blockwise.fork_ahead(sink.run_builder)
stop.set()
t.join()
print(json.dumps({"kinds": kinds, "first_gone": gone(first), "unused_gone": gone(unused), "refused": refused}))
"""


def test_a_second_process_forked_ahead_writes_what_a_started_one_writes(tmp_path):
    """The process a raw bundle's ingest runs in forks its second process ahead, once it has
    imported the ingest (``fork_ahead``): the ingest that takes it writes the tables, row for row,
    that one with a freshly started interpreter writes; a spare that died is replaced by a started
    one; one no ingest took is ended and waited for; and none is forked while another thread runs."""
    env = {**os.environ, "KITLIB_INGEST_PROCESSES": "2", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT, str(ROOT / "sample_data" / "rebalance-storm"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    said = json.loads(r.stdout.strip().splitlines()[-1])
    assert said == {"kinds": ["Forked", "Popen", "Popen"], "first_gone": True, "unused_gone": True, "refused": True}
    forked = stored(tmp_path / "forked")
    assert forked["summary"]["rows"]["group_events"] > 0
    assert_same(forked, stored(tmp_path / "started"))
    assert_same(forked, stored(tmp_path / "after-kill"))
    for out in ("forked", "started", "after-kill"):
        assert not list((tmp_path / out).glob(".[sd]*"))  # no spill or message file left
