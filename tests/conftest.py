"""Shared fixtures. ``broker``: one real Apache Kafka 3.9.1 broker (lab/) per test session."""
import shutil

import pytest


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """A real single-node KRaft broker on 127.0.0.1 with JMX on loopback, started once per test
    session and stopped at the end. Fails (never skips) when Java or Maven are missing."""
    from kitlib import lab
    for tool in ("java", "mvn", "jcmd"):
        if not shutil.which(tool):
            pytest.fail(f"the broker tests need `{tool}` (Java 17+ and Maven); install them and run again")
    work = tmp_path_factory.mktemp("lab") / "broker-1"
    b = lab.start_broker("broker-1", work=work, settings={"log.cleaner.dedupe.buffer.size": 1048577})
    yield b
    lab.stop(b)
