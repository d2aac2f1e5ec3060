"""Detectors on the request path: who fails to authenticate or is denied, which clients a quota
throttles, and whether request handlers or network threads are saturated (or one broker is
slower than the rest).

Example:
    >>> idle_fraction(pd.Series([2.0, 1.1]))       # a combined KRaft node's handler meter (two pools)
    [1.0, 0.1]
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kitlib import tables
from kitlib.findings import Finding, detector, evidence

IDLE_FLOOR = 0.3  # Kafka's operations guidance: handler/network idle below 30 % is saturation
IDLE_MIN_SAMPLES = 2  # samples below the floor (per host and metric) that make a finding
QUEUE_SLOW_MS = 100.0  # a request that waited this long in the request queue waited too long
QUEUE_SLOW_SHARE = 0.05  # ... and this share of a broker's requests doing so is saturation
QUEUE_MIN_REQUESTS = 20
PEER_FACTOR = 3.0  # Cruise Control's rule of thumb: a broker 3x slower than its peers
THROTTLE_MIN_REQUESTS = 3
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
IDLE_NAMES = ("RequestHandlerAvgIdlePercent", "NetworkProcessorAvgIdlePercent")


def idle_fraction(values: pd.Series) -> list[float]:
    """Idle values of one broker's meter or gauge as fractions of 0..1.

    The JMX values are fractions. A series that goes above 2.5 is a percentage (some exporters).
    A RequestHandlerAvgIdlePercent series between 1 and 2 comes from a combined KRaft node
    (process.roles=broker,controller), where the broker's and the controller's handler pools add
    to the one meter (about 2.0 when both idle): the broker pool's idle is read as the value minus
    the controller pool's 1.0 (a controller pool is nearly always idle), clipped to 0..1.

    Example:
        >>> idle_fraction(pd.Series([0.25, 0.9]))          # a broker-only node
        [0.25, 0.9]
        >>> idle_fraction(pd.Series([2.0, 1.98, 1.12]))    # a combined node: broker pool 100 %, 98 %, 12 % idle
        [1.0, 0.98, 0.12]
        >>> idle_fraction(pd.Series([35.0, 80.0]))         # percentages
        [0.35, 0.8]
    """
    v = pd.to_numeric(values, errors="coerce").astype("float64")
    top = v.max() if len(v) else 0.0
    if top > 2.5:
        v = v / 100
    elif top > 1.05:
        v = (v - 1.0).clip(lower=0.0, upper=1.0)
    return [round(float(x), 4) for x in v]


def saturation_metrics_present(metrics: pd.DataFrame) -> bool:
    return bool(metrics["name"].astype("string").isin(IDLE_NAMES).any()) if len(metrics) else False


# --- authentication and authorization ---


def auth_summary(auth: pd.DataFrame) -> pd.DataFrame:
    """Per kind, principal or address, mechanism and reason: how many failures, first and last."""
    cols = ["kind", "who", "mechanism", "reason", "failures", "first", "last"]
    if not len(auth):
        return pd.DataFrame(columns=cols)
    auth = auth.reset_index(drop=True)
    who = auth["principal"].astype("string").fillna(auth["address"].astype("string")).fillna("(unknown)")
    what = auth["reason"].astype("string")
    # an authorizer's denial (or a row of no kind) reads as what was denied: written for those rows alone
    kind = auth["kind"]
    if isinstance(kind.dtype, pd.CategoricalDtype):  # by the codes: one comparison per category
        hit = np.array([str(c) == "authorization" for c in kind.cat.categories] + [True])
        codes = kind.cat.codes.to_numpy()
        denied = np.flatnonzero(hit[np.where(codes < 0, len(hit) - 1, codes)])
    else:
        denied = np.flatnonzero(~(kind.astype("string") != "authorization").fillna(False).to_numpy(bool))
    if len(denied):
        what = what.copy()
        what.iloc[denied] = (
            "Denied "
            + auth["operation"].iloc[denied].astype("string").fillna("?")
            + " on "
            + auth["resource"].iloc[denied].astype("string").fillna("?")
        ).array
    df = auth.assign(who=who, what=what.fillna("(not logged)"), mech=auth["mechanism"].astype("string").fillna("-"))
    g = df.groupby(["kind", "who", "mech", "what"], observed=True, dropna=False)
    out = g.agg(failures=("ts", "size"), first=("ts", "min"), last=("ts", "max")).reset_index()
    out = out.rename(columns={"mech": "mechanism", "what": "reason"})
    return out.sort_values("failures", ascending=False)[cols].reset_index(drop=True)


EVIDENCE_ROWS = 20  # lines the auth-failures finding quotes

# what the auth-failures counts read of auth_failures (the text of a line only for the rows shown)
AUTH_COLUMNS = ["ts", "kind", "principal", "address", "mechanism", "reason", "operation", "resource"]


def _columns(bundle, name: str, cols: list[str]) -> pd.DataFrame:
    """Table ``name`` of ``bundle`` with at least ``cols`` (:meth:`~kitlib.bundle.Bundle.columns`
    where the bundle has it, else the whole table)."""
    columns = getattr(bundle, "columns", None)
    if not callable(columns):
        return bundle.table(name)
    got = columns(name, cols)
    pa.default_memory_pool().release_unused()  # the scan's buffers, before the frames made next
    return got


def _auth_evidence(bundle, af: pd.DataFrame, limit: int = EVIDENCE_ROWS) -> pd.DataFrame:
    """The rows the auth-failures finding shows: of the first two of each kind and address and the
    last two, each once, the first ``limit`` by time, with every column (read for these rows only)."""
    key = af[["kind", "address"]].reset_index(drop=True)
    first = key.groupby(["kind", "address"], observed=True, dropna=False).head(2).index.to_numpy()
    at = pd.unique(np.concatenate([first, np.arange(max(len(af) - 2, 0), len(af))]))
    # ordered by time as the frame of all of them would be (the same sort of the same times), and
    # only the rows shown read: each row is a record of its own (file and line), so none repeats
    at = at[pd.DataFrame({"ts": af["ts"].array.take(at)}).sort_values("ts").index.to_numpy()[:limit]]
    if "message" in af.columns:  # the whole table came
        rows = af.iloc[at]
    else:
        rows = bundle.rows_at("auth_failures", at, list(tables.SCHEMAS["auth_failures"].names))
    return rows.drop_duplicates()


def _kinds_seen(kind: pd.Series) -> set[str]:
    """The kinds the rows hold (a categorical column's by its codes: no string per row)."""
    if isinstance(kind.dtype, pd.CategoricalDtype):
        codes = kind.cat.codes.to_numpy()
        return {str(c) for c in kind.cat.categories[np.unique(codes[codes >= 0])]}
    return set(kind.astype("string").dropna().unique())


@detector(
    ids=["auth-failures"],
    needs=["auth_failures"],
    checks="failed authentications (SASL, TLS), re-authentications and authorizer denials",
)
def auth_failures(bundle) -> list[Finding]:
    # the columns the counts read: a big stored table's text is read for the evidence rows only
    af = _columns(bundle, "auth_failures", AUTH_COLUMNS)
    s = auth_summary(af)
    if not len(s):
        return []
    top = s.head(5)
    # an ACL denial is labelled by who denied it: "authorization: Denied ..." reads as an HTTP
    # Authorization header to the redaction, which would mask the word after it
    label = top["kind"].astype("string").replace("authorization", "authorizer")
    parts = [
        f"{r['who']} {r['failures']}x"
        + (
            "" if pd.isna(r["first"]) else f" since {pd.Timestamp(r['first']).strftime('%H:%M:%S')}"
        )  # an excerpt has no dates
        + " "
        f"({kind}{'' if r['mechanism'] == '-' else ' ' + r['mechanism']}: {r['reason']})"
        for kind, (_, r) in zip(label, top.iterrows())
    ]
    kinds = _kinds_seen(af["kind"])
    fixes = []
    if kinds & {"authentication", "reauthentication", "client"}:
        fixes.append(
            "a client presents credentials the broker rejects: find the application at that address and "
            "fix its sasl.jaas.config / username and password (or SCRAM credentials with kafka-configs "
            "--alter --add-config 'SCRAM-SHA-512=[...]' --entity-type users); a rotated secret not rolled "
            "out everywhere looks exactly like this"
        )
    if "ssl_handshake" in kinds:
        fixes.append(
            "TLS handshakes fail: check the client's truststore against the broker certificate chain, "
            "ssl.endpoint.identification.algorithm and host names, and that the client speaks TLS to a "
            "TLS listener"
        )
    if "authorization" in kinds:
        fixes.append(
            "the authorizer denies an authenticated principal: add the ACL it needs (kafka-acls --add "
            "--allow-principal ... --operation ... --topic/--group ...) or fix the principal the client "
            "runs as"
        )
    total = len(af)
    who = ", ".join(sorted(set(s["who"].head(10))))
    return [
        Finding(
            "auth-failures",
            # one failure alone is ambiguous (a probe, a password mistyped once): low until it repeats
            "high" if total >= 10 else "medium" if total >= 2 else "low",
            f"{total} authentication/authorization failures: " + "; ".join(parts),
            numbers={
                "failures": total,
                "who": who,
                "kinds": ", ".join(sorted(kinds)),
                "first": af["ts"].min(),
                "last": af["ts"].max(),
            },
            recommendation="; ".join(fixes)[:1].upper() + "; ".join(fixes)[1:] + ".",
            evidence=evidence(_auth_evidence(bundle, af), limit=EVIDENCE_ROWS),
            counted_from={"failures": ("auth_failures", "index == index")},
        )
    ]


# --- quotas ---


def throttle_summary(requests: pd.DataFrame) -> pd.DataFrame:
    """Per client id and principal: requests, throttled requests, max and total throttle time."""
    cols = [
        "client_id",
        "principal",
        "apis",
        "requests",
        "throttled",
        "max_throttle_ms",
        "total_throttle_ms",
        "first_throttled",
    ]
    if not len(requests):
        return pd.DataFrame(columns=cols)
    requests = requests.reset_index(drop=True)
    r = requests.assign(thr=requests["throttle_ms"].fillna(0) > 0, api_name=requests["api_name"].astype("string"))
    if not r["thr"].any():
        return pd.DataFrame(columns=cols)
    g = r.groupby([r["client_id"].astype("string").fillna(""), r["principal"].astype("string").fillna("")])
    out = g.agg(
        requests=("ts", "size"),
        throttled=("thr", "sum"),
        max_throttle_ms=("throttle_ms", "max"),
        total_throttle_ms=("throttle_ms", "sum"),
    ).reset_index()
    firsts = r[r["thr"]].groupby(r["client_id"].astype("string").fillna(""))["ts"].min()
    apis = (
        r[r["thr"]]
        .groupby(r["client_id"].astype("string").fillna(""))["api_name"]
        .agg(lambda s: ", ".join(sorted(set(s.dropna().astype(str)))))  # 1.0-2.7 lines may name no API
    )
    out["first_throttled"] = out["client_id"].map(firsts)
    out["apis"] = out["client_id"].map(apis).fillna("")
    return out[out["throttled"] > 0].sort_values("total_throttle_ms", ascending=False)[cols].reset_index(drop=True)


def throttle_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """Quota throttle-time samples above 0: the broker's per-client ``kafka.server:type=Produce|Fetch|Request,
    client-id=...`` sensors and the clients' ``produce-throttle-time-*`` / ``fetch-throttle-time-*``."""
    if not len(metrics):
        return metrics.iloc[0:0]
    attr = metrics["attribute"].astype("string").str.lower()
    name = metrics["name"].astype("string").str.lower().fillna("")
    hit = attr.str.contains("throttle-time|throttle_time|throttletime", regex=True, na=False) | name.str.contains(
        "throttle-time|throttle_time", regex=True, na=False
    )
    m = metrics[hit & (metrics["value"] > 0)]
    return m


def quotas_in_force(configs: pd.DataFrame, quota_changes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Quota settings the bundle holds: kafka-configs --describe output and config dumps
    (``configs``), and the last value the controllers or brokers logged applying per entity and key
    (``quota_changes``). Columns: entity, key, value and where it was read (ts, host, file, line)."""
    cols = ["entity", "key", "value", "ts", "host", "file", "line"]
    parts = []
    if len(configs):
        c = configs[configs["key"].astype("string").isin(QUOTA_KEYS)]
        parts.append(c.assign(entity=c["entity"].astype("string"), value=c["value"].astype("string"))[cols])
    if quota_changes is not None and len(quota_changes):
        q = quota_changes.sort_values("ts").groupby(["entity", "key"], dropna=False).tail(1)
        q = q[~q["removed"].fillna(False).astype(bool)]
        parts.append(q.assign(value=q["value"].map(lambda v: format(v, ".15g")))[cols])
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)


@detector(
    ids=["quota-throttling"],
    needs=[],
    checks="clients throttled by a quota (throttleTimeMs in the request log, throttle-time metrics)",
)
def quota_throttling(bundle) -> list[Finding]:
    t = throttle_summary(bundle.table("requests"))
    t = t[t["throttled"] >= THROTTLE_MIN_REQUESTS] if len(t) else t
    tm = throttle_metrics(bundle.table("metrics"))
    tm_clients = (
        tm.groupby(tm["client_id"].astype("string").fillna("(unnamed)")).agg(
            samples=("value", "size"), max_ms=("value", "max")
        )
        if len(tm)
        else pd.DataFrame(columns=["samples", "max_ms"])
    )
    tm_clients = tm_clients[tm_clients["samples"] >= 2]
    if not len(t) and not len(tm_clients):
        return []
    q = quotas_in_force(bundle.table("configs"), bundle.table("quota_changes"))
    quota_text = (
        "; ".join(f"{r['entity'] or '(default)'} {r['key']}={r['value']}" for _, r in q.head(5).iterrows())
        if len(q)
        else "not in the bundle (kafka-configs --describe --entity-type clients/users shows it)"
    )
    clients = list(t["client_id"]) + [c for c in tm_clients.index if c not in set(t["client_id"])]
    parts = [
        f"{r['client_id'] or '(no client id)'}: {int(r['throttled'])} of {int(r['requests'])} requests throttled "
        f"({r['apis']}), up to {r['max_throttle_ms']:,.0f} ms"
        for _, r in t.head(5).iterrows()
    ]
    parts += [
        f"{c}: throttle-time up to {row['max_ms']:,.0f} ms in {int(row['samples'])} metric samples"
        for c, row in tm_clients.iterrows()
        if c not in set(t["client_id"])
    ]
    reqs = bundle.table("requests")
    ev = reqs[reqs["throttle_ms"].fillna(0) > 0].groupby("client_id", dropna=False).head(3) if len(reqs) else reqs
    ev_list = evidence(
        ev,
        lambda r: (
            f"{r['api_name']} from {r['client_id']} ({r['client_address']}): "
            f"throttleTimeMs {r['throttle_ms']:g}, totalTimeMs {r['total_ms']:g}"
        ),
    )
    ev_list += evidence(tm.head(3), lambda r: f"{r['mbean']} {r['attribute']} = {r['value']:g}")
    ev_list += evidence(q.head(3), lambda r: f"{r['entity']} {r['key']}={r['value']}")
    return [
        Finding(
            "quota-throttling",
            "medium",
            "Quota throttling: " + "; ".join(parts),
            numbers={
                "clients": ", ".join(clients),
                "throttled_requests": int(t["throttled"].sum()) if len(t) else 0,
                "max_throttle_ms": float(
                    max(t["max_throttle_ms"].max() if len(t) else 0, tm["value"].max() if len(tm) else 0)
                ),
                "quota_in_force": quota_text,
            },
            recommendation=(
                "The broker delays these clients to hold them to their quota (" + quota_text + "). If the "
                "rate is expected, raise the quota for that client-id/user with kafka-configs --alter "
                "--add-config producer_byte_rate=... (or consumer_byte_rate, request_percentage); otherwise "
                "find why the client sends more than before. Throttled clients see latency, not errors, so "
                "check their delivery.timeout.ms and max.block.ms."
            ),
            evidence=ev_list,
        )
    ]


# --- saturation ---


def idle_samples(metrics: pd.DataFrame) -> pd.DataFrame:
    """Handler and network-processor idle samples as fractions, one row per host, metric and time
    (the one-minute rate of the handler meter, the value of the network gauge); ``combined`` marks
    a broker+controller node, whose meters mix two planes."""
    cols = ["ts", "host", "metric", "idle", "combined", "file", "line", "mbean", "attribute"]
    if not len(metrics):
        return pd.DataFrame(columns=cols)
    metrics = metrics.reset_index(drop=True)
    m = metrics[metrics["name"].astype("string").isin(IDLE_NAMES)]
    attr = m["attribute"].astype("string")
    m = m[attr.isin(["OneMinuteRate", "Value"]) | (attr == "")]
    if not len(m):
        return pd.DataFrame(columns=cols)
    m = m.assign(metric=m["name"].astype("string"), host=m["host"].astype("string"))
    top = m.groupby("host")["value"].transform("max")
    m = m.assign(combined=(top > 1.05) & (top <= 2.5))  # a broker+controller node (see idle_fraction)
    parts = [g.assign(idle=idle_fraction(g["value"])) for _, g in m.groupby(["host", "metric"], sort=False)]
    return pd.concat(parts)[cols].sort_values("ts", kind="stable").reset_index(drop=True)


def broker_latency(requests: pd.DataFrame) -> pd.DataFrame:
    """Per broker host: requests, median and p99 of the time the broker itself spent (total minus the
    time a request waits on purpose: remote wait such as fetch.max.wait.ms, and throttling), queue
    time p99 and the share of requests queued >= QUEUE_SLOW_MS."""
    cols = ["host", "requests", "own_ms_median", "own_ms_p99", "queue_ms_p99", "slow_queue_share"]
    if not len(requests):
        return pd.DataFrame(columns=cols)
    requests = requests.reset_index(drop=True)
    r = requests.assign(
        own=(requests["total_ms"] - requests["remote_ms"].fillna(0) - requests["throttle_ms"].fillna(0)),
        slowq=requests["request_queue_ms"].fillna(0) >= QUEUE_SLOW_MS,
    )
    g = r.groupby(r["host"].astype("string"))
    out = g.agg(
        requests=("ts", "size"),
        own_ms_median=("own", "median"),
        own_ms_p99=("own", lambda s: s.quantile(0.99)),
        queue_ms_p99=("request_queue_ms", lambda s: s.quantile(0.99)),
        slow_queue_share=("slowq", "mean"),
    ).reset_index()
    return out[cols]


@detector(
    ids=["request-saturation"],
    needs=[],
    checks=f"request handler / network idle below {IDLE_FLOOR:.0%}, requests queued >= {QUEUE_SLOW_MS:g} ms, "
    f"a broker {PEER_FACTOR:g}x slower than its peers",
)
def request_saturation(bundle) -> list[Finding]:
    idle = idle_samples(bundle.table("metrics"))
    low = idle[idle["idle"] < IDLE_FLOOR] if len(idle) else idle
    low_by = (
        low.groupby(["host", "metric"]).agg(samples=("idle", "size"), min_idle=("idle", "min")).reset_index()
        if len(low)
        else pd.DataFrame(columns=["host", "metric", "samples", "min_idle"])
    )
    low_by = low_by[low_by["samples"] >= IDLE_MIN_SAMPLES]
    lat = broker_latency(bundle.table("requests"))
    queued = lat[(lat["requests"] >= QUEUE_MIN_REQUESTS) & (lat["slow_queue_share"] >= QUEUE_SLOW_SHARE)]
    # on a combined node the meters mix the broker's and the controller's planes: low idle there is
    # saturation only when the request log shows requests waiting on that host
    combined = set(idle.loc[idle["combined"].astype(bool), "host"]) if len(idle) else set()
    low_by = low_by[~low_by["host"].isin(combined - set(queued["host"]))]
    low = low[low["host"].isin(set(low_by["host"]))] if len(low) else low
    slow_peer = pd.DataFrame(columns=lat.columns)
    busy = lat[lat["requests"] >= QUEUE_MIN_REQUESTS]
    if len(busy) >= 2:
        for _, r in busy.iterrows():
            peers = busy[busy["host"] != r["host"]]["own_ms_median"].median()
            if peers > 0 and r["own_ms_median"] >= PEER_FACTOR * peers and r["own_ms_median"] >= 5:
                slow_peer = pd.concat([slow_peer, r.to_frame().T])
    if not len(low_by) and not len(queued) and not len(slow_peer):
        return []
    parts = [
        f"{r['host']} {r['metric']} down to {r['min_idle']:.0%} ({int(r['samples'])} samples below {IDLE_FLOOR:.0%})"
        for _, r in low_by.iterrows()
    ]
    parts += [
        f"{r['host']}: {r['slow_queue_share']:.0%} of {int(r['requests'])} requests waited >= "
        f"{QUEUE_SLOW_MS:g} ms in the request queue (p99 {r['queue_ms_p99']:,.0f} ms)"
        for _, r in queued.iterrows()
    ]
    parts += [
        f"{r['host']} takes {r['own_ms_median']:,.1f} ms per request (median), {PEER_FACTOR:g}x its peers"
        for _, r in slow_peer.iterrows()
    ]
    handler = low_by["metric"].eq("RequestHandlerAvgIdlePercent").any() or len(queued)
    network = low_by["metric"].eq("NetworkProcessorAvgIdlePercent").any()
    fixes = []
    if handler:
        fixes.append(
            "request handler threads are busy nearly all the time, so requests wait in the request queue: "
            "raise num.io.threads (a common start is 8 per data disk), and look at what keeps them busy "
            "(many small produce requests: raise linger.ms/batch.size on producers; fetch sessions from "
            "many consumers; down-conversion)"
        )
    if network:
        fixes.append(
            "network threads are saturated: raise num.network.threads and check the connection count and TLS cost"
        )
    if len(slow_peer):
        fixes.append(
            "one broker is slower than its peers: compare its disks, GC and partition leadership with the "
            "others (kafka-leader-election / reassignment to move load off it)"
        )
    reqs = bundle.table("requests")
    ev = (
        reqs[reqs["request_queue_ms"].fillna(0) >= QUEUE_SLOW_MS].sort_values("request_queue_ms", ascending=False)
        if len(reqs)
        else reqs
    )
    ev_list = evidence(low.sort_values("idle").head(6), lambda r: f"{r['mbean']} {r['attribute']} = {r['idle']:.3f}")
    ev_list += evidence(
        ev.head(6),
        lambda r: (
            f"{r['api_name']} from {r['client_id']}: requestQueueTimeMs "
            f"{r['request_queue_ms']:g}, totalTimeMs {r['total_ms']:g}"
        ),
    )
    hosts = sorted(set(low_by["host"]) | set(queued["host"]) | set(slow_peer["host"]))
    text = "; ".join(fixes)
    return [
        Finding(
            "request-saturation",
            "high" if len(low_by) and float(low_by["min_idle"].min()) < 0.1 else "medium",
            "Request path saturated: " + "; ".join(parts),
            numbers={
                "hosts": ", ".join(map(str, hosts)),
                "min_handler_idle": float(low[low["metric"] == "RequestHandlerAvgIdlePercent"]["idle"].min())
                if len(low) and (low["metric"] == "RequestHandlerAvgIdlePercent").any()
                else None,
                "min_network_idle": float(low[low["metric"] == "NetworkProcessorAvgIdlePercent"]["idle"].min())
                if len(low) and (low["metric"] == "NetworkProcessorAvgIdlePercent").any()
                else None,
                "queue_ms_p99": float(queued["queue_ms_p99"].max()) if len(queued) else None,
            },
            recommendation=(text[:1].upper() + text[1:] + ".") if text else "",
            evidence=ev_list,
        )
    ]
