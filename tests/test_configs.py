"""`XxxConfig values:` dumps -> configs table: keys, entity, line numbers, and secrets never stored."""

from pathlib import Path

import pandas as pd

import kitlib
from kitlib import tables
from kitlib.extract.configs import build_configs, latest

FIX = Path(__file__).parent / "fixtures" / "connect"


def load(tmp_path, name):
    d = tmp_path / "b" / "worker-1"
    d.mkdir(parents=True)
    shutil_copy = (FIX / name).read_bytes()
    (d / "connect.log").write_bytes(shutil_copy)
    return kitlib.load_bundle(tmp_path / "b")


def test_producer_dump_rows_entity_and_lines(tmp_path):
    b = load(tmp_path, "producer-2x.log")
    c = b.configs
    assert list(c.columns) == tables.SCHEMAS["configs"].names
    assert set(c["scope"]) == {"ProducerConfig"} and set(c["source"]) == {"log"}
    assert set(c["entity"]) == {"connector-producer-my-connector-0"}
    row = c[c.key == "batch.size"].iloc[0]
    assert row.value == "16384" and row.line == 3 and row.file == "worker-1/connect.log"
    assert c[c.key == "sasl.jaas.config"].value.tolist() == ["[hidden]"]
    assert len(c) == 9
    assert latest(c, "ProducerConfig")["max.in.flight.requests.per.connection"] == "1"


def test_secrets_never_reach_any_table(tmp_path):
    b = load(tmp_path, "configs-secrets.log")
    c = b.configs
    conn = c[c.scope == "EnrichedSourceConnectorConfig"]
    assert set(conn["entity"]) == {"inventory-cdc"}
    assert conn[conn.key == "database.password"].value.tolist() == ["[redacted]"]
    assert conn[conn.key == "database.user"].value.tolist() == ["debezium"]
    assert "Hunter2Pw" not in " ".join(conn[conn.key == "connection.url"].value)
    for secret in ("Sup3rS3cret!42", "Hunter2Pw", "JaasPw77"):
        for name, t in b.tables.items():
            if isinstance(t, pd.DataFrame) and len(t):
                text = t.astype(str).to_csv()
                assert secret not in text, f"{secret} leaked into table {name}"
    # the 'were supplied but are not used yet' record is not a dump
    assert not c["key"].str.contains("These configurations").any()
    kc = c[c.scope == "KafkaConfig"]
    assert set(kc["entity"]) == {"2"}  # node.id wins over broker.id = -1


def test_value_with_equals_and_empty_value():
    ev = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2024-01-01"], utc=True),
            "logger": ["x.ConsumerConfig"],
            "message": ["ConsumerConfig values: \n\tclient.id = \n\tgroup.id = g\n\tsome.list = [a = b, c]"],
            "host": ["h"],
            "file": ["h/c.log"],
            "line": [5],
        }
    )
    c = build_configs(ev)
    assert c["key"].tolist() == ["client.id", "group.id", "some.list"]
    assert c["value"].tolist() == ["", "g", "[a = b, c]"]
    assert c["entity"].unique().tolist() == [""]
    assert c["line"].tolist() == [6, 7, 8]


def test_not_a_dump_gives_no_rows():
    ev = pd.DataFrame(
        {
            "ts": pd.to_datetime(["2024-01-01"], utc=True),
            "logger": ["x.ProducerConfig"],
            "message": ["The configuration 'group.id' was supplied but isn't a known config."],
            "host": ["h"],
            "file": ["h/c.log"],
            "line": [1],
        }
    )
    assert build_configs(ev).empty
