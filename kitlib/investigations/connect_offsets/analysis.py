"""Kafka Connect source offset commits that time out: the producer drain model and its detector.

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
:func:`round_trip_s`, :func:`drain_time_s`, :func:`what_if`. Detector: ``offset-commit-timeouts``.

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
from dataclasses import dataclass

import pandas as pd

from kitlib import findings, tables  # noqa: F401  (tables: the examples use it)
from kitlib.extract.configs import latest
from kitlib.investigations.connect_offsets import commits as _commits  # noqa: F401  (declares the commits table)
from kitlib.window import Window

DEFAULT_FLUSH_TIMEOUT_MS = 5000
DEFAULT_BATCH_SIZE = 16384
DEFAULT_MAX_REQUEST_SIZE = 1048576
DEFAULT_IN_FLIGHT = 5
ASSUMED_RECORD_BYTES = 1024  # used only when neither metrics nor the user give a record size
WORKER_SCOPES = ("DistributedConfig", "StandaloneConfig", "WorkerConfig")


# ----------------------------------------------------------------------------- model
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


# ----------------------------------------------------------------------------- inputs from a bundle
def _table(bundle, name: str) -> pd.DataFrame:
    try:
        return bundle.table(name)
    except AttributeError:
        return pd.DataFrame()


def _num(v, default=None):
    try:
        x = float(str(v).strip())
        return x if math.isfinite(x) else default
    except (TypeError, ValueError):
        return default


def producer_client_id(connector: str, task: int) -> str:
    """The client.id Connect gives a source task's producer.

    Example:
        >>> producer_client_id("orders", 0)
        'connector-producer-orders-0'
    """
    return f"connector-producer-{connector}-{task}"


def producer_settings(configs: pd.DataFrame, connector: str, task: int, before=None) -> dict:
    """The task's producer config (last ProducerConfig dump before ``before``), with the rows
    it came from under ``_rows``: the dump of ``connector-producer-<conn>-<task>``, else a
    producer whose client.id names the connector, else the only producer in the bundle."""
    if configs is None or configs.empty:
        return {}
    p = configs[configs["scope"] == "ProducerConfig"]
    if before is not None:
        p = p[p["ts"] <= before]
    if p.empty:
        return {}
    ents = p["entity"].astype(str)
    cid = producer_client_id(connector, task)
    pick = p[ents == cid]
    if pick.empty:
        pick = p[ents.str.contains(connector, regex=False)]
    if pick.empty and ents.nunique() == 1:
        pick = p
    if pick.empty:
        return {}
    last_ts = pick["ts"].max()
    rows = pick[pick["ts"] == last_ts]
    out = dict(zip(rows["key"].astype(str), rows["value"].astype(str)))
    out["_rows"] = rows
    return out


def flush_timeout_ms(configs: pd.DataFrame, before=None) -> tuple[float, pd.DataFrame]:
    """offset.flush.timeout.ms from the worker config dump (default 5000) and its row."""
    if configs is None or configs.empty:
        return DEFAULT_FLUSH_TIMEOUT_MS, pd.DataFrame()
    w = configs[configs["scope"].isin(WORKER_SCOPES) & (configs["key"] == "offset.flush.timeout.ms")]
    if before is not None and (w["ts"] <= before).any():
        w = w[w["ts"] <= before]
    if w.empty:
        return DEFAULT_FLUSH_TIMEOUT_MS, w
    w = w.sort_values("ts").tail(1)
    return _num(w["value"].iloc[0], DEFAULT_FLUSH_TIMEOUT_MS), w


def metric_series(
    metrics: pd.DataFrame,
    attribute: str,
    client_id: str | None = None,
    connector: str | None = None,
    task: int | None = None,
) -> pd.DataFrame:
    """Samples (ts, value, host, file, line) of one metric attribute, filtered by client id or
    connector/task when those columns are present."""
    if metrics is None or metrics.empty or "attribute" not in metrics:
        return pd.DataFrame(columns=["ts", "value"])
    m = metrics[metrics["attribute"] == attribute]
    if client_id is not None and "client_id" in m:
        m = m[m["client_id"] == client_id]
    if connector is not None and "connector" in m:
        m = m[m["connector"] == connector]
    if task is not None and "task" in m:
        m = m[m["task"].astype(str) == str(task)]
    m = m[pd.to_numeric(m["value"], errors="coerce").notna()]
    return m.sort_values("ts")


@dataclass
class AfterChange:
    """The task's producer re-created with another batch.size after the last failure, with every
    later commit going through."""

    since: pd.Timestamp
    batch_size: float
    linger_ms: float | None
    commits_ok: int
    outstanding_max: float  # NaN when the log does not say
    duration_ms_max: float


@dataclass
class DrainModel:
    """What the drain model knows about one source task. ``*_source`` fields say where a
    figure came from; a figure the bundle does not give is NaN (and its source says so)."""

    connector: str
    task: int
    attempts: int
    failed: int
    timeouts: int
    start: pd.Timestamp
    end: pd.Timestamp
    bad: pd.DataFrame  # the failed attempts
    outstanding: float  # messages outstanding at flush (median of the failures)
    outstanding_max: float
    outstanding_source: str
    drained_per_timeout: float
    timeout_ms: float  # offset.flush.timeout.ms
    timeout_rows: pd.DataFrame
    batch_size: float
    linger_ms: float
    in_flight: int
    max_request_size: float
    client_id: str
    producer_rows: pd.DataFrame
    records_per_request: float
    records_per_request_source: str
    round_trip_s: float
    round_trip_source: str
    override_policy: str
    after: AfterChange | None

    @property
    def missing(self) -> list[str]:
        """The figures the model lacks, as the settings or log lines that would give them."""
        out = []
        if math.isnan(self.outstanding):
            out.append(
                "outstanding messages at flush (Kafka 2.x 'flushing N outstanding messages' lines, or the "
                "source-record-active-count-max metric)"
            )
        if math.isnan(self.round_trip_s):
            out.append("the producer's round trip (a timed-out flush that says how many messages remained)")
        return out


def task_model(
    bundle, connector: str, task: int, commits: pd.DataFrame | None = None, record_bytes_hint: float | None = None
) -> DrainModel:
    """Everything the drain model needs for one source task, read from the bundle: the failed
    attempts, outstanding at flush, offset.flush.timeout.ms, the producer's batch.size /
    linger.ms / max.in.flight, records per request (metrics, else estimated), and the round trip
    derived from the timed-out flushes. Keys ending in ``_source`` say where a figure came from."""
    c = commits if commits is not None else bundle.commits
    c = c[(c["connector"] == connector) & (c["task"] == task)]
    bad = c[c["outcome"].isin(["timeout", "failed"])]
    ref = bad if not bad.empty else c
    start, end = ref["ts"].min(), ref["ts"].max()
    configs = _table(bundle, "configs")
    metrics = _table(bundle, "metrics")
    prod = producer_settings(configs, connector, task, before=end)
    timeout, timeout_rows = flush_timeout_ms(configs, before=end)
    batch = _num(prod.get("batch.size"), DEFAULT_BATCH_SIZE)
    linger = _num(prod.get("linger.ms"), 0.0)
    in_flight = int(_num(prod.get("max.in.flight.requests.per.connection"), DEFAULT_IN_FLIGHT))
    max_req = _num(prod.get("max.request.size"), DEFAULT_MAX_REQUEST_SIZE)
    cid = prod.get("client.id") or producer_client_id(connector, task)
    # the metrics around the failing commits: two minutes either side of the first and the last
    pad = pd.Timedelta(minutes=2)
    around = Window(start - pad, end + pad)
    rpr_m = around.frame(metric_series(metrics, "records-per-request-avg", client_id=cid))
    rsz_m = around.frame(metric_series(metrics, "record-size-avg", client_id=cid))
    rpr_vals = pd.to_numeric(rpr_m.get("value", pd.Series(dtype=float)), errors="coerce")
    rpr_vals = rpr_vals[rpr_vals > 0]
    if len(rpr_vals):
        rpr, rpr_src = float(rpr_vals.median()), "metric records-per-request-avg"
    else:
        rsz = pd.to_numeric(rsz_m.get("value", pd.Series(dtype=float)), errors="coerce")
        rsz = rsz[rsz > 0]
        if record_bytes_hint:
            rb, src = float(record_bytes_hint), "given record size"
        elif len(rsz):
            rb, src = float(rsz.median()), "metric record-size-avg"
        else:
            rb, src = ASSUMED_RECORD_BYTES, f"assumed {ASSUMED_RECORD_BYTES}-byte records"
        rpr, rpr_src = records_per_request(batch, rb, 1, max_req), f"batch.size / record size ({src})"
    outstanding_bad = pd.to_numeric(bad["outstanding"], errors="coerce").dropna()
    outstanding_src = "log"
    if len(outstanding_bad):
        outstanding = float(outstanding_bad.median())
        outstanding_max = float(outstanding_bad.max())
    else:
        act = around.frame(metric_series(metrics, "source-record-active-count-max", connector=connector, task=task))
        vals = pd.to_numeric(act.get("value", pd.Series(dtype=float)), errors="coerce").dropna()
        outstanding = float(vals.median()) if len(vals) else float("nan")
        outstanding_max = float(vals.max()) if len(vals) else float("nan")
        outstanding_src = "metric source-record-active-count-max" if len(vals) else "unknown"
    tm = bad[bad["remaining"].notna() & bad["outstanding"].notna()]
    if len(tm):
        rtts = [round_trip_s(o, r, timeout, rpr, in_flight) for o, r in zip(tm["outstanding"], tm["remaining"])]
        rtt, rtt_src = float(pd.Series(rtts).median()), "acknowledged during the timed-out flushes"
        drained = float((tm["outstanding"] - tm["remaining"]).median())
    else:
        rtt, rtt_src, drained = float("nan"), "unknown (no 'outstanding N messages' on timeout)", float("nan")
    policy = (
        latest(configs[configs["ts"] <= end], WORKER_SCOPES).get("connector.client.config.override.policy", "")
        if not configs.empty
        else ""
    )
    return DrainModel(
        connector=connector,
        task=task,
        attempts=int(len(c)),
        failed=int(len(bad)),
        timeouts=int((bad["outcome"] == "timeout").sum()),
        start=start,
        end=end,
        bad=bad,
        outstanding=outstanding,
        outstanding_max=outstanding_max,
        outstanding_source=outstanding_src,
        drained_per_timeout=drained,
        timeout_ms=timeout,
        timeout_rows=timeout_rows,
        batch_size=batch,
        linger_ms=linger,
        in_flight=in_flight,
        max_request_size=max_req,
        client_id=cid,
        producer_rows=prod.get("_rows", pd.DataFrame()),
        records_per_request=rpr,
        records_per_request_source=rpr_src,
        round_trip_s=rtt,
        round_trip_source=rtt_src,
        override_policy=str(policy),
        after=_after_change(c, configs, connector, task, end, batch),
    )


def _after_change(
    commits: pd.DataFrame, configs: pd.DataFrame, connector: str, task: int, last_bad, batch
) -> AfterChange | None:
    """If the task's producer was re-created with a different batch.size / linger.ms after the
    last failure and every later commit went through: when, the new values, and how many."""
    if configs is None or configs.empty or pd.isna(last_bad):
        return None
    later = configs[(configs["scope"] == "ProducerConfig") & (configs["ts"] > last_bad)]
    if later.empty:
        return None
    prod = producer_settings(later, connector, task)
    if not prod:
        return None
    new_batch, new_linger = _num(prod.get("batch.size")), _num(prod.get("linger.ms"))
    if new_batch is None or new_batch == batch:
        return None
    since = prod["_rows"]["ts"].min()
    after = commits[commits["ts"] > since]
    if len(after) < 3 or after["outcome"].isin(["timeout", "failed"]).any():
        return None
    o = pd.to_numeric(after["outstanding"], errors="coerce").dropna()
    d = pd.to_numeric(after["duration_ms"], errors="coerce").dropna()
    return AfterChange(
        since=since,
        batch_size=new_batch,
        linger_ms=new_linger,
        commits_ok=int(len(after)),
        outstanding_max=float(o.max()) if len(o) else float("nan"),
        duration_ms_max=float(d.max()) if len(d) else float("nan"),
    )


# ----------------------------------------------------------------------------- detector
@findings.detector(
    ids=["offset-commit-timeouts"],
    needs=["commits"],
    checks="Connect source offset commits that time out or fail, with the producer drain model",
)
def detect_offset_commit_timeouts(bundle) -> list[findings.Finding]:
    """One finding per source task whose offset commits timed out or failed."""
    c = bundle.commits
    if c.empty:
        return []
    bad = c[c["outcome"].isin(["timeout", "failed"]) & (c["kind"] == "source")]
    out = []
    for (conn, task), _ in bad.groupby(["connector", "task"], observed=True):
        m = task_model(bundle, str(conn), int(task), c)
        out.append(_finding(m))
    sink_bad = c[c["outcome"].isin(["timeout", "failed"]) & (c["kind"] == "sink")]
    for (conn, task), rows in sink_bad.groupby(["connector", "task"], observed=True):
        out.append(
            findings.Finding(
                "offset-commit-timeouts",
                "medium",
                f"Sink task {conn}-{task}: {len(rows)} offset commit(s) failed or timed out "
                f"({rows['ts'].min():%Y-%m-%d %H:%M} to {rows['ts'].max():%H:%M} UTC)",
                numbers={
                    "failed_commits": len(rows),
                    "attempts": int(((c["connector"] == conn) & (c["task"] == task)).sum()),
                },
                recommendation="Sink commits go through the consumer group: look for rebalances and consumer "
                "'Commit cannot be completed' errors around these times; if put() is slow, lower "
                "consumer.override.max.poll.records or raise consumer.override.max.poll.interval.ms.",
                evidence=findings.evidence(rows),
            )
        )
    return out


def _finding(m: DrainModel) -> findings.Finding:
    conn, task = m.connector, m.task
    timeout_s = m.timeout_ms / 1000.0
    rpr, rtt, outst = m.records_per_request, m.round_trip_s, m.outstanding
    nums = {
        "failed_commits": m.failed,
        "attempts": m.attempts,
        "outstanding_at_flush_median": None if math.isnan(outst) else int(outst),
        "outstanding_at_flush_max": None if math.isnan(m.outstanding_max) else int(m.outstanding_max),
        "offset.flush.timeout.ms": _int(m.timeout_ms),
        "batch.size": _int(m.batch_size),
        "linger.ms": _int(m.linger_ms),
        "max.in.flight": m.in_flight,
        "records_per_request": round(rpr, 1),
        "records_per_request_from": m.records_per_request_source,
    }
    new_batch = int(min(m.batch_size * 20, m.max_request_size))
    new_linger = max(_int(m.linger_ms) or 0, 10)
    drain_now = drain_after = None
    if not math.isnan(rtt) and not math.isnan(outst):
        t = what_if(
            outst,
            m.batch_size,
            rpr,
            rtt,
            m.timeout_ms,
            m.in_flight,
            m.linger_ms,
            new_batch,
            new_linger,
            m.max_request_size,
        )
        drain_now, drain_after = float(t["drain_s"].iloc[0]), float(t["drain_s"].iloc[1])
        nums.update(
            {
                "round_trip_ms": round(rtt * 1000, 2),
                "requests_to_drain": int(t["requests_to_drain"].iloc[0]),
                "drain_s_now": round(drain_now, 2),
                "records_per_request_after": float(t["records_per_request"].iloc[1]),
                "drain_s_after": round(drain_after, 2),
            }
        )
    share = m.failed / max(m.attempts, 1)
    severity = "high" if m.failed >= 3 or share >= 0.2 else "medium"
    where = f"{m.start:%Y-%m-%d %H:%M}" + (f" to {m.end:%H:%M} UTC" if m.end != m.start else " UTC")
    tiny = not math.isnan(outst) and outst <= max(rpr * m.in_flight * 2, 10)
    bad = m.bad
    # 2.x waits for the producer to drain; 3.0.1+ commits acknowledged records only, so a
    # timeout there is the offset store write itself
    gen_a = bool(
        bad["remaining"].notna().any()
        or bad["message"].astype(str).str.contains("outstanding|flushing", regex=True).any()
    )
    if not gen_a and not tiny:
        pend = (
            f" while ~{int(outst):,} messages were pending in the producer ({m.outstanding_source})"
            if not math.isnan(outst)
            else ""
        )
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits timed out or failed "
            f"({where}): the offset write did not complete within offset.flush.timeout.ms "
            f"{timeout_s:g} s{pend}"
        )
        rec = (
            "Kafka 3.x commits only acknowledged records, so this timeout is the offset store: check the "
            "offsets topic (offset.storage.topic: leaders, ISR, min.insync.replicas, broker produce latency) "
            "or, in standalone mode, the offsets file's disk; offset.flush.timeout.ms on the worker bounds "
            "the wait. If pending messages stay high (source-record-active-count), the task's producer is "
            f"also behind: producer.override.batch.size={new_batch} and producer.override.linger.ms={new_linger}"
            + (
                ""
                if str(m.override_policy).strip().lower() == "all"
                else " (needs connector.client.config.override.policy=All on the workers)"
            )
            + "."
        )
    elif tiny:
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits failed ({where}) with "
            f"only ~{int(outst)} outstanding messages: the producer was not delivering at all"
        )
        rec = (
            "Batching is not the cause here: check that the task's producer can reach the brokers "
            "(NetworkException / TimeoutException / NOT_ENOUGH_REPLICAS in the worker log, broker health, "
            "ACLs and quotas on the target topic) before touching producer settings."
        )
    else:
        why = f"~{int(outst):,} outstanding messages at flush" if not math.isnan(outst) else "a backlog at flush"
        summary = (
            f"Source task {conn}-{task}: {m.failed} of {m.attempts} offset commits timed out or failed "
            f"({where}); {why}, ~{rpr:.0f} records per produce request "
            f"(batch.size {int(m.batch_size)}, max.in.flight {m.in_flight})"
        )
        if drain_now is not None:
            summary += (
                f": draining takes ~{drain_now:.1f} s vs offset.flush.timeout.ms {timeout_s:g} s; "
                f"~{drain_after:.1f} s with batch.size {new_batch}"
            )
        pol = str(m.override_policy).strip().lower()
        rec = (
            f"Make each produce request carry more records: set producer.override.batch.size={new_batch} and "
            f"producer.override.linger.ms={new_linger} in the connector config of {conn}"
            + (
                ""
                if pol == "all"
                else " (allow it on every worker with connector.client.config.override.policy=All, a worker restart)"
            )
            + ". Check max.request.size stays >= batch.size and buffer.memory holds several batches. "
            "Raising offset.flush.timeout.ms only hides the backlog."
        )
    fixed = m.after
    if fixed and not tiny and gen_a:
        severity = "low"
        summary += (
            f". Resolved: no failure in the {fixed.commits_ok} commits since the producer was "
            f"re-created with batch.size {int(fixed.batch_size)} at {fixed.since:%Y-%m-%d %H:%M} UTC"
        )
        nums["batch.size_after_change"] = int(fixed.batch_size)
        nums["commits_ok_after_change"] = fixed.commits_ok
        if not math.isnan(fixed.outstanding_max):
            nums["outstanding_max_after_change"] = int(fixed.outstanding_max)
        rec = (
            f"Keep batch.size {int(fixed.batch_size)} for {conn} (set as producer.override.batch.size) "
            "and apply the same override to other high-volume single-partition source connectors."
        )
    ev = findings.evidence(m.bad.head(8), text=lambda r: _ev_text(r))
    prows = m.producer_rows
    if isinstance(prows, pd.DataFrame) and not prows.empty:
        keys = ["batch.size", "linger.ms", "max.in.flight.requests.per.connection"]
        pr = prows[prows["key"].isin(keys)]
        ev += findings.evidence(pr, text=lambda r: f"ProducerConfig ({r['entity']}): {r['key']} = {r['value']}")
    tr = m.timeout_rows
    if isinstance(tr, pd.DataFrame) and not tr.empty:
        ev += findings.evidence(tr, text=lambda r: f"{r['scope']}: {r['key']} = {r['value']}")
    return findings.Finding("offset-commit-timeouts", severity, summary, numbers=nums, recommendation=rec, evidence=ev)


def _int(v) -> int | None:
    """An int, or None for a figure the bundle does not give (NaN)."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)


