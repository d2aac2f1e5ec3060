"""Request-path saturation: a broker with one network thread and one request handler thread
(``num.network.threads=1``, ``num.io.threads=1``) under heavy concurrent load from several of
Kafka's own ProducerPerformance tools, each with up to 50 requests in flight, on a topic whose
``compression.type`` (zstd at level 12) differs from the producers' (none), so the handler thread
recompresses every batch. The handler pool's idle ratio (RequestHandlerAvgIdlePercent) falls
and the request log's ``requestQueueTimeMs`` grows.

The broker runs as a broker-only node beside a controller-only node: in a combined
broker+controller process both request handler pools add to the one RequestHandlerAvgIdlePercent
meter (about 2.0 when idle), which would hide the broker's saturation.

    .venv/bin/python lab/scenarios/request_saturation.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

TOPIC = "telemetry"
LOADGENS = 3
PARTITIONS = 12
# the topic stores zstd at a high level (12 of 22) while the producers send uncompressed batches: the
# handler thread recompresses every batch it appends (a costly topic/producer mismatch)
TOPIC_CONFIGS = {"compression.type": "zstd", "compression.zstd.level": "12"}
SETTINGS = {"num.network.threads": 1, "num.io.threads": 1}
# A combined broker+controller node has two request handler pools (broker and controller) that
# both add to the one RequestHandlerAvgIdlePercent meter (2.0 when idle): the broker runs on its
# own, with a controller-only node beside it, so the meter is the broker pool's alone.
CONTROLLER = {
    "process.roles": "controller",
    "listeners": "CONTROLLER://127.0.0.1:{controller_port}",
    "advertised.listeners": "",
}
SATURATION_MBEANS = [
    "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent",
    "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent",
    "kafka.network:type=RequestChannel,name=RequestQueueSize",
    "kafka.network:type=RequestMetrics,name=RequestQueueTimeMs,request=Produce",
    "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce",
]
CLIENT_LOG4J = """# Kafka's Java client logging for the load generators: INFO to one file per tool, Kafka's layout
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def run(out: str | Path, seconds: float = 80, work: Path | None = None) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    host, clients = out / "broker-2", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    clients.mkdir(parents=True, exist_ok=True)
    work = Path(work) if work else lab.work_root()
    cluster = "c2F0dXJhdGlvbi1sYWItMQ"
    with lab.Scenario(out) as s:
        ctl = s.broker(
            "saturation-controller",
            work=work / "controller-1",
            request_log="WARN",
            jmx=False,
            heap="256m",
            settings=CONTROLLER,
            cluster_id=cluster,
        )
        b = s.broker(
            "saturation-broker",
            work=work / "broker-2",
            request_log="DEBUG",
            cluster_id=cluster,
            settings={
                **SETTINGS,
                "process.roles": "broker",
                "node.id": 2,
                "controller.quorum.voters": f"1@127.0.0.1:{ctl.controller_port}",
                "listeners": "PLAINTEXT://127.0.0.1:{port}",
            },
        )
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=TOPIC_CONFIGS)])
        a.close()
        jmx = s.jmxtool(b, lab.BROKER_MBEANS + SATURATION_MBEANS, host / "jmx-broker.csv")
        csv = host / "jmx-broker.csv"
        labclients.wait_for(lambda: csv.is_file() and csv.read_bytes().count(b"\n") >= 5, 60, "JmxTool's first samples")
        procs = []
        for i in range(1, LOADGENS + 1):
            name = f"loadgen-{i}"
            cfg = Path(b.work) / f"{name}-log4j.properties"
            cfg.write_text(CLIENT_LOG4J.replace("{file}", str((clients / f"{name}.log").resolve())))
            procs.append(
                s.track(
                    lab.start_java_tool(
                        "org.apache.kafka.tools.ProducerPerformance",
                        "--topic",
                        TOPIC,
                        "--num-records",
                        "100000000",
                        "--record-size",
                        "1000",
                        "--throughput",
                        "-1",
                        "--print-metrics",
                        "--producer-props",
                        f"bootstrap.servers={b.bootstrap}",
                        f"client.id={name}",
                        "acks=1",
                        "linger.ms=0",
                        "batch.size=16384",
                        "compression.type=none",
                        "enable.idempotence=false",
                        "max.in.flight.requests.per.connection=50",
                        log4j=cfg,
                        out=clients / f"{name}.out",
                    )
                )
            )
        time.sleep(seconds)
        for p in procs:
            p.terminate()  # ProducerPerformance prints its summary on SIGTERM
        for p in procs:
            p.wait(timeout=30)
        time.sleep(5)  # and a few samples after
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        s.stop_one(b, "broker-2")  # the controller's logs end after the broker's shutdown
        s.finish(logs={"controller-1": ctl}, hosts={"clients": "clients"})
    lab.write_client_provenance(
        out, "one request handler thread saturated", "request_saturation.py", BODY + "\n" + summary(out), EVIDENCE
    )
    return out


