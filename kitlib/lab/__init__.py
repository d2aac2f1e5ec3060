"""The local Kafka lab: real Apache Kafka 3.9.1 brokers (KRaft; one node, or a cluster of
several with :func:`start_cluster`) and a Connect standalone worker, from Maven Central jars, on
127.0.0.1 only.

Nothing here points into a source checkout: the config templates and the Maven pom are package
data (``kitlib/lab/templates``). Jars are fetched once (``mvn dependency:copy-dependencies``)
into a user cache folder, ``$KITLIB_LAB_JARS`` or else
``$XDG_CACHE_HOME/kafka-incident-kit/jars-3.9.1`` (``~/.cache`` when unset). Each broker gets a
work folder holding its config, data and the log files a real installation writes (server.log,
controller.log, state-change.log, log-cleaner.log, kafka-request.log, kafka-authorizer.log,
kafkaServer-gc.log), under ``$KITLIB_LAB_WORK`` or else
``$XDG_STATE_HOME/kafka-incident-kit/lab`` (``~/.local/state`` when unset). Ports are chosen
free at start. JMX is opened with ``jcmd ManagementAgent.start`` bound to loopback (the
``-Dcom.sun.management`` flags would also open a random port on every interface). Every wait
has a timeout; a broker that does not come up raises :class:`LabError` with its last log lines.

Example:
    >>> from kitlib import lab
    >>> b = lab.start_broker()                      # doctest: +SKIP
    >>> b.bootstrap                                 # doctest: +SKIP
    '127.0.0.1:40123'
    >>> lab.stop(b)                                 # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

KAFKA_VERSION = "3.9.1"
JARS_ENV = "KITLIB_LAB_JARS"  # overrides the jars cache folder
WORK_ENV = "KITLIB_LAB_WORK"  # overrides the root of the brokers' work folders
APP_DIR = "kafka-incident-kit"
READY = "Kafka Server started"
GC_LOG = "kafkaServer-gc.log"  # kafka-run-class.sh's GC log name for kafka.Kafka
CONNECT_READY = "Kafka Connect started"
# broker MBeans the scenarios sample with JmxTool: conversions, byte rates, fetch request times
BROKER_MBEANS = [
    "kafka.server:type=BrokerTopicMetrics,name=FetchMessageConversionsPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=ProduceMessageConversionsPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec",
    "kafka.network:type=RequestMetrics,name=MessageConversionsTimeMs,request=Fetch",
    "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch",
]
# log lines after which a starting process will not become ready
FATAL_MARKERS = ("Fatal error during", "Exiting Kafka", "Stopping Kafka Connect", "Failed to start")


class LabError(RuntimeError):
    """The lab could not do what was asked; the message carries the relevant log lines."""


@dataclass
class Proc:
    """A running lab process (broker or Connect worker)."""

    kind: str
    name: str
    work: str
    pid: int
    port: int
    jmx_port: int = 0
    controller_port: int = 0
    logs: str = ""
    extra: dict = field(default_factory=dict)
    node_id: int = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def jmx_url(self) -> str:
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.jmx_port}/jmxrmi"

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        try:  # a zombie (exited, not reaped) is not alive
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().split(") ", 1)[1][:1] != "Z"
        except OSError:
            return True


def jars_dir() -> Path:
    """Where the lab's jars are cached: ``$KITLIB_LAB_JARS``, else
    ``$XDG_CACHE_HOME/kafka-incident-kit/jars-<kafka version>`` (``~/.cache`` by default)."""
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / APP_DIR / f"jars-{KAFKA_VERSION}"


def work_root() -> Path:
    """The folder holding the lab's work folders: ``$KITLIB_LAB_WORK``, else
    ``$XDG_STATE_HOME/kafka-incident-kit/lab`` (``~/.local/state`` by default)."""
    if os.environ.get(WORK_ENV):
        return Path(os.environ[WORK_ENV]).expanduser()
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / APP_DIR / "lab"


def fresh_work(work: Path) -> None:
    """Make ``work`` a new, empty work folder of the lab's (marked as the kit's own). A folder
    already there is removed only when the lab made it (it holds :data:`kitlib.guard.MARKER`),
    when it lies in the lab's own state folder (``$XDG_STATE_HOME/kafka-incident-kit/lab``, whose
    older work folders carry no marker), or when it is empty; any other (a folder of the user's
    given as ``--work``) is refused before anything is touched."""
    from kitlib import guard

    own = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / APP_DIR / "lab"
    if work.is_dir() and not work.is_symlink():
        inside_own = Path(os.path.realpath(own)) in Path(os.path.realpath(work)).parents
        if not inside_own:
            guard.check_replaceable(work, "the lab's work folder")
        shutil.rmtree(work)
    else:
        guard.check_replaceable(work, "the lab's work folder")
    work.mkdir(parents=True)
    guard.mark(work, "kitlib lab")


def template(name: str) -> str:
    """The text of one of the lab's packaged templates (server.properties, log4j.properties,
    connect-*.properties, pom.xml)."""
    from importlib import resources

    return resources.files(__name__).joinpath("templates", name).read_text()


def fetch_jars(quiet: bool = True, timeout: int = 600) -> Path:
    """Download the lab's jars once into :func:`jars_dir`. Needs Maven and Java.

    Example:
        >>> fetch_jars()   # doctest: +SKIP
        PosixPath('/home/me/.cache/kafka-incident-kit/jars-3.9.1')
    """
    import hashlib
    import tempfile

    jars = jars_dir()
    pom_text = template("pom.xml")
    pom = hashlib.sha256(pom_text.encode()).hexdigest()[:12]
    marker = jars / f".complete-{KAFKA_VERSION}-{pom}"  # a changed pom.xml fetches again
    if marker.is_file():
        return jars
    if not shutil.which("mvn"):
        raise LabError(
            "Maven (`mvn`) is needed to fetch the Kafka jars from Maven Central; install it (apt-get install maven)"
        )
    if not shutil.which("java"):
        raise LabError("Java 17+ is needed to run the lab broker; install it (apt-get install openjdk-17-jre-headless)")
    jars.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kitlib-pom-") as tmp:
        (Path(tmp) / "pom.xml").write_text(pom_text)
        cmd = [
            "mvn",
            "-B",
            "-f",
            str(Path(tmp) / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={jars}",
            "-DincludeScope=runtime",
        ]
        if quiet:
            cmd.insert(1, "-q")
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp, check=False)
        except subprocess.TimeoutExpired:
            raise LabError(f"fetching jars took more than {timeout} s") from None
    if r.returncode != 0:
        raise LabError("mvn dependency:copy-dependencies failed:\n" + (r.stdout + r.stderr)[-3000:])
    marker.write_text(KAFKA_VERSION + "\n")
    return jars


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, never the same one twice in a process.

    It is taken below the kernel's ephemeral range (where outgoing connections get their local
    port): a port from that range can be taken by any client connecting somewhere between this
    check and the node binding it, and the node then dies with "Address already in use"."""
    low = _ephemeral_low()
    for _ in range(500):
        port = random.randrange(max(1024, low - 12000), low)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    with socket.socket() as s:  # that window is full: let the kernel choose
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_HANDED_OUT: set[int] = set()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux: ip_local_port_range; else 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _classpath() -> str:
    return str(fetch_jars() / "*")


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log written)"


