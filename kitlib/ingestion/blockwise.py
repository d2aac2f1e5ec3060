"""The second process of a streaming ingest on two cores: it picks the blockwise groups' records
from every events block and builds and writes the blockwise derived tables (see
:class:`BlockwiseProcess`; what it runs is :func:`kitlib.ingestion.sink._blockwise_main`)."""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import NoReturn

import pandas as pd
import pyarrow as pa

from kitlib import extract
from kitlib.extract import BuildError


class BlockwiseProcess:
    """A second process that builds the blockwise derived tables (see
    :func:`kitlib.extract.build_blockwise`) from the blockwise groups' records of every events
    block, and at the end writes them to the output folder; so that on a machine with two cores
    a streaming ingest of a big bundle parses, matches and picks in one process while the other
    builds. A thread of this process picks each block's records for it and sends them in order
    through a socket (Arrow IPC; at most ``AHEAD`` blocks wait, so memory stays bounded). It cuts
    the same batches and runs the same builders in the same order as :class:`Selection` does in
    one process."""

    AHEAD = 3  # blocks waiting to be sent

    def __init__(self, out: Path):
        import socket
        from multiprocessing.connection import Connection

        # a fresh interpreter, neither forked (this process already runs threads: Arrow's, the
        # writer's, a notebook kernel's) nor spawned by multiprocessing (which would run the
        # calling script again in it, and a script without a ``__main__`` guard would fail)
        ours, theirs = socket.socketpair()
        self._err = out / ".derive.err"  # what the process said before it could hand back an error
        # the folder this kitlib is imported from first, so the process runs the same code
        path = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
        with open(self._err, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from kitlib.ingestion.sink import _blockwise_main; _blockwise_main()"]
                + [str(theirs.fileno()), str(out), str(extract.BATCH_ROWS)],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)},
            )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._queue: queue.Queue = queue.Queue(self.AHEAD)
        self._failed: BaseException | None = None
        self._finisher: threading.Thread | None = None  # sends the end (start_finish)
        self._sender = threading.Thread(target=self._send_all, name="kitlib-derive-send", daemon=True)
        self._sender.start()

    def add(self, events: pa.Table) -> None:
        """Pass one events block on."""
        if self._failed is None:  # else said by finish
            self._queue.put(events)

    def _send_all(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._failed is not None:
                continue  # drained, so that build() never blocks on a process that is gone
            try:
                # the blockwise groups' records picked here, on this thread (Arrow and RE2 work that
                # lets go of the GIL): only they cross the socket, about a sixth of the block's bytes
                # on the 1 GB mix, and the second process is left the building
                picked = extract.select(item, _blockwise)
                self._conn.send_bytes(b"E")
                self._conn.send_bytes("\0".join(picked).encode())
                for records in picked.values():
                    buf = pa.BufferOutputStream()
                    with pa.ipc.new_stream(buf, records.schema) as w:
                        w.write_table(records)
                    self._conn.send_bytes(memoryview(buf.getvalue()))
            except Exception as e:  # noqa: BLE001 - said by wait()
                self._failed = e

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


def _blockwise(group: str) -> bool:
    return extract.EXTRACTORS[group].blockwise


def blockwise_tables() -> set[str]:
    """The derived tables built block by block (:attr:`kitlib.extract.Extractor.blockwise`)."""
    return {name for name, ex in extract.EXTRACTORS.items() if ex.blockwise}
