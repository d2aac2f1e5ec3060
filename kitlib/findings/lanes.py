"""A triage's detectors run in two processes (:func:`kitlib.findings.triage` with ``jobs=2``).

The detectors are taken in units (the detectors of one investigation, which share its tables and
models), and each process takes the next unit not yet taken until none is left: a unit runs in one
process only, so a model its detectors share is computed once. The process that started the triage
forks a second one once the bundle is open; what the second one found comes back pickled through a
pipe, and every detector's result goes back in the order of one process's triage, so the findings,
their order and the runs are those of a triage in one process. A unit whose result never came back
(the second process died, or stayed silent long after the first ran out of units) runs in the
first.

Units are handed out through a pipe holding their numbers, four bytes each, written before the
fork: a read of four bytes from a pipe is whole, so two processes reading it never take the same
unit.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Sequence

_NUMBER = struct.Struct("<i")


def usable(jobs: int) -> bool:
    """Whether a triage asked for ``jobs`` processes runs in two: more than one asked for, more
    than one core, and ``os.fork`` (not on Windows)."""
    return jobs > 1 and hasattr(os, "fork") and (os.cpu_count() or 1) > 1


# how long the first process waits for the second once it ran out of units: this many seconds, or
# this many times what it took to get there, whichever is longer; then the second is stopped and
# its units run in the first (a fork of a process running threads can hang on a lock one of them
# held: the triage is then slower, never stuck)
PATIENCE_S = 120.0
PATIENCE_TIMES = 4.0


def run_units(units: Sequence, run_unit: Callable[[int], object], patience: float | None = None) -> list:
    """``[run_unit(0), run_unit(1), ...]`` for every unit of ``units``, each computed in one of two
    processes (this one and a fork of it); ``run_unit``'s result must pickle. ``patience``: the
    seconds the second process may stay silent after this one ran out of units (default: see
    :data:`PATIENCE_S`)."""
    n = len(units)
    started = time.monotonic()
    tasks_r, tasks_w = os.pipe()
    os.write(tasks_w, b"".join(_NUMBER.pack(i) for i in range(n)))  # a few bytes: never blocks
    os.close(tasks_w)
    back_r, back_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered here is written twice
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    pid = os.fork()
    if pid == 0:  # the second process: its units' results onto the pipe, then gone without cleanup
        code = 1
        try:
            os.close(back_r)
            got = _take(tasks_r, run_unit)
            with os.fdopen(back_w, "wb") as out:
                out.write(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
            code = 0
        finally:
            os._exit(code)
    os.close(back_w)
    try:
        done = _take(tasks_r, run_unit)
    finally:
        os.close(tasks_r)
        if patience is None:
            patience = max(PATIENCE_S, PATIENCE_TIMES * (time.monotonic() - started))
        data = _collect(back_r, pid, patience)
    try:
        done.update(pickle.loads(data) if data else {})
    except Exception:  # noqa: BLE001 - a result cut short: its units run here
        pass
    return [done[i] if i in done else run_unit(i) for i in range(n)]


def _collect(back: int, pid: int, patience: float) -> bytes:
    """All the second process (``pid``) writes onto pipe ``back`` until it closes it, then the
    process reaped; nothing when it stays silent ``patience`` seconds (it is then killed)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + patience
    with os.fdopen(back, "rb", buffering=0) as inp:
        while True:
            ready, _, _ = select.select([inp], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:  # silent too long: stopped, and what it wrote so far is not used
                os.kill(pid, signal.SIGKILL)
                chunks = []
                break
            got = inp.read(1 << 20)
            if not got:
                break
            chunks.append(got)
    os.waitpid(pid, 0)
    return b"".join(chunks)


def _take(tasks: int, run_unit: Callable[[int], object]) -> dict:
    """Run the units read from pipe ``tasks`` one after the other until it is empty."""
    got: dict[int, object] = {}
    while True:
        b = os.read(tasks, _NUMBER.size)
        if len(b) < _NUMBER.size:
            return got
        i = _NUMBER.unpack(b)[0]
        got[i] = run_unit(i)
