"""``kafka-dump-log`` (``kafka.tools.DumpLogSegments``) output, Kafka 1.x to 4.x -> ``log_batches``,
``log_records`` and ``log_index_entries``. Sizes, offsets, producer ids and header *keys* only:
record keys and payloads (``--print-data-log``) are never stored.

Layouts (space-separated ``name: value`` pairs)::

    Dumping /var/lib/kafka/data/orders-0/00000000000000000000.log
    Log starting offset: 0                                       ("Starting offset: 0" <= 3.2)
    baseOffset: 0 lastOffset: 99 count: 100 baseSequence: 0 lastSequence: 99 producerId: 0 producerEpoch: 0
      partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty
      position: 0 CreateTime: 1795433727339 size: 6413 magic: 2 compresscodec: none crc: 3715182350 isvalid: true
    | offset: 0 CreateTime: 1795433727331 keySize: 2 valueSize: 23 sequence: 0 headerKeys: [trace-id,origin]
    | offset: 5 CreateTime: ... headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0      (control record)
    offset: 190 position: 76270 CreateTime: 1520613383709 isvalid: true keysize: 25 valuesize: 363 magic: 2
      compresscodec: NONE producerId: -1 producerEpoch: 0 sequence: -1 isTransactional: false headerKeys: []
                                                             (1.x-2.1 --deep-iteration: records only)
    offset: 109 position: 6413                               (.index)
    timestamp: 1795433742840 offset: 109                     (.timeindex)

(each batch line is one line in the file; wrapped here). ``deleteHorizonMs`` arrived in 3.2,
``isControl`` in 2.2, lower-case codecs in 3.0. Topic and partition come from the dumped file's
folder name (``orders-0``). The usual layouts are matched in bulk (Arrow regular expressions);
other layouts are read pair by pair.

Example:
    >>> detect(b"Dumping /data/orders-0/00000000000000000000.log\\nLog starting offset: 0\\n", None)
    True
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.formats import Context, register, text_lines, times
from kitlib.formats.cli.frame import Collector, head_lines, is_comment

_WHERE = [
    ("segment", "str", "the dumped file, as printed after 'Dumping'"),
    ("topic", "str", "topic, from the dumped file's folder name"),
    ("partition", "int", "partition, from the dumped file's folder name"),
]
tables.declare(
    "log_batches",
    "Record batches from `kafka-dump-log` output (one row per batch line).",
    _WHERE
    + [
        ("base_offset", "int", "first offset of the batch"),
        ("last_offset", "int", "last offset of the batch"),
        ("count", "int", "records in the batch"),
        ("base_sequence", "int", "producer sequence of the first record (-1 = not idempotent)"),
        ("last_sequence", "int", "producer sequence of the last record"),
        ("producer_id", "int", "producer id (-1 = none)"),
        ("producer_epoch", "int", "producer epoch"),
        ("partition_leader_epoch", "int", "leader epoch when the batch was appended"),
        ("is_transactional", "bool", "part of a transaction"),
        ("is_control", "bool", "a control batch (transaction marker, KRaft control record)"),
        ("delete_horizon_ms", "int", "delete horizon of a compacted batch (3.2+ output), empty when none"),
        ("position", "int", "byte position of the batch in the segment"),
        ("timestamp_type", "category", "CreateTime, LogAppendTime or NoTimestampType"),
        ("timestamp", "ts", "batch max timestamp (empty for -1)"),
        ("size", "int", "batch size in bytes on disk"),
        ("magic", "int", "record format version (0, 1, 2)"),
        ("compression", "category", "codec, lower-cased: none, gzip, snappy, lz4, zstd"),
        ("crc", "int", "batch CRC"),
        ("is_valid", "bool", "the CRC matched"),
    ],
)
tables.declare(
    "log_records",
    "Records from `kafka-dump-log --deep-iteration` / `--print-data-log` output: "
    "sizes, offsets and header keys; never key or payload values.",
    _WHERE
    + [
        ("offset", "int", "record offset"),
        ("timestamp_type", "category", "CreateTime, LogAppendTime or NoTimestampType"),
        ("timestamp", "ts", "record timestamp (empty for -1)"),
        ("key_size", "int", "key bytes (-1 = null key)"),
        ("value_size", "int", "value bytes (-1 = null value, a tombstone)"),
        ("sequence", "int", "producer sequence (-1 = not idempotent)"),
        ("header_keys", "str", "header keys, comma-separated, as printed"),
        ("header_count", "int", "number of headers"),
        (
            "control",
            "category",
            "control record type: COMMIT, ABORT (transaction markers), "
            "SnapshotHeader, SnapshotFooter, LeaderChange, KRaftVersion, KRaftVoters, or the raw "
            "type printed as 'controlType: LEADER_CHANGE(2)' (3.x metadata log); empty for data",
        ),
        ("coordinator_epoch", "int", "transaction coordinator epoch of a marker"),
        ("position", "int", "byte position (1.x-2.1 record lines only)"),
        ("producer_id", "int", "producer id (1.x-2.1 record lines only; newer ones are on the batch)"),
        ("magic", "int", "record format version (1.x-2.1 record lines only)"),
        ("compression", "category", "codec (1.x-2.1 record lines only)"),
    ],
)
tables.declare(
    "log_index_entries",
    "Offset and time index entries from `kafka-dump-log` on .index / .timeindex files.",
    _WHERE
    + [
        ("kind", "category", "offset (an .index entry) or time (a .timeindex entry)"),
        ("offset", "int", "offset the entry points at"),
        ("position", "int", "byte position in the segment (offset index)"),
        ("timestamp", "ts", "timestamp (time index)"),
    ],
)

_N = r"(-?\d+)"
_RECORD_RE = (
    r"^\| offset: (?P<offset>-?\d+) (?P<timestamp_type>CreateTime|LogAppendTime|NoTimestampType): "
    r"(?P<timestamp>-?\d+) key[sS]ize: (?P<key_size>-?\d+) value[sS]ize: (?P<value_size>-?\d+) "
    r"sequence: (?P<sequence>-?\d+) headerKeys: \[(?P<header_keys>[^\]]*)\]"
    r"(?: endTxnMarker: (?P<control>COMMIT|ABORT) coordinatorEpoch: (?P<coordinator_epoch>\d+))?"
    r"(?: (?P<kraft>SnapshotHeader|SnapshotFooter|LeaderChange|KRaftVersion|KRaftVoters)\b)?"
    r"(?: controlType: (?P<ctype>\w+)\(-?\d+\))?(?P<rest>.*)$"
)
_BATCH_RE = (
    r"^baseOffset: (?P<base_offset>-?\d+) lastOffset: (?P<last_offset>-?\d+) count: (?P<count>-?\d+) "
    r"baseSequence: (?P<base_sequence>-?\d+) lastSequence: (?P<last_sequence>-?\d+) "
    r"producerId: (?P<producer_id>-?\d+) producerEpoch: (?P<producer_epoch>-?\d+) "
    r"partitionLeaderEpoch: (?P<partition_leader_epoch>-?\d+) isTransactional: (?P<is_transactional>\w+) "
    r"isControl: (?P<is_control>\w+)(?: deleteHorizonMs: (?P<delete_horizon_ms>\S+))? "
    r"position: (?P<position>\d+) (?P<timestamp_type>CreateTime|LogAppendTime|NoTimestampType): "
    r"(?P<timestamp>-?\d+) size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<compression>\S+) "
    r"crc: (?P<crc>\d+) isvalid: (?P<is_valid>\w+)$"
)
_PAIR = re.compile(r"(\w+): (\[[^\]]*\]|\S+)")
_KRAFT = re.compile(r"\b(SnapshotHeader|SnapshotFooter|LeaderChange|KRaftVersion|KRaftVoters)\b")
_CUT = re.compile(r" (?:key|payload): ")
_NAMES = {
    "baseOffset": "base_offset",
    "lastOffset": "last_offset",
    "count": "count",
    "baseSequence": "base_sequence",
    "lastSequence": "last_sequence",
    "producerId": "producer_id",
    "producerEpoch": "producer_epoch",
    "partitionLeaderEpoch": "partition_leader_epoch",
    "isTransactional": "is_transactional",
    "isControl": "is_control",
    "deleteHorizonMs": "delete_horizon_ms",
    "position": "position",
    "size": "size",
    "magic": "magic",
    "compresscodec": "compression",
    "crc": "crc",
    "isvalid": "is_valid",
    "isValid": "is_valid",
    "offset": "offset",
    "keysize": "key_size",
    "keySize": "key_size",
    "valuesize": "value_size",
    "valueSize": "value_size",
    "sequence": "sequence",
    "headerKeys": "header_keys",
    "endTxnMarker": "control",
    "coordinatorEpoch": "coordinator_epoch",
    "compressType": "compression",
    "controlType": "control",
}
_TS_KEYS = ("CreateTime", "LogAppendTime", "NoTimestampType")
_STRUCTURE = (
    "Starting offset:",
    "Log starting offset:",
    "Snapshot end offset:",
    "Mismatches in ",
    "Index offset:",
    "Non-consecutive offsets in ",
    "Found ",
    "Skipping ",
    "Exception while ",
)
_CHUNK = 200_000


def detect(head: bytes, src) -> bool:
    lines = head_lines(head, 10)
    return any(ln.startswith("Dumping ") for ln in lines[:3]) and any(
        ln.startswith(
            (
                "Log starting offset:",
                "Starting offset:",
                "baseOffset:",
                "offset:",
                "| offset:",
                "timestamp:",
                "Snapshot end offset:",
            )
        )
        for ln in lines
    )


def _where(segment: str | None) -> dict:
    if not segment:
        return {"segment": None, "topic": None, "partition": None}
    folder = segment.replace("\\", "/").rstrip("/").split("/")[-2] if "/" in segment else ""
    topic, _, num = folder.rpartition("-")
    return {"segment": segment, "topic": topic or None, "partition": int(num) if num.isdigit() and topic else None}


def _epoch_ms(s: pd.Series) -> pd.Series:
    v = pd.to_numeric(s, errors="coerce")
    ms, ok = times.epoch_to_ms(v.to_numpy(dtype="float64", na_value=np.nan), "ms")
    return pd.to_datetime(pd.Series(ms, index=s.index).where(ok), unit="ms", utc=True)


def _pairs(text: str) -> dict:
    """``name: value`` pairs of a line in any layout, the key/payload tail cut off first."""
    cut = _CUT.search(text)
    body = text[: cut.start()] if cut else text
    out = {}
    for k, v in _PAIR.findall(body):
        if k in _TS_KEYS:
            out["timestamp_type"], out["timestamp"] = k, v
        elif k in _NAMES:
            out[_NAMES[k]] = v[1:-1] if k == "headerKeys" else v
    k = _KRAFT.search(body)
    if k and "control" not in out:
        out["control"] = k.group(1)
    return out


_INTS = (
    "base_offset",
    "last_offset",
    "count",
    "base_sequence",
    "last_sequence",
    "producer_id",
    "producer_epoch",
    "partition_leader_epoch",
    "position",
    "size",
    "magic",
    "crc",
    "offset",
    "key_size",
    "value_size",
    "sequence",
    "coordinator_epoch",
    "delete_horizon_ms",
)


def _finish(df: pd.DataFrame) -> pd.DataFrame:
    """Types from the printed strings: numbers, booleans, epoch-ms timestamps, lower-case codecs."""
    for c in df.columns:
        if c in _INTS and str(df[c].dtype) == "Int64":
            continue
        if c in _INTS:
            if c == "delete_horizon_ms":
                df[c] = df[c].astype("string").str.extract(r"(\d+)", expand=False)
            df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
        elif c in ("is_transactional", "is_control", "is_valid"):
            df[c] = df[c].map({"true": True, "false": False})
        elif c == "compression":
            df[c] = df[c].astype("string").str.lower()
        elif c == "timestamp":
            df[c] = _epoch_ms(df[c])
    if "header_keys" in df.columns:
        hk = df["header_keys"].astype("string").fillna("")
        df["header_count"] = (hk.str.count(",") + 1).where(hk != "", 0)
    if "control" in df.columns:
        df["control"] = df["control"].replace("", None)
    return df


def _bulk(texts: pa.Array, lines: np.ndarray, segs: np.ndarray, mask: np.ndarray, pattern: str):
    """Match ``pattern`` on the masked lines at once; returns (frame of matches, indexes not matched)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return None, idx
    got = pc.extract_regex(texts.take(pa.array(idx)), pattern)
    ok = got.is_valid().to_numpy(zero_copy_only=False)
    names = [got.type.field(i).name for i in range(got.type.num_fields)]
    keep = pa.array(ok)
    df = pd.DataFrame({n: _column(n, got.field(n).filter(keep)) for n in names if n != "rest"})
    for other in ("kraft", "ctype"):  # KRaft control records: by name, or "controlType: LEADER_CHANGE(2)"
        if other in df.columns:
            df["control"] = df["control"].where(df["control"].fillna("") != "", df.pop(other))
    df["line"] = lines[idx[ok]]
    df["_seg"] = segs[idx[ok]]
    return df, idx[~ok]


