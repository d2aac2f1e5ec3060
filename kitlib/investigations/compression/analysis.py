"""Codec trade-offs on the user's own payloads (seed 002): compression ratio and compress /
decompress speed for none, gzip, snappy, lz4 and zstd, measured on real Kafka record batches
(v2, built with kafka-python's record builder) of a realistic size, plus the producer MB/s the
lab's codec probe measured against a broker when the bundle has it.

Example:
    >>> from kitlib.investigations.compression.analysis import measure
    >>> t = measure([b'{"status": "paid", "amount": 12.5}'] * 2000)
    >>> bool(t.set_index("codec").loc["gzip", "ratio"] > 5)
    True
"""

from __future__ import annotations

import time

import pandas as pd

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _batches(values: list[bytes], codec: int, batch_bytes: int) -> list[bytes]:
    from kafka.record import MemoryRecordsBuilder

    out, b = [], MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=batch_bytes)
    for v in values:
        if b.append(0, None, v) is None:
            b.close()
            out.append(bytes(b.buffer()))
            b = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=batch_bytes)
            b.append(0, None, v)
    b.close()
    out.append(bytes(b.buffer()))
    return out


def _chunks(values: list[bytes], size: int) -> list[bytes]:
    out, cur, n = [], [], 0
    for v in values:
        cur.append(v)
        n += len(v)
        if n >= size:
            out.append(b"".join(cur))
            cur, n = [], 0
    if cur:
        out.append(b"".join(cur))
    return out


def _codec_fns(name: str):
    from kafka import codec as c

    return {
        "none": (lambda b: b, lambda b: b),
        "gzip": (c.gzip_encode, c.gzip_decode),
        "snappy": (c.snappy_encode, c.snappy_decode),
        "lz4": (c.lz4_encode, c.lz4_decode),
        "zstd": (c.zstd_encode, c.zstd_decode),
    }[name]


def measure(values: list[bytes], batch_bytes: int = 16384, codecs=tuple(CODECS), repeat: int = 3) -> pd.DataFrame:
    """Per codec: the ratio of real v2 record batches (built with kafka-python's record builder
    at producer ``batch.size`` = ``batch_bytes``, default 16384) to uncompressed ones, and the
    codec's compress / decompress MB/s on batch-sized chunks of the same values (best of
    ``repeat``; the codec's own cost, without the client's per-record overhead)."""
    raw = sum(len(v) for v in values)
    chunks = _chunks(values, batch_bytes)
    rows, base = [], None
    for name in codecs:
        batches = _batches(values, CODECS[name], batch_bytes)
        size = sum(len(b) for b in batches)
        if name == "none":
            base = size
        enc, dec = _codec_fns(name)
        best_c = best_d = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            packed = [enc(ch) for ch in chunks]
            best_c = min(best_c, time.perf_counter() - t)
            t = time.perf_counter()
            for pk in packed:
                dec(pk)
            best_d = min(best_d, time.perf_counter() - t)
        rows.append(
            {
                "codec": name,
                "records": len(values),
                "batches": len(batches),
                "raw_bytes": raw,
                "bytes": size,
                "compress_mb_per_s": raw / max(best_c, 1e-9) / 1e6,
                "decompress_mb_per_s": raw / max(best_d, 1e-9) / 1e6,
            }
        )
    df = pd.DataFrame(rows)
    df["ratio"] = (base or df["bytes"].max()) / df["bytes"]
    df.loc[df["codec"] == "none", ["compress_mb_per_s", "decompress_mb_per_s"]] = float("nan")  # nothing to time
    return df


def combine(measured: pd.DataFrame, probe: pd.DataFrame) -> pd.DataFrame:
    """Offline measurements joined with the broker probe's producer MB/s and on-disk ratio."""
    if not len(probe):
        return measured.assign(producer_mb_per_s=float("nan"), broker_ratio=float("nan"))
    p = probe.groupby("codec", observed=True).agg(
        producer_mb_per_s=("mb_per_s", "median"), broker_ratio=("ratio", "median")
    )
    p.index = p.index.astype(str)
    return measured.merge(p, left_on="codec", right_index=True, how="left")
