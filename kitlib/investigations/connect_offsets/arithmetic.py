"""The producer drain arithmetic behind Kafka Connect source offset commits that time out.

Why commits time out: a source task hands every polled record to its KafkaProducer and keeps it
"outstanding" until the broker acknowledges it. A 2.x offset commit waits for all of them to be
acknowledged within ``offset.flush.timeout.ms`` (default 5000). With one partition and
``max.in.flight.requests.per.connection=1`` (the usual CDC set-up) each produce request carries a
single batch, so the drain rate is ``batch.size / record size`` records per round trip. Seed 001's
figures: 16384-byte batches held ~23 records (~712 bytes each); 48437 outstanding records need
~2106 requests; the log shows 48437 - 31120 = 17317 records acknowledged in the 5 s window, i.e.
~753 requests in 5 s: **~6.6 ms per round trip** (that is the assumption the model carries
forward: the round trip per request does not change when requests get bigger, which the
seed's after-change commit max time of ~60 ms supports). Draining 48437 takes ~14 s > 5 s;
with ``batch.size=327680`` (x20) a request carries ~460 records and the same backlog drains in
~0.7 s.

Pure functions (unit-tested): :func:`records_per_request`, :func:`record_bytes`,
:func:`round_trip_s`, :func:`drain_time_s`, :func:`what_if`; the producer and worker defaults
they fall back on. The figures of one task come from :mod:`.model`, the detector that uses them
is in :mod:`.detector`.

Example:
    >>> rpr = records_per_request(16384, 712)
    >>> round(rpr, 1), round(records_per_request(327680, 712))
    (23.0, 460)
    >>> rtt = round_trip_s(48437, 31120, 5000, rpr)
    >>> round(rtt * 1000, 1), round(drain_time_s(48437, rpr, rtt), 1)
    (6.6, 14.0)
"""

from __future__ import annotations

import math

import pandas as pd

DEFAULT_FLUSH_TIMEOUT_MS = 5000
DEFAULT_BATCH_SIZE = 16384
DEFAULT_MAX_REQUEST_SIZE = 1048576
DEFAULT_IN_FLIGHT = 5


def records_per_request(
    batch_size: float, record_bytes: float, partitions: int = 1, max_request_size: float = DEFAULT_MAX_REQUEST_SIZE
) -> float:
    """Records one produce request carries when the producer has a backlog (batches are full):
    ``batch.size / record size`` per partition batch, times the partition batches that fit in
    one request (one per partition led by the same broker, up to ``max.request.size``).

    Example:
        >>> round(records_per_request(16384, 712), 1), round(records_per_request(16384, 712, partitions=4), 1)
        (23.0, 92.0)
    """
    batch = min(float(batch_size), float(max_request_size))
    per_batch = max(1.0, batch / max(float(record_bytes), 1.0))
    batches = max(1, min(int(partitions), int(max_request_size // max(batch, 1.0))))
    return per_batch * batches


def record_bytes(batch_size: float, records_per_req: float) -> float:
    """Average record size implied by full batches: ``batch.size / records per request``.

    Example:
        >>> round(record_bytes(16384, 23))
        712
    """
    return float(batch_size) / max(float(records_per_req), 1e-9)


def round_trip_s(
    outstanding: float, remaining: float, timeout_ms: float, records_per_req: float, in_flight: int = 1
) -> float:
    """Seconds per produce round trip implied by a timed-out flush: ``outstanding - remaining``
    records were acknowledged during ``timeout_ms``, ``records_per_req`` at a time, with
    ``in_flight`` requests pipelined.

    Example:
        >>> round(round_trip_s(48437, 31120, 5000, 23) * 1000, 2)
        6.64
    """
    drained = max(float(outstanding) - float(remaining), 1.0)
    requests = drained / max(float(records_per_req), 1e-9)
    return (float(timeout_ms) / 1000.0) * max(int(in_flight), 1) / requests


def drain_time_s(
    outstanding: float, records_per_req: float, rtt_s: float, in_flight: int = 1, linger_ms: float = 0.0
) -> float:
    """Seconds to get ``outstanding`` records acknowledged: requests needed x round trip,
    divided by the requests in flight. ``linger.ms`` only delays a batch that is not full, so
    under a backlog it adds at most one linger (the last, partial batch).

    Example:
        >>> round(drain_time_s(48437, 460, 0.00664), 2)
        0.7
    """
    if outstanding <= 0:
        return 0.0
    requests = math.ceil(float(outstanding) / max(float(records_per_req), 1e-9))
    t = requests * float(rtt_s) / max(int(in_flight), 1)
    if outstanding % max(records_per_req, 1) and linger_ms:
        t += float(linger_ms) / 1000.0
    return t


def what_if(
    outstanding: float,
    batch_size: float,
    records_per_req: float,
    rtt_s: float,
    timeout_ms: float = DEFAULT_FLUSH_TIMEOUT_MS,
    in_flight: int = 1,
    linger_ms: float = 0,
    new_batch_size: float | None = None,
    new_linger_ms: float | None = None,
    max_request_size: float = DEFAULT_MAX_REQUEST_SIZE,
    partitions: int = 1,
) -> pd.DataFrame:
    """Current vs proposed producer settings: records per request, requests and time to drain
    ``outstanding`` records, and whether that fits in ``offset.flush.timeout.ms``.
    ``new_batch_size`` defaults to 20 x the current batch.size (capped by max.request.size).

    Example:
        >>> t = what_if(48437, 16384, 23, 0.00664)
        >>> t["drain_s"].round(1).tolist(), t["fits_timeout"].tolist()
        ([14.0, 0.7], [False, True])
    """
    rb = record_bytes(batch_size, records_per_req / max(1, min(partitions, int(max_request_size // batch_size))))
    nb = float(new_batch_size) if new_batch_size else min(float(batch_size) * 20, float(max_request_size))
    nl = float(linger_ms if new_linger_ms is None else new_linger_ms)
    rows = []
    for label, b, lg in (("current", float(batch_size), float(linger_ms)), ("proposed", nb, nl)):
        rpr = records_per_req if label == "current" else records_per_request(b, rb, partitions, max_request_size)
        d = drain_time_s(outstanding, rpr, rtt_s, in_flight, lg)
        rows.append(
            {
                "setting": label,
                "batch.size": int(b),
                "linger.ms": int(lg),
                "max.in.flight": int(in_flight),
                "records_per_request": round(rpr, 1),
                "outstanding": int(outstanding),
                "requests_to_drain": int(math.ceil(outstanding / max(rpr, 1e-9))) if outstanding > 0 else 0,
                "round_trip_ms": round(rtt_s * 1000, 2),
                "drain_s": d,
                "timeout_s": float(timeout_ms) / 1000.0,
                "fits_timeout": d <= float(timeout_ms) / 1000.0,
            }
        )
    return pd.DataFrame(rows)
