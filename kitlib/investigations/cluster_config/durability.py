"""Durability: what one broker failure would cost, read from the replica lists and the settings.

With ``acks=all`` a partition accepts a write only while its in-sync replica set holds at least
``min.insync.replicas`` members, and acknowledges it once all of them have it:

- replication factor 1: the partition has one copy; losing its broker or disk loses the data,
  and the partition is unavailable while that broker is down (2: one failure leaves no margin);
- ``min.insync.replicas`` equal to the replication factor: one replica falling behind (a
  restart, a slow disk) stops every acks=all producer of the partition;
- ``min.insync.replicas`` 1 with RF >= 3: a write acknowledged by the leader alone is lost if
  that leader fails before a follower copies it;
- ``unclean.leader.election.enable=true``: an out-of-sync replica may become leader, and the
  records only the old leader had are gone (availability chosen over durability);
- a replication factor above the broker count: the partition can never be fully replicated;
- ``__consumer_offsets`` / ``__transaction_state`` under RF 3: every group's committed offsets
  or every transaction's state lives on fewer copies than Kafka's own default.

A check only counts what is possible: a topic on a cluster with fewer brokers than the
recommended replication factor is judged against the broker count.
"""

from __future__ import annotations

import pandas as pd

from kitlib.bundle import per_bundle
from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_config import model

RECOMMENDED_RF = 3


@per_bundle
def topic_layout(bundle) -> pd.DataFrame:
    """One row per topic: replication factor (the smallest of its partitions), partitions, the
    effective ``min.insync.replicas`` and ``unclean.leader.election.enable`` (topic override,
    else the cluster's default) and where each came from. Columns: topic, rf, partitions,
    min_isr, min_isr_from, unclean, unclean_from, file, line."""
    reps = model.replicas(bundle)
    cols = ["topic", "rf", "partitions", "min_isr", "min_isr_from", "unclean", "unclean_from", "file", "line"]
    if not len(reps):
        return pd.DataFrame(columns=cols)
    first = reps.sort_values(["topic", "partition", "position"]).drop_duplicates(["topic"])
    per = reps.groupby("topic").agg(rf=("rf", "min"), partitions=("partition", "nunique"))
    out = per.join(first.set_index("topic")[["file", "line"]]).reset_index()
    for key, col in (("min.insync.replicas", "min_isr"), ("unclean.leader.election.enable", "unclean")):
        default, _ = model.cluster_default(bundle, key)
        over = model.topic_settings(bundle, key).set_index("topic")["value"]
        val = out["topic"].map(over).astype("string")
        out[col + "_from"] = val.notna().map({True: "topic", False: "cluster default"})
        val = val.fillna(default if default is not None else pd.NA)
        out.loc[val.isna(), col + "_from"] = "unknown"
        out[col] = model.as_int(val) if col == "min_isr" else val.astype("string").str.lower()
    return out[cols]


def _topic_evidence(reps: pd.DataFrame, topics, extra: pd.DataFrame | None = None) -> list[dict]:
    rows = reps[reps["topic"].isin(list(topics))]
    rows = rows.sort_values(["topic", "partition", "position"]).drop_duplicates(["topic", "partition"])
    ev = evidence(
        rows.groupby("topic").head(3),
        lambda r: f"{r['topic']}-{r['partition']}: replication factor {r['rf']}",
    )
    if extra is not None and len(extra):
        ev += evidence(extra, lambda r: f"{r['key']}={r['value']} ({r['where']})")
    return ev


def _settings_rows(bundle, key: str, topics, with_default: bool = True) -> pd.DataFrame:
    """The config rows that set ``key`` for ``topics`` (overrides) and, when some of them take
    it from there (``with_default``), cluster-wide (default)."""
    t = model.topic_settings(bundle, key)
    t = t[t["topic"].isin(list(topics))].assign(key=key, where="topic " + t["topic"].astype(str))
    if not with_default:
        return t
    _, d = model.cluster_default(bundle, key)
    d = d.assign(key=key, where="broker " + d["broker"].astype(str)).head(3)
    return pd.concat([t, d], ignore_index=True) if len(d) else t


