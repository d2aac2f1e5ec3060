"""A triage's detectors run in two processes (:func:`kitlib.findings.triage` with ``jobs=2``).

The detectors are taken in units (the detectors of one investigation, which share its tables and
models), and each process takes the next unit not yet taken until none is left: a unit runs in one
process only, so a model its detectors share is computed once. The process that started the triage
forks a second one once the bundle is open; what the second one found comes back pickled through a
pipe, and every detector's result goes back in the order of one process's triage, so the findings,
their order and the runs are those of a triage in one process. A unit whose result never came back
(the second process died) runs in the first.

Units are handed out through a pipe holding their numbers, four bytes each, written before the
fork: a read of four bytes from a pipe is whole, so two processes reading it never take the same
unit.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from collections.abc import Callable, Sequence

_NUMBER = struct.Struct("<i")


def usable(jobs: int) -> bool:
    """Whether a triage asked for ``jobs`` processes runs in two: more than one asked for, more
    than one core, and ``os.fork`` (not on Windows)."""
    return jobs > 1 and hasattr(os, "fork") and (os.cpu_count() or 1) > 1


def run_units(units: Sequence, run_unit: Callable[[int], object]) -> list:
    """``[run_unit(0), run_unit(1), ...]`` for every unit of ``units``, each computed in one of two
    processes (this one and a fork of it); ``run_unit``'s result must pickle."""
    n = len(units)
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
        with os.fdopen(back_r, "rb") as inp:
            data = inp.read()
        os.waitpid(pid, 0)
    try:
        done.update(pickle.loads(data) if data else {})
    except Exception:  # noqa: BLE001 - a result cut short: its units run here
        pass
    return [done[i] if i in done else run_unit(i) for i in range(n)]


def _take(tasks: int, run_unit: Callable[[int], object]) -> dict:
    """Run the units read from pipe ``tasks`` one after the other until it is empty."""
    got = {}
    while True:
        b = os.read(tasks, _NUMBER.size)
        if len(b) < _NUMBER.size:
            return got
        i = _NUMBER.unpack(b)[0]
        got[i] = run_unit(i)
