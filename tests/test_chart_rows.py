"""Every time chart carries at most MAX_CHART_ROWS rows: big inputs are binned in time (keeping
totals), small ones are drawn as they are."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import pytest

from kitlib import display
from kitlib.display import MAX_CHART_ROWS, bin_time, step_text
from kitlib.investigations.client_requests import analysis as requests_analysis
from kitlib.investigations.client_requests import charts as requests_charts
from kitlib.investigations.cluster_health import charts as health
from kitlib.investigations.compaction import charts as compaction
from kitlib.investigations.connect_offsets import charts as connect
from kitlib.investigations.consumer_groups import charts as groups
from kitlib.investigations.throughput import charts as throughput
from kitlib.investigations.tiered_storage import charts as tiered

N = 60_000
T0 = pd.Timestamp("2024-03-05 10:00:00", tz="UTC")


@pytest.fixture(autouse=True)
def _transformer():
    """The data transformer as a notebook has it (display.setup), restored afterwards."""
    before = alt.data_transformers.active, dict(alt.data_transformers.options)
    display.setup()
    yield
    alt.data_transformers.enable(before[0], **before[1])


def _times(n: int = N, hours: float = 6, seed: int = 1) -> pd.Series:
    rng = np.random.default_rng(seed)
    return pd.Series(T0 + pd.to_timedelta(np.sort(rng.uniform(0, hours * 3600, n)), unit="s"))


def _pick(values, n: int = N, seed: int = 2) -> np.ndarray:
    return np.random.default_rng(seed).choice(np.asarray(values, dtype=object), n)


def _datasets(chart) -> list[pd.DataFrame]:
    """The chart's data as the notebook would ship it (raises MaxRowsError when over the limit)."""
    spec = chart.to_dict()
    return [pd.DataFrame(rows) for rows in spec.get("datasets", {}).values()]


def _small(chart) -> list[pd.DataFrame]:
    data = _datasets(chart)
    assert data and all(len(d) <= MAX_CHART_ROWS for d in data), [len(d) for d in data]
    return data


def test_bin_time_unit():
    ts = _times()
    df = pd.DataFrame({"ts": ts, "host": _pick(["b1", "b2", "b3"]), "bytes": np.arange(N) % 7, "peak": np.arange(N)})
    out, step = bin_time(df, "ts", ["host"], {"bytes": "sum", "peak": "max"}, limit=1000, count="rows")
    assert len(out) <= 1000 and step is not None
    assert int(out["rows"].sum()) == N and int(out["bytes"].sum()) == int(df["bytes"].sum())
    assert out["peak"].max() == N - 1
    assert out["ts"].dt.tz is not None and str(out["ts"].dtype) == str(df["ts"].dtype)
    # equal steps on the epoch, and each row's bucket is the one its time falls in
    assert ((out["ts"] - pd.Timestamp(0, tz="UTC")) % step == pd.Timedelta(0)).all()
    per_host = df.groupby("host").size()
    assert out.groupby("host")["rows"].sum().equals(per_host)
    assert step_text(step).endswith(("-second", "-minute", "-hour", "-day"))
    # below the limit: the very same frame, no step
    same, none = bin_time(df.head(500), "ts", ["host"], {"bytes": "sum"}, limit=1000)
    assert none is None and same is not None and same.equals(df.head(500))
    # more series than the limit allows buckets for: one bucket per series, totals kept
    many = df.assign(host=np.arange(N) % 900)
    out, step = bin_time(many, "ts", ["host"], {"bytes": "sum"}, limit=1000, count="rows")
    assert len(out) == 900 and int(out["rows"].sum()) == N and step is not None
    # more series than the limit: the biggest kept, the rest folded into "(other)"
    skewed = df.assign(host=np.where(np.arange(N) < 30_000, np.arange(N) % 5, np.arange(N) % 3000 + 10))
    out, step = bin_time(skewed, "ts", ["host"], {"bytes": "sum"}, limit=1000, count="rows")
    assert len(out) <= 1000 and int(out["rows"].sum()) == N and "(other)" in set(out["host"])
    assert set(range(5)) <= set(out["host"])  # the five busiest series are kept as they are
    # naive times stay naive
    out, _ = bin_time(df.assign(ts=df["ts"].dt.tz_localize(None)), "ts", ["host"], {"bytes": "sum"}, limit=100)
    assert out["ts"].dt.tz is None and len(out) <= 100