@detector(
    ids=["replication-factor-low", "replication-factor-above-brokers", "internal-topic-rf-low"],
    checks="topics with replication factor 1 or 2 on a cluster that has more brokers, replication factors "
    "above the broker count, internal topics under RF 3",
    needs=[],
)
def replication_factors(bundle) -> list[Finding]:
    reps = model.replicas(bundle)
    if not len(reps):
        return []
    layout = topic_layout(bundle)
    n = model.broker_count(bundle, reps)
    internal = layout["topic"].isin(model.INTERNAL_TOPICS)
    want = min(RECOMMENDED_RF, n)
    out = []
    low = layout[~internal & (layout["rf"] < want)]
    for rf, rows in low.groupby("rf"):
        topics = sorted(rows["topic"])
        sev = "medium" if rf == 1 else "low"
        why = (
            "a single copy: losing its broker or disk loses the data, and the partitions are unavailable while "
            "the broker is down"
            if rf == 1
            else "one broker down leaves one copy and no margin: a second failure loses data or availability"
        )
        out.append(
            Finding(
                "replication-factor-low",
                sev,
                f"{len(topics)} topic(s) with replication factor {rf} on a {n}-broker cluster: {', '.join(topics[:8])}"
                + (" ..." if len(topics) > 8 else "")
                + f" (current RF {rf} -> recommended {want})",
                numbers={
                    "topics": ", ".join(topics),
                    "current_rf": int(rf),
                    "recommended_rf": want,
                    "brokers": n,
                    "partitions": int(rows["partitions"].sum()),
                },
                recommendation=f"Raise the replication factor to {want} with kafka-reassign-partitions (a plan that "
                f"lists {want} brokers per partition), and set min.insync.replicas={max(want - 1, 1)}. Why: {why}.",
                evidence=_topic_evidence(reps, topics),
            )
        )
    above = layout[layout["rf"] > n]
    if len(above) and n > 0:
        topics = sorted(above["topic"])
        out.append(
            Finding(
                "replication-factor-above-brokers",
                "medium",
                f"{len(topics)} topic(s) want more replicas than the {n} broker(s) the bundle shows: "
                + ", ".join(topics[:8])
                + f" (current RF {int(above['rf'].max())} -> at most {n})",
                numbers={"topics": ", ".join(topics), "current_rf": int(above["rf"].max()), "brokers": n},
                recommendation="A partition cannot have more replicas than there are brokers: it stays under-"
                "replicated, and creating such a topic fails with InvalidReplicationFactorException. Add brokers, or "
                "lower the replication factor with kafka-reassign-partitions.",
                evidence=_topic_evidence(reps, topics),
            )
        )
    low_int = layout[internal & (layout["rf"] < want)]
    for _, r in low_int.iterrows():  # at most two internal topics
        key = (
            "offsets.topic.replication.factor"
            if r["topic"] == "__consumer_offsets"
            else "transaction.state.log.replication.factor"
        )
        out.append(
            Finding(
                "internal-topic-rf-low",
                "medium",
                f"internal topic {r['topic']} has replication factor {r['rf']} on a {n}-broker cluster "
                f"(current {r['rf']} -> recommended {want})",
                numbers={"topic": r["topic"], "current_rf": int(r["rf"]), "recommended_rf": want, "brokers": n},
                recommendation=f"{r['topic']} holds "
                + ("every consumer group's committed offsets" if "offsets" in key else "every transaction's state")
                + f": with RF {r['rf']} one broker loss makes some of it unavailable or lost. Raise it to {want} with "
                f"kafka-reassign-partitions; {key} only applies when the topic is created.",
                evidence=_topic_evidence(reps, [r["topic"]]),
            )
        )
    return out


