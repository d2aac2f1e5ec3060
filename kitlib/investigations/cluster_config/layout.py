"""Layout: how partitions, leaders, racks and controllers are spread over the nodes.

**Skew** is measured the way kafka-ui and AKHQ show it, a broker's share against an even split:
``skew % = 100 × (count − even) / even`` with ``even = total / brokers``, but the count is
compared with the best split that exists (``ceil(even)``: 7 partitions over 3 brokers cannot do
better than 3/2/2), so only what a rebalance could fix counts. The thresholds are kafka-ui's:
from :data:`SKEW_LOW` (10 %) a finding of low severity, from :data:`SKEW_MEDIUM` (20 %) medium.
Too few items say nothing: a skew needs at least :data:`MIN_ITEMS` per broker on average.

Leaders come from kafka-topics --describe (who leads each partition) or, without it, from each
broker's JMX ``LeaderCount``; replicas from the describe output or the log-dir sizes. The JMX
counts are used only once they have **settled**: every broker's last value held for
:data:`SETTLED_SAMPLES` samples. While a topic is created or leadership moves (a broker
restarting, ``__consumer_offsets`` coming up with the first group) the counts climb one broker
after another over a few seconds, and a capture that ends then shows a skew that is not there.

**Preferred leaders**: the first broker of a replica list is the partition's preferred leader;
Kafka moves leadership back when more than ``leader.imbalance.per.broker.percentage`` (10 %) of
a broker's preferred partitions are led elsewhere and ``auto.leader.rebalance.enable`` is on.

**Racks**: with ``broker.rack`` set, a partition whose replicas all sit on one rack is lost
with that rack. **Controller quorum**: a Raft quorum of ``n`` voters survives ``(n − 1) // 2``
failures, so an even ``n`` tolerates no more than ``n − 1`` voters and adds a node that must
agree; one voter is a single point of failure for the whole cluster's metadata.

Example:
    >>> skew(pd.Series([6, 2, 1], index=[1, 2, 3]))["skew_pct"].round(1).tolist()
    [100.0, -33.3, -66.7]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.bundle import per_bundle
from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_config import model

SKEW_LOW = 10.0
SKEW_MEDIUM = 20.0
MIN_ITEMS = 3  # items per broker on average below which a skew is noise
PREFERRED_IMBALANCE_PCT = 10.0  # Kafka's leader.imbalance.per.broker.percentage default
SETTLED_SAMPLES = 3  # samples a broker's last LeaderCount must have held for the counts to be read


def skew(counts: pd.Series) -> pd.DataFrame:
    """Per broker (the index): count, even share, best achievable share and skew % against the
    even share (only the part above the best achievable split counts as positive skew)."""
    counts = counts.astype("float64")
    total, n = counts.sum(), len(counts)
    even = total / n if n else np.nan
    best = np.ceil(even) if n else np.nan
    pct = np.where(counts > best, 100.0 * (counts - best) / even, 100.0 * np.minimum(counts - even, 0) / even)
    return pd.DataFrame(
        {"count": counts, "even": even, "best": best, "skew_pct": pct}, index=counts.index.rename("broker_id")
    )


def _severity(pct: float) -> str | None:
    return "medium" if pct >= SKEW_MEDIUM else "low" if pct >= SKEW_LOW else None


@per_bundle
def partition_counts(bundle) -> pd.DataFrame:
    """Replicas per broker (every broker the bundle knows, 0 when it holds none), with skew."""
    reps = model.replicas(bundle)
    reps = reps[reps["complete"].astype(bool)] if len(reps) else reps
    if not len(reps):
        return pd.DataFrame(columns=["count", "even", "best", "skew_pct"])
    ids = sorted(set(model.brokers(bundle)["broker_id"]) | set(reps["broker_id"]))
    return skew(reps.groupby("broker_id").size().reindex(ids, fill_value=0))


@per_bundle
def leader_counts(bundle) -> pd.DataFrame:
    """Leaders per broker with skew: from kafka-topics --describe, else the last JMX LeaderCount
    of each broker. ``attrs["source"]`` says which; empty when neither is in the bundle, or when
    the JMX counts were still moving as the capture ended (``attrs["unsettled"]``)."""
    reps = model.replicas(bundle)
    if reps.attrs.get("source") == "topic_partitions" and reps["leads"].any():
        ids = sorted(set(model.brokers(bundle)["broker_id"]) | set(reps["broker_id"]))
        out = skew(reps[reps["leads"]].groupby("broker_id").size().reindex(ids, fill_value=0))
        out.attrs["source"] = "topic_partitions"
        return out
    m = bundle.table("metrics")
    if len(m):
        lc = m[(m["name"].astype("string") == "LeaderCount") & (m["type"].astype("string") == "ReplicaManager")]
        lc = lc[lc["value"].notna()]
        if len(lc) and lc["host"].nunique() >= 2:
            if not _settled(lc):
                out = pd.DataFrame(columns=["count", "even", "best", "skew_pct"])
                out.attrs["source"] = ""
                out.attrs["unsettled"] = True
                return out
            last = lc.sort_values("ts").drop_duplicates("host", keep="last")
            # one id per host, from the host's own config dump (a live capture's host is the cluster's)
            node = model.broker_hosts(bundle)
            node_of = node.set_index(node["host"].astype("string"))["broker_id"]
            key = last["host"].astype("string").map(node_of)
            key = pd.to_numeric(key, errors="coerce").fillna(-1).astype("int64")
            out = skew(pd.Series(last["value"].to_numpy(), index=key))
            out["host"] = last["host"].astype("string").to_numpy()
            out["file"] = last["file"].astype("string").to_numpy()
            out["line"] = last["line"].to_numpy()
            out.attrs["source"] = "metrics"
            return out
    out = pd.DataFrame(columns=["count", "even", "best", "skew_pct"])
    out.attrs["source"] = ""
    return out


def _settled(samples: pd.DataFrame) -> bool:
    """True when every host's last ``value`` held for its last :data:`SETTLED_SAMPLES` samples (or
    for all of them, on a host sampled fewer times: one snapshot shows no movement)."""
    s = samples.sort_values(["host", "ts"], kind="stable")
    host = s["host"].astype("string").to_numpy(dtype=object)
    value = s["value"].to_numpy(dtype="float64")
    # a run starts where the host or the value changes; the trailing run of each host is its last
    starts = np.r_[True, (host[1:] != host[:-1]) | (value[1:] != value[:-1])]
    run = np.cumsum(starts)
    last_of_host = np.r_[host[1:] != host[:-1], True]
    run_sizes = np.bincount(run)
    _, per_host = np.unique(host, return_counts=True)
    need = np.minimum(per_host, SETTLED_SAMPLES)  # hosts in sorted order, as the trailing runs
    return bool((run_sizes[run[last_of_host]] >= need).all())


def _broker_name(b) -> str:
    return f"broker {b}" if int(b) >= 0 else "a broker of unknown id"


@detector(
    ids=["partition-skew", "leader-skew"],
    checks=f"replicas and leaders per broker against an even split (from {SKEW_LOW:.0f} % low, "
    f"{SKEW_MEDIUM:.0f} % medium, as kafka-ui)",
    needs=[],
)
def skews(bundle) -> list[Finding]:
    out = []
    reps = model.replicas(bundle)
    for fid, table, what in (
        ("partition-skew", partition_counts(bundle), "replicas"),
        ("leader-skew", leader_counts(bundle), "partition leaders"),
    ):
        if len(table) < 2 or table["even"].iloc[0] < MIN_ITEMS:
            continue
        worst = table["skew_pct"].idxmax()
        pct = float(table.loc[worst, "skew_pct"])
        sev = _severity(pct)
        if sev is None:
            continue
        counts = ", ".join(f"{_broker_name(b)}: {int(c)}" for b, c in table["count"].items())
        per_topic = ""
        if fid == "leader-skew" and table.attrs.get("source") == "topic_partitions":
            led = reps[reps["leads"] & (reps["broker_id"] == worst)].groupby("topic").size()
            parts = reps.drop_duplicates(["topic", "partition"]).groupby("topic").size()
            share = (led / parts.reindex(led.index)).sort_values(ascending=False)
            top = share[(share > 0.5) & (parts.reindex(share.index) >= 2)]
            per_topic = ", ".join(f"{t} ({int(led[t])} of {int(parts[t])})" for t in top.index[:5])
        if fid == "leader-skew" and table.attrs.get("source") == "metrics":
            ev = evidence(
                table.reset_index(),
                lambda r: f"{r['host']} (node {r['broker_id']}): LeaderCount {int(r['count'])}",
            )
        elif fid == "leader-skew":
            ev = evidence(
                reps[reps["leads"] & (reps["broker_id"] == worst)],
                lambda r: f"{r['topic']}-{r['partition']}: leader {r['broker_id']}",
            )
        else:
            ev = evidence(
                reps[reps["broker_id"] == worst].drop_duplicates("topic"),
                lambda r: f"{r['topic']}-{r['partition']}: replica on broker {r['broker_id']}",
            )
        target = int(table.loc[worst, "best"])
        out.append(
            Finding(
                fid,
                sev,
                f"{_broker_name(worst)} holds {int(table.loc[worst, 'count'])} of {int(table['count'].sum())} {what}, "
                f"{pct:.0f} % above an even split (current {int(table.loc[worst, 'count'])} -> recommended "
                f"at most {target})" + (f"; topics led there: {per_topic}" if per_topic else ""),
                numbers={
                    "broker": int(worst),
                    "count": int(table.loc[worst, "count"]),
                    "even_share": round(float(table.loc[worst, "even"]), 2),
                    "skew_pct": round(pct, 1),
                    "per_broker": counts,
                    "thresholds": f"low from {SKEW_LOW:.0f} %, medium from {SKEW_MEDIUM:.0f} %",
                    "source": table.attrs.get("source", "") or reps.attrs.get("source", ""),
                },
                recommendation=(
                    "Leaders do the produce and fetch work: a broker leading far more than its share carries more "
                    "load, and a failure of it moves all of that at once. Move preferred leaders with "
                    "kafka-reassign-partitions (reorder the replica lists so each broker comes first about as "
                    "often), then run kafka-leader-election --election-type PREFERRED."
                    if fid == "leader-skew"
                    else "Replicas decide disk use and replication traffic per broker. Spread them with "
                    "kafka-reassign-partitions (--generate proposes an even plan; Cruise Control automates it)."
                ),
                evidence=ev,
            )
        )
    return out


@detector(
    ids=["preferred-leader-imbalance"],
    checks=f"partitions led by a broker other than their preferred one (above {PREFERRED_IMBALANCE_PCT:.0f} % "
    "of a broker's preferred partitions)",
    needs=["topic_partitions"],
)
def preferred_leaders(bundle) -> list[Finding]:
    reps = model.replicas(bundle)
    pref = reps[reps["preferred"] & reps["leader"].notna()]
    if not len(pref):
        return []
    off = pref[~pref["leads"]]
    ratio = (
        100.0
        * off.groupby("broker_id").size().reindex(pref["broker_id"].unique(), fill_value=0)
        / pref.groupby("broker_id").size()
    )
    bad = ratio[ratio > PREFERRED_IMBALANCE_PCT]
    if not len(bad):
        return []
    auto, _ = model.cluster_default(bundle, "auto.leader.rebalance.enable")
    return [
        Finding(
            "preferred-leader-imbalance",
            "low",
            f"{len(off)} of {len(pref)} partitions are not led by their preferred leader; broker(s) "
            + ", ".join(f"{b} ({r:.0f} %)" for b, r in bad.sort_values(ascending=False).items())
            + f" above Kafka's {PREFERRED_IMBALANCE_PCT:.0f} % (current {len(off)} -> recommended 0)",
            numbers={
                "partitions_off_preferred": len(off),
                "partitions": len(pref),
                "brokers_over_threshold": ", ".join(str(b) for b in bad.index),
                "auto_leader_rebalance_enable": auto if auto is not None else "unknown",
            },
            recommendation="After a broker restart its partitions stay led by the others until a preferred-leader "
            "election moves them back; until then the load is uneven. Run kafka-leader-election --election-type "
            "PREFERRED --all-topic-partitions"
            + (", and check why auto.leader.rebalance.enable=false" if auto == "false" else "")
            + ".",
            evidence=evidence(
                off, lambda r: f"{r['topic']}-{r['partition']}: leader {r['leader']}, preferred {r['broker_id']}"
            ),
        )
    ]


@detector(
    ids=["replicas-on-one-rack"],
    checks="partitions with RF >= 2 whose replicas all sit on one rack (when broker.rack is known)",
    needs=[],
)
def rack_spread(bundle) -> list[Finding]:
    b = model.brokers(bundle)
    racks = b.dropna(subset=["rack"])
    if racks["rack"].nunique() < 2:
        return []
    reps = model.replicas(bundle)
    reps = reps[reps["rf"] >= 2].assign(rack=lambda d: d["broker_id"].map(racks.set_index("broker_id")["rack"]))
    if not len(reps):
        return []
    per = reps.groupby(["topic", "partition"]).agg(
        racks=("rack", "nunique"), known=("rack", "count"), rf=("rf", "first")
    )
    one = per[(per["racks"] == 1) & (per["known"] == per["rf"])].reset_index()
    if not len(one):
        return []
    rows = reps.merge(one[["topic", "partition"]]).drop_duplicates(["topic", "partition"])
    topics = sorted(one["topic"].unique())
    return [
        Finding(
            "replicas-on-one-rack",
            "medium",
            f"{len(one)} partition(s) of {', '.join(topics[:6])} have every replica on one rack "
            f"(current 1 rack -> recommended {min(int(one['rf'].min()), racks['rack'].nunique())})",
            numbers={"partitions": len(one), "topics": ", ".join(topics), "racks": racks["rack"].nunique()},
            recommendation="Losing that rack (a power feed, a zone) takes every copy. Kafka spreads replicas over "
            "racks only when the topic is created with broker.rack set on every broker: reassign these partitions "
            "with a plan that puts each replica on a different rack.",
            evidence=evidence(rows, lambda r: f"{r['topic']}-{r['partition']}: replicas on rack {r['rack']}"),
        )
    ]


@per_bundle
def quorum_voters(bundle) -> pd.DataFrame:
    """The controller quorum's voters as the bundle states them (latest ``kafka-metadata-quorum``
    status, else each node's ``controller.quorum.voters``): one row per source with the voter
    count. Columns: voters, count, host, file, line."""
    qs = bundle.table("quorum_status")
    if len(qs):
        last = qs.sort_values("snapshot_ts", na_position="first").tail(1)
        v = last["voters"].astype("string")
        return pd.DataFrame(
            {
                "voters": v,
                "count": v.str.split(",").str.len(),
                "host": last["host"].astype("string"),
                "file": last["file"].astype("string"),
                "line": last["line"],
            }
        )
    s = model.broker_settings(bundle, "controller.quorum.voters")
    s = s[s["value"].notna() & s["value"].astype("string").str.contains("@", regex=False)]
    if not len(s):
        return pd.DataFrame(columns=["voters", "count", "host", "file", "line"])
    v = s["value"].astype("string").str.strip("[] ")
    return pd.DataFrame(
        {
            "voters": v,
            "count": v.str.count("@"),
            "host": s["host"].astype("string"),
            "file": s["file"].astype("string"),
            "line": s["line"],
        }
    ).drop_duplicates("voters")


@detector(
    ids=["controller-quorum-size"],
    checks="a KRaft controller quorum of an even number of voters, or of one voter on a multi-broker cluster",
    needs=[],
)
def quorum_size(bundle) -> list[Finding]:
    q = quorum_voters(bundle)
    if not len(q):
        return []
    n = int(q["count"].max())
    brokers = model.broker_count(bundle)
    if n == 1 and brokers > 1:
        sev, why, want = (
            "medium",
            "one voter is a single point of failure: while it is down no metadata change (leader election, "
            "topic creation, broker registration) can happen anywhere in the cluster",
            3,
        )
    elif n % 2 == 0 and n > 0:
        sev, why, want = (
            "low",
            f"{n} voters survive {(n - 1) // 2} failure(s), as {n - 1} would, and every metadata commit waits for "
            f"{n // 2 + 1} of them",
            n + 1 if n < 5 else n - 1,
        )
    else:
        return []
    return [
        Finding(
            "controller-quorum-size",
            sev,
            f"the controller quorum has {n} voter(s) (current {n} -> recommended {want})",
            numbers={"voters": n, "recommended_voters": want, "brokers": brokers},
            recommendation=f"{why[0].upper()}{why[1:]}. Run an odd number of controllers: 3 (one failure) or 5 "
            "(two), on separate machines.",
            evidence=evidence(q, lambda r: f"voters {r['voters']}"),
        )
    ]
