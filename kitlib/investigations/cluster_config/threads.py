"""Heap and thread settings against the load the brokers' own metrics show, and controllers that
share a node with a busy broker.

**Request handler threads** (``num.io.threads``, default 8): JMX ``RequestHandlerAvgIdlePercent``
is a meter marked with each handler's idle nanoseconds divided by the pool's size, so the growth of
its ``Count`` over the nanoseconds of a window is the pool's idle share in it (windows of
:data:`WINDOW_S`, 10 s: a handler marks its idle time when it wakes, so a sample or two is lumpy); without ``Count`` (exporters that keep only rates) the one-minute rate stands
in, which lags a change by about a minute. A combined broker+controller node marks the same meter
from both pools (up to 2.0): the controller pool's share (1.0, it is nearly always idle) is taken
off. **Network threads** (``num.network.threads``, default 3): the gauge
``NetworkProcessorAvgIdlePercent``.

A pool is short of threads when at least :data:`IDLE_MIN_SAMPLES` intervals, and
:data:`IDLE_MIN_SHARE` of all, are below :data:`IDLE_LOW` (30 % idle, the floor Kafka's operations
guidance and the request-saturation check use): one busy minute is a burst, a fifth of the window
is the load. The recommendation sizes the pool so that the load measured in those intervals leaves
:data:`IDLE_TARGET` (50 %) idle: ``threads × (1 − idle) / (1 − 0.5)``, rounded up, at least one
more than now. A pool at 0 % idle hides how much more it needs, so that is a floor. The request
queue (``RequestQueueSize``) and the time requests wait in it (``RequestQueueTimeMs``) are stated
with it: they grow when the handlers are short.

**Replica fetchers** (``num.replica.fetchers``, default 1): ``ReplicaFetcherManager`` ``MaxLag``
(records the most lagging follower partition of a broker is behind). Above :data:`FETCHER_LAG`
(4,000 records, the default of the old ``replica.lag.max.messages``) in every one of at least
:data:`IDLE_MIN_SAMPLES` samples, followers do not keep up: double the fetchers.

**Heap**: the heap used after each collection (GC log) against the heap the JVM holds (committed
after the collection; Kafka's start script sets ``-Xms`` equal to ``-Xmx``, so it is the maximum).
When the median after a collection is at or above :data:`HEAP_AFTER_GC` (45 %: G1's default
``InitiatingHeapOccupancyPercent``, past which every young collection starts a concurrent marking
cycle), the live data does not fit the heap. Recommended: a heap the 90th percentile of the data
left after collections fills to 30 % at most, rounded up to 256 MiB, and never under the 1 GiB of
``kafka-server-start.sh``'s default ``KAFKA_HEAP_OPTS``.

**Combined controllers** (``process.roles=broker,controller``): Kafka's documentation keeps
combined mode for small or development clusters, since the controller then competes with the
broker for CPU, memory and GC, and a busy broker delays metadata commits (leader elections,
fencing) for the whole cluster. Reported when the node's broker handlers are busy (median idle
under :data:`COMBINED_BUSY_IDLE`, 50 %), or it holds at least :data:`COMBINED_REPLICAS` replicas.

A host whose heap is too small is left out of the thread checks: its threads wait on GC pauses,
and more threads would not help (``heap-too-small`` says what does).

Example:
    >>> c = pd.Series([0.0, 1e9, 2e9, 2.1e9, 2.2e9])        # Count: ns of idle per handler
    >>> ts = pd.Series(pd.to_datetime([0, 1, 2, 3, 4], unit="s", utc=True))
    >>> idle_from_count(c, ts).round(2).tolist()
    [1.0, 1.0, 0.1, 0.1]
    >>> recommended_threads(8, 0.1)
    15
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kitlib.bundle import per_bundle
from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_config import model

IDLE_LOW = 0.30
IDLE_TARGET = 0.50
IDLE_MIN_SAMPLES = 3
IDLE_MIN_SHARE = 0.2
WINDOW_S = 10.0  # the handler meter's Count is read over 10-second windows
FETCHER_LAG = 4000
HEAP_AFTER_GC = 0.45
HEAP_LIVE_TARGET = 0.30
HEAP_MIN = 1024**3
COMBINED_BUSY_IDLE = 0.50
COMBINED_REPLICAS = 1000
DEFAULTS = {"num.io.threads": 8, "num.network.threads": 3, "num.replica.fetchers": 1}


def idle_from_count(count: pd.Series, ts: pd.Series) -> pd.Series:
    """Idle share of each interval between samples of a handler-idle meter's ``Count`` (ns of idle
    per thread): Δcount / Δns. A drop (the broker restarted) gives no interval."""
    d = count.astype("float64").diff().to_numpy()[1:]
    dt = ts.diff().dt.total_seconds().to_numpy()[1:] * 1e9
    return pd.Series(np.where((d >= 0) & (dt > 0), d / np.where(dt > 0, dt, 1), np.nan)).dropna()


def window_samples(ts: pd.Series, seconds: float = 30.0) -> np.ndarray:
    """Positions of the samples that close each ``seconds`` window (the last sample in it): a
    handler marks its idle time when it wakes, so one sample's share is lumpy and ten
    seconds' is not."""
    t = (ts - ts.iloc[0]).dt.total_seconds().to_numpy()
    bucket = np.floor(t / seconds)
    last = np.r_[bucket[1:] != bucket[:-1], True]
    return np.flatnonzero(last | (np.arange(len(t)) == 0))


