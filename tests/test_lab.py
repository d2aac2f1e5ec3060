"""The lab against a real broker: start/stop, JMX on loopback only, JmxTool CSV, and a clear
error (never a hang) when a broker cannot start."""
import subprocess

import pytest

from kitlib import lab

pytestmark = pytest.mark.broker


def test_broker_runs_on_loopback_only(broker):
    assert broker.alive()
    ss = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    mine = [ln for ln in ss.splitlines() if f"pid={broker.pid}," in ln]
    assert len(mine) >= 3  # client listener, controller listener, JMX
    for ln in mine:
        local = ln.split()[3]
        assert "127.0.0.1" in local, ln


def test_broker_writes_the_files_a_real_install_writes(broker):
    from pathlib import Path
    logs = Path(broker.logs)
    for name in ("server.log", "controller.log", "state-change.log", "log-cleaner.log", "kafka-request.log"):
        assert (logs / name).is_file(), name
    assert lab.READY in (logs / "server.log").read_text()


def test_jmxtool_csv_has_header_and_rows(broker, tmp_path):
    out = lab.run_jmxtool(broker, ["kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"], tmp_path / "jmx.csv",
                          seconds=3)
    lines = out.read_text().splitlines()
    assert lines[0].startswith('"time","kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec:Count"')
    assert len(lines) >= 2 and lines[1].split(",")[0].isdigit()


def test_a_bad_config_is_reported_with_the_reason(tmp_path):
    with pytest.raises(lab.LabError) as e:
        lab.start_broker("bad", work=tmp_path / "bad", settings={"num.network.threads": "not-a-number"}, jmx=False)
    assert "Invalid value not-a-number for configuration num.network.threads" in str(e.value)


def test_a_broker_that_cannot_start_fails_fast_with_its_log(tmp_path):
    import socket
    import time
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        t = time.monotonic()
        with pytest.raises(lab.LabError) as e:
            lab.start_broker("busy", work=tmp_path / "busy", jmx=False, timeout=20, settings={
                "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{lab.free_port()}"})
    msg = str(e.value)
    # either it gives up by itself or the wait times out: both end in an error with the broker's log
    assert "last lines of server.log" in msg and ("failed" in msg or "exited" in msg or "not ready after 20 s" in msg)
    assert time.monotonic() - t < 45
