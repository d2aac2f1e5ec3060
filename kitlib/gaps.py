"""What a bundle lacks, said up front: the inputs an analyst would fetch next, each with why it
matters and how to collect it, and the files the kit could not read.

Example:
    >>> from kitlib.bundle import Bundle
    >>> [g.what for g in lacks(Bundle("empty", {}))][:2]
    ['broker logs', 'JMX metrics']
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Gap:
    what: str  # the missing input
    why: str  # what the kit cannot tell without it
    how: str  # how to collect it


def _has_file(files: pd.DataFrame, *names: str) -> bool:
    if not len(files):
        return False
    f = files["file"].astype("string").str.rsplit("/", n=1).str[-1]
    return bool(f.str.contains("|".join(names), regex=True).any())


def lacks(bundle) -> list[Gap]:
    """The inputs this bundle does not hold that most investigations lean on."""
    files = bundle.files
    gaps = []
    ev_files = (
        files[
            files["format"]
            .astype("string")
            .isin(["log4j", "log-layout", "log-layout-manifest", "jsonlog", "log-excerpt"])
        ]
        if len(files)
        else files
    )
    if not _has_file(ev_files, r"server\.log", r"kafka\.log", r"broker"):
        gaps.append(
            Gap(
                "broker logs",
                "broker-side causes (ISR changes, fencing, disk errors, coordinators) stay invisible",
                "copy $KAFKA_HOME/logs/server.log* (rotated and .gz too) from every broker, one folder per broker",
            )
        )
    if not len(bundle.metrics):
        gaps.append(
            Gap(
                "JMX metrics",
                "rates, under-replicated counts, request-handler idle and throttling are unknown",
                "sample the brokers with JmxTool (kafka-run-class.sh org.apache.kafka.tools.JmxTool "
                "--jmx-url ... --reporting-interval 1000 > broker-1.csv) or save a Prometheus scrape",
            )
        )
    if len(ev_files) and not _has_file(ev_files, r"controller\.log", r"state-change\.log"):
        gaps.append(
            Gap(
                "controller and state-change logs",
                "leader elections and controller changes cannot be placed on the timeline",
                "copy controller.log* and state-change.log* from every broker",
            )
        )
    if not _has_file(files, r"gc\.log", r"gc-"):
        gaps.append(
            Gap(
                "GC logs",
                "a long JVM pause cannot be told apart from a network or disk problem",
                "copy kafkaServer-gc.log* (kafka-run-class.sh writes them next to server.log)",
            )
        )
    if len(bundle.commits):
        cfg = bundle.configs
        scopes = set(cfg["scope"].astype("string")) if len(cfg) else set()
        if not scopes & {"ProducerConfig", "DistributedConfig", "StandaloneConfig", "WorkerConfig"}:
            gaps.append(
                Gap(
                    "Connect config dump",
                    "the drain model has no producer batch.size, linger.ms or "
                    "offset.flush.timeout.ms and falls back to Kafka's defaults",
                    "include the worker log from its start (the INFO 'ProducerConfig values:' and "
                    "'DistributedConfig values:' blocks), or the connector and worker properties",
                )
            )
    return gaps


def unread(bundle) -> list[str]:
    """Files the kit found but could not read, or read only in part, with why."""
    f = bundle.files
    out = []
    for r in f.itertuples():
        if r.format == "unknown" and r.error:
            out.append(str(r.error))
        elif r.format == "unknown":
            out.append(f"{r.file}: no format recognised (every line kept in unparsed)")
        elif r.format == "empty":
            out.append(f"{r.file}: empty (no content)")
        elif r.error:
            out.append(str(r.error))
    return out


def inferred_hosts(bundle) -> list[str]:
    """Files whose host was guessed from the file name or its content (under a folder such as
    jmx/ or logs/ that names a kind of file, not a machine), so a wrong guess is visible."""
    f = bundle.files
    if not len(f) or "host_from" not in f.columns:
        return []
    guessed = f[f["host_from"].astype("string").isin(["file name", "file content"])]
    return [f"{r.file} -> {r.host} (from the {r.host_from})" for r in guessed.itertuples()]


def gaps_text(bundle) -> str:
    """The lists as a few lines of text (empty when there is nothing to say)."""
    from kitlib.terminal import one_line

    lines = [f"  host guessed: {one_line(h)}" for h in inferred_hosts(bundle)]
    for g in lacks(bundle):
        lines.append(f"  missing {g.what}: {g.why}; collect: {g.how}")
    for u in unread(bundle):
        lines.append(f"  not read: {one_line(u)}")
    return ("What this bundle lacks, and guesses made:\n" + "\n".join(lines)) if lines else ""
