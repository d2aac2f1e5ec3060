"""The lab against a real broker: start/stop, JMX on loopback only, JmxTool CSV, and a clear
error (never a hang) when a broker cannot start."""

import subprocess

import pytest

from kitlib import lab


@pytest.mark.broker
def test_broker_runs_on_loopback_only(broker):
    assert broker.alive()
    ss = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    mine = [ln for ln in ss.splitlines() if f"pid={broker.pid}," in ln]
    assert len(mine) >= 3  # client listener, controller listener, JMX
    for ln in mine:
        local = ln.split()[3]
        assert "127.0.0.1" in local, ln


@pytest.mark.broker
def test_broker_writes_the_files_a_real_install_writes(broker):
    from pathlib import Path

    logs = Path(broker.logs)
    for name in ("server.log", "controller.log", "state-change.log", "log-cleaner.log", "kafka-request.log"):
        assert (logs / name).is_file(), name
    # log4j rolls server.log every hour: the start-up line may be in a rolled file by now
    assert any(lab.READY in f.read_text() for f in sorted(logs.glob("server.log*")))


@pytest.mark.broker
def test_jmxtool_csv_has_header_and_rows(broker, tmp_path):
    out = lab.run_jmxtool(
        broker, ["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"], tmp_path / "jmx.csv", seconds=3
    )
    lines = out.read_text().splitlines()
    assert lines[0].startswith('"time","kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:Count"')
    assert len(lines) >= 2 and lines[1].split(",")[0].isdigit()


@pytest.mark.broker
def test_a_bad_config_is_reported_with_the_reason(tmp_path):
    with pytest.raises(lab.LabError) as e:
        lab.start_broker("bad", work=tmp_path / "bad", settings={"num.network.threads": "not-a-number"}, jmx=False)
    assert "Invalid value not-a-number for configuration num.network.threads" in str(e.value)


@pytest.mark.broker
def test_a_broker_that_cannot_start_fails_fast_with_its_log(tmp_path):
    import socket
    import time

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        t = time.monotonic()
        with pytest.raises(lab.LabError) as e:
            lab.start_broker(
                "busy",
                work=tmp_path / "busy",
                jmx=False,
                timeout=20,
                settings={"listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{lab.free_port()}"},
            )
    msg = str(e.value)
    # either it gives up by itself or the wait times out: both end in an error with the broker's log
    assert "last lines of server.log" in msg and ("failed" in msg or "exited" in msg or "not ready after 20 s" in msg)
    assert time.monotonic() - t < 45


def test_scrub_paths_replaces_machine_paths_in_plain_and_gzipped_files(tmp_path):
    import gzip

    work = tmp_path / "machine" / "lab" / ".work"
    b = tmp_path / "bundle" / "broker-1"
    b.mkdir(parents=True)
    line = f"[2026-11-23 06:48:06,781] INFO Loading logs from log dirs ArrayBuffer({work}/b1/data) (kafka.log.LogManager)\n"
    (b / "server.log").write_text(line * 2)
    (b / "server.log.1.gz").write_bytes(gzip.compress(line.encode()))
    (b / "other.log").write_text("nothing here\n")
    assert lab.scrub_paths(tmp_path / "bundle", [work]) == 2
    assert (b / "server.log").read_text() == line.replace(str(work), lab.NEUTRAL_ROOT) * 2
    assert str(work) not in gzip.decompress((b / "server.log.1.gz").read_bytes()).decode()
    assert (b / "other.log").read_text() == "nothing here\n"


def roll_then_write(logs, line: str, after_s: float = 0.5) -> None:
    """After ``after_s``, write ``line`` to server.log and roll it as log4j does each hour: the
    file renamed to its dated piece, a new server.log begun with another line."""
    import time

    time.sleep(after_s)
    with open(logs / "server.log", "a") as f:
        f.write(line)
    (logs / "server.log").rename(logs / "server.log.2026-11-29-22")
    (logs / "server.log").write_text("[2026-11-29 23:00:00,001] INFO a new hour (kafka.Kafka)\n")