def _unscale(v: pd.Series, combined: bool | None = None) -> pd.Series:
    """Idle values as fractions: percentages (some exporters) divided by 100; a combined node's
    two pools (up to 2.0) less the controller pool's 1.0. ``combined`` comes from the node's
    process.roles; unknown (None), a series reaching 1.5 is taken for one (an interval of a
    single pool measured from ``Count`` can exceed 1.0 a little, when a sample comes late)."""
    top = v.max() if len(v) else 0.0
    if top > 10:
        return v / 100
    if combined or (combined is None and top > 1.5):
        return (v - 1.0).clip(0.0, 1.0)
    return v.clip(0.0, 1.0)


@per_bundle
def combined_hosts(bundle) -> pd.Series:
    """host -> True when its process.roles holds both broker and controller (False: one role)."""
    roles = model.broker_settings(bundle, "process.roles")
    roles = roles[roles["host"].notna()]
    text = roles["value"].astype("string").str.lower().fillna("")
    both = text.str.contains("broker", regex=False) & text.str.contains("controller", regex=False)
    return pd.Series(both.to_numpy(dtype=bool), index=roles["host"].astype("string").to_numpy()).groupby(level=0).last()


def recommended_threads(current: int, idle: float) -> int:
    """Threads that carry the measured load (``current × (1 − idle)`` busy threads) at
    :data:`IDLE_TARGET` idle; at least one more than ``current``."""
    need = current * (1.0 - idle) / (1.0 - IDLE_TARGET)
    return max(current + 1, math.ceil(need - 1e-9))


