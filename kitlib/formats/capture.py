"""Live-capture files written by :mod:`kitlib.capture` (JSON lines whose first line carries
``"kit_capture": 1``) -> brokers, configs, log_dirs, consumer_lag, api_versions,
probe_throughput, probe_codecs.

A lag history (``kitlib capture --every``, header ``"what": "consumer_lag_series"``) is the same
format: ``consumer_lag`` rows only, every row of one snapshot stamped with that snapshot's time.

Example:
    >>> detect(b'{"kind": "header", "kit_capture": 1}\\n', None)
    True
"""

from __future__ import annotations

import json

import pandas as pd

from kitlib import tables
from kitlib.formats import Context, register, text_lines, unparsed_frame, with_provenance
from kitlib.redact import redact_value

tables.declare(
    "brokers",
    "Brokers of a live-captured cluster.",
    [
        ("ts", "ts", "capture time"),
        ("cluster_id", "str", "cluster id"),
        ("broker_id", "int", "node id"),
        ("broker_host", "str", "advertised host"),
        ("port", "int", "advertised port"),
        ("rack", "str", "rack, if set"),
        ("controller", "bool", "this broker was the controller"),
    ],
)
tables.declare(
    "log_dirs",
    "Partition sizes per broker log directory (describe_log_dirs, live or from `kafka-log-dirs --describe` output).",
    [
        ("ts", "ts", "capture time"),
        ("broker_id", "int", "broker"),
        ("log_dir", "str", "log directory"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("size_bytes", "int", "bytes on disk"),
        ("offset_lag", "int", "lag of a future replica (moves between dirs)"),
        ("is_future", "bool", "a future replica"),
        (
            "error",
            "str",
            "error of the log directory as kafka-log-dirs printed it (an exception class, e.g. "
            "KafkaStorageException for an offline dir); empty when fine",
        ),
    ],
)
tables.declare(
    "consumer_lag",
    "Committed offsets, end offsets and lag per consumer group and partition.",
    [
        ("ts", "ts", "capture time"),
        ("group", "str", "consumer group"),
        ("topic", "str", "topic"),
        ("partition", "int", "partition"),
        ("committed", "int", "committed offset"),
        ("end_offset", "int", "log end offset"),
        ("lag", "int", "end_offset - committed"),
        ("group_state", "str", "group state at the snapshot (Stable, PreparingRebalance, Empty, ...)"),
        ("consumer_id", "str", "member the partition was assigned to (empty: none)"),
        ("client_id", "str", "that member's client id"),
        ("member_host", "str", "that member's host"),
    ],
)
tables.declare(
    "api_versions",
    "API versions the broker supports.",
    [
        ("ts", "ts", "capture time"),
        ("api_key", "int", "API key number"),
        ("api_name", "str", "API name"),
        ("min_version", "int", "oldest version served"),
        ("max_version", "int", "newest version served"),
    ],
)
tables.declare(
    "probe_throughput",
    "Consume-throughput probe: one row per interval.",
    [
        ("ts", "ts", "end of the interval"),
        ("probe", "str", "probe run id"),
        ("topic", "str", "topic read"),
        ("api_version", "str", "client protocol version spoken ('auto' = negotiated)"),
        ("client_id", "str", "client id the broker saw"),
        ("elapsed_s", "float", "seconds since the probe started"),
        ("interval_s", "float", "length of the interval"),
        ("records", "int", "records read in the interval"),
        ("bytes", "int", "key+value bytes read in the interval"),
        ("mb_per_s", "float", "MB/s (10^6 bytes) in the interval"),
    ],
)
tables.declare(
    "probe_codecs",
    "Codec probe: the same records produced once per codec.",
    [
        ("ts", "ts", "when the codec's run ended"),
        ("codec", "category", "none, gzip, snappy, lz4 or zstd"),
        ("topic", "str", "topic written"),
        ("records", "int", "records produced"),
        ("raw_bytes", "int", "uncompressed value bytes"),
        ("seconds", "float", "time to produce and flush"),
        ("mb_per_s", "float", "producer MB/s of raw bytes"),
        ("bytes_on_disk", "int", "partition size on the broker afterwards"),
        ("ratio", "float", "raw_bytes / bytes_on_disk"),
    ],
)

KINDS = {"brokers", "configs", "log_dirs", "consumer_lag", "api_versions", "probe_throughput", "probe_codecs"}


def detect(head: bytes, src) -> bool:
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"kit_capture"' in first


def parse(src, ctx: Context):
    rows: dict[str, list[dict]] = {}
    bad_n, bad_t, bad_r = [], [], []
    for n, text, ok in text_lines(src, ctx):
        try:
            rec = json.loads(text) if ok else None
        except json.JSONDecodeError as e:
            rec, why = None, f"bad JSON ({e.msg} at column {e.colno})"
        except RecursionError:
            rec, why = None, "JSON nested too deeply to read"
        else:
            why = "invalid bytes" if rec is None else ""
        if not isinstance(rec, dict) or (rec.get("kind") not in KINDS and rec.get("kind") != "header"):
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append(why or "unknown record kind")
            ctx.fail(f"{src.rel} line {n}: {why or 'unknown record kind'}", n)
            continue
        ctx.parsed += 1
        kind = rec.pop("kind")
        if kind == "header":
            continue
        if kind == "configs":  # files from elsewhere may not have been redacted
            rec["value"] = redact_value(str(rec.get("key", "")), rec.get("value"))
        rec["line"] = n
        if "broker_id" in rec and kind in ("configs", "log_dirs"):
            rec.setdefault("host", f"broker-{rec['broker_id']}")
        rows.setdefault(kind, []).append(rec)
    for kind, rs in rows.items():
        df = pd.DataFrame(rs)
        if "host" in df.columns:
            df["host"] = df["host"].fillna(src.host)
        yield kind, with_provenance(df, src)
    if bad_n:
        un = unparsed_frame(src, bad_n, bad_t, "")
        un["reason"] = bad_r
        yield "unparsed", un


register(
    "capture",
    detect=detect,
    parse=parse,
    tables=tuple(sorted(KINDS)),
    priority=20,
    doc="kitlib capture / probe output (JSON lines)",
)
