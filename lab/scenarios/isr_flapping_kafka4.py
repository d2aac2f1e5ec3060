"""ISR flapping on a Kafka 4.x cluster: the isr-flapping scenario (a follower frozen with SIGSTOP
and let go, then frozen past its broker session so the controller fences it) on three combined
broker+controller nodes of the lab's 4.x line (:data:`kitlib.lab.KAFKA4_VERSION`), with two short
pauses instead of three to keep the bundle small. Kafka 4 runs in KRaft mode only and its Raft
quorum has pre-vote, so a voter that wakes from a pause no longer deposes the active controller;
the raised controller.quorum.fetch.timeout.ms of the 3.9 scenario is kept so both bundles run on
the same settings.

    .venv/bin/python lab/scenarios/isr_flapping_kafka4.py OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from kitlib import lab

sys.path.insert(0, str(Path(__file__).resolve().parent))
import isr_flapping


def run(out: str | Path, work: Path | None = None) -> Path:
    previous = lab.kafka_version()
    lab.use_kafka(lab.KAFKA4_VERSION)
    try:
        return isr_flapping.run(
            out,
            pauses=2,
            work=work or lab.work_root() / "isr-flapping-kafka4",  # not the 3.9 scenario's folder
            command=f".venv/bin/python lab/scenarios/isr_flapping_kafka4.py {out}",
        )
    finally:
        lab.use_kafka(previous)


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/isr-flapping-kafka4"))