def _ev_text(r) -> str:
    parts = [str(r.get("message", ""))]
    if not pd.isna(r.get("outstanding")):
        parts.append(f"[outstanding at flush: {int(r['outstanding'])}]")
    return " ".join(parts)


def task_summary(commits: pd.DataFrame) -> pd.DataFrame:
    """Per task: attempts, outcomes, outstanding at flush (median/max), remaining on timeout,
    first and last failure.

    Example:
        >>> task_summary(tables.empty("commits")).empty
        True
    """
    if commits.empty:
        return pd.DataFrame(
            columns=[
                "connector",
                "task",
                "kind",
                "attempts",
                "success",
                "timeout",
                "failed",
                "outstanding_median",
                "outstanding_max",
                "remaining_max",
                "first_failure",
                "last_failure",
            ]
        )
    c = commits.copy()
    c["bad_ts"] = c["ts"].where(c["outcome"].isin(["timeout", "failed"]))
    g = c.groupby(["connector", "task", "kind"], observed=True)
    out = g.agg(
        attempts=("outcome", "size"),
        success=("outcome", lambda s: int((s == "success").sum())),
        timeout=("outcome", lambda s: int((s == "timeout").sum())),
        failed=("outcome", lambda s: int((s == "failed").sum())),
        outstanding_median=("outstanding", "median"),
        outstanding_max=("outstanding", "max"),
        remaining_max=("remaining", "max"),
        first_failure=("bad_ts", "min"),
        last_failure=("bad_ts", "max"),
    ).reset_index()
    return out


