"""Log compaction: why does a compacted topic not shrink? Seed 003: the dedupe buffer is too
small for the dirty section, so the cleaner needs many passes and the first ones reclaim nothing."""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation
from kitlib.investigations.compaction import analysis, cleaner  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="compaction",
    title="Log compaction",
    question="Why is a compacted topic not shrinking, and how big must the dedupe buffer be?",
    tables=("cleaner_runs", "cleaner_events", "configs", "metrics"),
    findings=(
        FindingKind(
            "cleaner-buffer-too-small",
            Severity.MEDIUM,
            "the cleaner's dedupe buffer fills before a partition's dirty section is read, so cleaning takes many passes",
        ),
        FindingKind("cleaner-no-reclaim", Severity.MEDIUM, "cleaner passes read data but free next to no space"),
        FindingKind(
            "cleaner-stalled",
            Severity.HIGH,
            "the cleaner stops: uncleanable partitions, a dead cleaner thread, I/O errors",
        ),
    ),
    relevant_when=("cleaner_runs",),
    loggers=(
        "kafka.log.Cleaner",
        "kafka.log.LogCleaner",
        "kafka.log.LogCleanerManager",
        "org.apache.kafka.storage.internals.log.Cleaner",
        "org.apache.kafka.storage.internals.log.LogCleaner",
        "org.apache.kafka.storage.internals.log.LogCleanerManager",
    ),
    examples={"compaction": ("cleaner-buffer-too-small", "cleaner-no-reclaim")},
)
