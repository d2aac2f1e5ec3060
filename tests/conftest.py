"""Shared fixtures. ``broker``: one real Apache Kafka 3.9.1 broker (kitlib.lab) per test session;
``cluster``: one real three-node KRaft cluster per test session."""

import shutil

import pytest


def _need_java_tools() -> None:
    for tool in ("java", "mvn", "jcmd"):
        if not shutil.which(tool):
            pytest.fail(f"the broker tests need `{tool}` (Java 17+ and Maven); install them and run again")


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A real single-node KRaft broker on 127.0.0.1 with JMX on loopback, started once per test
    session and stopped at the end. Fails (never skips) when Java or Maven are missing."""
    from kitlib import lab

    _need_java_tools()
    work = tmp_path_factory.mktemp("lab") / "broker-1"
    b = lab.start_broker("broker-1", work=work, settings={"log.cleaner.dedupe.buffer.size": 1048577})
    yield b
    lab.stop(b)


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A real three-node KRaft cluster (combined broker+controller nodes, node ids 1-3) on
    127.0.0.1 with JMX on loopback and GC logs, started once per test session and stopped at the
    end. Internal topics have replication factor 3 and min.insync.replicas is 2. Fails (never
    skips) when Java or Maven are missing."""
    from kitlib import lab

    _need_java_tools()
    c = lab.start_cluster(3, name="cluster", work=tmp_path_factory.mktemp("lab-cluster") / "cluster")
    yield c
    lab.stop_cluster(c)
