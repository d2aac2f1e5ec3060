"""Shared fixtures. ``kit``: the ``kitlib`` command run as a child process; ``broker``: one real
Apache Kafka 3.9.1 broker (kitlib.lab) per test session; ``cluster``: one real three-node KRaft
cluster per test session."""

import shutil
import subprocess
import sys

import pytest


class Kit:
    """The ``kitlib`` command in a child process, as a user runs it. ``kit("triage", path)`` waits
    for it and returns the finished run (``returncode``, ``stdout``, ``stderr``, as text);
    ``kit.start(...)`` returns the running process, for tests that signal or kill it. Arguments
    may be paths."""

    command = (sys.executable, "-m", "kitlib.cli")

    def __call__(self, *args, env=None, timeout=None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.command, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
        )

    def start(self, *args, **popen) -> subprocess.Popen:
        """The command started with its output piped (as text) unless ``popen`` says otherwise."""
        popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
        return subprocess.Popen([*self.command, *map(str, args)], **popen)


@pytest.fixture(scope="session")
def kit() -> Kit:
    """The ``kitlib`` command run as a child process (:class:`Kit`)."""
    return Kit()


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


def pytest_configure(config):
    """The run's id that xdist hands its workers is chosen here, so the controller knows it too."""
    if not hasattr(config, "workerinput") and getattr(config.option, "testrunuid", "") is None:
        import uuid

        config.option.testrunuid = uuid.uuid4().hex


def pytest_sessionfinish(session):
    """The controller of an xdist run removes the folder its workers shared samples in."""
    if hasattr(session.config, "workerinput"):
        return
    from samples import shared_folder

    folder = shared_folder(getattr(session.config.option, "testrunuid", None))
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
