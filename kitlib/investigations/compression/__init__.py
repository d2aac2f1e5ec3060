"""Compression: which codec suits these payloads? Seed 002: gzip vs snappy vs lz4 vs zstd,
measured on the user's own record samples and against the broker."""

from kitlib.investigations import Investigation
from kitlib.investigations.compression import analysis  # noqa: F401  (registers its tables and detectors; charts load with the notebook)

INVESTIGATION = Investigation(
    name="compression",
    title="Compression codecs",
    question="Which codec gives the best ratio and speed on these payloads?",
    tables=("probe_codecs", "payload_samples"),
    findings=(),
    relevant_when=("probe_codecs",),
    loggers=(
        "kafka.log.LogValidator",
        "org.apache.kafka.storage.internals.log.LogValidator",
        "org.apache.kafka.common.record",
        "org.apache.kafka.common.compress",
    ),
    examples={"codecs": ()},
)
