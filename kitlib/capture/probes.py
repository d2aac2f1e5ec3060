"""Active measurements against a cluster: consume throughput with a chosen client protocol
version (:func:`probe_consume`), and each codec's producer MB/s, ratio and bytes on disk for a
sample of records (:func:`probe_codecs`).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from kitlib.capture.writer import Writer

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def probe_consume(
    bootstrap: str,
    topic: str,
    out: str | Path,
    api_version: tuple | None = None,
    seconds: float = 20,
    max_mb: float | None = None,
    interval_s: float = 1.0,
    probe_id: str | None = None,
    **client_kw,
) -> Path:
    """Read ``topic`` from the beginning for ``seconds`` (or until ``max_mb`` MB, or the end)
    with a client speaking ``api_version`` (e.g. ``(0, 9)``: Fetch v1, which makes a 3.x broker
    down-convert) and record bytes, records and MB/s per interval."""
    from kafka import KafkaConsumer, TopicPartition

    out = Path(out)
    ver = ".".join(map(str, api_version)) if api_version else "auto"
    probe_id = probe_id or f"consume-{topic}-{ver}-{uuid.uuid4().hex[:6]}"
    client_id = f"kitlib-probe-{ver}"
    w = Writer(out / f"probe-{probe_id}.jsonl", "probe_throughput", bootstrap)
    kw = dict(
        bootstrap_servers=bootstrap,
        client_id=client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client_kw,
    )
    if api_version:
        kw["api_version"] = tuple(api_version)
    c = KafkaConsumer(**kw)
    try:
        parts = c.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            raise ValueError(f"topic {topic!r} not found")
        c.assign(tps)
        c.seek_to_beginning(*tps)
        ends = c.end_offsets(tps)
        t0 = time.monotonic()
        tick, n_bytes, n_rec, total = t0, 0, 0, 0
        while True:
            batch = c.poll(timeout_ms=200)
            for recs in batch.values():
                for r in recs:
                    size = (len(r.value) if r.value else 0) + (len(r.key) if r.key else 0)
                    n_bytes += size
                    total += size
                    n_rec += 1
            now = time.monotonic()
            done = (
                now - t0 >= seconds
                or (max_mb and total >= max_mb * 1e6)
                or all(c.position(tp) >= ends[tp] for tp in tps)
            )
            if now - tick >= interval_s or done:
                dt = max(now - tick, 1e-6)
                w.row(
                    "probe_throughput",
                    probe=probe_id,
                    topic=topic,
                    api_version=ver,
                    client_id=client_id,
                    elapsed_s=round(now - t0, 3),
                    interval_s=round(dt, 3),
                    records=n_rec,
                    bytes=n_bytes,
                    mb_per_s=round(n_bytes / dt / 1e6, 3),
                )
                tick, n_bytes, n_rec = now, 0, 0
            if done:
                break
    finally:
        c.close()
    return w.close()


def read_sample(path: str | Path, limit: int = 20000) -> list[bytes]:
    """Record values from a sample file: one per line (JSON lines, CSV, text), at most ``limit``."""
    vals = [ln for ln in Path(path).read_bytes().splitlines() if ln.strip()]
    if not vals:
        raise ValueError(f"{path}: no records in the sample")
    return vals[:limit]


def probe_codecs(
    bootstrap: str,
    sample: str | Path,
    out: str | Path,
    codecs=CODECS,
    repeat: int = 1,
    topic_prefix: str = "kitlib-codec-probe",
    **client_kw,
) -> Path:
    """Produce the same sample records once per codec (to a fresh topic each) and record producer
    MB/s, bytes on disk and the compression ratio (raw bytes / bytes on disk)."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    out = Path(out)
    values = read_sample(sample) * repeat
    raw = sum(len(v) for v in values)
    run = uuid.uuid4().hex[:6]
    w = Writer(out / f"probe-codecs-{run}.jsonl", "probe_codecs", bootstrap)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kitlib-probe", **client_kw)
    try:
        for codec in codecs:
            topic = f"{topic_prefix}-{run}-{codec}"
            admin.create_topics([NewTopic(topic, 1, 1)])
            p = KafkaProducer(
                bootstrap_servers=bootstrap,
                client_id=f"kitlib-probe-{codec}",
                compression_type=None if codec == "none" else codec,
                linger_ms=5,
                batch_size=262144,
                acks=1,
                enable_idempotence=False,
                **client_kw,
            )
            try:
                t = time.perf_counter()
                for v in values:
                    p.send(topic, v)
                p.flush()
                dt = time.perf_counter() - t
            finally:
                p.close()
            on_disk = _topic_bytes(admin, topic)
            w.row(
                "probe_codecs",
                codec=codec,
                topic=topic,
                records=len(values),
                raw_bytes=raw,
                seconds=round(dt, 4),
                mb_per_s=round(raw / dt / 1e6, 3),
                bytes_on_disk=on_disk,
                ratio=round(raw / on_disk, 3) if on_disk else None,
            )
    finally:
        admin.close()
    return w.close()


def _topic_bytes(admin, topic: str, timeout: float = 10) -> int:
    deadline = time.monotonic() + timeout
    size = 0
    while time.monotonic() < deadline:
        size = sum(
            p["partition_size"]
            for e in admin.describe_log_dirs()
            for d in e.get("log_dirs", [])
            for t in d.get("topics", [])
            if t["name"] == topic
            for p in t.get("partitions", [])
        )
        if size:
            return size
        time.sleep(0.3)
    return size