# ----------------------------------------------------------------------------- notebook helpers
def filter_commits(
    commits: pd.DataFrame, connector: str | None = None, task: int | None = None, start=None, end=None
) -> pd.DataFrame:
    """Commits of one connector / task in ``start <= ts < end`` (ISO strings, UTC unless they
    carry an offset: a :class:`~kitlib.window.Window`); None means no filter.

    Example:
        >>> filter_commits(tables.empty("commits"), "orders", 0, "2024-01-01", None).empty
        True
    """
    c = commits
    if connector is not None:
        c = c[c["connector"].astype(str) == str(connector)]
    if task is not None:
        c = c[c["task"] == int(task)]
    return Window.of(start, end).frame(c).reset_index(drop=True)


PRODUCER_KEYS = [
    "batch.size",
    "linger.ms",
    "max.in.flight.requests.per.connection",
    "max.request.size",
    "buffer.memory",
    "acks",
    "compression.type",
]


def producer_history(configs: pd.DataFrame, connector: str | None = None) -> pd.DataFrame:
    """One row per ProducerConfig dump (time, client.id) with the settings that decide
    batching: a change between two rows is a producer re-created with new settings.

    Example:
        >>> producer_history(pd.DataFrame(columns=["ts", "scope", "entity", "key", "value"])).empty
        True
    """
    cols = ["ts", "client_id"] + PRODUCER_KEYS
    if configs is None or configs.empty:
        return pd.DataFrame(columns=cols)
    p = configs[(configs["scope"] == "ProducerConfig") & configs["key"].isin(PRODUCER_KEYS)]
    if connector is not None:
        p = p[p["entity"].astype(str).str.contains(str(connector), regex=False)]
    if p.empty:
        return pd.DataFrame(columns=cols)
    w = p.pivot_table(index=["ts", "entity"], columns="key", values="value", aggfunc="last", observed=True)
    w = w.reset_index().rename(columns={"entity": "client_id"})
    for k in PRODUCER_KEYS:
        if k not in w:
            w[k] = pd.NA
    return w[cols].sort_values("ts").reset_index(drop=True)