def _commits(n: int = N) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts": _times(n),
            "connector": "inventory-source",
            "task": _pick(range(12), n),
            "outcome": _pick(["success"] * 8 + ["timeout", "failed"], n, seed=3),
            "outstanding": np.random.default_rng(4).integers(0, 50_000, n),
            "remaining": np.random.default_rng(5).integers(0, 5_000, n),
        }
    )


def test_commit_timeline_big():
    c = _commits()
    data = _small(connect.commit_timeline(c))
    assert [int(d["attempts"].sum()) for d in data] == [N, N]
    top = data[0]
    assert top["outstanding"].max() == c["outstanding"].max()


def test_commit_timeline_many_tasks():
    """The 1 GB mix's shape: thousands of tasks, each with two outcomes."""
    c = _commits().assign(task=np.arange(N) % 5000)
    c.loc[c["task"] == 4321, "outcome"] = "timeout"
    data = _small(connect.commit_timeline(c))
    assert [int(d["attempts"].sum()) for d in data] == [N, N]
    tasks = set(data[0]["task_id"])
    assert len(tasks) == connect.TASKS_SHOWN + 1 and connect.OTHER_TASKS in tasks
    assert "inventory-source-4321" in tasks  # the task that only timed out is named


def test_commit_timeline_small_unchanged():
    c = _commits(300)
    p = connect.commit_points(c)
    assert len(p) == 300 and p["ts"].equals(c["ts"]) and (p["attempts"] == 1).all()


def test_metric_panel_big():
    ts = _times()
    m = pd.DataFrame(
        {
            "ts": ts,
            "type": "producer-metrics",
            "domain": "kafka.producer",
            "attribute": _pick(connect.PRODUCER_ATTRS),
            "client_id": _pick([f"connector-producer-inventory-{i}" for i in range(4)], seed=6),
            "value": np.random.default_rng(7).normal(100, 10, N),
        }
    )
    panel = connect.metric_panel(m)
    assert len(panel) <= MAX_CHART_ROWS
    assert panel.groupby(["series", "attribute"]).ngroups == m.groupby(["client_id", "attribute"]).ngroups
    _small(connect.metrics_chart(panel, "producer", "connect_producer_metrics"))


def _history(n: int = N) -> pd.DataFrame:
    end = np.random.default_rng(8).integers(1_000_000, 2_000_000, n)
    lag = np.random.default_rng(9).integers(0, 90_000, n)
    return pd.DataFrame(
        {
            "ts": _times(n),
            "group": pd.Series(_pick(["billing", "audit", "search"], n), dtype="string"),
            "topic": "orders",
            "partition": _pick(range(12), n, seed=10),
            "lag": lag,
            "committed": end - lag,
            "end_offset": end,
        }
    )


def _group_events(n: int = N) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts": _times(n, seed=11),
            "group": _pick(["billing", "audit", "search"], n, seed=12),
            "kind": _pick(["prepare_rebalance", "stabilized", "member_failed", "session_expired"], n, seed=13),
            "source": _pick(["coordinator", "client"], n, seed=14),
            "generation": np.arange(n) // 10,
            "members": _pick(range(1, 9), n, seed=15),
            "member": _pick([f"consumer-{i}" for i in range(8)], n, seed=16),
            "file": "broker-1/server.log",
            "line": np.arange(1, n + 1),
        }
    )


def test_lag_and_rebalances_big():
    h, ge = _history(), _group_events()
    lag, events = _small(groups.lag_and_rebalances(h, ge))
    assert lag["lag"].max() == h["lag"].max()
    assert int(events["events"].sum()) == N
    g = _small(groups.generations(ge))[0]
    assert g["generation"].max() == ge[ge["kind"] == "stabilized"]["generation"].max()


def test_lag_and_rebalances_small_unchanged():
    h, ge = _history(200), _group_events(200)
    lag, events = _datasets(groups.lag_and_rebalances(h, ge))
    assert len(lag) == 200 and len(events) == 200 and "where" in events


