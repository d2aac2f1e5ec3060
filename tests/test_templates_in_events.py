"""Each record of ``events`` names the Kafka log statement that wrote it (``template_id``), in both
the in-memory load and the ingest to Parquet; one sentence of 0.10 and 3.9 carries one id."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import kitlib
from kitlib.formats.logs import lineage, matching
from kitlib.formats.logs import statements as st
from kitlib.ingestion.store import ingest

ROOT = Path(__file__).resolve().parents[1]

# the same ISR shrink in three eras' words: 0.10 (ZooKeeper, topic and partition in the sentence),
# 1.x-2.1 and 3.9 (KRaft, with the leader's offsets)
OLD = (
    "[2017-03-01 10:00:00,001] INFO Partition [orders,24] on broker 1: Shrinking ISR for partition "
    "[orders,24] from 1,0,2 to 1 (kafka.cluster.Partition)\n"
)
MID = (
    "[2019-03-01 10:00:00,001] INFO [Partition orders-24 broker=1] Shrinking ISR from 1,0,2 to 1 "
    "(kafka.cluster.Partition)\n"
)
NEW = (
    "[2026-03-01 10:00:00,001] INFO [Partition orders-24 broker=1] Shrinking ISR from 1,0,2 to 1. Leader: "
    "(highWatermark: 450, endOffset: 494). Out of sync replicas: (brokerId: 0, endOffset: 450, "
    "lastCaughtUpTimeMs: 1795435189933). (kafka.cluster.Partition)\n"
)
OTHER = (
    "[2026-03-01 10:00:01,000] INFO [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Shutting down "
    "(kafka.server.ReplicaFetcherThread)\n"
    "[2026-03-01 10:00:02,000] INFO something an application wrote (com.example.Shop)\n"
)


@pytest.fixture
def three_eras(tmp_path: Path) -> Path:
    tmp_path = tmp_path / "bundle"
    for host, text in (("broker-0", OLD), ("broker-1", MID), ("broker-2", NEW + OTHER)):
        (tmp_path / host).mkdir(parents=True)
        (tmp_path / host / "server.log").write_text(text)
    return tmp_path


def _shrinks(ev):
    return ev[ev["message"].str.contains("Shrinking ISR", regex=False)]


@pytest.mark.slow
def test_one_isr_shrink_id_for_0_10_2_x_and_3_9(three_eras):
    ev = kitlib.load_bundle(three_eras).table("events")
    rows = _shrinks(ev)
    assert len(rows) == 3
    ids = set(rows["template_id"].astype(str))
    assert len(ids) == 1 and rows["template_id"].notna().all()
    # the id is the lineage of the three wordings the catalogue holds, named by the oldest
    cat = st.load()
    wordings = [s for s in cat.statements if s.logger == "kafka.cluster.Partition" and "Shrinking ISR" in s.template]
    assert {s.first for s in wordings} >= {"0.8.0", "0.11.0.0", "2.2.0"}
    fam = lineage.lineage(cat)
    assert {fam[s.id] for s in wordings} == ids
    # a base class's statement under its subclass's logger is found through the whole catalogue;
    # an application's line keeps no id
    other = ev.set_index("logger")["template_id"]
    assert pd_notna(other["kafka.server.ReplicaFetcherThread"])
    assert not pd_notna(other["com.example.Shop"])


def pd_notna(x) -> bool:
    import pandas as pd

    return bool(pd.notna(x))


def test_values_are_read_from_each_wording(three_eras):
    ev = kitlib.load_bundle(three_eras).table("events")
    rows = _shrinks(ev).sort_values("host")
    vals = matching.values(pa.array(rows["logger"].astype(str)), pa.array(rows["message"].astype(str)))
    got = vals.to_pylist()
    assert got[0][:4] == ["orders", "24", "1,0,2", "1"]  # 0.10: topic, partition, from, to
    assert got[1] == ["1,0,2", "1"]
    assert got[2][:4] == ["1,0,2", "1", "450", "494"]


@pytest.mark.slow
def test_template_id_is_a_column_of_both_paths(three_eras, tmp_path):
    mem = kitlib.load_bundle(three_eras).table("events")
    assert "template_id" in mem.columns and str(mem["template_id"].dtype) == "category"
    out = tmp_path / "out"
    ingest(three_eras, out)
    schema = pq.read_schema(out / "events.parquet")
    assert "template_id" in schema.names
    stored = pq.read_table(out / "events.parquet").to_pandas()
    assert set(_shrinks(stored)["template_id"].astype(str)) == set(_shrinks(mem)["template_id"].astype(str))
    back = kitlib.load(out).table("events")
    assert back["template_id"].notna().sum() == mem["template_id"].notna().sum()


@pytest.mark.slow
def test_sample_bundles_kafka_records_get_template_ids():
    """Records of Kafka's loggers in three sample bundles: at most 2 % without an id (the rest
    are lines the catalogue does not hold: messages built by helpers, such as config dumps)."""
    for name in ("isr-flapping", "controller-failover", "healthy-cluster"):
        ev = kitlib.load_bundle(ROOT / "sample_data" / name).table("events")
        kafka = ev["logger"].astype(str).str.match(matching.KAFKA_LOGGERS.pattern)
        missing = int((kafka & ev["template_id"].isna()).sum())
        assert kafka.sum() > 500
        assert missing <= 0.02 * kafka.sum(), (name, missing)
    shrink = _shrinks(kitlib.load_bundle(ROOT / "sample_data" / "isr-flapping").table("events"))
    assert len(shrink) and shrink["template_id"].notna().all() and shrink["template_id"].nunique() == 1


def test_a_template_matches_only_as_a_whole_record():
    t = pa.table(
        {
            "logger": pa.array(["kafka.cluster.Partition"] * 3).dictionary_encode(),
            "message": pa.array(
                [
                    "Shrinking ISR from 1,2 to 1",
                    "Not a Kafka sentence about Shrinking ISR from 1 to 2 at all",
                    "[Partition t-0 broker=1] Shrinking ISR from 1,2 to 1\njava.lang.Exception: trace",
                ],
                pa.large_string(),
            ),
        }
    )
    ids = matching.annotate(t).column("template_id").to_pylist()
    assert ids[0] is not None and ids[2] == ids[0]
    assert ids[1] is None


@pytest.mark.slow
def test_templates_json_lists_versions_and_lineage(capsys):
    from kitlib.cli import main

    assert main(["templates", "--grep", "Shrinking ISR", "--logger", "cluster.Partition", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 3
    assert all(r["first"] and r["last"] and r["releases"][0] == r["first"] for r in rows)
    assert len({r["lineage"] for r in rows}) == 1  # three wordings, one id in events
    assert {r["first"] for r in rows} >= {"0.8.0", "0.11.0.0", "2.2.0"} and any(r["last"] == "4.4.0" for r in rows)


def _block(logger: str, messages: list[str]) -> pa.Table:
    return pa.table(
        {
            "logger": pa.array([logger] * len(messages)).dictionary_encode(),
            "message": pa.array(messages, pa.large_string()),
        }
    )


def test_a_digit_of_the_template_tells_records_of_one_shape_apart(monkeypatch):
    """Records are checked once per text with digits written as 0, except against templates
    that hold a digit themselves: there "value is 7" is not "value is 0"."""
    monkeypatch.setattr(matching, "_MEMO", {})
    head = "Topology orders-7 is overriding cache size to 1048576 but this will not have any effect as the "
    tail = "topology-level cache size config only controls whether record buffering is enabled or disabled, thus the only valid override value is "
    ids = matching.annotate(_block("org.apache.kafka.streams.TopologyConfig", [head + tail + "0", head + tail + "7"]))
    got = ids.column("template_id").to_pylist()
    assert got[0] is not None and got[1] != got[0]


def test_records_differing_past_the_shape_are_each_checked(monkeypatch):
    """Three records whose first 96 characters agree but for digits: the second does not end as
    the first's template wants, so it is matched on its own and keeps no id; the third does."""
    monkeypatch.setattr(matching, "_MEMO", {})
    pre = "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0, clientId=replica-fetcher-broker-1-for-topics-orders] "
    msgs = [
        pre + "Shutting down",
        pre.replace("1", "2") + "Shutting down; zz qq",
        pre.replace("0", "3") + "Shutting down",
    ]
    ids = matching.annotate(_block("kafka.server.ReplicaFetcherThread", msgs)).column("template_id").to_pylist()
    assert ids[0] is not None and ids[1] is None and ids[2] == ids[0]