def _column(name: str, a: pa.Array) -> pd.Series:
    """A matched field as pandas: numbers cast in Arrow (empty optional groups become NA)."""
    if name in _INTS and name != "delete_horizon_ms" or name == "timestamp":
        a = pc.cast(pc.if_else(pc.equal(a, ""), pa.scalar(None, pa.string()), a), pa.int64())
        return a.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    return a.to_pandas()


def _with_where(df: pd.DataFrame) -> pd.DataFrame:
    uniq = {s: _where(s) for s in pd.unique(df["_seg"])}
    for col in ("segment", "topic", "partition"):
        df[col] = (
            [uniq[s][col] for s in df["_seg"]] if len(uniq) > 1 else (next(iter(uniq.values()))[col] if uniq else None)
        )
    return df.drop(columns=["_seg"])


def parse(src, ctx: Context):
    out = Collector(src, ctx)
    carry = {"segment": None}
    buf_n: list[int] = []
    buf_t: list[str] = []
    for n, text, ok in text_lines(src, ctx):
        if not ok:
            out.bad(n, text, "not valid UTF-8")
            continue
        buf_n.append(n)
        buf_t.append(text)
        if len(buf_n) >= _CHUNK:
            yield from _chunk(buf_n, buf_t, carry, out, ctx)
            buf_n, buf_t = [], []
    if buf_n:
        yield from _chunk(buf_n, buf_t, carry, out, ctx)
    yield from out.frames()


