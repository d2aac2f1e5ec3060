"""JMX in the lab: opening it on loopback in a running JVM (``jcmd ManagementAgent.start``; the
``-Dcom.sun.management`` flags would also open a random port on every interface), Kafka's JmxTool
sampling MBeans into a CSV, and the MBeans the scenarios sample."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from .errors import LabError
from .jars import classpath
from .processes import Proc, free_port, kill, popen, run

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
# health MBeans sampled on every node: replication, controller, log dirs, request handlers, load
CLUSTER_MBEANS = [
    "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
    "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount",
    "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec",
    "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec",
    "kafka.server:type=ReplicaManager,name=LeaderCount",
    "kafka.controller:type=KafkaController,name=ActiveControllerCount",
    "kafka.controller:type=KafkaController,name=OfflinePartitionsCount",
    "kafka.controller:type=KafkaController,name=FencedBrokerCount",
    "kafka.log:type=LogManager,name=OfflineLogDirectoryCount",
    "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent",
    "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
]


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
    r = run(cmd, timeout=timeout, text=True)
    if r.returncode != 0 or "Exception" in r.stdout:
        raise LabError(f"could not open JMX in pid {pid}: {r.stdout}{r.stderr}")
    return port


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
        classpath(),
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
    p = popen(cmd, stdout=fh, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    p._kit_fh = fh  # type: ignore[attr-defined]
    if not wait:
        return p
    time.sleep(seconds)
    return finish_jmxtool(p, out_csv)


def finish_jmxtool(p: subprocess.Popen, out_csv: str | Path) -> Path | None:
    """Stop a JmxTool started with ``wait=False``; keeps only whole CSV lines."""
    kill(p.pid, grace=3)
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
