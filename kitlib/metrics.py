"""The ``metrics`` table (JMX values from JmxTool CSV, Prometheus text and Jolokia JSON) and the
helpers every investigation uses on it: MBean name parsing, one mapping between MBean names and
the JMX exporter's Prometheus names, and counters turned into rates.

Example:
    >>> split_mbean('kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders')["topic"]
    'orders'
    >>> prometheus_name("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "Count")
    'kafka_server_brokertopicmetrics_bytesinpersec_count'
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from kitlib import tables

KEYS = ("type", "name", "topic", "partition", "request", "client_id", "version", "connector", "task")

tables.declare(
    "metrics",
    "JMX values in long form: one row per (time, MBean, attribute), from JmxTool CSV, "
    "Prometheus exposition text or Jolokia JSON. The MBean's key properties are split out.",
    [
        ("ts", "ts", "sample time (UTC)"),
        ("mbean", "str", "full MBean name, e.g. kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec"),
        ("attribute", "str", "attribute: Count, OneMinuteRate, Mean, Value, 99thPercentile, ..."),
        ("value", "float", "numeric value (NaN for text attributes)"),
        ("text", "str", "value of a non-numeric attribute (RateUnit, EventType, ...)"),
        ("domain", "category", "MBean domain: kafka.server, kafka.network, kafka.connect, ..."),
        ("type", "category", "key property type"),
        ("name", "category", "key property name (the metric)"),
        ("topic", "str", "key property topic"),
        ("partition", "str", "key property partition"),
        ("request", "str", "key property request (Fetch, Produce, ...)"),
        ("client_id", "str", "key property client-id / clientId"),
        ("version", "str", "key property version (request API version)"),
        ("connector", "str", "key property connector"),
        ("task", "str", "key property task"),
        ("props", "str", "the remaining key properties, k=v joined with commas"),
        ("source", "category", "jmxtool, prometheus or jolokia"),
    ],
)

_PROP = re.compile(r'([^,=]+)=("(?:[^"\\]|\\.)*"|[^,]*)')


def split_mbean(mbean: str) -> dict:
    """Domain and key properties of an MBean name (quoted values unquoted); ``clientId`` and
    ``client-id`` both become ``client_id``."""
    domain, _, rest = mbean.partition(":")
    out = {"domain": domain}
    extra = []
    for k, v in _PROP.findall(rest):
        k = k.strip()
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] == '"':
            v = v[1:-1]
        key = {"clientId": "client_id", "client-id": "client_id"}.get(k, k)
        if key in KEYS:
            out[key] = v
        else:
            extra.append(f"{k}={v}")
    out["props"] = ",".join(extra)
    return out


def with_keys(df: pd.DataFrame) -> pd.DataFrame:
    """Add the split-out key-property columns for a frame with an ``mbean`` column (computed
    once per distinct MBean)."""
    uniq = pd.Series(df["mbean"].unique())
    parts = pd.DataFrame([split_mbean(m) for m in uniq], index=uniq)
    for col in ("domain", "props") + KEYS:
        if col not in parts.columns:
            parts[col] = pd.NA
    joined = parts.reindex(df["mbean"].to_numpy())
    for col in ("domain", "props") + KEYS:
        df[col] = joined[col].to_numpy()
    return df


def _snake(s: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "_", s).lower()


def prometheus_name(mbean: str, attribute: str) -> str:
    """The name the Prometheus JMX exporter's common Kafka rules give an MBean attribute:
    ``<domain>_<type>_<name>_<attribute>``, lower-cased, non-alphanumerics as ``_``; other key
    properties become labels."""
    k = split_mbean(mbean)
    parts = [k["domain"], k.get("type", ""), k.get("name", ""), attribute]
    return "_".join(_snake(p) for p in parts if p)


def mbean_from_prometheus(name: str, labels: dict) -> tuple[str, str]:
    """The (MBean, attribute) a JMX-exporter series stands for, for the MBeans the kit reads
    (:data:`KNOWN_STEMS`); other names keep the exporter name as the metric name. Labels become
    key properties; a ``quantile`` label becomes the percentile attribute."""
    bean, attr = None, "Value"
    if name in KNOWN_STEMS:
        bean = KNOWN_STEMS[name]
    else:
        stem, _, suffix = name.rpartition("_")
        if stem in KNOWN_STEMS:
            bean, attr = KNOWN_STEMS[stem], ATTRS.get(suffix, suffix)
    if bean is None:
        domain = name.split("_", 1)[0] if "_" in name else "prometheus"
        bean = f"{domain}:name={name}"
    props = ",".join(
        f"{'clientId' if k == 'client_id' else k}={v}" for k, v in sorted(labels.items()) if k != "quantile"
    )
    if "quantile" in labels:
        attr = QUANTILE_ATTR.get(labels["quantile"], f"{labels['quantile']}Quantile")
    return (bean + ("," + props if props else "")), attr


ATTRS = {
    "count": "Count",
    "value": "Value",
    "oneminuterate": "OneMinuteRate",
    "meanrate": "MeanRate",
    "mean": "Mean",
    "max": "Max",
    "min": "Min",
    "fiveminuterate": "FiveMinuteRate",
    "fifteenminuterate": "FifteenMinuteRate",
    "99thpercentile": "99thPercentile",
    "999thpercentile": "999thPercentile",
    "95thpercentile": "95thPercentile",
    "98thpercentile": "98thPercentile",
    "75thpercentile": "75thPercentile",
    "50thpercentile": "50thPercentile",
    "total": "Count",
}
QUANTILE_ATTR = {
    "0.5": "50thPercentile",
    "0.75": "75thPercentile",
    "0.95": "95thPercentile",
    "0.98": "98thPercentile",
    "0.99": "99thPercentile",
    "0.999": "999thPercentile",
}
# the MBeans the investigations read, so Prometheus series map back to the same names
_BEANS = [
    "kafka.server:type=BrokerTopicMetrics,name=FetchMessageConversionsPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=ProduceMessageConversionsPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec",
    "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec",
    "kafka.network:type=RequestMetrics,name=MessageConversionsTimeMs",
    "kafka.network:type=RequestMetrics,name=RequestsPerSec",
    "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec",
    "kafka.network:type=RequestMetrics,name=TotalTimeMs",
    "kafka.log:type=LogCleaner,name=max-buffer-utilization-percent",
    "kafka.log:type=LogCleaner,name=cleaner-recopy-percent",
    "kafka.log:type=LogCleaner,name=max-clean-time-secs",
    "kafka.log:type=LogCleanerManager,name=max-dirty-percent",
]
KNOWN_STEMS = {prometheus_name(b, "x")[: -len("_x")]: b for b in _BEANS}


def rate(metrics: pd.DataFrame, attribute: str = "Count", by: tuple[str, ...] = ("host", "mbean")) -> pd.DataFrame:
    """Per-second rates of a cumulative counter: one row per sample after the first of each
    series, with ``delta`` and ``rate``. A drop (counter reset: the broker restarted) starts the
    series again instead of producing a negative rate.

    Example:
        >>> m = pd.DataFrame({"ts": pd.to_datetime([0, 10, 20, 30], unit="s", utc=True), "host": "b1",
        ...                   "mbean": "x", "attribute": "Count", "value": [0, 100, 300, 50]})
        >>> rate(m)["rate"].tolist()
        [10.0, 20.0, 5.0]
    """
    m = metrics[metrics["attribute"] == attribute].dropna(subset=["value"])
    if not len(m):
        return m.assign(delta=pd.Series(dtype=float), rate=pd.Series(dtype=float), seconds=pd.Series(dtype=float))
    keys = [c for c in by if c in m.columns]
    m = m.sort_values(keys + ["ts"])
    g = m.groupby(keys, sort=False, observed=True)
    prev = g["value"].shift()
    dt = (m["ts"] - g["ts"].shift()).dt.total_seconds()
    delta = m["value"] - prev
    reset = delta < 0
    delta = delta.where(~reset, m["value"])  # after a reset the counter restarted from zero
    out = m.assign(delta=delta, seconds=dt, rate=delta / dt)
    out = out[prev.notna() & (dt > 0)]
    return out.reset_index(drop=True)


def select(metrics: pd.DataFrame, name: str | None = None, attribute: str | None = None, **keys) -> pd.DataFrame:
    """Rows of one metric: ``select(m, "BytesInPerSec", "Count", topic=None)`` (``None`` for a key
    means the key must be absent: the broker-wide aggregate)."""
    sel = pd.Series(True, index=metrics.index)
    if name is not None:
        sel &= metrics["name"].astype("string") == name
    if attribute is not None:
        sel &= metrics["attribute"] == attribute
    for k, v in keys.items():
        col = metrics[k]
        sel &= col.isna() if v is None else (col.astype("string") == str(v))
    return metrics[sel.fillna(False)]


def long_from_wide(ts: pd.Series, wide: pd.DataFrame, columns: list[str], lines: np.ndarray) -> pd.DataFrame:
    """Melt a wide frame of ``<mbean>:<attribute>`` columns into metrics rows (vectorized)."""
    n, k = wide.shape
    raw = wide.to_numpy(dtype=object).ravel(order="F") if k else np.array([], dtype=object)
    col_idx = np.repeat(np.arange(k), n)
    beans, attrs = [], []
    for c in columns:
        bean, _, attr = c.rpartition(":")
        beans.append(bean)
        attrs.append(attr)
    raw_s = pd.Series(raw, dtype="string")
    num = pd.to_numeric(raw_s, errors="coerce")
    text = raw_s.where(num.isna() & raw_s.notna() & (raw_s != ""))
    out = pd.DataFrame(
        {
            "ts": np.tile(ts.to_numpy(), k),
            "mbean": np.array(beans, dtype=object)[col_idx] if k else [],
            "attribute": np.array(attrs, dtype=object)[col_idx] if k else [],
            "value": num.astype("float64").to_numpy(),
            "text": text.to_numpy(),
            "line": np.tile(lines, k),
        }
    )
    out = out[out["value"].notna() | out["text"].notna()]
    return with_keys(out.reset_index(drop=True))
