"""Throughput: is the broker converting messages for old clients, and what does the traffic
look like? Seed 000: a consumer stuck at a fixed rate because the broker down-converted every
fetch for its 0.8-era client."""

from kitlib.investigations import Investigation, has_rows, metrics_mention
from kitlib.investigations.throughput import analysis  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="throughput",
    title="Throughput and down-conversion",
    question="Is a consumer or producer slowed by the broker converting messages for an old client?",
    tables=("metrics", "requests", "probe_throughput"),
    finding_ids=("down-conversion",),
    relevant=lambda b: (
        has_rows(b, "probe_throughput")
        or has_rows(b, "requests", lambda r: r["conversion_ms"].notna().any())
        or has_rows(b, "metrics", metrics_mention("MessageConversions", "BytesOutPerSec", "BytesInPerSec"))
    ),
    examples={"down-conversion": ("down-conversion",)},
)
