"""A log directory failure on a three-node cluster: one node has two log dirs (JBOD), the second
on a tiny filesystem (a 4 MiB tmpfs) that fills up under acks=all produce load. The broker's
writes fail with "No space left on device", it takes that log dir offline ("Stopping serving
logs in dir ..."), tells the controller, and the partitions it held there lose that replica;
the node itself keeps running on its other log dir (which also holds the metadata log).

Mounting needs root with CAP_SYS_ADMIN. Where mounting is impossible the scenario falls back to
another real I/O fault on the same JBOD layout: a partition folder on the second log dir is
replaced by a plain file, so the broker's next segment roll there fails ("Not a directory") and
the dir goes offline the same way (the bundle's PROVENANCE.md says which fault was used).

    .venv/bin/python lab/scenarios/log_dir_failure.py OUT_DIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

from kitlib import lab

TOPIC = "orders"
SMALL_FS = "4m"


def mount_small_fs(path: Path, size: str = SMALL_FS) -> bool:
    """Mount a tmpfs of ``size`` on ``path``; False when this machine does not let us."""
    path.mkdir(parents=True, exist_ok=True)
    if not shutil.which("mount"):
        return False
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return r.returncode == 0


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30, check=False)


def evidence(node: int, fault: str) -> list[lab.Evidence]:
    cause = "No space left on device" if fault == "full" else "Not a directory|NoSuchFileException|FileSystemException"
    return [
        lab.Evidence(
            f"the ERROR line of the log dir failure channel on node {node}",
            r"ERROR Error while \w+ .* in dir .*LogDirFailureChannel",
            host=f"broker-{node}",
        ),
        lab.Evidence(f"the I/O error on node {node} ({cause})", cause, host=f"broker-{node}"),
        lab.Evidence(
            f"node {node} takes the failed log dir offline", r"Stopping serving logs in dir", host=f"broker-{node}"
        ),
        lab.Evidence(
            f"node {node}'s replica fetchers stop for the partitions in the failed dir",
            r"in the failed log directory|stopped fetcher for partitions",
            host=f"broker-{node}",
        ),
    ]


def run(
    out: str | Path,
    rate: int = 1000,
    size: int = 1000,
    work: Path | None = None,
    force_fallback: bool = False,
    timeout: float = 60,
) -> Path:
    from kafka.admin import KafkaAdminClient, NewTopic

    out = Path(out)
    work = Path(work) if work else lab.work_root() / "log-dir-failure"
    small = work.parent / (work.name + "-small-disk")
    unmount(small)
    shutil.rmtree(small, ignore_errors=True)
    fault = "full" if not force_fallback and mount_small_fs(small) else "not-a-directory"
    if fault != "full":
        small.mkdir(parents=True, exist_ok=True)
    victim_id = 3
    try:
        with lab.Scenario(out) as s:
            data = work / f"broker-{victim_id}" / "data"
            c = s.cluster(
                3,
                name="log-dir-failure",
                work=work,
                node_settings={victim_id: {"log.dirs": f"{data},{small}", "metadata.log.dir": str(data)}},
            )
            victim = c.node(victim_id)
            for n in c.nodes:
                s.jmxtool(n, lab.CLUSTER_MBEANS, out / f"broker-{n.node_id}" / "jmx-broker.csv")
            a = KafkaAdminClient(bootstrap_servers=c.bootstrap)
            a.create_topics(
                [NewTopic(TOPIC, 6, 3, topic_configs={"min.insync.replicas": "2", "segment.bytes": "262144"})]
            )
            a.close()
            lab.wait_for_full_isr(c, TOPIC)
            time.sleep(2)
            on_small = sorted(p.name for p in small.iterdir() if p.name.startswith(TOPIC + "-"))
            if not on_small:
                raise lab.LabError(f"no partition of {TOPIC} was placed on node {victim_id}'s second log dir")
            s.mark(
                f"cluster up; topic {TOPIC} (6 partitions, RF 3, min.insync.replicas=2, 256 KiB segments); "
                f"node {victim_id} has log dirs data + small-disk, the latter holding {', '.join(on_small)}"
            )
            at = lab.log_offset(victim)
            with lab.ProduceLoad(c.bootstrap, TOPIC, rate=rate, size=size) as load:
                s.mark(f"produce load started ({rate} records/s of {size} bytes, acks=all)")
                if fault == "full":
                    s.mark(f"the small disk ({SMALL_FS} tmpfs) fills up under the load")
                else:
                    time.sleep(3)
                    part = small / on_small[0]
                    shutil.rmtree(part)
                    part.write_text("not a directory\n")
                    s.mark(f"{on_small[0]}'s folder on node {victim_id}'s second log dir replaced by a plain file")
                line = lab.wait_for_log(victim, "Stopping serving logs in dir", timeout=timeout, after=at)
                s.mark(f"node {victim_id} took the log dir offline (its line stamped {line[1:24]})")
                time.sleep(12)
            s.mark(f"produce load stopped: {load.stats.line()}")
            s.finish(logs={f"broker-{n.node_id}": n for n in c.nodes}, live=c)
    finally:
        if fault == "full":
            unmount(small)
        shutil.rmtree(small, ignore_errors=True)
    how_fault = (
        f"the second log dir is a {SMALL_FS} tmpfs mounted for the run, which the load fills"
        if fault == "full"
        else "mounting a small filesystem was not possible, so one partition folder on the second log dir was "
        "replaced by a plain file (the next segment roll there fails)"
    )
    lab.write_provenance(
        s,
        "log-dir-failure: a broker's log dir fails",
        f"Three combined broker+controller nodes under acks=all load; node {victim_id} has two log dirs and "
        f"{how_fault}. Node {victim_id} logs the I/O error, takes the dir offline and keeps running on the other.",
        "Folders `broker-1..3` are the three nodes (node id = folder number) with the stock log files, "
        "kafkaServer-gc.log and `jmx-broker.csv` (JmxTool every second: OfflineLogDirectoryCount goes to 1 on "
        f"node {victim_id}, UnderReplicatedPartitions rises on the leaders, ...); `live/` is a capture after the run "
        f"(node {victim_id}'s offline dir shows up in the log-dir description). The log dir paths read "
        "`/var/lib/kafka-lab/log-dir-failure/broker-3/data` and `/var/lib/kafka-lab/log-dir-failure-small-disk`.",
        f"`log-dir-failure` (node {victim_id}, the small-disk dir); `cleaner-stalled` as a consequence (the log "
        "cleaner logs `Stopping cleaning logs in dir` for the failed dir); possibly `isr-shrink` (node "
        f"{victim_id} drops out of the ISR of the partitions it held there)",
        evidence(victim_id, fault),
        f".venv/bin/python lab/scenarios/log_dir_failure.py {out}",
    )
    return out


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/log-dir-failure"))