def test_transactions_big():
    te = pd.DataFrame(
        {
            "ts": _times(),
            "transactional_id": _pick([f"txn-{i}" for i in range(30)]),
            "kind": _pick(["begin", "commit", "abort", "fenced"], seed=17),
            "epoch": np.arange(N) // 100,
            "file": "broker-2/server.log",
            "line": np.arange(1, N + 1),
        }
    )
    d = _small(groups.transactions(te))[0]
    assert int(d["events"].sum()) == N


def test_cluster_health_big():
    hosts = [f"broker-{i}" for i in range(16)]
    ev = pd.DataFrame({"ts": _times(), "host": _pick(hosts), "level": _pick(["INFO", "WARN", "ERROR"], seed=18)})
    (d,) = _small(health.log_rates(ev))
    assert int(d["records"].sum()) == int(ev["level"].isin(["WARN", "ERROR"]).sum())
    t = pd.DataFrame(
        {
            "ts": _times(seed=19),
            "host": _pick(hosts),
            "node": pd.array(_pick(range(16), seed=20), dtype="Int64"),
            "lane": _pick(["broker state", "controller", "isr", "leader"], seed=21),
            "kind": _pick(["shrink", "expand", "elected"], seed=22),
            "text": "Shrinking ISR for partition orders-3",
        }
    )
    (d,) = _small(health.timeline_chart(t))
    assert int(d["changes"].sum()) == N
    jmx = pd.DataFrame({"ts": _times(seed=23), "host": _pick(hosts), "value": np.arange(N) % 40})
    (d,) = _small(health.metric_lines(jmx, "UnderReplicatedPartitions"))
    assert d["value"].max() == 39
    gc = pd.DataFrame(
        {
            "ts": _times(seed=24),
            "host": _pick(hosts),
            "is_pause": True,
            "kind": _pick(["young", "mixed", "full"], seed=25),
            "cause": "G1 Evacuation Pause",
            "duration_ms": np.random.default_rng(26).uniform(1, 900, N),
        }
    )
    (d,) = _small(health.gc_pauses_chart(gc))
    assert int(d["pauses"].sum()) == N and d["duration_ms"].max() == gc["duration_ms"].max()


def test_cluster_health_small_unchanged():
    jmx = pd.DataFrame({"ts": _times(300), "host": "broker-1", "value": np.arange(300)})
    (d,) = _datasets(health.metric_lines(jmx, "UnderReplicatedPartitions"))
    assert len(d) == 300 and d["value"].tolist() == list(range(300))


HOSTS16 = [f"broker-{i}" for i in range(16)]


