"""cluster_config: the configuration, layout and capacity risks of a bundle.

- on the lab bundle ``cluster-config`` (a healthy Kafka 3.9 cluster with risks planted: an RF 1
  topic, min.insync.replicas equal to RF, unclean election on a topic, the leaders of one topic
  piled on node 1, node 2's log dir filling at a steady rate) each planted risk is one finding
  naming its topic, broker or log dir, with current -> recommended;
- the healthy bundles, and a bundle with none of the tables, yield nothing;
- the fill forecast, fitted on the first half of the lab's snapshots, predicts when the log dir
  reaches the size it had at the last snapshot within 20 %; two snapshots say so;
- lag in seconds and time to clear match a hand computation on captured snapshot series;
- a replica missing from an offline log dir is not read as a lower replication factor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from samples import sample

import kitlib
from kitlib.bundle import Bundle
from kitlib.findings import Finding, Triage, triage_text
from kitlib.investigations.cluster_config import capacity, durability, layout, model, versions
from kitlib.investigations.consumer_groups import lag_time
from kitlib.investigations.consumer_groups.lag import lag_history

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "tests" / "fixtures" / "cli"


def findings(bundle) -> list:
    t = kitlib.triage(bundle, investigations=["cluster_config"])
    assert not t.failed, t.failed
    return t.findings


def by_id(found: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in found:
        out.setdefault(f.id, []).append(f)
    return out


@pytest.mark.slow
def test_every_planted_risk_is_one_finding_naming_its_entity():
    got = by_id(findings(sample("cluster-config")))
    (rf,) = got["replication-factor-low"]
    assert rf.numbers["topics"] == "scratch" and rf.numbers["current_rf"] == 1 and rf.numbers["recommended_rf"] == 3
    assert "current RF 1 -> recommended 3" in rf.summary and rf.severity == "medium"
    (mi,) = got["min-isr-blocks-writes"]
    assert mi.numbers["topics"] == "payments" and mi.numbers["current_min_isr"] == 3
    assert mi.numbers["recommended_min_isr"] == 2 and mi.numbers["set_by"] == "topic"
    (uc,) = got["unclean-election-enabled"]
    assert uc.numbers["topics"] == "clickstream" and uc.numbers["brokers"] == "none"
    (ls,) = got["leader-skew"]
    assert ls.numbers["broker"] == 1 and "orders (6 of 6)" in ls.summary
    (ds,) = got["disk-use-skew"]
    assert ds.numbers["broker"] == 2
    (fill,) = got["log-dir-filling"]
    assert fill.numbers["broker"] == 2 and fill.numbers["log_dir"].endswith("broker-2/data")
    assert fill.numbers["r2"] > 0.95
    # every evidence row names a real file of the bundle
    for f in sum(got.values(), []):
        assert f.evidence and all(e["file"] and e["line"] for e in f.evidence), f.id
        assert f.severity in ("low", "medium"), f.id


@pytest.mark.slow
@pytest.mark.parametrize("name", ["healthy", "healthy-cluster"])
def test_healthy_bundles_yield_nothing(name):
    assert findings(sample(name)) == []


def test_silent_without_the_tables():
    assert findings(Bundle("empty", {})) == []


@pytest.mark.slow
def test_an_offline_log_dir_is_not_a_lower_replication_factor():
    # log-dir-failure: one broker's listing lacks the replicas of its failed dir
    b = sample("log-dir-failure")
    reps = model.replicas(b)
    assert reps.attrs["source"] == "log_dirs" and (~reps["complete"]).any()
    assert set(durability.topic_layout(b)["rf"]) == {3}
    assert findings(b) == []


@pytest.mark.slow
def test_fill_forecast_on_the_lab_log_dir_is_within_20_percent():
    sizes = capacity.dir_sizes(sample("cluster-config"))
    d = sizes[sizes["broker_id"] == 2]
    times = sorted(d["ts"].unique())
    assert len(times) >= 8
    half = times[len(times) // 2]
    early, last = d[d["ts"] <= half], d[d["ts"] == times[-1]]
    target = float(last["bytes"].sum())
    f = capacity.fill_forecast(early, capacity_bytes=target).iloc[0]
    real = (times[-1] - half).total_seconds()
    assert f["snapshots"] == len([t for t in times if t <= half]) and f["fit"].startswith("least squares")
    assert abs(f["seconds_to_full"] - real) <= 0.2 * real, (f["seconds_to_full"], real)
    # the same with only two snapshots: a line through them, and the table says so
    two = d[d["ts"].isin(times[:2])]
    f2 = capacity.fill_forecast(two, capacity_bytes=target).iloc[0]
    assert f2["snapshots"] == 2 and f2["fit"].startswith("two snapshots") and pd.isna(f2["r2"])
    assert f2["bytes_per_s"] == pytest.approx(
        (two[two["ts"] == times[1]]["bytes"].sum() - two[two["ts"] == times[0]]["bytes"].sum())
        / (times[1] - times[0]).total_seconds()
    )


def test_lag_in_seconds_on_a_real_describe_loop(tmp_path):
    # Kafka 3.9 kafka-consumer-groups --describe run three times after `date -Is`, group without members
    shutil.copy(CLI / "real-3.9-consumer-groups-lag-history-iso.txt", tmp_path / "cg.txt")
    t = lag_time.lag_times(lag_history(kitlib.load_bundle(tmp_path))).set_index("partition")
    # hand computation: log end 130 -> 150 between 11:35:46 and 11:35:49, committed frozen
    assert t.loc[1, "produce_rate"] == pytest.approx(20 / 3)
    assert t.loc[1, "lag"] == 90 and t.loc[1, "lag_s"] == pytest.approx(90 / (20 / 3))
    assert t.loc[0, "lag_s"] == pytest.approx(50 / (20 / 3))
    assert set(t["state"]) == {"no consumers"} and t["clear_s"].isna().all()


@pytest.mark.slow
def test_time_to_clear_on_a_captured_series():
    b = sample("rebalance-storm")
    t = lag_time.lag_times(lag_history(b)).set_index(["topic", "partition"])
    h = b.table("consumer_lag")
    p0 = h[(h["topic"] == "orders") & (h["partition"] == 0)].sort_values("ts").tail(5)
    dt = (p0["ts"].iloc[-1] - p0["ts"].iloc[0]).total_seconds()
    consume = (p0["committed"].iloc[-1] - p0["committed"].iloc[0]) / dt
    produce = (p0["end_offset"].iloc[-1] - p0["end_offset"].iloc[0]) / dt
    row = t.loc[("orders", 0)]
    assert row["state"] == "draining"
    assert row["clear_s"] == pytest.approx(p0["lag"].iloc[-1] / (consume - produce))
    assert t.loc[("orders", 3), "state"] == "stalled"


def test_skew_counts_only_what_a_rebalance_could_fix():
    s = layout.skew(pd.Series([3, 2, 2], index=[1, 2, 3]))  # 7 over 3: the best split there is
    assert (s["skew_pct"] <= 0).all()
    s = layout.skew(pd.Series([6, 2, 2], index=[1, 2, 3]))
    assert s.loc[1, "skew_pct"] == pytest.approx(100 * (6 - 4) / (10 / 3))


@pytest.mark.slow
def test_layout_from_real_describe_output(tmp_path):
    # Kafka 3.9 kafka-topics --describe of a single broker: RF 1 is all it can hold, nothing to say
    shutil.copy(CLI / "real-3.9-topics-describe.txt", tmp_path / "topics.txt")
    b = kitlib.load_bundle(tmp_path)
    reps = model.replicas(b)
    assert reps.attrs["source"] == "topic_partitions" and set(reps["broker_id"]) == {1}
    assert reps["leads"].all() and (reps["position"] == 0).all()
    lay = durability.topic_layout(b).set_index("topic")
    assert lay.loc["orders", "min_isr"] == 1 and lay.loc["orders", "min_isr_from"] == "topic"
    assert findings(b) == []


def test_mixed_versions_name_the_hosts():
    restarts = pd.DataFrame(
        {
            "start_ts": pd.to_datetime(["2026-11-23 10:00", "2026-11-23 10:01", "2026-11-23 09:00"], utc=True),
            "version": ["3.9.1", "3.8.0", "3.7.0"],
            "host": ["broker-1", "broker-2", "broker-2"],
            "file": ["broker-1/server.log", "broker-2/server.log", "broker-2/server.log.1"],
            "line": [1, 1, 1],
        }
    )
    v = versions.latest_versions(restarts)
    assert dict(zip(v["host"], v["version"])) == {"broker-1": "3.9.1", "broker-2": "3.8.0"}
    (f,) = findings(Bundle("x", {"restarts": restarts}))
    assert f.id == "broker-versions-mixed" and f.numbers["newest"] == "3.9.1"
    assert "3.8.0 on broker-2" in f.summary


@pytest.mark.slow
def test_public_describe_output_rf2_on_three_brokers(tmp_path):
    # kafka-topics --describe as posted in tchiotludo/akhq#124: RF 2, three brokers, balanced
    shutil.copy(ROOT / "tests" / "fixtures" / "public" / "cli-outputs" / "akhq-124-topics-describe-rf2.txt", tmp_path)
    b = kitlib.load_bundle(tmp_path)
    assert model.broker_count(b) == 3
    (f,) = findings(b)
    assert f.id == "replication-factor-low" and f.severity == "low"
    assert f.numbers["topics"] == "xxx" and f.numbers["current_rf"] == 2 and f.numbers["recommended_rf"] == 3
    assert (layout.leader_counts(b)["count"] == 3).all()


def test_config_risks_come_after_the_incidents_in_their_own_block():
    restarts = pd.DataFrame(
        {
            "start_ts": pd.to_datetime(["2026-11-23 10:00", "2026-11-23 10:01"], utc=True),
            "version": ["3.9.1", "3.8.0"],
            "host": ["broker-1", "broker-2"],
            "file": ["broker-1/server.log", "broker-2/server.log"],
            "line": [1, 1],
        }
    )
    t = kitlib.triage(Bundle("x", {"restarts": restarts}))
    assert [f.risk for f in t.findings] == [True] and t.findings[0].to_dict()["risk"] is True
    text = triage_text(t)
    assert "Risks: 1 configuration risk(s), not incidents" in text and "finding(s), most severe first" not in text
    # with an incident of lower severity, the incident still comes first
    incident = Finding("isr-shrink", "low", "an incident")
    mixed = Triage(sorted([*t.findings, incident], key=lambda f: f.risk), t.runs)
    lines = triage_text(mixed).splitlines()
    assert lines[0] == "1 finding(s), most severe first:"
    assert lines.index("Risks: 1 configuration risk(s), not incidents, most severe first:") > lines.index(
        "1. [LOW] isr-shrink: an incident"
    )


@pytest.mark.slow
def test_replicas_on_one_rack_when_racks_are_known(tmp_path):
    # the public RF 2 layout of akhq#124 with brokers 0 and 1 in one rack: partitions 2, 4 and 8
    # (replicas 1,0 / 0,1 / 1,0) have both copies there
    shutil.copy(ROOT / "tests" / "fixtures" / "public" / "cli-outputs" / "akhq-124-topics-describe-rf2.txt", tmp_path)
    tp = kitlib.load_bundle(tmp_path).table("topic_partitions")
    racks = pd.DataFrame(
        {
            "ts": pd.Timestamp("2026-11-23", tz="UTC"),
            "broker_id": [0, 1, 2],
            "rack": ["eu-1a", "eu-1a", "eu-1b"],
            "host": "cluster",
            "file": "live/capture.jsonl",
            "line": [2, 3, 4],
        }
    )
    (f,) = [
        x for x in findings(Bundle("x", {"topic_partitions": tp, "brokers": racks})) if x.id == "replicas-on-one-rack"
    ]
    assert f.numbers["partitions"] == 3 and f.numbers["topics"] == "xxx"
    assert sorted(e["text"] for e in f.evidence) == [f"xxx-{p}: replicas on rack eu-1a" for p in (2, 4, 8)]


@pytest.mark.slow
def test_quorum_and_broker_level_unclean_from_the_brokers_config_dumps():
    c = sample("healthy-cluster").table("configs").copy()
    voters = c["key"] == "controller.quorum.voters"
    c.loc[voters, "value"] = "[1@127.0.0.1:9093, 2@127.0.0.1:9094]"
    unclean = (c["key"] == "unclean.leader.election.enable") & (c["entity"] == "2")
    c.loc[unclean, "value"] = "true"
    got = by_id(findings(Bundle("x", {"configs": c})))
    (q,) = got["controller-quorum-size"]
    assert q.numbers["voters"] == 2 and q.numbers["recommended_voters"] == 3 and q.severity == "low"
    (u,) = got["unclean-election-enabled"]
    assert u.numbers["brokers"] == "2" and u.numbers["topics"] == "none"
    assert u.evidence[0]["file"] == "broker-2/server.log"
