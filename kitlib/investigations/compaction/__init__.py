"""Log compaction: why does a compacted topic not shrink? Seed 003: the dedupe buffer is too
small for the dirty section, so the cleaner needs many passes and the first ones reclaim nothing."""

from kitlib.investigations import Investigation, has_rows
from kitlib.investigations.compaction import analysis, cleaner  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="compaction",
    title="Log compaction",
    question="Why is a compacted topic not shrinking, and how big must the dedupe buffer be?",
    tables=("cleaner_runs", "cleaner_events", "configs", "metrics"),
    finding_ids=("cleaner-buffer-too-small", "cleaner-no-reclaim", "cleaner-stalled"),
    relevant=lambda b: has_rows(b, "cleaner_runs"),
    examples={"compaction": ("cleaner-buffer-too-small", "cleaner-no-reclaim")},
)
