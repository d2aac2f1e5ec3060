"""Kafka 4.x in the kit: the lab's 4.x line (chosen per process, its own jars, the tool classes 4.x
moved) and the lab's 4.x bundle ``sample_data/isr-flapping-kafka4`` (real 4.4.0 nodes): its Kafka
records get template ids as far as the catalogue reaches, and triage names the fenced broker."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import kitlib
from kitlib import lab
from kitlib.lab.errors import LabError

ROOT = Path(__file__).resolve().parents[1]


def test_the_lab_runs_3_9_unless_told_otherwise(monkeypatch, tmp_path):
    for var in (lab.JARS_ENV, lab.VERSION_ENV, "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".cache" / "kafka-incident-kit"
    assert lab.kafka_version() == lab.KAFKA_VERSION == "3.9.1"
    assert lab.jars_dir() == cache / "jars-3.9.1"
    assert lab.tool_class("kafka.admin.ConfigCommand") == "kafka.admin.ConfigCommand"
    monkeypatch.setenv(lab.VERSION_ENV, "4")
    assert lab.kafka_version() == lab.KAFKA4_VERSION and lab.kafka_major() == 4
    assert lab.jars_dir() == cache / f"jars-{lab.KAFKA4_VERSION}"  # one jars folder per release
    assert lab.tool_class("kafka.admin.ConfigCommand") == "org.apache.kafka.tools.ConfigCommand"
    assert lab.tool_class("kafka.tools.DumpLogSegments") == "org.apache.kafka.tools.DumpLogSegments"
    assert lab.tool_class("kafka.tools.StorageTool") == "kafka.tools.StorageTool"  # still Scala in 4.x
    monkeypatch.setenv(lab.VERSION_ENV, "4.1.1")
    assert lab.jars_dir() == cache / "jars-4.1.1"
    for bad in ("5.0.0", "latest", "2.8.0"):
        monkeypatch.setenv(lab.VERSION_ENV, bad)
        with pytest.raises(LabError, match="give a release such as"):
            lab.kafka_version()


def test_use_kafka_reaches_the_jvms_the_lab_starts(monkeypatch):
    monkeypatch.delenv(lab.VERSION_ENV, raising=False)
    try:
        assert lab.use_kafka("4") == lab.KAFKA4_VERSION
        assert os.environ[lab.VERSION_ENV] == "4"  # inherited by the JVMs and tools started from here
    finally:
        assert lab.use_kafka(None) == lab.KAFKA_VERSION
    assert lab.VERSION_ENV not in os.environ


def test_the_4_x_pom_is_package_data():
    pom = lab.template("pom-4.xml")
    assert "<artifactId>kafka_2.13</artifactId>" in pom and "<artifactId>kafka-tools</artifactId>" in pom
    assert f"<kafka.version>{lab.KAFKA4_VERSION}</kafka.version>" in pom
    # the same log4j 1 layout as 3.9's nodes (reload4j), so 4.x bundles read the same way
    assert "<artifactId>slf4j-reload4j</artifactId>" in pom


# --- the lab's 4.x bundle -----------------------------------------------------------------------

KAFKA4 = ROOT / "sample_data" / "isr-flapping-kafka4"

# Why a Kafka record of the 4.x bundle keeps no template id: the message is not a log call's
# template in any release. The catalogue holds 4.x's wording (read from the class files of the
# 4.0.0 to 4.4.0 release jars); these are built elsewhere and logged whole (3.9's bundles keep them
# without an id too).
WITHOUT_ID = {
    r"^(?:Kafka|Abstract|\w+)Config values: ": "a config dump built by AbstractConfig.logAll",
    r"^Kafka Server started$": "a constant (KafkaBroker.STARTED_MESSAGE)",
    r"^\w+: event failed with \w+ in \d+ microseconds": "built by EventHandlerExceptionInfo",
    r"^Performing controller activation\. ": "built with a StringBuilder (ActivationRecordsGenerator)",
    r"^(?:Exceptionally slow controller event \S+ took \d+ ms|In the last \d+ ms period, \d+ controller events)": (
        "built by EventPerformanceMonitor's helpers and logged as '{}'"
    ),
}


def _kafka_records():
    from kitlib.formats.logs import matching

    ev = kitlib.load_bundle(KAFKA4).table("events")
    return ev[ev["logger"].astype(str).str.match(matching.KAFKA_LOGGERS.pattern)]


@pytest.mark.slow
def test_kafka_4_records_get_template_ids_but_for_the_sentences_the_catalogue_lacks():
    kafka = _kafka_records()
    body = kafka["message"].astype(str).str.replace(r"^\[[^\]]*\] ", "", regex=True)  # a logIdent prefix
    missing = kafka["template_id"].isna()
    explained = body.str.match("|".join(f"(?:{p})" for p in WITHOUT_ID))
    assert len(kafka) > 1000
    unexplained = body[missing & ~explained]
    assert unexplained.empty, unexplained.str.slice(0, 120).value_counts().head(10)
    assert (~missing).sum() >= 0.97 * len(kafka)  # 1534 of 1572 (97.6 %) when this was written
    # the detectors' sentences all get one: ISR shrinks and updates, fencing, the active
    # controller, unfencing
    # and 4.x's own: the state change logger's reworded skips, KRaft's pre-vote, the periodic tasks
    for words in ("Shrinking ISR from", "ISR updated to", "because its session has timed out",
                  "Becoming the active controller", "to unfence has been granted", "partition registration Partition",
                  "Election timed out before receiving sufficient vote", "Registering periodic task"):  # fmt: skip
        rows = kafka[kafka["message"].astype(str).str.contains(words, regex=False)]
        assert len(rows) and rows["template_id"].notna().all(), words


def _paused() -> int:
    text = (KAFKA4 / "PROVENANCE.md").read_text()
    assert "Apache Kafka 4." in text  # a 4.x run
    return int(re.search(r"`broker-fenced`: one finding for the stalls of broker (\d+)", text).group(1))


@pytest.mark.slow
def test_triage_of_the_kafka_4_bundle_names_the_fenced_broker():
    paused = _paused()
    found = kitlib.triage(kitlib.load_bundle(KAFKA4)).findings
    fenced = [f for f in found if f.id == "broker-fenced"]
    assert len(fenced) == 1 and fenced[0].numbers["broker"] == paused and fenced[0].numbers["fenced"] == 1
    assert f"Broker {paused}" in fenced[0].summary and fenced[0].numbers["isr_shrinks"] >= 3
    # the fencing line is 4.x's ("Fencing broker N at epoch E because ...") and is cited
    cited = " ".join(e["text"] for e in fenced[0].evidence)
    assert f"Fencing broker {paused} at epoch " in cited
    # the leaders' shrinks right after the topic was created (before any pause), one per broker named
    shrinks = {f.numbers["broker"] for f in found if f.id == "isr-shrink"}
    assert {f.id for f in found} <= {"broker-fenced", "isr-shrink"}
    named = re.search(r"`isr-shrink` for broker\(s\) ([\d, ]+):", (KAFKA4 / "PROVENANCE.md").read_text())
    assert shrinks == ({int(x) for x in named.group(1).split(", ")} if named else set())


@pytest.mark.slow
def test_the_capture_of_a_4_x_broker_keeps_the_api_keys_the_client_cannot_name():
    """kafka-python has no name for some keys a 4.4 broker announces (share groups' 93 and 94 among
    them); the capture keeps every key, those named ``api_<key>``, instead of failing."""
    api = kitlib.load_bundle(KAFKA4).table("api_versions")
    keys = dict(zip(api["api_key"].astype(int), api["api_name"].astype(str)))
    assert keys[0] == "Produce" and keys[18] == "ApiVersions"
    unnamed = {k for k, name in keys.items() if name == f"api_{k}"}
    assert {93, 94} <= unnamed and len(keys) == len(api) > 70
