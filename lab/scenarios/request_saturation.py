"""Request-path saturation: a broker with one network thread and one request handler thread
(``num.network.threads=1``, ``num.io.threads=1``) under heavy concurrent load from several of
Kafka's own ProducerPerformance tools sending tiny batches (acks=all, ``batch.size`` of a few
records, no linger) plus a consumer. The handler pool's idle ratio (RequestHandlerAvgIdlePercent)
falls far below 0.3 and the request log's ``requestQueueTimeMs`` grows.

    .venv/bin/python lab/scenarios/request_saturation.py OUT_DIR
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from kitlib import lab, labclients

TOPIC = "telemetry"
LOADGENS = 3
PARTITIONS = 12
# the topic stores zstd at its slowest level while the producers send uncompressed batches: the
# handler thread recompresses every batch it appends (a costly topic/producer mismatch)
TOPIC_CONFIGS = {"compression.type": "zstd", "compression.zstd.level": "22"}
SETTINGS = {"num.network.threads": 1, "num.io.threads": 1}
# A combined broker+controller node has two request handler pools (broker and controller) that
# both add to the one RequestHandlerAvgIdlePercent meter (2.0 when idle): the broker runs on its
# own, with a controller-only node beside it, so the meter is the broker pool's alone.
CONTROLLER = {"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:{controller_port}",
              "advertised.listeners": ""}
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


def run(out: str | Path, seconds: float = 60, work: Path | None = None) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic
    out = Path(out)
    host, clients = out / "broker-2", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    clients.mkdir(parents=True, exist_ok=True)
    work = Path(work) if work else lab.WORK
    cluster = "c2F0dXJhdGlvbi1sYWItMQ"
    ctl = lab.start_broker("saturation-controller", work=work / "controller-1", request_log="WARN", jmx=False,
                           heap="256m", settings=CONTROLLER, cluster_id=cluster)
    b = None
    procs = []
    try:
        b = lab.start_broker("saturation-broker", work=work / "broker-2", request_log="DEBUG", cluster_id=cluster,
                             settings={**SETTINGS, "process.roles": "broker", "node.id": 2,
                                       "controller.quorum.voters": f"1@127.0.0.1:{ctl.controller_port}",
                                       "listeners": "PLAINTEXT://127.0.0.1:{port}"})
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        a.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=TOPIC_CONFIGS)])
        a.close()
        jmx = lab.run_jmxtool(b, lab.BROKER_MBEANS + SATURATION_MBEANS, host / "jmx-broker.csv", wait=False)
        csv = host / "jmx-broker.csv"
        labclients.wait_for(lambda: csv.is_file() and csv.read_bytes().count(b"\n") >= 5, 60, "JmxTool's first samples")
        for i in range(1, LOADGENS + 1):
            name = f"loadgen-{i}"
            cfg = Path(b.work) / f"{name}-log4j.properties"
            cfg.write_text(CLIENT_LOG4J.replace("{file}", str((clients / f"{name}.log").resolve())))
            procs.append(labclients.java_tool(
                "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC, "--num-records", "100000000",
                "--record-size", "1000", "--throughput", "-1", "--print-metrics",
                "--producer-props", f"bootstrap.servers={b.bootstrap}", f"client.id={name}", "acks=1",
                "linger.ms=0", "batch.size=16384", "compression.type=none", "enable.idempotence=false", "max.in.flight.requests.per.connection=50",
                log4j=cfg, wait=False, out=clients / f"{name}.out"))
        time.sleep(seconds)
        for p in procs:
            p.terminate()  # ProducerPerformance prints its summary on SIGTERM
        for p in procs:
            p.wait(timeout=30)
        time.sleep(5)  # and a few samples after
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if b is not None:
            lab.collect_logs(b, host)
            lab.stop(b)
        lab.collect_logs(ctl, out / "controller-1")
        lab.stop(ctl)
    lab.write_manifest(out, clients="clients")
    labclients.write_provenance(out, "one request handler thread saturated by many small requests",
                                "request_saturation.py", BODY, EVIDENCE)
    return out


BODY = f"""
- Broker: `num.network.threads=1`, `num.io.threads=1` (defaults 3 and 8); topic `{TOPIC}`
  (6 partitions); the machine has 2 shared CPU cores.
- Load: {LOADGENS} of Kafka's own `ProducerPerformance` tools (Kafka 3.9.1 clients, client ids
  `loadgen-1` .. `loadgen-{LOADGENS}`) for 40 s, 200-byte records as fast as they can with
  `acks=all`, `linger.ms=0`, `batch.size=400` (two records per request at most), so the broker
  serves thousands of tiny Produce requests per second through one handler thread. JMX has 5 s of
  quiet before the load and 5 s after.
- `broker-1/`: server.log, kafka-request.log (request logger at DEBUG: every request with
  requestQueueTimeMs, localTimeMs, responseQueueTimeMs, ...; gzipped when over 1 MB), controller and
  state-change logs, `jmx-broker.csv` (JmxTool, 1 s) with the byte-rate MBeans and
  KafkaRequestHandlerPool RequestHandlerAvgIdlePercent, SocketServer NetworkProcessorAvgIdlePercent,
  RequestChannel RequestQueueSize, RequestMetrics RequestQueueTimeMs / TotalTimeMs for Produce.
- `clients/loadgen-N.log`: each tool's own client log (log4j 1 through slf4j, Kafka's layout
  `[time] LEVEL message (logger)`, INFO); `clients/loadgen-N.out`: the tool's progress lines and
  its final metrics (`--print-metrics`).
"""
EVIDENCE = [
    labclients.Evidence("Produce requests from the load generators", "broker-1/kafka-request.log*",
                        '"clientId":"loadgen-1","requestApiKeyName":"PRODUCE"'),
    labclients.Evidence("request handler idle ratio sampled (CSV header)", "broker-1/jmx-broker.csv",
                        "RequestHandlerAvgIdlePercent"),
    labclients.Evidence("load generator progress lines", "clients/loadgen-*.out", "records sent"),
]


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/request-saturation"))
