"""Live capture from a running cluster with kafka-python, written into a bundle the ingest core
reads (JSON lines, parsed by :mod:`kitlib.formats.capture`).

- :func:`capture`: cluster metadata, broker and topic configs (secrets redacted), log-dir sizes
  per partition, consumer groups with committed offsets, end offsets and lag, API versions.
- :func:`probe_consume`: read a topic for N seconds or N MB with a chosen client ``api_version``
  and record MB/s per interval (seed 000: an old client makes the broker down-convert).
- :func:`probe_codecs`: produce the same sample of records with each codec and record producer
  MB/s, compression ratio and bytes on disk (seed 002).

Security settings (``security_protocol``, ``sasl_*``, ``ssl_*``) pass straight to kafka-python
and are never written to the bundle.

Example:
    >>> from kitlib.capture import capture, probe_consume
    >>> capture("127.0.0.1:9092", "incident/live")                                  # doctest: +SKIP
    >>> probe_consume("127.0.0.1:9092", "orders", "incident/live", api_version=(0, 9))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kitlib.redact import redact_value

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Writer:
    """Appends capture records as JSON lines (a header line first) to a new file: when ``path``
    exists (a second capture in the same second, a file of the user's) the next free name
    ``<stem>-2.jsonl``, ... is taken, so no file already in the bundle is ever replaced."""

    def __init__(self, path: Path, what: str, bootstrap: str):
        from kitlib.guard import new_file

        self.path, self.fh = new_file(path)
        self.write_raw({"kit_capture": 1, "kind": "header", "what": what, "bootstrap": bootstrap, "ts": _now()})

    def write_raw(self, rec: dict) -> None:
        self.fh.write(json.dumps(rec, default=str, sort_keys=True) + "\n")

    def row(self, kind: str, **fields) -> None:
        fields.setdefault("ts", _now())
        self.write_raw({"kind": kind, **fields})

    def close(self) -> Path:
        self.fh.close()
        return self.path


def _admin(bootstrap: str, client_kw: dict):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="kitlib-capture", request_timeout_ms=30000, **client_kw
    )


def _is_default(meta: dict) -> bool:
    """Whether a described config is at Kafka's default (not set by the broker's properties
    file, a dynamic update or a topic override)."""
    from kafka.admin._configs import ConfigSourceType

    src = meta.get("config_source")
    if src is None:
        return bool(meta.get("is_default", False))
    try:
        return ConfigSourceType.build_from(src) is ConfigSourceType.DEFAULT_CONFIG
    except (ValueError, KeyError, TypeError):
        return False


def capture(
    bootstrap: str, out: str | Path, groups: list[str] | None = None, all_configs: bool = False, **client_kw
) -> Path:
    """Capture cluster facts into ``out/capture-<time>.jsonl``; returns the file.

    ``all_configs`` includes default-valued configs (otherwise every config that is not at its
    default: static broker settings from server.properties, dynamic updates, topic overrides).
    ``groups`` limits the consumer groups (default: all)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    out = Path(out)
    w = _Writer(out / f"capture-{time.strftime('%Y%m%d-%H%M%S')}.jsonl", "cluster", bootstrap)
    admin = _admin(bootstrap, client_kw)
    try:
        cl = admin.describe_cluster()
        for b in cl.get("brokers", []):
            w.row(
                "brokers",
                cluster_id=cl.get("cluster_id"),
                broker_id=b["broker_id"],
                broker_host=b["host"],
                port=b["port"],
                rack=b.get("rack"),
                controller=b["broker_id"] == cl.get("controller_id"),
            )
        broker_ids = [b["broker_id"] for b in cl.get("brokers", [])]
        topics = sorted(t for t in admin.list_topics())
        res = [ConfigResource(ConfigResourceType.BROKER, str(i)) for i in broker_ids]
        res += [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics]
        # "all", then keep what is not at Kafka's default: kafka-python's "modified" filter also drops
        # static broker configs, which is every setting a broker's server.properties makes
        got = admin.describe_configs(res, config_filter="all")
        for scope, entities in got.items():
            for entity, cfg in entities.items():
                for key, meta in sorted(cfg.items()):
                    if not all_configs and _is_default(meta):
                        continue
                    value = "[hidden]" if meta.get("is_sensitive") else redact_value(key, meta.get("value"))
                    w.row(
                        "configs",
                        source="live",
                        scope=scope,
                        entity=str(entity),
                        key=key,
                        value=value,
                        config_source=str(meta.get("config_source", "")),
                    )
        for entry in admin.describe_log_dirs():
            for d in entry.get("log_dirs", []):
                for t in d.get("topics", []):
                    for p in t.get("partitions", []):
                        w.row(
                            "log_dirs",
                            broker_id=entry["broker"],
                            log_dir=d["log_dir"],
                            topic=t["name"],
                            partition=p["partition_index"],
                            size_bytes=p["partition_size"],
                            offset_lag=p["offset_lag"],
                            is_future=p.get("is_future_key", False),
                        )
        for key, (lo, hi) in sorted(admin.api_versions().items(), key=lambda kv: int(kv[0])):
            w.row(
                "api_versions",
                api_key=int(key),
                api_name=getattr(key, "name", str(key)),
                min_version=lo,
                max_version=hi,
            )
        for row in lag_rows(admin, bootstrap, groups, client_kw):
            w.row("consumer_lag", **row)
    finally:
        admin.close()
    return w.close()