def _chunk(buf_n: list[int], buf_t: list[str], carry: dict, out: Collector, ctx: Context):
    texts = pa.array(buf_t, type=pa.string())
    lines = np.asarray(buf_n)
    dumping = pc.starts_with(texts, "Dumping ").to_numpy(zero_copy_only=False)
    seg = pd.Series(np.where(dumping, np.asarray(buf_t, dtype=object), np.array(None)), dtype=object)
    seg = seg.str.slice(len("Dumping ")).ffill().fillna(carry["segment"] or "").to_numpy(dtype=object)
    carry["segment"] = seg[-1] or carry["segment"]
    is_rec = pc.starts_with(texts, "| ").to_numpy(zero_copy_only=False)
    is_batch = pc.starts_with(texts, "baseOffset: ").to_numpy(zero_copy_only=False)
    recs, rec_left = _bulk(texts, lines, seg, is_rec, _RECORD_RE)
    batches, batch_left = _bulk(texts, lines, seg, is_batch, _BATCH_RE)
    slow: dict[str, list[dict]] = {"log_records": [], "log_batches": [], "log_index_entries": []}
    others = np.concatenate([rec_left, batch_left, np.flatnonzero(~is_rec & ~is_batch)])
    for i in np.sort(others):
        n, text = int(lines[i]), buf_t[i]
        s = text.strip()
        if (
            dumping[i]
            or is_comment(s)
            or s.startswith(_STRUCTURE)
            or s.endswith(" is followed by")
            or re.fullmatch(r"-?\d+ is followed by -?\d+", s)
        ):
            out.structure()
            continue
        kv = _pairs(s.removeprefix("| "))
        row = None
        if s.startswith("baseOffset:") and "last_offset" in kv:
            row, table = kv, "log_batches"
        elif "offset" in kv and ("key_size" in kv or s.startswith("| ")):
            row, table = kv, "log_records"
        elif "offset" in kv and "size" in kv and "magic" in kv:  # magic 0/1 shallow entry: one message set
            kv["base_offset"] = kv["last_offset"] = kv.pop("offset")
            row, table = kv, "log_batches"
        elif s.startswith("offset:") and set(kv) == {"offset", "position"}:
            row, table = dict(kv, kind="offset"), "log_index_entries"
        elif s.startswith("timestamp:") and "offset" in kv:
            row, table = (
                {"kind": "time", "offset": kv["offset"], "timestamp": kv.get("timestamp") or s.split()[1]},
                "log_index_entries",
            )
        if row is None:
            out.bad(n, text, "not a kafka-dump-log line")
            continue
        row["line"], row["_seg"] = n, seg[i]
        slow[table].append(row)
        out.structure()
    for name, df in (("log_records", recs), ("log_batches", batches)):
        if df is not None and len(df):
            ctx.parsed += len(df)
            yield name, _finish_frame(df, out.src)
    for name, rows in slow.items():
        if rows:
            yield name, _finish_frame(pd.DataFrame(rows), out.src)


def _finish_frame(df: pd.DataFrame, src) -> pd.DataFrame:
    from kitlib.formats import with_provenance

    if "timestamp" in df.columns and df["timestamp"].dtype == object and "kind" in df.columns:
        df["timestamp"] = df["timestamp"].where(df["kind"] == "time")
    return with_provenance(_finish(_with_where(df)), src)


register(
    "dump_log",
    detect=detect,
    parse=parse,
    tables=("log_batches", "log_records", "log_index_entries"),
    priority=26,
    doc="kafka-dump-log / DumpLogSegments output: batches, records (no payloads), index entries",
)
