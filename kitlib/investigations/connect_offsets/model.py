"""The drain model of one Connect source task: its failed commits, the outstanding messages at
flush, its producer's settings, records per request and round trip, read from a bundle
(:func:`task_model`), and a producer re-created with another batch.size after the last failure
(:class:`AfterChange`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from kitlib.extract.configs import latest
from kitlib.investigations.connect_offsets.arithmetic import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_IN_FLIGHT,
    DEFAULT_MAX_REQUEST_SIZE,
    records_per_request,
    round_trip_s,
)
from kitlib.investigations.connect_offsets.settings import (
    WORKER_SCOPES,
    flush_timeout_ms,
    metric_series,
    number,
    producer_client_id,
    producer_settings,
)
from kitlib.window import Window

ASSUMED_RECORD_BYTES = 1024  # used only when neither metrics nor the user give a record size


def _table(bundle, name: str) -> pd.DataFrame:
    try:
        return bundle.table(name)
    except AttributeError:
        return pd.DataFrame()


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
    batch = number(prod.get("batch.size"), DEFAULT_BATCH_SIZE)
    linger = number(prod.get("linger.ms"), 0.0)
    in_flight = int(number(prod.get("max.in.flight.requests.per.connection"), DEFAULT_IN_FLIGHT))
    max_req = number(prod.get("max.request.size"), DEFAULT_MAX_REQUEST_SIZE)
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
    new_batch, new_linger = number(prod.get("batch.size")), number(prod.get("linger.ms"))
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