@pytest.mark.slow
def test_checking_distinct_masked_texts_equals_checking_each_text():
    """The check of every record against its template, made once per distinct text with digits
    as 0, gives what a regex over each text as it is gives, on a sample bundle's records against
    their own template and against the other records' ones."""
    ev = kitlib.load_bundle(ROOT / "sample_data" / "isr-flapping").table("events")
    msg = pa.chunked_array([pa.array(ev["message"].astype(str), pa.large_string())]).combine_chunks()
    found = matching.assign(pa.array(ev["logger"].astype(str)), msg)
    keep = np.flatnonzero(found >= 0)
    rng = np.random.default_rng(5)
    tmpl = np.concatenate([found[keep], rng.permutation(found[keep])])  # own templates, then others'
    texts = msg.take(pa.array(np.concatenate([keep, keep])))
    enc = pc.dictionary_encode(matching._digits_as_zero(texts))
    code = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    got = matching._still_match(enc.dictionary, code, tmpl, texts)
    p = matching.patterns()
    want = np.array(
        [
            bool(pc.match_substring_regex(texts.slice(i, 1), matching.template_regex(p.templates[t]))[0].as_py())
            for i, t in enumerate(tmpl)
        ]
    )
    assert len(want) > 1000 and want[: len(keep)].all() and not want[len(keep) :].all()
    assert (got == want).all()


def test_template_ids_can_be_switched_off_to_measure_them(monkeypatch):
    monkeypatch.setenv("KITLIB_TEMPLATE_IDS", "0")
    t = matching.annotate(_block("kafka.cluster.Partition", ["Shrinking ISR from 1,2 to 1"]))
    assert t.schema.field("template_id") == matching.TEMPLATE_FIELD
    assert t.column("template_id").null_count == 1


@pytest.mark.slow
def test_the_whole_catalogue_as_json_is_valid_json(capsys):
    """Every statement through the CLI's terminal guard: Kafka's own prose ("not having DESCRIBE
    authorization, but returning {}") must not be taken for a secret and cut the JSON string that
    holds it."""
    from kitlib.cli import main

    assert main(["templates", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(st.load().statements)
    assert any(r["template"].endswith("DESCRIBE authorization, but returning {}") for r in rows)