BODY = f"""
- Two lab nodes of one KRaft cluster: `controller-1` (process.roles=controller) and `broker-2`
  (process.roles=broker, node.id 2) with `num.network.threads=1`, `num.io.threads=1` (defaults
  3 and 8). In a combined broker+controller node both request handler pools add to the one
  RequestHandlerAvgIdlePercent meter (about 2.0 when idle, measured on the lab's combined node),
  so the broker runs alone to make the meter the broker pool's.
- Topic `{TOPIC}` ({PARTITIONS} partitions) with `compression.type=zstd`,
  `compression.zstd.level=12`; the producers send uncompressed batches, so the handler thread
  recompresses every batch it appends.
- The recompression is counted by the broker as produce-side message conversions
  (BrokerTopicMetrics ProduceMessageConversionsPerSec, `messageConversionsTime` on PRODUCE v11
  lines of kafka-request.log): current clients, no down-conversion.
- Load: {LOADGENS} of Kafka's own `ProducerPerformance` tools (Kafka 3.9.1 clients, client ids
  `loadgen-1` .. `loadgen-{LOADGENS}`) for 80 s (RequestHandlerAvgIdlePercent is read as a
  one-minute moving average, so the load must outlast a minute), 1000-byte records as fast as
  they can with `acks=1`, `linger.ms=0`, `batch.size=16384`, idempotence off and up to 50 requests
  in flight each. JMX starts before the load (a few idle samples) and runs 5 s past it. The machine had 2
  CPU cores shared with other work (load average above 20), which slows clients and broker alike.
- `broker-2/`: server.log, kafka-request.log (request logger at DEBUG: every request with
  requestQueueTimeMs, localTimeMs, responseQueueTimeMs, ...; gzipped when over 1 MB),
  state-change log, `jmx-broker.csv` (JmxTool, 1 s) with the byte-rate MBeans and
  KafkaRequestHandlerPool RequestHandlerAvgIdlePercent (a meter: OneMinuteRate is the usual
  reading), SocketServer NetworkProcessorAvgIdlePercent, RequestChannel RequestQueueSize,
  RequestMetrics RequestQueueTimeMs / TotalTimeMs for Produce. `controller-1/`: the controller's
  server.log and controller.log.
- `clients/loadgen-N.log`: each tool's own client log (log4j 1 through slf4j, Kafka's layout
  `[time] LEVEL message (logger)`, INFO); `clients/loadgen-N.out`: the tool's progress lines and
  its final metrics (`--print-metrics`).
"""
IDLE = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent:OneMinuteRate"
NET_IDLE = "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent:Value"


def summary(bundle: Path) -> str:
    """The measured saturation, from the bundle's own JMX CSV and request log."""
    import gzip
    import json

    import pandas as pd

    jmx = pd.read_csv(bundle / "broker-2" / "jmx-broker.csv")
    idle = jmx[IDLE]
    queue = []
    for f in sorted((bundle / "broker-2").glob("kafka-request.log*")):
        raw = f.read_bytes()
        for ln in (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode().splitlines():
            if '"requestApiKeyName":"PRODUCE"' in ln:
                queue.append(
                    json.loads(ln.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])[
                        "requestQueueTimeMs"
                    ]
                )
    q = pd.Series(queue, dtype=float)
    return (
        f"Measured in this bundle: RequestHandlerAvgIdlePercent OneMinuteRate {idle.iloc[0]:.2f} before the load, "
        f"lowest {idle.min():.2f}; NetworkProcessorAvgIdlePercent lowest {jmx[NET_IDLE].min():.2f}; {len(q)} "
        f"Produce requests in kafka-request.log, requestQueueTimeMs median {q.median():.1f} ms, p99 "
        f"{q.quantile(0.99):.0f} ms, max {q.max():.0f} ms.\n"
    )


EVIDENCE = [
    lab.LineEvidence(
        "Produce requests from the load generators",
        "broker-2/kafka-request.log*",
        '"clientId":"loadgen-1","requestApiKeyName":"PRODUCE"',
    ),
    lab.LineEvidence(
        "request handler idle ratio sampled (CSV header)", "broker-2/jmx-broker.csv", "RequestHandlerAvgIdlePercent"
    ),
    lab.LineEvidence("load generator progress lines", "clients/loadgen-*.out", "records sent"),
]


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/request-saturation"))