@per_bundle
def idle_intervals(bundle) -> pd.DataFrame:
    """Idle share per host, pool and interval. Columns: host, pool ('io' or 'network'), ts, idle,
    method ('Count', 'OneMinuteRate' or 'Value'), combined, file, line."""
    cols = ["host", "pool", "ts", "idle", "method", "combined", "file", "line"]
    m = bundle.table("metrics")
    if not len(m):
        return pd.DataFrame(columns=cols)
    name = m["name"].astype("string")
    attr = m["attribute"].astype("string").fillna("")
    frames = []
    roles = combined_hosts(bundle)
    io = m[(name == "RequestHandlerAvgIdlePercent") & m["value"].notna()]
    for host, g in io.groupby(io["host"].astype("string"), sort=True):  # a few hosts
        a = g["attribute"].astype("string").fillna("")
        cnt = g[a == "Count"].sort_values("ts")
        cnt = cnt.iloc[window_samples(cnt["ts"].reset_index(drop=True), WINDOW_S)] if len(cnt) else cnt
        if len(cnt) >= 2:
            v = idle_from_count(cnt["value"].reset_index(drop=True), cnt["ts"].reset_index(drop=True))
            rows = cnt.iloc[v.index + 1]
            method = "Count"
        else:
            rows = g[a.isin(["OneMinuteRate", "Value", ""])].sort_values("ts")
            v, method = rows["value"].reset_index(drop=True), "OneMinuteRate"
        if not len(rows):
            continue
        known = roles.get(host)
        combined = bool(known) if known is not None else bool(1.5 < v.max() <= 10)
        frames.append(
            pd.DataFrame(
                {
                    "host": host,
                    "pool": "io",
                    "ts": rows["ts"].to_numpy(),
                    "idle": _unscale(v, None if known is None else combined).to_numpy(),
                    "method": method,
                    "combined": combined,
                    "file": rows["file"].astype("string").to_numpy(),
                    "line": rows["line"].to_numpy(),
                }
            )
        )
    net = m[(name == "NetworkProcessorAvgIdlePercent") & attr.isin(["Value", ""]) & m["value"].notna()]
    if len(net):
        net = net.sort_values("ts")
        scaled = net.groupby(net["host"].astype("string"))["value"].transform(lambda s: _unscale(s, False))
        frames.append(
            pd.DataFrame(
                {
                    "host": net["host"].astype("string").to_numpy(),
                    "pool": "network",
                    "ts": net["ts"].to_numpy(),
                    "idle": scaled.to_numpy(),
                    "method": "Value",
                    "combined": False,
                    "file": net["file"].astype("string").to_numpy(),
                    "line": net["line"].to_numpy(),
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def gc_bound_hosts(bundle) -> set[str]:
    """Hosts whose heap is too small (:func:`heap_size`'s rule): their threads wait on GC, so
    their idle says nothing about the thread settings."""
    use = heap_use(bundle)
    return set(use.loc[(use["pauses"] >= 5) & (use["after_share"] >= HEAP_AFTER_GC), "host"].astype(str))


@per_bundle
def pool_load(bundle) -> pd.DataFrame:
    """Per host and pool: intervals, intervals below :data:`IDLE_LOW`, median idle, median idle of
    the busy intervals, and whether the pool is short of threads (never on a host whose heap is
    too small: ``gc_bound``)."""
    iv = idle_intervals(bundle)
    if not len(iv):
        return pd.DataFrame(
            columns=[
                "host",
                "pool",
                "intervals",
                "busy",
                "idle_median",
                "busy_idle",
                "combined",
                "method",
                "gc_bound",
                "short",
            ]
        )
    iv = iv.assign(low=iv["idle"] < IDLE_LOW)
    g = iv.groupby(["host", "pool"], sort=True)
    out = g.agg(
        intervals=("idle", "size"),
        busy=("low", "sum"),
        idle_median=("idle", "median"),
        combined=("combined", "max"),
        method=("method", "first"),
    )
    out["busy_idle"] = iv[iv["low"]].groupby(["host", "pool"])["idle"].median()
    out = out.reset_index()
    out["gc_bound"] = out["host"].astype(str).isin(gc_bound_hosts(bundle))
    out["short"] = (
        (out["busy"] >= IDLE_MIN_SAMPLES) & (out["busy"] >= IDLE_MIN_SHARE * out["intervals"]) & ~out["gc_bound"]
    )
    return out


@per_bundle
def _setting_by_host(bundle, key: str) -> pd.Series:
    """host -> the broker's value of ``key`` as int: the latest value for its node id (config
    dump, live capture or saved kafka-configs output), the host found from its own config dump."""
    s = model.broker_settings(bundle, key)
    hosts = model.broker_hosts(bundle)
    if not len(s) or not len(hosts):
        return pd.Series(dtype="float64")
    by_id = pd.Series(model.as_int(s["value"]).to_numpy(), index=pd.to_numeric(s["broker"], errors="coerce"))
    by_id = by_id[by_id.index.notna()].groupby(level=0).last()
    vals = hosts["broker_id"].map(by_id)
    return pd.Series(vals.to_numpy(), index=hosts["host"].astype("string").to_numpy()).dropna()


@per_bundle
def _node_ids(bundle) -> pd.Series:
    hosts = model.broker_hosts(bundle)
    return pd.Series(hosts["broker_id"].to_numpy(), index=hosts["host"].astype("string").to_numpy())


def _queue(bundle, host: str) -> str:
    m = bundle.table("metrics")
    if not len(m):
        return ""
    m = m[m["host"].astype("string") == host]
    name, attr = m["name"].astype("string"), m["attribute"].astype("string").fillna("")
    parts = []
    q = m[(name == "RequestQueueSize") & attr.isin(["Value", ""])]["value"]
    if len(q):
        parts.append(f"request queue up to {q.max():,.0f} (median {q.median():,.0f})")
    qt = m[(name == "RequestQueueTimeMs") & (attr == "99thPercentile")]
    if len(qt):
        worst = qt.groupby(qt["request"].astype("string"))["value"].max().sort_values(ascending=False)
        parts.append(
            "99th-percentile queue time "
            + ", ".join(f"{r} {v:,.0f} ms" for r, v in worst.head(3).items() if pd.notna(v))
        )
    return "; ".join(parts)


def _idle_text(x) -> str:
    return f"{x['host']} {x['what']} idle {x['idle']:.0%} ({x['method']})"


@detector(
    ids=["io-threads-short", "network-threads-short"],
    checks=f"handler / network idle below {IDLE_LOW:.0%} in {IDLE_MIN_SAMPLES}+ intervals and "
    f"{IDLE_MIN_SHARE:.0%} of all, against num.io.threads / num.network.threads",
    needs=["metrics"],
)
def thread_pools(bundle) -> list[Finding]:
    load = pool_load(bundle)
    short = load[load["short"]] if len(load) else load
    if not len(short):
        return []
    iv = idle_intervals(bundle)
    ids = _node_ids(bundle)
    out = []
    for _, r in short.iterrows():  # one per short pool: few
        key = "num.io.threads" if r["pool"] == "io" else "num.network.threads"
        have = _setting_by_host(bundle, key)
        cur = have.get(r["host"])
        set_by = "the broker's config" if cur is not None and pd.notna(cur) else f"Kafka's default ({DEFAULTS[key]})"
        cur = int(cur) if cur is not None and pd.notna(cur) else DEFAULTS[key]
        want = recommended_threads(cur, float(r["busy_idle"]))
        node = ids.get(r["host"])
        who = f"{r['host']}" + (f" (node {int(node)})" if node is not None and pd.notna(node) else "")
        what = "request handler" if r["pool"] == "io" else "network processor"
        queue = _queue(bundle, r["host"]) if r["pool"] == "io" else ""
        rows = iv[(iv["host"] == r["host"]) & (iv["pool"] == r["pool"]) & (iv["idle"] < IDLE_LOW)]
        fid = "io-threads-short" if r["pool"] == "io" else "network-threads-short"
        out.append(
            Finding(
                fid,
                "medium" if r["busy_idle"] < 0.1 else "low",
                f"{who}: its {what} threads were under {IDLE_LOW:.0%} idle in {int(r['busy'])} of "
                f"{int(r['intervals'])} intervals (median idle then {r['busy_idle']:.0%}) with {key}={cur} "
                f"(current {cur} -> recommended {want})" + (f"; {queue}" if queue else ""),
                numbers={
                    "host": r["host"],
                    "setting": key,
                    "current": cur,
                    "recommended": want,
                    "set_by": set_by,
                    "busy_intervals": int(r["busy"]),
                    "intervals": int(r["intervals"]),
                    "busy_idle": round(float(r["busy_idle"]), 3),
                    "idle_median": round(float(r["idle_median"]), 3),
                    "measured_from": r["method"],
                    "threshold": f"idle under {IDLE_LOW:.0%} in {IDLE_MIN_SAMPLES}+ intervals and "
                    f"{IDLE_MIN_SHARE:.0%} of them; sized for {IDLE_TARGET:.0%} idle",
                },
                recommendation=(
                    f"Requests wait for a free handler thread while the pool is this busy. Raise {key} to {want} "
                    "(a dynamic broker config since Kafka 1.1: kafka-configs --alter --entity-type brokers "
                    f"--entity-name <id> --add-config {key}={want}). If the handlers are slow because the disk "
                    "is (local time of produce requests, flush and page-cache misses), more threads only queue "
                    "more I/O: check the disk first."
                    if r["pool"] == "io"
                    else f"Connections wait to be read and answered while the network threads are this busy. Raise "
                    f"{key} to {want} (dynamic since Kafka 1.1); TLS and many connections per broker cost network "
                    "thread time."
                ),
                evidence=evidence(rows.assign(what=what), _idle_text),
            )
        )
    return out


@detector(
    ids=["replica-fetchers-short"],
    checks=f"ReplicaFetcherManager MaxLag above {FETCHER_LAG:,} records in every sample "
    f"({IDLE_MIN_SAMPLES}+), against num.replica.fetchers",
    needs=["metrics"],
)
def replica_fetchers(bundle) -> list[Finding]:
    m = bundle.table("metrics")
    if not len(m):
        return []
    lag = m[
        (m["name"].astype("string") == "MaxLag")
        & (m["type"].astype("string") == "ReplicaFetcherManager")
        & m["attribute"].astype("string").fillna("").isin(["Value", ""])
        & m["value"].notna()
    ]
    if not len(lag):
        return []
    lag = lag.assign(host=lag["host"].astype("string"))
    per = lag.groupby("host").agg(n=("value", "size"), low=("value", "min"), high=("value", "max"))
    bad = per[(per["n"] >= IDLE_MIN_SAMPLES) & (per["low"] > FETCHER_LAG)]
    have = _setting_by_host(bundle, "num.replica.fetchers")
    out = []
    for host, r in bad.iterrows():  # few hosts
        cur = have.get(host)
        cur = int(cur) if cur is not None and pd.notna(cur) else DEFAULTS["num.replica.fetchers"]
        want = cur * 2
        out.append(
            Finding(
                "replica-fetchers-short",
                "low",
                f"{host}: followers stayed {r['low']:,.0f} to {r['high']:,.0f} records behind their leaders in all "
                f"{int(r['n'])} samples (MaxLag) with num.replica.fetchers={cur} (current {cur} -> recommended {want})",
                numbers={
                    "host": host,
                    "current": cur,
                    "recommended": want,
                    "max_lag_min": int(r["low"]),
                    "max_lag_max": int(r["high"]),
                    "samples": int(r["n"]),
                    "threshold": f"MaxLag above {FETCHER_LAG:,} records in every sample",
                },
                recommendation="A follower that never catches up leaves the ISR on the next burst, and with "
                "min.insync.replicas that stops acks=all producers. More fetcher threads replicate more partitions "
                "in parallel (num.replica.fetchers, dynamic since Kafka 1.1); if the leader or the network is the "
                "limit, check them first (replica fetch request time on the leader, quota throttling).",
                evidence=evidence(lag[lag["host"] == host].tail(5), lambda x: f"{x['host']} MaxLag {x['value']:,.0f}"),
            )
        )
    return out


@per_bundle
def heap_use(bundle) -> pd.DataFrame:
    """Per host: pauses, heap (committed after collection), median and 90th percentile of the heap
    used after a collection, their share of the heap."""
    g = bundle.table("gc_pauses")
    cols = ["host", "pauses", "heap_bytes", "after_median", "after_p90", "after_share"]
    if not len(g):
        return pd.DataFrame(columns=cols)
    g = g[
        g["is_pause"].fillna(False).astype(bool)
        & g["heap_after"].notna()
        & (pd.to_numeric(g["heap_total"], errors="coerce") > 0)
    ]
    if not len(g):
        return pd.DataFrame(columns=cols)
    g = g.assign(host=g["host"].astype("string"), after=g["heap_after"].astype("float64"))
    out = g.groupby("host").agg(
        pauses=("after", "size"),
        heap_bytes=("heap_total", "max"),
        after_median=("after", "median"),
        after_p90=("after", lambda s: s.quantile(0.9)),
    )
    out["after_share"] = out["after_median"] / out["heap_bytes"].astype("float64")
    return out.reset_index()[cols]


def _mib(b: float) -> str:
    return f"{b / 1024**3:,.1f} GiB" if b >= 1024**3 else f"{b / 1024**2:,.0f} MiB"


@detector(
    ids=["heap-too-small"],
    checks=f"median heap after GC at or above {HEAP_AFTER_GC:.0%} of the heap (G1's default "
    "InitiatingHeapOccupancyPercent)",
    needs=["gc_pauses"],
)
def heap_size(bundle) -> list[Finding]:
    use = heap_use(bundle)
    bad = use[(use["pauses"] >= 5) & (use["after_share"] >= HEAP_AFTER_GC)] if len(use) else use
    out = []
    g = bundle.table("gc_pauses")
    for _, r in bad.iterrows():  # few hosts
        step = 256 * 1024**2
        want = max(HEAP_MIN, math.ceil(float(r["after_p90"]) / HEAP_LIVE_TARGET / step) * step)
        rows = g[(g["host"].astype("string") == r["host"]) & g["is_pause"].fillna(False).astype(bool)]
        out.append(
            Finding(
                "heap-too-small",
                "medium",
                f"{r['host']}: after a collection {r['after_share']:.0%} of its {_mib(r['heap_bytes'])} heap is "
                f"still in use (median of {int(r['pauses'])} pauses; 90th percentile {_mib(r['after_p90'])}) "
                f"(current heap {_mib(r['heap_bytes'])} -> recommended {_mib(want)})",
                numbers={
                    "host": r["host"],
                    "heap_bytes": int(r["heap_bytes"]),
                    "recommended_bytes": int(want),
                    "after_gc_median_bytes": int(r["after_median"]),
                    "after_gc_p90_bytes": int(r["after_p90"]),
                    "after_gc_share": round(float(r["after_share"]), 3),
                    "pauses": int(r["pauses"]),
                    "threshold": f"median after GC >= {HEAP_AFTER_GC:.0%} of the heap; sized so the 90th "
                    f"percentile fills {HEAP_LIVE_TARGET:.0%}, at least {_mib(HEAP_MIN)}",
                },
                recommendation="With this little room G1 runs a concurrent cycle after nearly every young "
                "collection and a burst can end in a full, stop-the-world collection. Set the heap with "
                f'KAFKA_HEAP_OPTS="-Xms{want // 1024**2}m -Xmx{want // 1024**2}m" in the broker\'s environment: '
                "the page cache, not the heap, holds Kafka's data, so a few GiB are enough on most brokers.",
                evidence=evidence(
                    rows.tail(5),
                    lambda x: (
                        f"{x['host']} {x['kind']}: heap {_mib(x['heap_after'])} of {_mib(x['heap_total'])} "
                        "after the pause"
                    ),
                ),
            )
        )
    return out


@detector(
    ids=["controller-combined-busy"],
    checks=f"process.roles=broker,controller on a node whose broker handlers are under {COMBINED_BUSY_IDLE:.0%} "
    f"idle (median) or that holds {COMBINED_REPLICAS:,}+ replicas",
    needs=["configs"],
)
def combined_controllers(bundle) -> list[Finding]:
    roles = model.broker_settings(bundle, "process.roles")
    if not len(roles):
        return []
    text = roles["value"].astype("string").str.lower()
    both = roles[
        text.str.contains("broker", regex=False).fillna(False)
        & text.str.contains("controller", regex=False).fillna(False)
    ]
    both = both[both["host"].notna()]
    if not len(both):
        return []
    load = pool_load(bundle)
    io = load[load["pool"] == "io"].set_index("host") if len(load) else load
    reps = model.replicas(bundle)
    per_node = reps.groupby("broker_id").size() if len(reps) else pd.Series(dtype="int64")
    ids = _node_ids(bundle)
    out = []
    for _, r in both.iterrows():  # one per combined node: few
        host = str(r["host"])
        node = ids.get(host)
        measured = len(io) and host in io.index and not bool(io.loc[host, "gc_bound"])
        idle = float(io.loc[host, "idle_median"]) if measured else np.nan
        held = int(per_node.get(int(node), 0)) if node is not None and pd.notna(node) else 0
        busy = pd.notna(idle) and idle < COMBINED_BUSY_IDLE
        if not busy and held < COMBINED_REPLICAS:
            continue
        why = []
        if busy:
            why.append(f"its broker handlers were {idle:.0%} idle (median)")
        if held >= COMBINED_REPLICAS:
            why.append(f"it holds {held:,} replicas")
        name = f"node {int(node)} ({host})" if node is not None and pd.notna(node) else host
        out.append(
            Finding(
                "controller-combined-busy",
                "medium" if busy and idle < IDLE_LOW else "low",
                f"{name} is both broker and controller (process.roles={r['value']}) and "
                + " and ".join(why)
                + " (current broker,controller -> recommended broker, with the controllers on dedicated nodes)",
                numbers={
                    "node": int(node) if node is not None and pd.notna(node) else None,
                    "host": host,
                    "process_roles": str(r["value"]),
                    "handler_idle_median": round(idle, 3) if pd.notna(idle) else None,
                    "replicas": held,
                    "threshold": f"handler idle under {COMBINED_BUSY_IDLE:.0%} (median) or {COMBINED_REPLICAS:,}+ "
                    "replicas",
                },
                recommendation="The active controller commits every leader change and broker fencing for the whole "
                "cluster; on a busy broker it waits for CPU and shares its GC pauses, so failovers slow down when "
                "they are needed most. Run three (or five) controllers on their own nodes "
                "(process.roles=controller) and set the brokers to process.roles=broker: in Kafka 3.9 a node's "
                "roles cannot change in place, so add dedicated controllers to the quorum (kafka-metadata-quorum "
                "add-controller, dynamic quorums) and retire the combined ones one by one.",
                evidence=evidence(
                    both[both["host"] == r["host"]], lambda x: f"{x['host']}: process.roles={x['value']}"
                ),
            )
        )
    return out
