"""Prometheus text exposition as scraped from the JMX exporter -> the ``metrics`` table.

``name{label="v",...} value [timestamp_ms]`` lines with ``# HELP``/``# TYPE`` comments; the
exporter's trailing comma in label sets is accepted. Several scrapes may be concatenated: each
sample's own timestamp is used, else the time in the latest comment line that holds one
(``# scrape 2026-11-23T00:00:00Z``), else the time is unknown (NaT). Names map back to MBeans
through :func:`kitlib.metrics.mbean_from_prometheus`, the same mapping used the other way.

Example:
    >>> detect(b'# TYPE kafka_server_brokertopicmetrics_bytesinpersec_count counter\\n', None)
    True
"""

from __future__ import annotations

import re

import pandas as pd

from kitlib.formats import (
    TS_MAX,
    TS_MIN,
    Context,
    decode_line,
    iter_lines,
    register,
    ts_in_range,
    unparsed_frame,
    with_provenance,
)
from kitlib.metrics import mbean_from_prometheus, with_keys

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)")


def detect(head: bytes, src) -> bool:
    lines = [ln for ln in head.split(b"\n")[:40] if ln.strip()]
    if any(ln.startswith((b"# TYPE ", b"# HELP ")) for ln in lines):
        return True
    hits = sum(1 for ln in lines if _SAMPLE.match(ln.decode("utf-8", "replace")) and ln[:1].isalpha())
    return hits >= 3 and hits >= len(lines) * 0.8


def parse(src, ctx: Context):
    rows = []
    bad_n, bad_t, bad_r = [], [], []
    scrape_ts = pd.NaT
    for n, raw in iter_lines(src, ctx):
        text, ok = decode_line(raw)
        s = text.strip()
        if ok and (not s or s.startswith("#")):
            ctx.parsed += 1
            m = _STAMP.search(s) if s.startswith("#") and not s.startswith(("# HELP", "# TYPE")) else None
            if m:
                try:
                    t = pd.Timestamp(m.group(1))
                    t = t.tz_localize(src.tz or "UTC") if t.tzinfo is None else t
                except (ValueError, OverflowError) as e:
                    t = None
                    why = f"scrape time {m.group(1)!r} cannot be read ({type(e).__name__})"
                if t is None or not ts_in_range(t):
                    why = why if t is None else f"scrape time {m.group(1)} is out of range (1678-2261)"
                    ctx.parsed -= 1
                    bad_n.append(n)
                    bad_t.append(text)
                    bad_r.append(why)
                    ctx.fail(f"{src.rel} line {n}: {why}", n)
                    continue
                scrape_ts = t
            continue
        m = _SAMPLE.match(s) if ok else None
        if not m:
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append("not a Prometheus sample")
            ctx.fail(f"{src.rel} line {n}: not a Prometheus sample line", n)
            continue
        name, labels_s, value, stamp = m.groups()
        labels = dict(_LABEL.findall(labels_s or ""))
        mbean, attr = mbean_from_prometheus(name, labels)
        try:
            v = float(value)
        except ValueError:
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append("value is not a number")
            ctx.fail(f"{src.rel} line {n}: value {value!r} is not a number", n)
            continue
        ts = _sample_time(stamp) if stamp else scrape_ts
        if ts is None:
            bad_n.append(n)
            bad_t.append(text)
            bad_r.append("sample timestamp out of range (1678-2261)")
            ctx.fail(f"{src.rel} line {n}: sample timestamp {stamp} is out of range", n)
            continue
        rows.append({"ts": ts, "mbean": mbean, "attribute": attr, "value": v, "line": n})
        ctx.parsed += 1
    if rows:
        yield "metrics", with_provenance(with_keys(pd.DataFrame(rows)), src, source="prometheus")
    if bad_n:
        un = unparsed_frame(src, bad_n, bad_t, "")
        un["reason"] = bad_r
        yield "unparsed", un


def _sample_time(stamp: str):
    """The sample's own timestamp (epoch ms), or None when the tables cannot hold it."""
    ms = int(stamp)
    if not TS_MIN.value // 1_000_000 <= ms <= TS_MAX.value // 1_000_000:
        return None
    return pd.Timestamp(ms, unit="ms", tz="UTC")


register(
    "prometheus",
    detect=detect,
    parse=parse,
    tables=("metrics",),
    priority=40,
    doc="Prometheus text exposition from the JMX exporter (one or several scrapes)",
)