def lag_rows(admin, bootstrap: str, groups: list[str] | None, client_kw: dict, consumer=None) -> list[dict]:
    """One lag snapshot: a row per (group, partition) with the committed offset, the log end
    offset, the lag, the group's state and the member the partition is assigned to (the columns
    of ``kafka-consumer-groups.sh --describe``). Assigned partitions without a committed offset
    have ``committed`` None. ``consumer`` (a group-less KafkaConsumer) is reused when given."""
    from kafka import KafkaConsumer, TopicPartition

    known = sorted(g["group_id"] for g in admin.list_groups())
    # a named group that does not exist (yet) has no rows: asking its coordinator would create the
    # offsets topic and wait on its loading
    group_ids = known if groups is None else [g for g in groups if g in known]
    if not group_ids:
        return []
    offsets = admin.list_group_offsets({g: None for g in group_ids})
    described = admin.describe_groups(group_ids)
    owners: dict[tuple[str, TopicPartition], dict] = {}
    for g, d in described.items():
        for m in d.get("members") or []:
            for a in (m.get("member_assignment") or {}).get("assigned_partitions") or []:
                for part in a["partitions"]:
                    owners[(g, TopicPartition(a["topic"], part))] = m
    keys = {(g, tp) for g, o in offsets.items() for tp in o} | set(owners)
    tps = sorted({tp for _, tp in keys}, key=lambda tp: (tp.topic, tp.partition))
    ends = {}
    if tps:
        c = consumer or KafkaConsumer(bootstrap_servers=bootstrap, client_id="kitlib-capture", **client_kw)
        try:
            ends = c.end_offsets(tps)
        finally:
            if consumer is None:
                c.close()
    rows = []
    for g, tp in sorted(keys, key=lambda k: (k[0], k[1].topic, k[1].partition)):
        om = offsets.get(g, {}).get(tp)
        committed = om.offset if om is not None and om.offset >= 0 else None
        end = ends.get(tp)
        m = owners.get((g, tp), {})
        rows.append(
            {
                "group": g,
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": committed,
                "end_offset": end,
                "lag": None if end is None or committed is None else end - committed,
                "group_state": described.get(g, {}).get("group_state"),
                "consumer_id": m.get("member_id"),
                "client_id": m.get("client_id"),
                "member_host": m.get("client_host"),
            }
        )
    return rows


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
    w = _Writer(out / f"lag-{time.strftime('%Y%m%d-%H%M%S')}.jsonl", "consumer_lag_series", bootstrap)
    admin = consumer = None
    done, interrupted = 0, False
    try:
        admin = _admin(bootstrap, client_kw)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="kitlib-capture", **client_kw)
        start = time.monotonic()
        while count is None or done < count:
            ts = _now()
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
    w = _Writer(out / f"probe-{probe_id}.jsonl", "probe_throughput", bootstrap)
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
    w = _Writer(out / f"probe-codecs-{run}.jsonl", "probe_codecs", bootstrap)
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