def _wait_for_line(
    log: Path,
    text: str,
    proc: subprocess.Popen | None,
    pid: int,
    timeout: float,
    what: str,
    stdout: Path,
    after: int = 0,
) -> None:
    """Wait until ``text`` appears in ``log`` (past byte ``after``: lines of an earlier run of
    the same process do not count), the process dies or logs a fatal line, or ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = ""
        if log.is_file():
            with open(log, "rb") as f:
                if os.fstat(f.fileno()).st_size >= after:  # smaller: rotated since, read it all
                    f.seek(after)
                content = f.read().decode(errors="replace")
        if text in content:
            return
        fatal = any(m in content for m in FATAL_MARKERS)
        if fatal or (proc is not None and proc.poll() is not None):
            _kill(pid)
            why = f"exited with code {proc.returncode}" if proc is not None and proc.poll() is not None else "failed"
            raise LabError(
                f"{what} {why} before it was ready.\n{_errors(log)}"
                f"last lines of {log.name}:\n{_tail(log)}\n--- stdout/stderr:\n{_tail(stdout, 20)}"
            )
        time.sleep(0.2)
    _kill(pid)
    raise LabError(
        f"{what} was not ready after {timeout:.0f} s (waited for '{text}' in {log}).\n{_errors(log)}"
        f"last lines of {log.name}:\n{_tail(log)}\n--- stdout/stderr:\n{_tail(stdout, 20)}"
    )


def _errors(log: Path, n: int = 8) -> str:
    """The first ERROR/FATAL lines of a log (with the line that follows, often the cause)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    out = []
    for i, ln in enumerate(lines):
        if "] ERROR " in ln or "] FATAL " in ln:
            out.append(ln)
            if i + 1 < len(lines) and not lines[i + 1].startswith("["):
                out.append(lines[i + 1])
        if len(out) >= n:
            break
    return ("errors logged:\n" + "\n".join(out) + "\n") if out else ""


