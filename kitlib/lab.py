"""The local Kafka lab: a real Apache Kafka 3.9.1 broker (KRaft, single node) and a Connect
standalone worker, from Maven Central jars, on 127.0.0.1 only.

Jars are fetched once into ``lab/.jars`` (``mvn dependency:copy-dependencies`` on
``lab/pom.xml``); each broker gets a work folder (``lab/.work/<name>`` by default) holding its
config, data and the log files a real installation writes (server.log, controller.log,
state-change.log, log-cleaner.log, kafka-request.log). Ports are chosen free at start. JMX is
opened with ``jcmd ManagementAgent.start`` bound to loopback (the ``-Dcom.sun.management``
flags would also open a random port on every interface). Every wait has a timeout; a broker
that does not come up raises :class:`LabError` with its last log lines.

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
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent / "lab"
JARS = LAB / ".jars"
WORK = LAB / ".work"
KAFKA_VERSION = "3.9.1"
READY = "Kafka Server started"
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


def fetch_jars(quiet: bool = True, timeout: int = 600) -> Path:
    """Download the lab's jars once (cached in lab/.jars). Needs Maven and Java.

    Example:
        >>> fetch_jars()   # doctest: +SKIP
        PosixPath('.../lab/.jars')
    """
    import hashlib
    pom = hashlib.sha256((LAB / "pom.xml").read_bytes()).hexdigest()[:12]
    marker = JARS / f".complete-{KAFKA_VERSION}-{pom}"  # a changed pom.xml fetches again
    if marker.is_file():
        return JARS
    if not shutil.which("mvn"):
        raise LabError("Maven (`mvn`) is needed to fetch the Kafka jars from Maven Central; install it (apt-get install maven)")
    if not shutil.which("java"):
        raise LabError("Java 17+ is needed to run the lab broker; install it (apt-get install openjdk-17-jre-headless)")
    JARS.mkdir(parents=True, exist_ok=True)
    cmd = ["mvn", "-B", "-f", str(LAB / "pom.xml"), "dependency:copy-dependencies",
           f"-DoutputDirectory={JARS}", "-DincludeScope=runtime"]
    if quiet:
        cmd.insert(1, "-q")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LabError(f"fetching jars took more than {timeout} s") from None
    if r.returncode != 0:
        raise LabError("mvn dependency:copy-dependencies failed:\n" + (r.stdout + r.stderr)[-3000:])
    marker.write_text(KAFKA_VERSION + "\n")
    return JARS


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _classpath() -> str:
    return str(fetch_jars() / "*")


def _tail(path: Path, n: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log written)"


def _wait_for_line(log: Path, text: str, proc: subprocess.Popen | None, pid: int, timeout: float, what: str,
                   stdout: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text(errors="replace") if log.is_file() else ""
        if text in content:
            return
        fatal = any(m in content for m in FATAL_MARKERS)
        if fatal or (proc is not None and proc.poll() is not None):
            _kill(pid)
            why = f"exited with code {proc.returncode}" if proc is not None and proc.poll() is not None else "failed"
            raise LabError(f"{what} {why} before it was ready.\n{_errors(log)}"
                           f"last lines of {log.name}:\n{_tail(log)}\n--- stdout/stderr:\n{_tail(stdout, 20)}")
        time.sleep(0.2)
    _kill(pid)
    raise LabError(f"{what} was not ready after {timeout:.0f} s (waited for '{text}' in {log}).\n{_errors(log)}"
                   f"last lines of {log.name}:\n{_tail(log)}\n--- stdout/stderr:\n{_tail(stdout, 20)}")


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


def _render(template: Path, **values) -> str:
    text = template.read_text()
    for k, v in values.items():
        text = text.replace("{" + k + "}", str(v))
    return text


def _jvm(work: Path, logs: Path, log4j: Path, heap: str, props: dict[str, str]) -> list[str]:
    cmd = ["java", f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
           f"-Dlog4j.configuration={log4j.as_uri()}", f"-Dkafka.logs.dir={logs}"]
    cmd += [f"-D{k}={v}" for k, v in props.items()]
    return cmd + ["-cp", _classpath()]


def enable_jmx(pid: int, port: int | None = None, timeout: float = 30) -> int:
    """Open JMX on 127.0.0.1 only in a running JVM (via jcmd); returns the port."""
    port = port or free_port()
    cmd = ["jcmd", str(pid), "ManagementAgent.start", f"jmxremote.port={port}", f"jmxremote.rmi.port={port}",
           "jmxremote.host=127.0.0.1", "jmxremote.authenticate=false", "jmxremote.ssl=false"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 or "Exception" in r.stdout:
        raise LabError(f"could not open JMX in pid {pid}: {r.stdout}{r.stderr}")
    return port


def start_broker(name: str = "broker-1", work: str | Path | None = None, settings: dict | None = None,
                 request_log: str = "DEBUG", jmx: bool = True, heap: str = "512m", timeout: float = 90,
                 fresh: bool = True, cluster_id: str | None = None) -> Proc:
    """Format storage and start a broker; returns once "Kafka Server started" is logged.

    ``settings`` are appended to server.properties (e.g. ``{"log.cleaner.dedupe.buffer.size":
    1048577}``); a later key overrides the template's, and ``{port}`` / ``{controller_port}`` in a
    value are replaced by the ports chosen (to add a listener: ``{"listeners":
    "PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:40001,CONTROLLER://127.0.0.1:{controller_port}"}``). ``request_log`` is the level of ``kafka.request.logger`` (DEBUG logs every
    request with its API version to kafka-request.log)."""
    work = Path(work) if work else WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    logs, data = work / "logs", work / "data"
    logs.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    port, cport = free_port(), free_port()
    props = _render(LAB / "config" / "server.properties", port=port, controller_port=cport, data_dir=data)
    for k, v in (settings or {}).items():  # {port} and {controller_port} in a value name the chosen ports
        props += f"{k}={str(v).replace('{port}', str(port)).replace('{controller_port}', str(cport))}\n"
    (work / "server.properties").write_text(props)
    cp = _classpath()
    if cluster_id is None:  # nodes of one cluster (a controller-only and a broker-only node) share one
        import base64
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    fmt = subprocess.run(["java", "-cp", cp, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                          "-c", str(work / "server.properties"), "--ignore-formatted"],
                         capture_output=True, text=True, timeout=120)
    if fmt.returncode != 0:
        raise LabError(f"formatting storage failed:\n{fmt.stdout}{fmt.stderr}")
    out = work / "broker.out"
    cmd = _jvm(work, logs, LAB / "config" / "log4j.properties", heap, {"kit.request.log.level": request_log})
    cmd += ["kafka.Kafka", str(work / "server.properties")]
    with open(out, "wb") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             cwd=work, start_new_session=True)
    b = Proc("broker", name, str(work), p.pid, port, 0, cport, str(logs))
    _wait_for_line(logs / "server.log", READY, p, p.pid, timeout, f"broker {name}", out)
    if jmx:
        b.jmx_port = enable_jmx(p.pid)
    _save(b)
    return b


def start_connect(broker: Proc, connectors: list[dict], name: str = "connect-1", work: str | Path | None = None,
                  worker: dict | None = None, flush_interval_ms: int = 10000, flush_timeout_ms: int = 5000,
                  task_log_level: str = "INFO", jmx: bool = True, heap: str = "512m", timeout: float = 90,
                  fresh: bool = True) -> Proc:
    """Start a Connect standalone worker against ``broker`` running ``connectors`` (each a dict
    of connector properties with at least ``name`` and ``connector.class``)."""
    work = Path(work) if work else WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rest = free_port()
    props = _render(LAB / "config" / "connect-standalone.properties", bootstrap=broker.bootstrap, rest_port=rest,
                    work=work, flush_interval_ms=flush_interval_ms, flush_timeout_ms=flush_timeout_ms)
    for k, v in (worker or {}).items():
        props += f"{k}={v}\n"
    (work / "worker.properties").write_text(props)
    files = []
    for c in connectors:
        f = work / f"{c['name']}.properties"
        f.write_text("".join(f"{k}={v}\n" for k, v in c.items()))
        files.append(str(f))
    out = work / "connect.out"
    cmd = _jvm(work, logs, LAB / "config" / "connect-log4j.properties", heap, {"kit.connect.task.log.level": task_log_level})
    cmd += ["org.apache.kafka.connect.cli.ConnectStandalone", str(work / "worker.properties"), *files]
    with open(out, "wb") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             cwd=work, start_new_session=True)
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


def running(work_root: Path = WORK) -> list[Proc]:
    """Lab processes recorded under ``work_root`` (alive or not)."""
    out = []
    for f in sorted(Path(work_root).glob("*/lab.json")):
        out.append(Proc(**json.loads(f.read_text())))
    return out


def run_jmxtool(proc: Proc, object_names: list[str], out_csv: str | Path, seconds: float = 10,
                interval_ms: int = 1000, attributes: list[str] | None = None, date_format: str | None = None,
                wait: bool = True) -> subprocess.Popen | Path:
    """Run Kafka's JmxTool against a lab process, writing its CSV to ``out_csv``.

    With ``wait`` it runs for ``seconds`` and returns the path; otherwise it returns the running
    process (stop it with :func:`finish_jmxtool`). JmxTool prints nothing, forever, when an
    attribute named with ``attributes`` is missing on a matched MBean: it is always killed after
    ``seconds``."""
    cmd = ["java", "-Xmx128m", "-cp", _classpath(), "org.apache.kafka.tools.JmxTool", "--jmx-url", proc.jmx_url,
           "--reporting-interval", str(interval_ms), "--wait"]
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


def finish_jmxtool(p: subprocess.Popen, out_csv: str | Path) -> Path:
    """Stop a JmxTool started with ``wait=False``; keeps only whole CSV lines."""
    _kill(p.pid, grace=3)
    p._kit_fh.close()  # type: ignore[attr-defined]
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
    roots = [str(Path(r).resolve()) for r in (roots or [WORK, LAB])]
    changed = 0
    for f in Path(bundle).rglob("*"):
        if not f.is_file() or f.suffix in (".parquet",):
            continue
        raw = f.read_bytes()
        gz = raw[:2] == b"\x1f\x8b"
        data = gzip.decompress(raw) if gz else raw
        new = data
        for r in roots:
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
    p = sub.add_parser("lab", help="start, stop or inspect the local Kafka lab (real broker on 127.0.0.1)",
                       description="Run a real Apache Kafka 3.9.1 broker (KRaft, single node) from Maven Central jars on "
                                   "127.0.0.1, for trying the kit's capture and probes. Needs Java 17+ and Maven.")
    lsub = p.add_subparsers(dest="lab_command", metavar="ACTION")
    s = lsub.add_parser("start", help="fetch jars if needed, format storage and start a broker",
                        description="Start a broker in lab/.work/NAME and print its bootstrap address and JMX port.")
    s.add_argument("--name", default="broker-1", help="broker name (work folder under lab/.work)")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra server.properties setting")
    s.add_argument("--request-log", default="DEBUG", help="level of kafka.request.logger (DEBUG logs every request)")
    s.set_defaults(func=_cmd_start)
    s = lsub.add_parser("stop", help="stop lab processes", description="Stop one lab process (--name) or all.")
    s.add_argument("--name", default=None, help="only this one")
    s.set_defaults(func=_cmd_stop)
    s = lsub.add_parser("status", help="list lab processes", description="List lab processes and whether they run.")
    s.set_defaults(func=_cmd_status)
    s = lsub.add_parser("jars", help="fetch the Kafka jars from Maven Central (cached)",
                        description="Download the lab's jars into lab/.jars once.")
    s.set_defaults(func=lambda a: print(fetch_jars()) or 0)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _cmd_start(args) -> int:
    settings = dict(kv.split("=", 1) for kv in args.set)
    b = start_broker(args.name, settings=settings, request_log=args.request_log)
    print(f"{b.name} ready: bootstrap {b.bootstrap}, JMX {b.jmx_url}, logs in {b.logs}")
    return 0


def _cmd_stop(args) -> int:
    for p in running():
        if args.name in (None, p.name):
            stop(p)
            print(f"stopped {p.kind} {p.name} (pid {p.pid})")
    return 0


def _cmd_status(args) -> int:
    procs = running()
    if not procs:
        print("no lab process recorded")
    for p in procs:
        print(f"{p.kind:8} {p.name:12} pid {p.pid:<8} {'running' if p.alive() else 'not running'}  "
              f"port {p.port}  jmx {p.jmx_port or '-'}  logs {p.logs}")
    return 0


def collect_logs(proc: Proc, dest: str | Path, names: tuple[str, ...] | None = None,
                 gzip_over: int = 1_000_000) -> list[Path]:
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


TOOLS_LOG4J = "log4j.rootLogger=ERROR, stderr\nlog4j.appender.stderr=org.apache.log4j.ConsoleAppender\n" \
              "log4j.appender.stderr.Target=System.err\nlog4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n" \
              "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n"


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
        cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j.configuration={Path(f.name).as_uri()}",
               "-cp", _classpath(), main_class, *args]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise LabError(f"{main_class} ran longer than {timeout:.0f} s") from None
    finally:
        os.unlink(f.name)
    return r.stdout + (r.stderr if stderr else "")
