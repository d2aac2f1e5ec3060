"""How the kit's processes hold memory and give it back."""

from __future__ import annotations

import ctypes
import gc


def release_memory(collect: bool = False) -> None:
    """Give back to the system what this process no longer holds: the freed buffers Arrow's pool
    keeps and the C allocator's free memory (glibc keeps both otherwise, and the next step's
    peak lands on top of them); with ``collect``, Python's unreachable objects collected first
    (a pass over every object: between a report's steps, not an ingest's)."""
    if collect:
        gc.collect()
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - only memory given back late
        pass
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to do
        pass


def lean_allocator() -> None:
    """Set the process's allocators for a long ingest. Called by the ``kitlib ingest`` command, by
    the worker processes the kit starts for an ingest (a raw bundle's ingest, the blockwise
    builder) and by ``kitlib triage`` before it reads a store (the page faults of the default
    pool's fresh memory were a third of the 1 GB mix's biggest detector), not by the library (the
    allocator is the whole process's choice).

    - Arrow allocates from jemalloc (when this pyarrow has it): it holds less memory than the
      default allocator at the same speed, 237-244 MB peak against 270-278 MB on the 1 GB
      benchmark log.
    - glibc's malloc keeps the blocks of log it hands out (a few MiB each) in its heap instead
      of mapping fresh pages for every one and giving them back after: the kernel had been
      zeroing a gigabyte of new pages per gigabyte read. On the 1 GB log: 11 % less CPU and 10 %
      less wall time for 12 MB more peak memory. Up to 16 MiB of free memory is kept at the top of
      each of glibc's arenas (the parse, match and write threads have one each): 128 MiB kept
      about 20 MB more on the 1 GB log for no CPU saved.
    - Python's cyclic collector leaves alone the objects made so far (the imports' modules,
      functions and classes, ~60,000 objects): ``gc.freeze``, so that each of its full passes
      during the ingest walks only what the ingest made (about 0.1 CPU s a GB of those passes)."""
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, AttributeError, pa.ArrowException):  # a pyarrow built without jemalloc
        pass
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks below 32 MiB come from the heap
        libc.mallopt(-1, 16 << 20)  # M_TRIM_THRESHOLD: up to 16 MiB of free heap is kept (each arena)
    except (OSError, AttributeError):  # not glibc
        pass
    gc.freeze()


def give_back_at_once() -> None:
    """Have Arrow's jemalloc hand back freed memory to the system at once rather than about a second
    later (its decay set to 0): for a process that reads stored tables and runs detectors on them,
    whose arrays are made right after a read let go of what it decoded. On the dense incident the
    cluster lane's peak fell from 496-508 to 479-498 MB at the same speed. Not for an ingest, whose
    blocks come and go many times a second."""
    import pyarrow as pa

    try:
        pa.jemalloc_set_decay_ms(0)
    except (NotImplementedError, AttributeError, pa.ArrowException):  # a pyarrow built without jemalloc
        pass
