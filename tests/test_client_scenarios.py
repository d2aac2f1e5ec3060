"""Client-trouble scenarios against real lab brokers (rebalance storm, stalled consumer, failed
authentication, transactions, quota throttling, request saturation), checked on the real contents
of the bundles they write; and ``kitlib capture --every`` against the session broker."""

import importlib.util
import itertools
import json
import re
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
from rolled_logs import log_text, oldest_first

import kitlib

pytestmark = pytest.mark.broker
SCEN = Path(__file__).resolve().parents[1] / "lab" / "scenarios"


def scenario(name):
    spec = importlib.util.spec_from_file_location(f"client_scenario_{name}", SCEN / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lines(bundle: Path, pattern: str, contains: str) -> list[str]:
    return [ln for f in oldest_first(list(bundle.glob(pattern))) for ln in log_text(f).splitlines() if contains in ln]


def bundle_text(bundle: Path) -> str:
    return "\n".join(log_text(f) for f in sorted(bundle.rglob("*")) if f.is_file())


def no_machine_paths(bundle: Path) -> None:
    from kitlib import lab

    everything = bundle_text(bundle)
    checkout = Path(__file__).resolve().parents[1]
    for root in (str(lab.work_root().resolve()), str(lab.jars_dir().resolve()), str(checkout)):
        assert root not in everything


# --- kitlib capture --every ---------------------------------------------------------------


@pytest.fixture(scope="module")
def lagging_group(broker):
    """Group ``lag-hist`` has consumed and committed 300 of 1000 records of ``lag-orders``."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    a.create_topics([NewTopic("lag-orders", 2, 1)])
    a.close()
    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(1000):
        p.send("lag-orders", key=str(i).encode(), value=b"x" * 100)
    p.flush()
    p.close()
    c = KafkaConsumer(
        "lag-orders",
        bootstrap_servers=broker.bootstrap,
        group_id="lag-hist",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=150,
    )
    got = 0
    while got < 300:
        for recs in c.poll(timeout_ms=1000, max_records=300 - got).values():
            got += len(recs)
    c.commit()
    c.close()
    return broker


def first_snapshot_written(folder: Path, rows: int = 2, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(folder.glob("lag-*.jsonl"))
        if files and files[0].read_text().count('"consumer_lag"') >= rows:
            return
        time.sleep(0.1)
    raise AssertionError(f"no lag snapshot in {folder} after {timeout} s")


def test_capture_every_writes_n_timestamped_snapshots(kit, lagging_group, tmp_path):
    from kafka import KafkaProducer

    out = tmp_path / "bundle" / "live"
    proc = kit.start(
        "capture",
        "--bootstrap",
        lagging_group.bootstrap,
        "--out",
        out,
        "--every",
        2,
        "--count",
        4,
        "--group",
        "lag-hist",
    )
    first_snapshot_written(out)
    # grow the log after the first snapshot: end offsets (and lag) must move in the series
    p = KafkaProducer(bootstrap_servers=lagging_group.bootstrap)
    for _ in range(200):
        p.send("lag-orders", b"y")
    p.flush()
    p.close()
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    path = Path(stdout.strip())
    assert path.parent == out and path.name.startswith("lag-")
    recs = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert recs[0]["kind"] == "header" and recs[0]["what"] == "consumer_lag_series"
    rows = recs[1:]
    assert len(rows) == 4 * 2 and {r["kind"] for r in rows} == {"consumer_lag"}
    stamps = sorted({r["ts"] for r in rows})
    assert len(stamps) == 4
    gaps = [(pd.Timestamp(b) - pd.Timestamp(a)).total_seconds() for a, b in itertools.pairwise(stamps)]
    assert all(1.6 < g < 4 for g in gaps), gaps

    lag = kitlib.load_bundle(tmp_path / "bundle").consumer_lag
    assert len(lag) == 8 and lag["ts"].nunique() == 4 and set(lag["group"]) == {"lag-hist"}
    per = lag.groupby("ts")[["committed", "end_offset", "lag"]].sum()
    assert (per["committed"] == 300).all()  # nobody consumes: committed frozen
    assert per["end_offset"].iloc[0] == 1000 and per["end_offset"].iloc[-1] == 1200
    assert per["lag"].iloc[0] == 700 and per["lag"].iloc[-1] == 900
    assert set(lag["group_state"]) == {"Empty"} and lag["consumer_id"].isna().all()


def test_capture_every_stops_on_ctrl_c_keeping_whole_snapshots(kit, lagging_group, tmp_path):
    proc = kit.start(
        "capture", "--bootstrap", lagging_group.bootstrap, "--out", tmp_path, "--every", 0.5, "--group", "lag-hist"
    )
    first_snapshot_written(tmp_path, rows=4)  # two snapshots of two partitions on disk
    proc.send_signal(signal.SIGINT)
    # it finishes the snapshot under way first: on a loaded 2-core machine that took over 30 s
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "stopped after" in stderr and "Traceback" not in stderr
    body = Path(stdout.strip()).read_text()
    assert body.endswith("\n")
    rows = [json.loads(ln) for ln in body.splitlines()[1:]]
    per_snapshot = pd.Series([r["ts"] for r in rows]).value_counts()
    assert len(per_snapshot) >= 2 and (per_snapshot == 2).all()  # every snapshot whole (2 partitions)
    n = int(re.search(r"after (\d+) snapshots", stderr).group(1))
    assert n == len(per_snapshot)


def test_capture_every_rejects_bad_arguments(kit, tmp_path):
    for args in (["--every", "0"], ["--count", "3"], ["--every", "1", "--count", "0"]):
        r = kit("capture", "--bootstrap", "127.0.0.1:1", "--out", tmp_path, *args, timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "--" in r.stderr
    assert not list(tmp_path.iterdir())


# --- scenarios -----------------------------------------------------------------------------


def test_rebalance_storm(tmp_path):
    out = scenario("rebalance_storm").run(tmp_path / "b", seconds=45, work=tmp_path / "w")
    prepare = lines(out, "broker-1/server.log*", "Preparing to rebalance group order-enricher")
    assert len(prepare) >= 5 and all("(reason: " in ln for ln in prepare)
    gens = [
        int(g)
        for g in re.findall(
            r"Stabilized group order-enricher generation (\d+)",
            "\n".join(lines(out, "broker-1/server.log*", "Stabilized group")),
        )
    ]
    assert len(gens) >= 5 and gens == sorted(gens)
    # members whose poll timer expires leave the group. The coordinator logs every LeaveGroup, in a
    # rebalance or not: the two slow members, and only they, send them, cycle after cycle
    left = lines(out, "broker-1/server.log*", "has left group order-enricher through explicit `LeaveGroup`")
    assert len(left) >= 4
    assert {m for ln in left for m in re.findall(r"clientId=(order-enricher-\d+),", ln)} == {
        "order-enricher-1",
        "order-enricher-2",
    }
    # the slow members start in step, so their first LeaveGroup comes to a stable group and is
    # itself the reason for a rebalance
    assert len(lines(out, "broker-1/server.log*", "on LeaveGroup")) >= 1
    # the member killed mid-batch is removed by the coordinator: on session expiry, or (a rebalance
    # started first) when that rebalance times out without it
    removed = lines(
        out, "broker-1/server.log*", "in group order-enricher has failed, removing it from the group"
    ) + lines(out, "broker-1/server.log*", "Group order-enricher removed dynamic members who haven't joined")
    assert [ln for ln in removed if "order-enricher-4-" in ln]
    assert lines(out, "clients/order-enricher-1.log", "Consumer poll timeout has expired")
    assert not lines(out, "clients/order-enricher-3.log", "Consumer poll timeout has expired")
    b = kitlib.load_bundle(out)
    series = b.consumer_lag[b.consumer_lag["file"].astype(str).str.startswith("live/lag-")]
    assert series["ts"].nunique() >= 6 and set(series["group"]) == {"order-enricher"}
    assert "Stabilized group order-enricher" in (out / "PROVENANCE.md").read_text()
    no_machine_paths(out)


def test_consumer_stalled(tmp_path):
    out = scenario("consumer_stalled").run(tmp_path / "b", seconds=45, stall_after=10, work=tmp_path / "w")
    b = kitlib.load_bundle(out)
    lag = b.consumer_lag
    assert lag["file"].astype(str).str.startswith("live/lag-").all()
    per = lag.groupby(["group", "ts"])[["committed", "end_offset", "lag"]].sum()
    billing, audit = per.loc["billing"], per.loc["audit"]
    assert len(billing) >= 10 and len(audit) == len(billing)
    # the stalled group: committed offsets stop moving while the log grows; the last 5 snapshots
    # (15 s) all have the same committed total and rising lag
    tail = billing.iloc[-5:]
    assert tail["committed"].nunique() == 1 and tail["lag"].is_monotonic_increasing
    assert tail["lag"].iloc[-1] > 1000 and billing["end_offset"].iloc[-1] > billing["end_offset"].iloc[0]
    assert billing["committed"].iloc[0] < billing["committed"].iloc[-1]  # it did consume before the stall
    # the healthy group keeps up to the end, and the stalled one stays a member of a Stable group
    assert audit["lag"].iloc[-1] < 200 and audit["committed"].iloc[-1] > billing["committed"].iloc[-1]
    stalled_rows = lag[lag["group"] == "billing"]
    assert set(stalled_rows["group_state"]) == {"Stable"} and stalled_rows["client_id"].eq("billing-service").all()
    assert lines(out, "clients/billing-service.log", "pausing")
    assert "| `billing` |" in (out / "PROVENANCE.md").read_text()
    no_machine_paths(out)


def test_auth_failures(tmp_path):
    mod = scenario("auth_failures")
    out = mod.run(tmp_path / "b", phase_s=12, work=tmp_path / "w")
    failed = lines(out, "broker-1/server.log*", "Failed authentication with /127.0.0.1")
    assert len(failed) >= 3 and all("Invalid username or password" in ln for ln in failed)
    denied = lines(out, "broker-1/kafka-authorizer.log*", "Principal = User:reporting is Denied")
    assert denied and all("Topic:LITERAL:sales" in ln for ln in denied)
    assert lines(out, "broker-1/kafka-request.log*", '"errorCode":29,"name":"sales"')
    assert lines(out, "clients/reporting-app.log", "Unable to bootstrap")
    assert lines(out, "clients/reporting-app.log", "read 500 sales records")
    # neither password (the wrong one the app used, the right one in the broker's JAAS config)
    # appears anywhere in the bundle
    everything = bundle_text(out)
    assert len(mod.SECRETS) == 2
    for secret in mod.SECRETS:
        assert secret not in everything
    no_machine_paths(out)


def test_transactions(tmp_path):
    out = scenario("transactions").run(tmp_path / "b", work=tmp_path / "w")
    rollback = lines(
        out,
        "broker-1/server.log*",
        "Completed rollback of ongoing transaction for transactionalId payments-tx due to timeout",
    )
    assert len(rollback) == 1
    epochs = [
        int(e)
        for e in re.findall(
            r"transactionalId ledger-tx with producerId \d+ and producer epoch (\d+)",
            "\n".join(lines(out, "broker-1/server.log*", "Initialized transactionalId")),
        )
    ]
    assert len(epochs) == 2 and epochs[1] > epochs[0]
    fenced = lines(out, "broker-1/kafka-request.log*", '"clientId":"ledger-writer-a","requestApiKeyName":"END_TXN"')
    assert len(fenced) == 1 and '"errorCode":90' in fenced[0]
    assert lines(out, "clients/ledger-service.log", "ProducerFencedError")
    assert lines(out, "clients/payments-writer.log", "committed transaction 2")
    no_machine_paths(out)


def test_quota_throttling(tmp_path):
    out = scenario("quota_throttling").run(tmp_path / "b", seconds=20, work=tmp_path / "w")
    produce = lines(out, "broker-1/kafka-request.log*", '"clientId":"bulk-loader","requestApiKeyName":"PRODUCE"')
    throttles = [
        json.loads(ln.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])["throttleTimeMs"]
        for ln in produce
    ]
    assert len(throttles) >= 5 and sum(t > 0 for t in throttles) >= 3
    web = lines(out, "broker-1/kafka-request.log*", '"clientId":"web-api","requestApiKeyName":"PRODUCE"')
    assert web and all('"throttleTimeMs":0,' in ln for ln in web)
    assert lines(out, "clients/loader.log", "throttled by broker")
    jmx = pd.read_csv(out / "broker-1" / "jmx-broker.csv")
    col = [c for c in jmx.columns if "client-id=bulk-loader" in c and c.endswith(":throttle-time")]
    assert col and jmx[col[0]].max() > 0
    no_machine_paths(out)


def test_request_saturation(tmp_path):
    # the handler idle ratio is read as a one-minute moving average: the load must outlast a minute
    out = scenario("request_saturation").run(tmp_path / "b", work=tmp_path / "w")
    jmx = pd.read_csv(out / "broker-2" / "jmx-broker.csv")
    idle = jmx["kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent:OneMinuteRate"]
    idle = idle[(idle > 0).cummax()]  # the meter reads 0.0 until its first 5-second tick: not a measurement
    assert idle.iloc[0] > 0.5 and idle.min() < 0.3  # idle before the load, saturated under it
    queue = [
        json.loads(ln.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])["requestQueueTimeMs"]
        for ln in lines(out, "broker-2/kafka-request.log*", '"requestApiKeyName":"PRODUCE"')
    ]
    assert len(queue) >= 10 and sorted(queue)[len(queue) // 2] > 100  # median queue time above 100 ms
    assert (out / "controller-1" / "server.log").is_file()
    no_machine_paths(out)