def test_waits_for_a_log_line_find_it_when_the_log_rolls_meanwhile(tmp_path):
    """The line waited for is written just before the hourly roll, then read in the rolled piece,
    past the offset taken before (the same wait without the rolled piece would time out)."""
    import threading

    from kitlib.lab import clients, cluster, processes

    old = "[2026-11-29 22:59:58,000] INFO Stabilized group g generation 3 (kafka.coordinator.group.GroupCoordinator)\n"
    (tmp_path / "server.log").write_text(old)
    node = lab.Proc("broker", "broker-1", str(tmp_path), 0, 0, logs=str(tmp_path))
    at = cluster.log_offset(node)
    wanted = (
        "[2026-11-29 22:59:59,500] INFO Stabilized group g generation 4 (kafka.coordinator.group.GroupCoordinator)\n"
    )
    t = threading.Thread(target=roll_then_write, args=(tmp_path, wanted))
    t.start()
    assert cluster.wait_for_log(node, "generation 4", timeout=10, after=at) == wanted.rstrip("\n")
    t.join()
    with pytest.raises(lab.LabError):  # past the offset, in the rolled piece: not the old line
        cluster.wait_for_log(node, "generation 3", timeout=1, after=at)
    assert clients.log_has(node, "generation 3") and clients.log_has(node, "a new hour")
    # a start-up wait reads the same way
    (tmp_path / "server.log").write_text(old)
    (tmp_path / "server.log.2026-11-29-22").unlink()
    at = (tmp_path / "server.log").stat().st_size
    t = threading.Thread(target=roll_then_write, args=(tmp_path, "[x] INFO Kafka Server started (kafka.Kafka)\n"))
    t.start()
    stand_in = subprocess.Popen(["sleep", "60"])  # what a failed wait stops: never this test's own group
    try:
        processes.wait_for_line(
            tmp_path / "server.log",
            "Kafka Server started",
            stand_in,
            stand_in.pid,
            10,
            "broker",
            tmp_path / "out",
            after=at,
        )
    finally:
        stand_in.kill()
        stand_in.wait()
    t.join()


# a lab run in a child process: a broker, a JmxTool sampling it and a ProducerPerformance loading
# it, started through lab.Scenario as the scenarios do; prints what it started, then waits
_LAB_RUN = """
import json, sys, time
from kitlib import lab
from kitlib.lab import processes
work = sys.argv[1]
with lab.Scenario(work + "/bundle") as s:
    b = s.broker("b", work=work + "/broker", settings={"num.partitions": 1})
    s.jmxtool(b, ["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"], work + "/jmx.csv")
    s.track(lab.start_java_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", "t", "--num-records",
        "100000000", "--record-size", "100", "--throughput", "200", "--producer-props",
        "bootstrap.servers=" + b.bootstrap, out=work + "/perf.out"))
    started = [b.pid, *(p.pid for p, _ in s.jmx), *(c.pid for c in s.children), processes._WATCH["pid"]]
    print(json.dumps({"pids": started, "ports": [b.port, b.controller_port, b.jmx_port]}), flush=True)
    time.sleep(600)
"""


def _runs(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie whose threads have all ended does not (a JVM's first thread
    can be a zombie while the others still shut down, its ports still open)."""
    import os

    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][:1] != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _listens(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.broker
@pytest.mark.slow
def test_what_the_lab_started_ends_with_the_process_that_started_it(tmp_path):
    """SIGTERM to a Python process running the lab stops the broker, JmxTool and load generator
    it started (its handler, then the signal ends it as before); SIGKILL, which leaves it no
    chance, leaves that to the watcher. Either way nothing it started runs or listens seconds later."""
    import json
    import os
    import signal
    import sys
    import time

    children, started = {}, {}
    try:
        for sig in (signal.SIGTERM, signal.SIGKILL):  # both labs start at once: one wait, not two
            (tmp_path / sig.name).mkdir()
            children[sig] = subprocess.Popen(
                [sys.executable, "-c", _LAB_RUN, str(tmp_path / sig.name)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        for sig, child in children.items():
            line = child.stdout.readline()
            assert line, child.communicate(timeout=60)[1][-3000:]
            started[sig] = json.loads(line)
        for sig, child in children.items():
            pids, ports = started[sig]["pids"], started[sig]["ports"]
            assert all(map(_runs, pids)) and _listens(ports[0])
            t = time.monotonic()
            child.send_signal(sig)
            assert child.wait(timeout=30) == -sig
            while time.monotonic() - t < 20 and (any(map(_runs, pids)) or any(map(_listens, ports))):
                time.sleep(0.1)
            took = time.monotonic() - t
            assert not [p for p in pids if _runs(p)], sig.name
            assert not [p for p in ports if _listens(p)], sig.name
            assert took < 15, f"{sig.name}: {took:.1f} s"  # SIGTERM, then SIGKILL 5 s later, on a busy machine
        # stopped by its owner: `kitlib lab status` no longer lists it
        assert not (tmp_path / "SIGTERM" / "broker" / "lab.json").exists()
    finally:
        for child in children.values():
            child.kill()
            child.communicate()
        for sig in started:  # only on failure: what this test started
            for pid in started[sig]["pids"]:
                if _runs(pid):
                    os.killpg(pid, signal.SIGKILL)