def _counter_metrics(names: list[str], attribute: str = "Count", per: int = N // 32) -> pd.DataFrame:
    """JMX samples every 10 s of broker-wide meters, 16 hosts, like a JmxTool dump's rows."""
    parts = []
    for h in HOSTS16:
        for n in names:
            ts = pd.Series(T0 + pd.to_timedelta(np.arange(per) * 10, unit="s"))
            parts.append(
                pd.DataFrame(
                    {
                        "ts": ts,
                        "host": h,
                        "mbean": f"kafka.server:type=BrokerTopicMetrics,name={n}",
                        "type": "BrokerTopicMetrics",
                        "name": n,
                        "attribute": attribute,
                        "topic": None,
                        "value": np.cumsum(np.random.default_rng(len(parts)).integers(0, 5_000_000, per)).astype(float),
                        "file": f"{h}/jmx.log",
                        "line": np.arange(1, per + 1),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def test_throughput_rates_big():
    m = _counter_metrics(["BytesInPerSec", "BytesOutPerSec"])
    (d,) = _small(throughput.byte_rates(m))
    assert set(d["host"]) == set(HOSTS16)
    m = _counter_metrics(["FetchMessageConversionsPerSec", "ProduceMessageConversionsPerSec"])
    (d,) = _small(throughput.conversion_rates(m))
    assert len(d) and d["rate"].max() > 0


def test_client_requests_big():
    reqs = pd.DataFrame(
        {
            "ts": _times(),
            "host": _pick(HOSTS16),
            "client_id": _pick([f"app-{i}" for i in range(10)], seed=30),
            "api_name": _pick(["PRODUCE", "FETCH"], seed=31),
            "throttle_ms": np.random.default_rng(32).integers(0, 3, N) * 50,
            "request_queue_ms": np.random.default_rng(33).exponential(3, N),
        }
    )
    (d,) = _small(requests_charts.throttling(reqs))
    assert int(d["requests"].sum()) == N and d["throttle_ms"].max() == 100
    (d,) = _small(requests_charts.queue_time(reqs))
    assert set(d["host"]) == set(HOSTS16)
    af = pd.DataFrame(
        {
            "ts": _times(hours=48),
            "principal": _pick([f"User:svc-{i}" for i in range(12)], seed=34),
            "address": "10.0.0.7",
            "kind": _pick(["authentication", "authorization"], seed=35),
        }
    )
    (d,) = _small(requests_charts.auth_failures(af))
    assert int(d["failures"].sum()) == N
    idle = _counter_metrics(list(requests_analysis.IDLE_NAMES), attribute="Value")
    idle["value"] = np.random.default_rng(36).uniform(0.1, 1, len(idle))
    _small(requests_charts.idle(idle))


def test_compaction_big():
    rng = np.random.default_rng(40)
    start = rng.integers(0, 10**9, N)
    runs = pd.DataFrame(
        {
            "ts": _times(hours=72),
            "host": _pick(HOSTS16[:3]),
            "log": _pick([f"__consumer_offsets-{i}" for i in range(10)], seed=41),
            "size_reduction_pct": rng.uniform(-5, 90, N),
            "buffer_utilization_pct": rng.uniform(0, 100, N),
            "dirty_start": start,
            "dirty_end": start + rng.integers(1, 10**6, N),
            "mb_per_s": rng.uniform(1, 50, N),
            "mb_processed": rng.uniform(0, 100, N),
        }
    )
    data = _small(compaction.runs_timeline(runs))
    assert int(data[0]["runs"].sum()) == N
    data = _small(compaction.throughput(runs))
    assert data[0]["mb_processed"].sum() == pytest.approx(runs["mb_processed"].sum())
    cm = _counter_metrics(["max-buffer-utilization-percent", "max-clean-time-secs"], attribute="Value")
    _small(compaction.cleaner_metrics(cm.assign(type="LogCleaner")))


def test_tiered_storage_big():
    remote = pd.DataFrame(
        {
            "ts": _times(),
            "kind": _pick(["copied", "delete_retention_time", "copy_error"]),
            "topic": "payments",
            "partition": _pick(range(6), seed=50),
            "file": "broker-1/server.log",
            "line": np.arange(1, N + 1),
        }
    )
    (d,) = _small(tiered.remote_activity_chart(remote))
    assert int(d["events"].sum()) == N
    lag = _counter_metrics(["RemoteCopyLagBytes"], attribute="Value")
    (d,) = _small(tiered.remote_lag_chart(lag))
    assert d["MB"].max() == pytest.approx(lag["value"].max() / 1e6)
    io = pd.DataFrame(
        {
            "ts": pd.Series(T0 + pd.to_timedelta(np.tile(np.arange(N // 16), 16), unit="s")),
            "host": np.repeat(HOSTS16, N // 16),
            "interval": np.tile(np.arange(N // 16), 16),
            "interval_s": 1.0,
            "op": "R",
            "kind": "segment",
            "count": np.random.default_rng(51).integers(100, 5000, N),
        }
    )
    data = _small(tiered.read_iops_chart(io, rating=4000))
    assert int(data[0]["reads"].sum()) == int(io["count"].sum())


@pytest.mark.slow
def test_explore_evidence_ticks_big():
    """The explore timeline's evidence ticks: 60,000 evidence rows on a sample bundle's hosts."""
    from pathlib import Path

    import kitlib
    from kitlib.explore import timeline

    b = kitlib.open(str(Path(__file__).parent.parent / "sample_data" / "isr-flapping"))
    hosts = sorted(b.events["host"].astype("string").dropna().unique())
    lo, hi = b.events["ts"].min(), b.events["ts"].max()
    ts = lo + (hi - lo) * pd.Series(np.sort(np.random.default_rng(60).uniform(0, 1, N)))
    evidence = pd.DataFrame({"host": _pick(hosts), "ts": ts, "finding": _pick(["isr-shrink", "isr-expand"], seed=61)})
    data = _small(timeline.chart(b, evidence, max_points=MAX_CHART_ROWS))
    assert int(data[-1]["rows"].sum()) == N
