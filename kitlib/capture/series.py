"""A consumer-lag history: a lag snapshot every few seconds into one file (``kitlib capture
--every``), which loads as one ``consumer_lag`` table.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kitlib.capture.admin import admin_client
from kitlib.capture.snapshot import lag_rows
from kitlib.capture.writer import Writer, now


@dataclass
class LagSeries:
    """What :func:`capture_lag_series` wrote: the file, how many snapshots and whether it was
    stopped (Ctrl-C) before ``count`` was reached."""

    path: Path
    snapshots: int
    interrupted: bool = False


def capture_lag_series(
    bootstrap: str,
    out: str | Path,
    every: float,
    count: int | None = None,
    groups: list[str] | None = None,
    progress=None,
    stop: threading.Event | None = None,
    **client_kw,
) -> LagSeries:
    """Take a consumer-lag snapshot every ``every`` seconds, ``count`` times (None: until Ctrl-C,
    or until ``stop`` is set), into ``out/lag-<time>.jsonl``. Every row of a snapshot carries the
    snapshot's time in ``ts``, so the file loads as one ``consumer_lag`` table (one snapshot per
    distinct ``ts``). Each snapshot is written whole and flushed before the next starts; Ctrl-C
    keeps every finished one. ``progress`` is called with (number, time, rows, total lag) after
    each snapshot. With ``stop`` (what ``kitlib capture`` passes, set by its Ctrl-C and SIGTERM
    handlers) the series ends after the snapshot under way, and nothing interrupts the Kafka client
    in the middle of a call: an interrupt raised inside it could leave ``close()`` waiting for ever.

    Example:
        >>> capture_lag_series("127.0.0.1:9092", "incident/live", every=10, count=30)  # doctest: +SKIP
        LagSeries(path=PosixPath('incident/live/lag-20261123-114500.jsonl'), snapshots=30, interrupted=False)
    """
    from kafka import KafkaConsumer

    if every <= 0 or (count is not None and count < 1):
        raise ValueError("--every must be > 0 seconds and --count at least 1")
    out = Path(out)
    w = Writer(out / f"lag-{time.strftime('%Y%m%d-%H%M%S')}.jsonl", "consumer_lag_series", bootstrap)
    admin = consumer = None
    done, interrupted = 0, False
    try:
        admin = admin_client(bootstrap, client_kw)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="kitlib-capture", **client_kw)
        start = time.monotonic()
        while count is None or done < count:
            ts = now()
            rows = lag_rows(admin, bootstrap, groups, client_kw, consumer)
            # a snapshot reaches the file whole or not at all (one write, then flushed)
            w.fh.write(
                "".join(
                    json.dumps({"kind": "consumer_lag", "ts": ts, **r}, default=str, sort_keys=True) + "\n"
                    for r in rows
                )
            )
            w.fh.flush()
            done += 1
            if progress:
                progress(done, ts, len(rows), sum(r["lag"] or 0 for r in rows))
            if count is not None and done >= count:
                break
            wait = max(0.0, start + done * every - time.monotonic())
            if stop is None:
                time.sleep(wait)
            elif stop.wait(wait):
                break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for c in (consumer, admin):
            if c is not None:
                c.close()
    return LagSeries(w.close(), done, interrupted or (stop is not None and stop.is_set()))