def _kill(pid: int, grace: float = 15.0) -> None:
    try:  # a paused (SIGSTOP) process must run again to act on SIGTERM
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    return
            except ChildProcessError:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.1)


def _render(name: str, **values) -> str:
    """A packaged template with its ``{placeholders}`` filled."""
    text = template(name)
    for k, v in values.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def _jvm(work: Path, logs: Path, log4j: str, heap: str, props: dict[str, str], gc_log: bool = False) -> list[str]:
    """The java command line of a lab process; the log4j template is copied into the work folder.
    ``gc_log`` turns on GC logging exactly as kafka-run-class.sh does for a broker."""
    (work / log4j).write_text(template(log4j))
    cmd = ["java", f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
    if gc_log:
        cmd.append(f"-Xlog:gc*:file={logs / GC_LOG}:time,tags:filecount=10,filesize=100M")
    cmd += [f"-Dlog4j.configuration={(work / log4j).as_uri()}", f"-Dkafka.logs.dir={logs}"]
    cmd += [f"-D{k}={v}" for k, v in props.items()]
    return cmd + ["-cp", _classpath()]


def enable_jmx(pid: int, port: int | None = None, timeout: float = 30) -> int:
    """Open JMX on 127.0.0.1 only in a running JVM (via jcmd); returns the port."""
    port = port or free_port()
    cmd = [
        "jcmd",
        str(pid),
        "ManagementAgent.start",
        f"jmxremote.port={port}",
        f"jmxremote.rmi.port={port}",
        "jmxremote.host=127.0.0.1",
        "jmxremote.authenticate=false",
        "jmxremote.ssl=false",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if r.returncode != 0 or "Exception" in r.stdout:
        raise LabError(f"could not open JMX in pid {pid}: {r.stdout}{r.stderr}")
    return port


def _cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _prepare_node(
    work: Path, name: str, node_id: int, port: int, cport: int, voters: str, settings: dict | None, fresh: bool
) -> tuple[Path, Path]:
    """Create a node's work folder and server.properties; returns (logs, data)."""
    if fresh:
        fresh_work(work)
    logs, data = work / "logs", work / "data"
    logs.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    props = _render(
        "server.properties", port=port, controller_port=cport, data_dir=data, node_id=node_id, voters=voters
    )
    for k, v in (settings or {}).items():  # {port} and {controller_port} in a value name the chosen ports
        props += f"{k}={str(v).replace('{port}', str(port)).replace('{controller_port}', str(cport))}\n"
    (work / "server.properties").write_text(props)
    return logs, data


def _format(works: list[Path], cluster_id: str, timeout: float = 120) -> None:
    """Format the storage of every node (in parallel) with one cluster id."""
    cp = _classpath()
    procs = [
        subprocess.Popen(
            [
                "java",
                "-cp",
                cp,
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={cluster_id}",
                "-c",
                str(w / "server.properties"),
                "--ignore-formatted",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in works
    ]
    failed = []
    for w, fp in zip(works, procs):
        try:
            out, _ = fp.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            fp.kill()
            fp.communicate()
            failed.append(f"{w.name}: formatting took more than {timeout:.0f} s")
            continue
        if fp.returncode != 0:
            failed.append(f"{w.name}:\n{out}")
    if failed:
        raise LabError("formatting storage failed:\n" + "\n".join(failed))


def _launch(b: Proc, request_log: str, heap: str, gc_log: bool) -> subprocess.Popen:
    """Start the broker JVM of an already formatted node; sets ``b.pid``."""
    work, logs = Path(b.work), Path(b.logs)
    cmd = _jvm(work, logs, "log4j.properties", heap, {"kit.request.log.level": request_log}, gc_log=gc_log)
    cmd += ["kafka.Kafka", str(work / "server.properties")]
    with open(work / "broker.out", "ab") as fh:
        p = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work, start_new_session=True
        )
    b.pid = p.pid
    b.extra.update(request_log=request_log, heap=heap, gc_log=gc_log)
    return p


def _log_size(b: Proc) -> int:
    f = Path(b.logs) / "server.log"
    return f.stat().st_size if f.is_file() else 0


def start_broker(
    name: str = "broker-1",
    work: str | Path | None = None,
    settings: dict | None = None,
    request_log: str = "DEBUG",
    jmx: bool = True,
    heap: str = "512m",
    timeout: float = 90,
    fresh: bool = True,
    gc_log: bool = False,
    cluster_id: str | None = None,
) -> Proc:
    """Format storage and start a single-node broker (KRaft, broker and controller in one
    process); returns once "Kafka Server started" is logged.

    ``settings`` are appended to server.properties (e.g. ``{"log.cleaner.dedupe.buffer.size":
    1048577}``). ``request_log`` is the level of ``kafka.request.logger`` (DEBUG logs every
    request with its API version to kafka-request.log). ``gc_log`` writes kafkaServer-gc.log
    as kafka-run-class.sh does. ``{port}`` / ``{controller_port}`` in a setting's value are
    replaced by the ports chosen (to add a listener: ``{"listeners": "PLAINTEXT://127.0.0.1:{port},
    SASL_PLAINTEXT://127.0.0.1:40001,CONTROLLER://127.0.0.1:{controller_port}"}``); nodes of one
    cluster started one by one (a controller-only and a broker-only node) share ``cluster_id``."""
    work = Path(work) if work else work_root() / name
    port, cport = free_port(), free_port()
    logs, _ = _prepare_node(work, name, 1, port, cport, f"1@127.0.0.1:{cport}", settings, fresh)
    _format([work], cluster_id or _cluster_id())
    b = Proc("broker", name, str(work), 0, port, 0, cport, str(logs), node_id=1)
    p = _launch(b, request_log, heap, gc_log)
    _wait_for_line(logs / "server.log", READY, p, p.pid, timeout, f"broker {name}", work / "broker.out")
    if jmx:
        b.jmx_port = enable_jmx(p.pid)
    _save(b)
    return b


def start_connect(
    broker: Proc,
    connectors: list[dict],
    name: str = "connect-1",
    work: str | Path | None = None,
    worker: dict | None = None,
    flush_interval_ms: int = 10000,
    flush_timeout_ms: int = 5000,
    task_log_level: str = "INFO",
    jmx: bool = True,
    heap: str = "512m",
    timeout: float = 90,
    fresh: bool = True,
) -> Proc:
    """Start a Connect standalone worker against ``broker`` running ``connectors`` (each a dict
    of connector properties with at least ``name`` and ``connector.class``)."""
    work = Path(work) if work else work_root() / name
    if fresh:
        fresh_work(work)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rest = free_port()
    props = _render(
        "connect-standalone.properties",
        bootstrap=broker.bootstrap,
        rest_port=rest,
        work=work,
        flush_interval_ms=flush_interval_ms,
        flush_timeout_ms=flush_timeout_ms,
    )
    for k, v in (worker or {}).items():
        props += f"{k}={v}\n"
    (work / "worker.properties").write_text(props)
    files = []
    for conn in connectors:
        f = work / f"{conn['name']}.properties"
        f.write_text("".join(f"{k}={v}\n" for k, v in conn.items()))
        files.append(str(f))
    out = work / "connect.out"
    cmd = _jvm(work, logs, "connect-log4j.properties", heap, {"kit.connect.task.log.level": task_log_level})
    cmd += ["org.apache.kafka.connect.cli.ConnectStandalone", str(work / "worker.properties"), *files]
    with open(out, "wb") as fh:
        p = subprocess.Popen(
            cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=work, start_new_session=True
        )
    c = Proc("connect", name, str(work), p.pid, rest, 0, 0, str(logs), {"broker": broker.name})
    _wait_for_line(logs / "connect.log", CONNECT_READY, p, p.pid, timeout, f"Connect worker {name}", out)
    if jmx:
        c.jmx_port = enable_jmx(p.pid)
    _save(c)
    return c


def stop(proc: Proc) -> None:
    """Stop a lab process (SIGTERM, then SIGKILL after a grace period) and forget it."""
    _kill(proc.pid)
    state = Path(proc.work) / "lab.json"
    if state.exists():
        state.unlink()


def _save(p: Proc) -> None:
    (Path(p.work) / "lab.json").write_text(json.dumps(asdict(p), indent=2))


def running(root: Path | None = None) -> list[Proc]:
    """Lab processes recorded under ``root`` (default :func:`work_root`; cluster nodes one level
    deeper), alive or not."""
    root = Path(root) if root else work_root()
    out = []
    for f in sorted([*root.glob("*/lab.json"), *root.glob("*/*/lab.json")]):
        out.append(Proc(**json.loads(f.read_text())))
    return out


def run_jmxtool(
    proc: Proc,
    object_names: list[str],
    out_csv: str | Path,
    seconds: float = 10,
    interval_ms: int = 1000,
    attributes: list[str] | None = None,
    date_format: str | None = None,
    wait: bool = True,
) -> subprocess.Popen | Path | None:
    """Run Kafka's JmxTool against a lab process, writing its CSV to ``out_csv``.

    With ``wait`` it runs for ``seconds`` and returns the path; otherwise it returns the running
    process (stop it with :func:`finish_jmxtool`). JmxTool prints nothing, forever, when an
    attribute named with ``attributes`` is missing on a matched MBean: it is always killed after
    ``seconds``."""
    cmd = [
        "java",
        "-Xmx128m",
        "-cp",
        _classpath(),
        "org.apache.kafka.tools.JmxTool",
        "--jmx-url",
        proc.jmx_url,
        "--reporting-interval",
        str(interval_ms),
        "--wait",
    ]
    for o in object_names:
        cmd += ["--object-name", o]
    if attributes:
        cmd += ["--attributes", ",".join(attributes)]
    if date_format:
        cmd += ["--date-format", date_format]
    fh = open(out_csv, "wb")
    p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
    p._kit_fh = fh  # type: ignore[attr-defined]
    if not wait:
        return p
    time.sleep(seconds)
    return finish_jmxtool(p, out_csv)


def finish_jmxtool(p: subprocess.Popen, out_csv: str | Path) -> Path | None:
    """Stop a JmxTool started with ``wait=False``; keeps only whole CSV lines."""
    _kill(p.pid, grace=3)
    p._kit_fh.close()  # type: ignore[attr-defined]
    p._kit_done = True  # type: ignore[attr-defined]
    path = Path(out_csv)
    data = path.read_bytes()
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    # drop a partial last line and any non-CSV chatter (the tool's notices go to stdout in old versions)
    keep = [ln for ln in lines if ln.startswith(b'"time"') or ln[:1].isdigit() or ln.startswith(b'"')]
    if len(keep) < 2:  # no sample was taken (an MBean never appeared): leave no empty file behind
        path.unlink(missing_ok=True)
        return None
    path.write_bytes(b"\n".join(keep) + b"\n")
    return path


NEUTRAL_ROOT = "/var/lib/kafka-lab"


def scrub_paths(bundle: str | Path, roots: list[str | Path] | None = None) -> int:
    """Replace this machine's lab folders in a captured bundle's text (log lines name data dirs,
    config files and connector source files) with a neutral ``/var/lib/kafka-lab``; plain and
    gzipped files. Returns the number of files changed. Line structure is unchanged."""
    import gzip

    folders = sorted(
        {str(Path(r).resolve()) for r in (*(roots or []), work_root(), jars_dir())}, key=len, reverse=True
    )  # the most specific folder first
    changed = 0
    for f in Path(bundle).rglob("*"):
        if not f.is_file() or f.suffix in (".parquet",):
            continue
        raw = f.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        data = gzip.decompress(raw) if gz else raw
        new = data
        for r in folders:
            new = new.replace(r.encode(), NEUTRAL_ROOT.encode())
        if new != data:
            f.write_bytes(gzip.compress(new, 9, mtime=0) if gz else new)
            changed += 1
    return changed


def write_manifest(bundle: str | Path, **hosts: str) -> Path:
    """Finish a scenario bundle: scrub this machine's paths (:func:`scrub_paths`) and write a
    bundle.yaml naming the host of the capture/probe folders (``live`` -> ``cluster``,
    ``probes`` -> ``clients``) so they do not show up as hosts of their own."""
    scrub_paths(bundle)
    lines = ["# hosts of folders that are not brokers or workers", "files:"]
    mapping = {"live/*": "cluster", "probes/*": "clients", "payloads/*": "clients"}
    mapping.update({f"{k}/*": v for k, v in hosts.items()})
    lines += [f'  "{k}": {v}' for k, v in mapping.items()]
    path = Path(bundle) / "bundle.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def register_cli(sub) -> None:
    import argparse

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--jars",
        metavar="DIR",
        default=None,
        help=f"folder of the Kafka jars (default: ${JARS_ENV}, else "
        f"$XDG_CACHE_HOME/{APP_DIR}/jars-{KAFKA_VERSION}, ~/.cache when unset)",
    )
    common.add_argument(
        "--work",
        metavar="DIR",
        default=None,
        help=f"folder of the lab's work folders (default: ${WORK_ENV}, else "
        f"$XDG_STATE_HOME/{APP_DIR}/lab, ~/.local/state when unset)",
    )
    p = sub.add_parser(
        "lab",
        help="start, stop or inspect the local Kafka lab (real brokers on 127.0.0.1)",
        description=f"Run real Apache Kafka {KAFKA_VERSION} brokers (KRaft: one node, or a cluster of "
        "combined broker+controller nodes) from Maven Central jars on 127.0.0.1, for trying "
        "the kit's capture and probes. Needs Java 17+ and Maven. Jars are cached in a user "
        "cache folder, work folders (config, data, logs) in a user state folder.",
    )
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION")
    s = lsub.add_parser(
        "start",
        parents=[common],
        help="fetch jars if needed, format storage and start a broker or cluster",
        description="Start a broker in WORK/NAME (or, with --nodes N, a cluster of N nodes in "
        "WORK/NAME/broker-1..N) and print bootstrap address, JMX and log folder.",
    )
    s.add_argument(
        "--name",
        default=None,
        help="broker or cluster name, its work folder under WORK (default: broker-1, or cluster with --nodes)",
    )
    s.add_argument(
        "--nodes",
        type=int,
        default=1,
        metavar="N",
        help="start a KRaft cluster of N combined broker+controller nodes (default: 1, a single broker)",
    )
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra server.properties setting")
    s.add_argument("--request-log", default="DEBUG", help="level of kafka.request.logger (DEBUG logs every request)")
    s.set_defaults(func=_cmd_start)
    s = lsub.add_parser(
        "stop",
        parents=[common],
        help="stop lab processes",
        description="Stop one lab process or cluster (--name) or all of them.",
    )
    s.add_argument("--name", default=None, help="only this broker or cluster")
    s.set_defaults(func=_cmd_stop)
    s = lsub.add_parser(
        "status", parents=[common], help="list lab processes", description="List lab processes and whether they run."
    )
    s.set_defaults(func=_cmd_status)
    s = lsub.add_parser(
        "jars",
        parents=[common],
        help="fetch the Kafka jars from Maven Central (cached)",
        description="Download the lab's jars into the jars folder once and print where it is.",
    )
    s.set_defaults(func=_cmd_jars)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _use_dirs(args) -> None:
    """--jars/--work act like the environment variables (child JVMs and helpers see them too)."""
    if getattr(args, "jars", None):
        os.environ[JARS_ENV] = str(Path(args.jars).expanduser().resolve())
    if getattr(args, "work", None):
        os.environ[WORK_ENV] = str(Path(args.work).expanduser().resolve())


def _cmd_jars(args) -> int:
    _use_dirs(args)
    print(fetch_jars())
    return 0


def _cmd_start(args) -> int:
    _use_dirs(args)
    settings = dict(kv.split("=", 1) for kv in args.set)
    if args.nodes > 1:
        c = start_cluster(args.nodes, name=args.name or "cluster", settings=settings, request_log=args.request_log)
        print(f"cluster {c.name} ready: bootstrap {c.bootstrap}")
        for b in c.nodes:
            print(f"  node {b.node_id}: {b.bootstrap}, JMX {b.jmx_url}, logs in {b.logs}")
        return 0
    b = start_broker(args.name or "broker-1", settings=settings, request_log=args.request_log)
    print(f"{b.name} ready: bootstrap {b.bootstrap}, JMX {b.jmx_url}, logs in {b.logs}")
    return 0


def _cmd_stop(args) -> int:
    _use_dirs(args)
    clusters: dict[str, list[Proc]] = {}
    for p in running():
        if args.name not in (None, p.name, p.extra.get("cluster")):
            continue
        if p.extra.get("cluster"):  # a cluster's nodes stop together, while their quorum stands
            clusters.setdefault(p.extra["cluster"], []).append(p)
            continue
        stop(p)
        print(f"stopped {p.kind} {p.name} (pid {p.pid})")
    for name, nodes in clusters.items():
        stop_cluster(Cluster(name, "", nodes))
        print(f"stopped cluster {name} (nodes {', '.join(str(n.node_id) for n in nodes)})")
    return 0


def _cmd_status(args) -> int:
    _use_dirs(args)
    procs = running()
    if not procs:
        print(f"no lab process recorded under {work_root()}")
    for p in procs:
        print(
            f"{p.kind:8} {p.name:18} pid {p.pid:<8} {'running' if p.alive() else 'not running'}  "
            f"port {p.port}  jmx {p.jmx_port or '-'}  logs {p.logs}"
        )
    return 0


def collect_logs(
    proc: Proc, dest: str | Path, names: tuple[str, ...] | None = None, gzip_over: int = 1_000_000
) -> list[Path]:
    """Copy a lab process's log files into a bundle folder (``dest`` = the host's folder).
    Files bigger than ``gzip_over`` bytes are stored gzipped, as rotated logs often are."""
    import gzip

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for f in sorted(Path(proc.logs).iterdir()):
        if not f.is_file() or (names and f.name not in names) or f.stat().st_size == 0:
            continue
        data = f.read_bytes()
        if len(data) > gzip_over:
            target = dest / (f.name + ".gz")
            target.write_bytes(gzip.compress(data, 9, mtime=0))
        else:
            target = dest / f.name
            target.write_bytes(data)
        out.append(target)
    return out


TOOLS_LOG4J = (
    "log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
)


def run_tool(main_class: str, args: list[str], timeout: float = 120, stderr: bool = True) -> str:
    """Run one of Kafka's command-line tools (by main class) with the lab's jars and return what
    it printed (stdout, then stderr unless ``stderr=False``), as a user running it with ``2>&1``
    would capture it. Tool logging goes to stderr at ERROR, like ``config/tools-log4j.properties``.

    Example:
        >>> run_tool("org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", b.bootstrap, "--list"])  # doctest: +SKIP
        '__consumer_offsets\\norders\\n'
    """
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write(TOOLS_LOG4J)
    try:
        cmd = [
            "java",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            f"-Dlog4j.configuration={Path(f.name).as_uri()}",
            "-cp",
            _classpath(),
            main_class,
            *args,
        ]
        try:
            r = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False
            )
        except subprocess.TimeoutExpired:
            raise LabError(f"{main_class} ran longer than {timeout:.0f} s") from None
    finally:
        os.unlink(f.name)
    return r.stdout + (r.stderr if stderr else "")


# the cluster builds on the single-node pieces above, so it is imported last
from .cluster import (  # noqa: E402
    CLUSTER_MBEANS,
    Cluster,
    active_controller,
    kill_node,
    log_offset,
    pause,
    restart_node,
    resume,
    start_cluster,
    stop_cluster,
    wait_for_full_isr,
    wait_for_log,
)
from .load import LoadStats, ProduceLoad  # noqa: E402
from .scenario import Evidence, Hit, Scenario, grep_bundle, write_provenance  # noqa: E402

__all__ = [
    "BROKER_MBEANS",
    "CLUSTER_MBEANS",
    "Cluster",
    "Evidence",
    "Hit",
    "LabError",
    "LoadStats",
    "Proc",
    "ProduceLoad",
    "Scenario",
    "active_controller",
    "collect_logs",
    "enable_jmx",
    "fetch_jars",
    "finish_jmxtool",
    "free_port",
    "grep_bundle",
    "jars_dir",
    "kill_node",
    "log_offset",
    "pause",
    "restart_node",
    "resume",
    "run_jmxtool",
    "run_tool",
    "running",
    "scrub_paths",
    "start_broker",
    "start_cluster",
    "start_connect",
    "stop",
    "stop_cluster",
    "template",
    "wait_for_full_isr",
    "wait_for_log",
    "work_root",
    "write_manifest",
    "write_provenance",
]