@detector(
    ids=["min-isr-blocks-writes", "min-isr-too-low"],
    checks="min.insync.replicas equal to the replication factor (RF >= 2), or 1 with RF >= 3",
    needs=[],
)
def min_isr(bundle) -> list[Finding]:
    layout = topic_layout(bundle)
    if not len(layout):
        return []
    layout = layout[layout["min_isr"].notna()]
    reps = model.replicas(bundle)
    out = []
    equal = layout[(layout["rf"] >= 2) & (layout["min_isr"] >= layout["rf"])]
    if len(equal):
        topics = sorted(equal["topic"])
        equal = equal.sort_values("topic")
        cur = (
            equal["topic"]
            + ": min.insync.replicas="
            + equal["min_isr"].astype("Int64").astype(str)
            + " with RF "
            + equal["rf"].astype(str)
        ).str.cat(sep=", ")
        out.append(
            Finding(
                "min-isr-blocks-writes",
                "medium",
                f"{len(topics)} topic(s) need every replica in sync to accept acks=all writes: {cur}",
                numbers={
                    "topics": ", ".join(topics),
                    "current_min_isr": int(equal["min_isr"].max()),
                    "replication_factor": int(equal["rf"].min()),
                    "recommended_min_isr": int(max(equal["rf"].min() - 1, 1)),
                    "set_by": ", ".join(sorted(set(equal["min_isr_from"]))),
                },
                recommendation="With min.insync.replicas equal to the replication factor, one replica falling behind "
                "(a broker restart, a slow disk) makes every acks=all producer of the partition fail with "
                "NotEnoughReplicasException. Set min.insync.replicas to RF - 1 (2 for RF 3): "
                "kafka-configs --alter --entity-type topics --entity-name <topic> --add-config min.insync.replicas=2.",
                evidence=_topic_evidence(
                    reps,
                    topics,
                    _settings_rows(bundle, "min.insync.replicas", topics, (equal["min_isr_from"] != "topic").any()),
                ),
            )
        )
    one = layout[(layout["rf"] >= 3) & (layout["min_isr"] <= 1)]
    if len(one):
        topics = sorted(one["topic"])
        out.append(
            Finding(
                "min-isr-too-low",
                "medium",
                f"{len(topics)} topic(s) with RF >= 3 acknowledge acks=all writes held by the leader alone "
                f"(min.insync.replicas=1): {', '.join(topics[:8])}" + (" ..." if len(topics) > 8 else ""),
                numbers={
                    "topics": ", ".join(topics),
                    "current_min_isr": 1,
                    "recommended_min_isr": 2,
                    "set_by": ", ".join(sorted(set(one["min_isr_from"]))),
                },
                recommendation="With min.insync.replicas=1 the ISR may shrink to the leader alone and acks=all then "
                "means one copy: if that leader fails, acknowledged writes are lost. Set min.insync.replicas=2 "
                "(topic or broker default) so an acknowledged write is on two brokers.",
                evidence=_topic_evidence(
                    reps,
                    topics,
                    _settings_rows(bundle, "min.insync.replicas", topics, (one["min_isr_from"] != "topic").any()),
                ),
            )
        )
    return out


@detector(
    ids=["unclean-election-enabled"],
    checks="unclean.leader.election.enable=true on a broker or a topic",
    needs=["configs"],
)
def unclean_election(bundle) -> list[Finding]:
    key = "unclean.leader.election.enable"
    brokers = model.broker_settings(bundle, key)
    brokers = brokers[model.as_bool(brokers["value"])]
    topics = model.topic_settings(bundle, key)
    topics = topics[model.as_bool(topics["value"])]
    if not len(brokers) and not len(topics):
        return []
    where = []
    if len(brokers):
        where.append("broker(s) " + ", ".join(sorted(brokers["broker"].astype(str))))
    if len(topics):
        where.append("topic(s) " + ", ".join(sorted(topics["topic"].astype(str))))
    rows = pd.concat(
        [
            brokers.assign(what="broker " + brokers["broker"].astype(str)),
            topics.assign(what="topic " + topics["topic"].astype(str)),
        ],
        ignore_index=True,
    )
    return [
        Finding(
            "unclean-election-enabled",
            "medium",
            f"unclean leader election is enabled on {' and '.join(where)} (current true -> recommended false)",
            numbers={
                "brokers": ", ".join(sorted(brokers["broker"].astype(str))) or "none",
                "topics": ", ".join(sorted(topics["topic"].astype(str))) or "none",
                "current": "true",
                "recommended": "false",
            },
            recommendation="An out-of-sync replica may then become leader when the in-sync ones are gone, and the "
            "records only the old leader had are lost (and consumers may see offsets go back): availability over "
            "durability. Unless the data may be lost, set unclean.leader.election.enable=false (kafka-configs "
            "--alter --delete-config on the topic, or in server.properties; in KRaft the active controller's own "
            "setting is the broker-level default).",
            evidence=evidence(rows, lambda r: f"{r['what']}: {key}={r['value']}"),
        )
    ]
