"""The second process of a streaming ingest on two cores: it picks the blockwise groups' records
from every events block and builds and writes the blockwise derived tables (see
:class:`BlockwiseProcess`; what it runs is :func:`kitlib.ingestion.sink._blockwise_main`)."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import pyarrow as pa

from kitlib import extract
from kitlib.extract import BuildError

# blocks whose sending waited this long for room in the second process's read-ahead (a running
# mean, the last block weighing BEHIND_WEIGHT) say it is behind: the next batch of a group that starts
# is built in this process instead (see BlockwiseProcess)
BEHIND_S = 0.03
BEHIND_WEIGHT = 0.25


class BlockwiseProcess:
    """A second process that builds the blockwise derived tables (see
    :func:`kitlib.extract.build_blockwise`) from the blockwise groups' records of every events
    block, and at the end writes them to the output folder; so that on a machine with two cores
    a streaming ingest of a big bundle parses, matches and picks in one process while the other
    builds. A thread of this process picks each block's records for it and sends them in order
    through a socket (Arrow IPC; at most ``AHEAD`` blocks wait, so memory stays bounded). It cuts
    the same batches and runs the same builders in the same order as :class:`Selection` does in
    one process.

    When the second process falls behind (sending a block waited :data:`BEHIND_S` or more for
    room, as a running mean: its read-ahead is full), the next batch of a group that starts is
    held back and built in this process, on a thread of its own (one batch at a time; a batch
    held while the last is still building goes to the second process after all), and its built
    pieces are sent in place of its records: a dense incident's ISR changes and rebalances keep
    the second process busier than this one. The batches are cut where the second process cuts
    them (the same rows of each group, counted in order), and the stored tables are sorted by
    their order keys, so the tables are the same whichever process builds a batch."""

    AHEAD = 3  # blocks waiting to be sent

    def __init__(self, out: Path):
        self._err = out / ".derive.err"  # what the process said before it could hand back an error
        spare = _take_spare()
        if spare is not None:
            with open(self._err, "wb"):
                pass  # (the forked process writes its stderr here from now on)
            try:
                spare.conn.send_bytes(f"{extract.BATCH_ROWS}\0{out}".encode())
                self.proc, self._conn = spare, spare.conn
            except OSError:  # it is gone: an interpreter of its own, as without one
                spare.end()
                spare = None
        if spare is None:
            self.proc, self._conn = self._start(out)
        self._queue: queue.Queue = queue.Queue(self.AHEAD)
        self._failed: BaseException | None = None
        self._sending = threading.Lock()  # one message on the socket at a time
        self._finisher: threading.Thread | None = None  # sends the end (start_finish)
        self._sender = threading.Thread(target=self._send_all, name="kitlib-derive-send", daemon=True)
        self._sender.start()

    def _start(self, out: Path):
        """A fresh interpreter running :func:`kitlib.ingestion.sink._blockwise_main`, and the
        connection to it."""
        import socket
        from multiprocessing.connection import Connection

        # neither forked (this process may already run threads: Arrow's, the writer's, a notebook
        # kernel's) nor spawned by multiprocessing (which would run the calling script again in it,
        # and a script without a ``__main__`` guard would fail)
        ours, theirs = socket.socketpair()
        # the folder this kitlib is imported from first, so the process runs the same code
        path = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
        with open(self._err, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", "from kitlib.ingestion.sink import _blockwise_main; _blockwise_main()"]
                + [str(theirs.fileno()), str(out), str(extract.BATCH_ROWS)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)},
            )
        theirs.close()
        return proc, Connection(ours.detach())

    def add(self, events: pa.Table) -> None:
        """Pass one events block on."""
        if self._failed is None:  # else said by finish
            self._queue.put(events)

    def _send_all(self) -> None:
        counted: dict[str, int] = {}  # each group's records since its last batch was cut
        held: dict[str, list[pa.Table]] = {}  # the records of batches held back to be built here
        waited = 0.0  # seconds sending a block waited for room, a running mean over the last blocks
        building: threading.Thread | None = None  # builds one held batch at a time
        while True:
            item = self._queue.get()
            if item is None:
                if building is not None:
                    building.join()
                if self._failed is None:
                    try:  # a held batch cut short by the end of the log: the other process builds it
                        for group in list(held):
                            for records in held.pop(group):
                                self._send_tables(b"E", {group: records})
                    except Exception as e:  # noqa: BLE001 - said by wait()
                        self._failed = e
                return
            if self._failed is not None:
                continue  # drained, so that build() never blocks on a process that is gone
            try:
                # the blockwise groups' records picked here, on this thread (Arrow and RE2 work that
                # lets go of the GIL): only they cross the socket, about a sixth of the block's bytes
                # on the 1 GB mix, and the second process is left the building
                picked = extract.select(item, built_apart)
                sent: dict[str, pa.Table] = {}
                full: list[str] = []
                for group, records in picked.items():
                    if not counted.get(group) and waited >= BEHIND_S and (building is None or not building.is_alive()):
                        held[group] = []  # a batch starts, the other process is behind and this one is free
                    if group in held:
                        held[group].append(records)
                    else:
                        sent[group] = records
                    counted[group] = counted.get(group, 0) + records.num_rows
                    if counted[group] >= extract.BATCH_ROWS:  # where Selection.take cuts it
                        counted[group] = 0
                        if group in held:
                            full.append(group)
                if sent:
                    start = time.perf_counter()
                    self._send_tables(b"E", sent)
                    waited += (time.perf_counter() - start - waited) * BEHIND_WEIGHT
                for group in full:
                    batch = held.pop(group)
                    if building is None or not building.is_alive():
                        building = threading.Thread(
                            target=self._build_here, args=(group, batch), name="kitlib-derive-here", daemon=True
                        )
                        building.start()
                    else:  # (the last one is still being built: the other process takes this one)
                        for records in batch:
                            self._send_tables(b"E", {group: records})
            except Exception as e:  # noqa: BLE001 - said by wait()
                self._failed = e

    def _build_here(self, group: str, records: list[pa.Table]) -> None:
        """Build one batch of ``group`` in this process and send its pieces (and what failed)."""
        try:
            pieces, errors = extract.build_blockwise(group, pa.concat_tables(records, promote_options="permissive"))
            del records
            self._send_tables(b"B", pieces, pickle.dumps(errors, protocol=5))
        except Exception as e:  # noqa: BLE001 - said by wait()
            self._failed = self._failed or e

    def _send_tables(self, kind: bytes, named: dict[str, pa.Table], tail: bytes | None = None) -> None:
        """A message of ``kind`` (b"E": the records picked from a block, b"B": pieces built here,
        then ``tail``, what failed): the tables' names, then each table as an Arrow IPC stream. One
        message at a time (the sending thread and the one building here both send)."""
        streams = []
        for table in named.values():
            buf = pa.BufferOutputStream()
            with pa.ipc.new_stream(buf, table.schema) as w:
                w.write_table(table)
            streams.append(buf.getvalue())
        with self._sending:
            self._conn.send_bytes(kind)
            self._conn.send_bytes("\0".join(named).encode())
            for data in streams:
                self._conn.send_bytes(memoryview(data))
            if tail is not None:
                self._conn.send_bytes(tail)

    def start_finish(self, filled: dict[str, pd.DataFrame]) -> None:
        """Once every batch is sent, send the rows file formats put in blockwise tables (put
        first, as in one process): the second process builds and writes its tables. Done on a
        thread of its own, so that this process builds its own tables meanwhile instead of
        waiting for the second one to take the last batches (:meth:`wait` says what failed)."""
        self._finisher = threading.Thread(target=self._finish, args=(filled,), name="kitlib-derive-finish", daemon=True)
        self._finisher.start()

    def _finish(self, filled: dict[str, pd.DataFrame]) -> None:
        self._queue.put(None)
        self._sender.join()
        if self._failed is not None:
            return
        try:
            self._conn.send_bytes(b"F")
            self._conn.send_bytes(pickle.dumps(filled, protocol=5))
        except (OSError, EOFError, ValueError) as e:
            self._failed = e

    def wait(self) -> list[tuple[str, int, BuildError | None]]:
        """``(table, rows, error)`` of every blockwise table, once written."""
        if self._finisher is not None:
            self._finisher.join()
        if self._failed is not None:
            if not isinstance(self._failed, (OSError, EOFError, ValueError)):  # picking a block failed
                self.close()
                raise RuntimeError(f"building the derived tables failed: {type(self._failed).__name__}: {self._failed}")
            self._stopped(self._failed)
        try:
            status, value = self._conn.recv()
        except (OSError, EOFError) as e:
            self._stopped(e)
        finally:
            self._conn.close()
        self.proc.wait()
        self._err.unlink(missing_ok=True)
        if status != "ok":
            raise RuntimeError(f"building the derived tables failed: {value}")
        return value

    def _stopped(self, e: BaseException) -> NoReturn:
        self.close()
        said = ""
        with contextlib.suppress(OSError):
            said = next((x for x in reversed(self._err.read_text(errors="replace").splitlines()) if x.strip()), "")
        raise RuntimeError(
            f"the process building the derived tables stopped (exit code {self.proc.returncode}): "
            f"{said or type(e).__name__}"
        ) from None

    def close(self) -> None:
        """Stop the second process (an ingest given up half way)."""
        self._failed = self._failed or EOFError("closed")
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)
        if self.proc.poll() is None:
            self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self._conn.close()


class Forked:
    """A process :func:`fork_ahead` forked, waiting for the job of :class:`BlockwiseProcess`:
    its connection, and the few calls of ``subprocess.Popen`` that class makes."""

    def __init__(self, pid: int, conn):
        self.pid, self.conn = pid, conn
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if timeout is None:
            if self.returncode is None:
                with contextlib.suppress(ChildProcessError):
                    self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def end(self) -> None:
        """End it unused: its connection closed, it ends by itself (and is waited for)."""
        with contextlib.suppress(OSError):
            self.conn.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(5)
        self.kill()
        self.wait()


_SPARE: Forked | None = None


def fork_ahead(run: Callable[[Any, str, int], None]) -> bool:
    """Fork, now, the second process the next :class:`BlockwiseProcess` of this process will use,
    instead of starting a fresh interpreter then: it has this process's imports already, so it
    neither spends a core on importing them again nor keeps the ingest waiting for its first
    blocks meanwhile. Only in a process of the kit's own whose only Python thread is this one (a
    fork copies one thread, and a lock another thread held would stay held in the copy): the
    process a raw bundle's ingest runs in, once it imported the ingest. ``run`` is what it runs
    once its job comes (:func:`kitlib.ingestion.sink.run_builder`). True when it was forked;
    :func:`end_spare` ends it when no ingest took it."""
    global _SPARE
    if _SPARE is not None or not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    import socket
    from multiprocessing.connection import Connection

    ours, theirs = socket.socketpair()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    pid = os.fork()
    if pid == 0:
        ours.close()
        _spare_main(Connection(theirs.detach()), run)
    theirs.close()
    _SPARE = Forked(pid, Connection(ours.detach()))
    return True


def _spare_main(conn, run: Callable[[Any, str, int], None]) -> NoReturn:
    """The forked process of :func:`fork_ahead`: it waits for its job (the batch size and the
    output folder), then runs as the second process of :class:`BlockwiseProcess`; no job (the
    connection closed): it ends."""
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # (the stdin of the process it was forked from is not its own to read)
        os.dup2(devnull, 1)
        try:
            job = conn.recv_bytes().decode()
        except (EOFError, OSError):
            os._exit(0)
        rows, out = job.split("\0", 1)
        # what it says goes where the ingest reads it when it stops, as for an interpreter of its own
        err = os.open(os.path.join(out, ".derive.err"), os.O_WRONLY | os.O_APPEND)
        os.dup2(err, 2)
        os.close(err)
        run(conn, out, int(rows))
        code = 0
    except BaseException:  # noqa: BLE001 - said on its stderr, which the ingest reads
        import traceback

        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def _take_spare() -> Forked | None:
    global _SPARE
    spare, _SPARE = _SPARE, None
    if spare is not None and spare.poll() is not None:  # it ended (killed): not used
        return None
    return spare


def end_spare() -> None:
    """End the process :func:`fork_ahead` forked when no ingest took it."""
    spare = _take_spare()
    if spare is not None:
        spare.end()


# blockwise tables built in the ingest's own process even when a second process builds the others:
# an authentication storm (clients retrying with a bad secret) writes hundreds of thousands of lines,
# and on such a dense incident the second process is the one the ingest waits for while the ingest's
# own process has time to spare (the dense incident's 533,000 failures had made the ingest's last
# three seconds, built at the end, and six more in the second process)
BUILT_HERE = ("auth_failures",)


def built_apart(group: str) -> bool:
    """Whether the records of selection group ``group`` go to the second process, which builds its
    tables: a blockwise group not of :data:`BUILT_HERE`."""
    return extract.EXTRACTORS[group].blockwise and all(extract.groups().get(t) != group for t in BUILT_HERE)


def tables_built_apart() -> set[str]:
    """The derived tables the second process builds (see :func:`built_apart`)."""
    return {name for name, g in extract.groups().items() if built_apart(g)}


# --- the second process's end of the socket: what it reads, as the ingest's end above sends it ---


class EndOfBlocks:
    """The last message to the second process: the rows file formats put in blockwise tables."""

    def __init__(self, filled: dict):
        self.filled = filled


class BuiltBatch:
    """A batch the ingest's own process built (the second process was behind): its pieces, and
    the builders that failed on it."""

    def __init__(self, pieces: dict[str, pa.Table], errors: list[BuildError]):
        self.pieces, self.errors = pieces, errors


# the picked records the second process reads ahead, in bytes: a batch's build takes a while, and
# the ingest would wait on a full socket meanwhile (the two processes then took turns instead of
# both working); about 40 blocks of the 1 GB mix, 5 to 10 of a dense incident
RECEIVE_AHEAD_BYTES = 24 << 20


def received(conn):
    """The records picked from each events block (group -> records), in order, then an
    :class:`EndOfBlocks`: read from the socket on a thread of their own, at most
    :data:`RECEIVE_AHEAD_BYTES` waiting (and always one block). What the thread meets (the ingest
    gone: ``EOFError``) is raised here."""
    import queue
    import threading

    waiting: queue.SimpleQueue = queue.SimpleQueue()
    room = threading.Condition()
    held = [0]  # bytes read and not yet taken

    def read() -> None:
        try:
            # the records picked from an events block (b"E"), or a batch's pieces built by the
            # ingest (b"B"); else the end (b"F")
            while (kind := conn.recv_bytes()) in (b"E", b"B"):
                # the groups' names, then their records, each message read into memory of its own:
                # the rows share the block's dictionaries, which as slices of one buffer kept every
                # block whose rows wait for their batch whole (the process 310 to 650 MB)
                names = [g for g in conn.recv_bytes().decode().split("\0") if g]
                messages = [conn.recv_bytes() for _ in names]
                errors = pickle.loads(conn.recv_bytes()) if kind == b"B" else None
                size = sum(len(m) for m in messages)
                with room:
                    room.wait_for(lambda size=size: held[0] == 0 or held[0] + size <= RECEIVE_AHEAD_BYTES)
                    held[0] += size
                picked = {g: pa.ipc.open_stream(io.BytesIO(m)).read_all() for g, m in zip(names, messages)}
                del messages
                waiting.put((picked if errors is None else BuiltBatch(picked, errors), size))
            waiting.put((EndOfBlocks(pickle.loads(conn.recv_bytes())), 0))
        except BaseException as e:  # noqa: BLE001 - raised where the blocks are taken
            waiting.put((e, 0))

    threading.Thread(target=read, name="kitlib-derive-receive", daemon=True).start()
    while True:
        item, size = waiting.get()
        if isinstance(item, BaseException):
            raise item
        yield item
        with room:
            held[0] -= size
            room.notify()
        if isinstance(item, EndOfBlocks):
            return
