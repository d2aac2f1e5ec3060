"""ISR episodes (a broker leaving a partition's ISR, and when it was back) computed on sorted
arrays: exact answers on a hand-written KRaft broker log (synthetic lines in Kafka 3.9's wording)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import kitlib
from kitlib.investigations.cluster_health import analysis


def _shrink(t: str, p: int, before: str, after: str, out: int) -> str:
    return (
        f"[2026-11-23 12:00:{t}] INFO [Partition orders-{p} broker=1] Shrinking ISR from {before} to {after}. "
        f"Leader: (highWatermark: 10, endOffset: 20). Out of sync replicas: (brokerId: {out}, endOffset: 10, "
        "lastCaughtUpTimeMs: 1795435189933). (kafka.cluster.Partition)"
    )


def _updated(t: str, p: int, isr: str, version: int) -> str:
    return (
        f"[2026-11-23 12:00:{t}] INFO [Partition orders-{p} broker=1] ISR updated to {isr}  and version "
        f"updated to {version} (kafka.cluster.Partition)"
    )


LOG = [
    _shrink("01,000", 0, "1,3,2", "1,3", 2),
    _updated("03,500", 0, "1,3,2", 2),  # broker 2 back on orders-0 after 2.5 s
    _shrink("05,000", 0, "1,3,2", "1,3", 2),
    _updated("06,000", 1, "1,3,2", 7),  # a rejoin on another partition: not orders-0's
    _shrink("09,000", 0, "1,3,2", "1,3", 2),  # no rejoin logged between: back by this shrink
    _shrink("10,000", 1, "1,2,3", "1,2", 3),  # broker 3 leaves orders-1 and is never seen back
    _updated("12,000", 0, "1,3,2", 4),  # broker 2 back on orders-0 after the third shrink
]


def test_episodes_pair_each_departure_with_its_own_rejoin(tmp_path: Path):
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "server.log").write_text("\n".join(LOG) + "\n")
    ep = analysis.isr_episodes(kitlib.load_bundle(tmp_path))
    ep = ep.sort_values(["left", "node"]).reset_index(drop=True)
    t = lambda s: pd.Timestamp(f"2026-11-23 12:00:{s}", tz="UTC")
    assert ep["node"].tolist() == [2, 2, 2, 3]
    assert ep["partition"].tolist() == [0, 0, 0, 1]
    assert ep["left"].tolist() == [t("01"), t("05"), t("09"), t("10")]
    assert ep["rejoined"].tolist()[0] == t("03.5")
    assert pd.isna(ep["rejoined"][1])  # the next rejoin of orders-0 comes after the next shrink
    assert ep["back_by"].tolist()[:3] == [t("03.5"), t("09"), t("12")]
    assert ep["out_s"].tolist()[0] == 2.5 and ep["out_s"].tolist()[2] == 3.0
    assert pd.isna(ep["back_by"][3]) and pd.isna(ep["rejoined"][3])
    assert ep["line"].tolist() == [1, 3, 5, 6]
    assert (ep["file"] == "broker-1/server.log").all()
