"""Steady produce load for lab scenarios: a kafka-python producer with ``acks=all`` in a
background thread, sending keyed JSON-ish records at a set rate and counting what the cluster
acknowledged and what failed (by exception name).

Example:
    >>> from kitlib.lab.load import ProduceLoad
    >>> with ProduceLoad("127.0.0.1:9092", "orders", rate=400) as load:   # doctest: +SKIP
    ...     time.sleep(10)
    >>> load.stats.acked                                                    # doctest: +SKIP
    4000
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class LoadStats:
    """What a load run sent and what came back."""

    sent: int = 0
    acked: int = 0
    failed: int = 0
    errors: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def line(self) -> str:
        errs = ", ".join(f"{k} x{v}" for k, v in self.errors.most_common()) or "none"
        return (
            f"{self.sent} records sent in {self.seconds:.0f} s, {self.acked} acknowledged (acks=all), "
            f"{self.failed} failed ({errs})"
        )


class ProduceLoad:
    """Produce ``rate`` records a second of ``size`` bytes to ``topic`` until stopped."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        rate: int = 400,
        size: int = 300,
        client_id: str = "orders-service",
        keys: int = 1000,
        **producer_kw,
    ):
        self.bootstrap, self.topic, self.rate, self.size = bootstrap, topic, rate, size
        self.client_id, self.keys, self.producer_kw = client_id, keys, producer_kw
        self.stats = LoadStats()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProduceLoad:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> ProduceLoad:
        from kafka import KafkaProducer

        kw = {
            "acks": "all",
            "linger_ms": 5,
            "retries": 2_147_483_647,
            "request_timeout_ms": 15000,
            "retry_backoff_ms": 200,
            "max_block_ms": 30000,
        }
        kw.update(self.producer_kw)
        self._producer = KafkaProducer(bootstrap_servers=self.bootstrap, client_id=self.client_id, **kw)
        self._thread = threading.Thread(target=self._run, name=f"load-{self.topic}", daemon=True)
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _ok(self, _meta) -> None:
        with self._lock:
            self.stats.acked += 1

    def _err(self, exc) -> None:
        with self._lock:
            self.stats.failed += 1
            self.stats.errors[type(exc).__name__] += 1

    def _run(self) -> None:
        from kafka.errors import KafkaError

        per_tick = max(1, self.rate // 20)
        i = 0
        next_tick = time.monotonic()
        while not self._stop.is_set():
            for _ in range(per_tick):
                body = b'{"order":%d,"status":"paid","amount":%d}' % (i, i % 997)
                try:
                    f = self._producer.send(
                        self.topic, key=b"customer-%d" % (i % self.keys), value=body.ljust(self.size)
                    )
                except KafkaError as e:  # a send that cannot even be queued (buffer full, metadata timeout)
                    self._err(e)
                else:
                    f.add_callback(self._ok)
                    f.add_errback(self._err)
                self.stats.sent += 1
                i += 1
            next_tick += 0.05
            self._stop.wait(max(0.0, next_tick - time.monotonic()))

    def stop(self, timeout: float = 60) -> LoadStats:
        """Stop sending, wait up to ``timeout`` for outstanding acknowledgements, close."""
        if self._thread is None:
            return self.stats
        self._stop.set()
        self._thread.join(timeout)
        self._producer.flush(timeout=timeout)
        self._producer.close(timeout=10)
        self.stats.seconds = time.monotonic() - self._t0
        self._thread = None
        return self.stats
