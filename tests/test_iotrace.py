"""Per-file I/O traces into the file_io table, in both shapes (a SystemTap/bpftrace script's
per-file counts and bcc filetop): recognised by content, topic, partition and file kind from the
path, and a line in neither shape kept as unparsed."""

import pandas as pd

import kitlib
from kitlib.formats import detect

TRACE = """# interval=60
--- 2024-06-03 14:00:00
R 111724 /var/lib/kafka/data/retriever-mutation-53/00000000000000000000.tierstate.mutable
R 9000 /var/lib/kafka/data/orders-7/00000000000001857762.log
W 12 /var/lib/kafka/data/orders-7/leader-epoch-checkpoint
--- 2024-06-03 14:01:00
R 112825 /var/lib/kafka/data/retriever-mutation-18/00000000000000000000.tierstate.mutable
garbage here
"""
FILETOP = """08:05:11 loadavg: 0.75 0.35 0.25 3/285 822

TID    COMM             READS  WRITES R_Kb    W_Kb    T FILE
32672  data-plane-kafk  5006   0      320384  0       R 00000000000001857762.log
32673  kafka-log-clean  12     3      768     192     R 00000000000000000000.index
"""


def test_iotrace_systemtap_style(tmp_path):
    assert detect(TRACE.encode()).name == "iotrace"
    d = tmp_path / "b" / "broker-4"
    d.mkdir(parents=True)
    (d / "trace.txt").write_text(TRACE)
    b = kitlib.load_bundle(tmp_path / "b")
    io = b.file_io
    assert io["interval"].tolist() == [0, 0, 0, 1]
    assert io["kind"].tolist() == ["tierstate", "log", "leader-epoch", "tierstate"]
    assert io.loc[0, "topic"] == "retriever-mutation" and io.loc[0, "partition"] == 53
    assert io.loc[3, "ts"] == pd.Timestamp("2024-06-03 14:01:00", tz="UTC") and io.loc[0, "interval_s"] == 60
    assert b.unparsed["line"].tolist() == [8] and "trace.txt line 8" in b.files.iloc[0]["error"]


def test_iotrace_filetop(tmp_path):
    assert detect(FILETOP.encode()).name == "iotrace"
    d = tmp_path / "b" / "broker-1"
    d.mkdir(parents=True)
    (d / "filetop.txt").write_text(FILETOP)
    io = kitlib.load_bundle(tmp_path / "b").file_io
    assert io["op"].tolist() == ["R", "R", "W"] and io["bytes"].tolist() == [320384 * 1024, 768 * 1024, 192 * 1024]
    assert io["kind"].tolist() == ["log", "index", "index"]
