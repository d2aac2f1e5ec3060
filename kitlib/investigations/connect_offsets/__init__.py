"""Connect offset commits: why does a Connect task fail to commit offsets under load? Seed 001:
the producer cannot drain outstanding records within offset.flush.timeout.ms."""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation
from kitlib.investigations.connect_offsets import commits, detector  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="connect_offsets",
    title="Connect offset commits",
    question="Why do Connect tasks fail to commit offsets, and which producer setting drains them in time?",
    tables=("commits", "configs", "metrics"),
    findings=(
        FindingKind(
            "offset-commit-timeouts",
            Severity.MEDIUM,
            "Connect tasks fail to commit offsets in time (a source task's producer cannot drain its records)",
        ),
    ),
    relevant_when=("commits",),
    loggers=("org.apache.kafka.connect",),
    examples={"connect-offsets": ("offset-commit-timeouts",), "connect-offsets-2x": ("offset-commit-timeouts",)},
)