def before_after(commits: pd.DataFrame, configs: pd.DataFrame, connector: str, task: int) -> pd.DataFrame:
    """Commit health before and after each change of the task producer's batch.size / linger.ms
    (from the config dumps): attempts, failure share, outstanding at flush, commit time.
    Empty when the bundle holds a single setting.

    Example:
        >>> before_after(tables.empty("commits"), pd.DataFrame(columns=["ts", "scope", "entity", "key", "value"]), "c", 0).empty
        True
    """
    cols = [
        "period",
        "from",
        "batch.size",
        "linger.ms",
        "attempts",
        "failed_or_timeout",
        "failure_pct",
        "outstanding_median",
        "outstanding_max",
        "duration_ms_max",
    ]
    h = producer_history(configs)
    if h.empty:
        return pd.DataFrame(columns=cols)
    cid = producer_client_id(connector, task)
    hh = h[h["client_id"] == cid]
    if hh.empty:
        hh = h[h["client_id"].astype(str).str.contains(connector, regex=False)]
    hh = hh.assign(sig=hh["batch.size"].astype(str) + "/" + hh["linger.ms"].astype(str))
    hh = hh[hh["sig"] != hh["sig"].shift()]
    if len(hh) < 2:
        return pd.DataFrame(columns=cols)
    c = filter_commits(commits, connector, task)
    rows = []
    bounds = list(hh["ts"]) + [pd.Timestamp.max.tz_localize("UTC")]
    for i, (_, r) in enumerate(hh.iterrows()):
        lo = bounds[i] if i else pd.Timestamp.min.tz_localize("UTC")
        part = c[(c["ts"] >= lo) & (c["ts"] < bounds[i + 1])]
        bad = part["outcome"].isin(["timeout", "failed"]).sum()
        o = pd.to_numeric(part["outstanding"], errors="coerce")
        d = pd.to_numeric(part["duration_ms"], errors="coerce")
        rows.append(
            {
                "period": "before" if i == 0 else f"after change {i}",
                "from": r["ts"],
                "batch.size": r["batch.size"],
                "linger.ms": r["linger.ms"],
                "attempts": len(part),
                "failed_or_timeout": int(bad),
                "failure_pct": round(100.0 * bad / len(part), 1) if len(part) else None,
                "outstanding_median": o.median(),
                "outstanding_max": o.max(),
                "duration_ms_max": d.max(),
            }
        )
    return pd.DataFrame(rows, columns=cols)
