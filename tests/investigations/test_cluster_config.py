"""cluster_config: the configuration, layout and capacity risks of a bundle.

- on the lab bundle ``cluster-config`` (a healthy Kafka 3.9 cluster with risks planted: an RF 1
  topic, min.insync.replicas equal to RF, unclean election on a topic, the leaders of one topic
  piled on node 1, node 2's log dir filling at a steady rate) each planted risk is one finding
  naming its topic, broker or log dir, with current -> recommended;
- the healthy bundles, and a bundle with none of the tables, yield nothing;
- the fill forecast, fitted on the lab's snapshots taken during the load, predicts when the log
  dir reaches the size it had once the producer finished within 20 %; two snapshots say so;
- df output (every layout) gives the time until full; thread, heap, combined-controller and
  removed-protocol checks fire on their planted bundles and nowhere else;
- consumer-stalled states the lag in time;
- lag in seconds and time to clear match a hand computation on captured snapshot series;
- a replica missing from an offline log dir is not read as a lower replication factor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from samples import NAMES, sample

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
    # fitted on the captures taken while scratch was written, the line predicts when node 2's log
    # dir reaches the size kafka-log-dirs measured once the producer's last record was acknowledged
    # (its backlog flushed after the last capture: a time after the fit's window)
    sizes = capacity.dir_sizes(sample("cluster-config"))
    d = sizes[sizes["broker_id"] == 2]
    end = d[d["file"] == "cli/log-dirs.txt"].sort_values("ts").iloc[-1]
    during = d[d["file"].str.startswith("live/") & (d["ts"] < end["ts"])]
    times = sorted(during["ts"].unique())
    assert len(times) >= 8
    f = capacity.fill_forecast(during, capacity_bytes=float(end["bytes"])).iloc[0]
    real = (end["ts"] - times[-1]).total_seconds()
    assert f["snapshots"] == len(times) and f["fit"].startswith("least squares")
    assert abs(f["seconds_to_full"] - real) <= 0.2 * real, (f["seconds_to_full"], real)
    # the same with only two snapshots: a line through them, and the table says so
    two = d[d["ts"].isin(times[:2])]
    f2 = capacity.fill_forecast(two, capacity_bytes=float(end["bytes"])).iloc[0]
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


# --- df, heap and threads, protocol versions, lag in time ---

NEW_CHECKS = {
    "io-threads-short",
    "network-threads-short",
    "replica-fetchers-short",
    "heap-too-small",
    "controller-combined-busy",
    "clients-on-removed-protocol",
}
# where each new check is planted (every other sample bundle must stay silent on it)
PLANTED = {
    "request-saturation": {"io-threads-short"},
    "gc-pressure": {"heap-too-small"},
    "down-conversion": {"clients-on-removed-protocol"},
    "cluster-config": {"clients-on-removed-protocol"},
}


def test_df_outputs_of_every_layout(tmp_path):
    # GNU coreutils 9.1 df -k / -h / -B1 / -P / -T (real), and the BSD layout and a wrapped
    # device name of older GNU df (constructed)
    for name in ("real-coreutils-df.txt", "constructed-df-bsd-wrapped.txt"):
        shutil.copy(CLI / name, tmp_path / name)
    b = kitlib.load_bundle(tmp_path)
    assert len(b.table("unparsed")) == 0
    du = b.table("disk_usage")
    real = du[du["file"] == "real-coreutils-df.txt"]
    root = real[real["mount"] == "/"]
    exact = root[~root["approx"].astype(bool)]
    assert len(root) == 5 and exact["size_bytes"].nunique() == 1
    assert int(exact["size_bytes"].iloc[0]) == 264212084 * 1024  # the 1K-blocks column
    human = root[root["approx"].astype(bool)].iloc[0]
    assert human["size_bytes"] == 252 * 1024**3 and abs(human["size_bytes"] / exact["size_bytes"].iloc[0] - 1) < 0.01
    assert set(real["fs_type"].dropna()) == {"ext4", "tmpfs"}
    made = du[du["file"] == "constructed-df-bsd-wrapped.txt"].set_index("mount")
    assert made.loc["/Volumes/kafka data", "avail_bytes"] == 11534336 * 1024
    wrapped = made.loc["/var/lib/kafka"]
    assert wrapped["filesystem"] == "/dev/mapper/vg_kafka-lv_data_with_a_long_name" and wrapped["line"] == 8
    assert wrapped["use_pct"] == 80.0


@pytest.mark.slow
def test_time_until_full_from_df_of_the_brokers_own_host():
    b = sample("cluster-config")
    fs = capacity.log_dir_filesystems(b).set_index("broker_id")
    # every node's log dir sits on "/" of its own host, from its own df.txt
    assert set(fs["mount"]) == {"/"} and list(fs["file"]) == [f"broker-{n}/df.txt" for n in (1, 2, 3)]
    (fill,) = by_id(findings(b))["log-dir-filling"]
    n = fill.numbers
    assert n["broker"] == 2 and n["capacity_from"] == "df" and n["mount"] == "/"
    du = b.table("disk_usage")
    last = du[du["host"] == "broker-2"].sort_values("snapshot_ts").iloc[-1]
    assert n["avail_bytes"] == last["avail_bytes"] and n["capacity_bytes"] == last["size_bytes"]
    # hand computation: the free bytes at the last df over the log dir's growth, from the df's time
    f = capacity.fill_forecast(capacity.dir_sizes(b)).set_index("broker_id").loc[2]
    full_at = last["snapshot_ts"] + pd.to_timedelta(last["avail_bytes"] / f["bytes_per_s"], unit="s")
    assert n["seconds_to_full"] == pytest.approx((full_at - f["last_ts"]).total_seconds(), rel=1e-6)
    assert "current" in fill.summary and "-> recommended at least" in fill.summary
    assert fill.severity == "medium" and fill.evidence[0]["file"] == "broker-2/df.txt"


@pytest.mark.slow
def test_a_log_dir_takes_the_longest_mount_that_is_a_path_prefix():
    b = sample("cluster-config")
    ld = b.table("log_dirs").copy()
    two = ld["broker_id"] == 2
    ld["log_dir"] = ld["log_dir"].astype("string")
    ld.loc[two, "log_dir"] = "/var/lib/kafka/data"
    # one df file outside the brokers' folders, with "/" and "/var/lib/kafka" mounted
    du = kitlib.load_bundle(CLI.parent / "cli").table("disk_usage")
    du = du[du["file"].isin(["constructed-df-bsd-wrapped.txt", "real-coreutils-df.txt"])]
    got = capacity.log_dir_filesystems(
        Bundle("x", {"log_dirs": ld, "disk_usage": du, "configs": b.table("configs")})
    ).set_index("broker_id")
    assert got.loc[2, "mount"] == "/var/lib/kafka"
    # /var/lib/kafka-lab/... starts with the text "/var/lib/kafka" but is not inside it
    assert got.loc[1, "mount"] == "/" and got.loc[3, "mount"] == "/"


@pytest.mark.slow
def test_request_handlers_short_of_threads_on_the_saturated_broker():
    b = sample("request-saturation")
    (f,) = [x for x in findings(b) if x.id == "io-threads-short"]
    n = f.numbers
    assert n["host"] == "broker-2" and n["setting"] == "num.io.threads" and n["set_by"] == "the broker's config"
    assert n["current"] == 1 and n["recommended"] == 2 and "current 1 -> recommended 2" in f.summary
    # hand computation from the meter's Count: idle ns per 10-second window over its ns
    m = b.table("metrics")
    c = m[(m["name"] == "RequestHandlerAvgIdlePercent") & (m["attribute"] == "Count")].sort_values("ts")
    t = (c["ts"] - c["ts"].iloc[0]).dt.total_seconds()
    ends = c[(t // 10) != (t // 10).shift(-1)]
    ends = pd.concat([c.iloc[:1], ends])
    idle = ends["value"].diff().iloc[1:] / (ends["ts"].diff().dt.total_seconds().iloc[1:] * 1e9)
    assert n["intervals"] == len(idle) and n["busy_intervals"] == int((idle < 0.3).sum())
    assert "request queue up to 3" in f.summary


@pytest.mark.slow
def test_a_heap_too_small_and_its_threads_left_to_it():
    got = by_id(findings(sample("gc-pressure")))
    (h,) = got["heap-too-small"]
    g = sample("gc-pressure").table("gc_pauses")
    g = g[(g["host"] == "broker-2") & g["is_pause"].astype(bool) & g["heap_after"].notna()]
    assert h.numbers["heap_bytes"] == 64 * 1024**2 and h.numbers["pauses"] == len(g)
    assert h.numbers["after_gc_share"] == pytest.approx(g["heap_after"].median() / 64 / 1024**2, abs=1e-3)
    assert h.numbers["recommended_bytes"] == 1024**3 and "current heap 64 MiB -> recommended 1.0 GiB" in h.summary
    # its handlers wait on GC: no thread finding, no busy combined controller there
    assert not set(got) & {"io-threads-short", "controller-combined-busy"}


@pytest.mark.slow
def test_a_combined_controller_on_a_busy_broker():
    # request-saturation's broker-2 as if it also were a controller (process.roles planted)
    b = sample("request-saturation")
    c = b.table("configs").copy()
    roles = (c["key"] == "process.roles") & (c["host"] == "broker-2")
    assert roles.any()
    c["value"] = c["value"].astype("string")
    c.loc[roles, "value"] = "[broker, controller]"
    planted = Bundle("x", {"configs": c, "metrics": b.table("metrics")})
    (f,) = [x for x in findings(planted) if x.id == "controller-combined-busy"]
    assert f.numbers["node"] == 2 and f.numbers["handler_idle_median"] < 0.5
    assert "node 2 (broker-2)" in f.summary and "current broker,controller -> recommended broker" in f.summary
    # the lab's combined nodes of cluster-config and healthy-cluster are idle: nothing
    for name in ("cluster-config", "healthy-cluster"):
        assert not [x for x in findings(sample(name)) if x.id == "controller-combined-busy"]


@pytest.mark.slow
def test_clients_on_protocol_versions_kafka_4_removes():
    # cluster-config: legacy-billing pinned to Kafka 0.10.1's protocol writes with Produce v2
    (f,) = by_id(findings(sample("cluster-config")))["clients-on-removed-protocol"]
    assert f.numbers["clients"] == "legacy-billing at 127.0.0.1" and f.numbers["apis"] == "Produce v2"
    assert "current Produce v2 -> recommended Produce v3+" in f.summary and f.numbers["brokers_run"] == "3.9.1"
    assert "JMX DeprecatedRequestsPerSec" in f.numbers["sources"] and "request log" in f.numbers["sources"]
    m = sample("cluster-config").table("metrics")
    dep = m[(m["name"] == "DeprecatedRequestsPerSec") & (m["attribute"] == "Count") & (m["value"] > 0)]
    assert set(dep["request"]) == {"Produce"} and set(dep["version"]) == {"2"}
    # down-conversion: a 0.9 client's Fetch v1 and ListOffsets v0, from the request log
    (d,) = [x for x in findings(sample("down-conversion")) if x.id == "clients-on-removed-protocol"]
    assert d.numbers["apis"] == "Fetch v1; ListOffsets v0" and d.numbers["clients"].startswith("kitlib-probe-0.9")
    assert "recommended Fetch v4+, ListOffsets v1+" in d.summary


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(NAMES)))
def test_the_new_checks_stay_silent_where_nothing_is_planted(name):
    got = {f.id for f in findings(sample(name))} & NEW_CHECKS
    assert got == PLANTED.get(name, set())


@pytest.mark.slow
def test_consumer_stalled_states_the_lag_in_time():
    from kitlib.investigations.consumer_groups import stalled

    b = sample("consumer-stalled")
    (f,) = stalled.consumer_stalled(b)
    assert f.numbers["group"] == "billing" and f.numbers["lag_state"] == "no consumers 3"
    # nothing was produced in the window: no rate to turn the lag into seconds of output, but the
    # oldest unconsumed record has waited since before the first snapshot with a committed offset
    h = lag_history(b)
    first = h[(h["group"] == "billing") & h["lag"].notna()]["ts"].min()
    assert f.numbers["lag_s"] is None and f.numbers["wait_at_least"] is True
    assert f.numbers["wait_s"] == pytest.approx(round((h["ts"].max() - first).total_seconds(), 1))
    assert "its oldest unconsumed record has waited at least 102 s" in f.summary


def test_wait_of_the_oldest_record_is_interpolated_between_snapshots():
    h = pd.DataFrame(
        {
            "ts": pd.to_datetime([0, 10, 20, 30], unit="s", utc=True),
            "group": "g",
            "topic": "t",
            "partition": 0,
            "committed": [100, 100, 100, 100],
            "end_offset": [90, 112, 122, 132],
            "lag": [0, 12, 22, 32],
            "consumer_id": "c-1",
            "group_state": "Stable",
            "source": "consumer_lag",
            "file": "f",
            "line": [1, 2, 3, 4],
        }
    )
    r = lag_time.lag_times(h).iloc[0]
    # offset 100 exists once the log end reaches 101: 11 of the 22 offsets between 0 s and 10 s,
    # so at 5 s; the last snapshot is at 30 s
    assert r["wait_s"] == pytest.approx(25.0) and not r["wait_at_least"]
    assert r["state"] == "stalled" and r["lag_s"] == pytest.approx(32 / ((132 - 90) / 30))


@pytest.mark.slow
def test_replica_fetchers_and_network_threads_on_planted_metrics():
    # cluster-config's real JMX rows with two values planted: broker-2's followers 5,000 to 9,000
    # records behind (MaxLag), broker-3's network processors 10-25 % idle; the lab's own values
    # (MaxLag 0, network idle above 96 %) stay silent
    b = sample("cluster-config")
    assert not {f.id for f in findings(b)} & {"replica-fetchers-short", "network-threads-short"}
    m = b.table("metrics").copy()
    lag = (m["name"] == "MaxLag") & (m["host"] == "broker-2")
    m.loc[lag, "value"] = np.linspace(5000, 9000, int(lag.sum()))
    net = (m["name"] == "NetworkProcessorAvgIdlePercent") & (m["host"] == "broker-3")
    m.loc[net, "value"] = np.resize([0.1, 0.25, 0.2], int(net.sum()))
    got = by_id(findings(Bundle("x", {"metrics": m, "configs": b.table("configs")})))
    (r,) = got["replica-fetchers-short"]
    assert r.numbers["host"] == "broker-2" and r.numbers["max_lag_min"] == 5000 and r.numbers["samples"] == lag.sum()
    assert "current 1 -> recommended 2" in r.summary  # num.replica.fetchers=1 in the node's config dump
    (n,) = got["network-threads-short"]
    # 3 threads at a median 20 % idle of the busy samples: 3 x 0.8 / 0.5 = 4.8 -> 5
    assert n.numbers["host"] == "broker-3" and n.numbers["current"] == 3 and n.numbers["recommended"] == 5
    assert n.numbers["busy_intervals"] == net.sum() and "num.network.threads=3" in n.summary


def _healthy_cluster_cut(tmp_path: Path, end_ms: int, leader_count: dict[int, float] | None = None) -> Path:
    """The healthy-cluster bundle with its JmxTool files ending at ``end_ms`` (epoch ms). With
    ``leader_count``, that broker's LeaderCount is replaced from the middle of its kept samples on
    (synthetic: a skew planted on real samples)."""
    dst = tmp_path / "healthy-cluster"
    shutil.copytree(ROOT / "sample_data" / "healthy-cluster", dst)
    for n in (1, 2, 3):
        path = dst / f"broker-{n}" / "jmx-broker.csv"
        header, *rows = path.read_text().splitlines()
        kept = [r for r in rows if int(r.split(",", 1)[0]) <= end_ms]
        if leader_count and n in leader_count:
            col = next(i for i, h in enumerate(header.split('","')) if "name=LeaderCount" in h)
            for i in range(len(kept) // 2, len(kept)):
                cells = kept[i].split(",")
                cells[col] = f"{leader_count[n]:g}"
                kept[i] = ",".join(cells)
        path.write_text("\n".join([header, *kept]) + "\n")
    shutil.rmtree(dst / "live")  # no describe output: leaders come from JMX alone
    return dst


@pytest.mark.slow
def test_leader_counts_from_jmx_only_once_they_have_settled(tmp_path):
    # In healthy-cluster, __consumer_offsets comes up with the first group and each broker's
    # LeaderCount climbs 2 -> 19 over four seconds, one broker after another. A capture ending at
    # 12:12:59.000 (broker 1 at 9, broker 2 at 5, broker 3 at 9) is mid-climb: no skew to report.
    mid_climb = 1795435979000
    b = kitlib.load_bundle(_healthy_cluster_cut(tmp_path / "a", mid_climb))
    lc = layout.leader_counts(b)
    assert lc.empty and lc.attrs["unsettled"]
    assert findings(b) == []
    # the whole capture: settled at 19/19/18, balanced
    b = kitlib.load_bundle(_healthy_cluster_cut(tmp_path / "b", 1795435999999))
    lc = layout.leader_counts(b)
    assert lc.attrs["source"] == "metrics" and sorted(lc["count"].tolist()) == [18.0, 19.0, 19.0]
    assert findings(b) == []
    # a skew that holds for the second half of the capture is still reported
    b = kitlib.load_bundle(_healthy_cluster_cut(tmp_path / "c", 1795435999999, leader_count={1: 40}))
    (f,) = by_id(findings(b))["leader-skew"]
    assert f.numbers["broker"] == 1 and f.numbers["count"] == 40 and f.numbers["source"] == "metrics"
