"""What the bundle says about the cluster's layout and settings, in the shapes the checks read.

- :func:`brokers`: the broker ids the bundle knows (live capture, log-dir output, the brokers'
  own config dumps, the replica lists), with the rack when one is set;
- :func:`replicas`: one row per topic, partition and replica broker, from the latest
  ``kafka-topics --describe`` output (which also gives leaders and preferred leaders), else the
  latest log-dir sizes of each broker (which hold every replica a broker has, not who leads);
- :func:`broker_settings` / :func:`topic_settings`: a config key's value per broker and per
  topic, the latest one each, from config dumps in logs, live captures, saved kafka-configs
  output and the ``Configs:`` of kafka-topics output.

Every row keeps the file and line it came from, so a finding can cite it.

Example:
    >>> tp = pd.DataFrame({"snapshot_ts": pd.NaT, "topic": ["t", "t"], "partition": [0, 1], "leader": [1, 2],
    ...                    "replicas": ["1,2", "2,1"], "isr": ["1,2", "2,1"], "file": "t.txt", "line": [2, 3]})
    >>> r = replicas_from_describe(tp)
    >>> r[["topic", "partition", "broker_id", "preferred", "leads"]].values.tolist()[:2]
    [['t', 0, 1, True, True], ['t', 0, 2, False, False]]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.bundle import per_bundle

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
REPLICA_COLUMNS = [
    "topic",
    "partition",
    "broker_id",
    "position",
    "preferred",
    "leads",
    "leader",
    "rf",
    "complete",
    "file",
    "line",
]


def _last(df: pd.DataFrame, key: list[str], time_col: str) -> pd.DataFrame:
    """The last row of each ``key`` (by time, then file and line)."""
    order = [c for c in (time_col, "file", "line") if c in df.columns]
    return df.sort_values(order, kind="stable", na_position="first").drop_duplicates(key, keep="last")


def _latest_snapshot(df: pd.DataFrame, time_col: str, by: str | None = None) -> pd.DataFrame:
    """Rows of the latest snapshot (per ``by`` when given): the rows whose time is the latest one
    (rows without a time count as older than any timed row, unless there are no timed rows)."""
    if not len(df):
        return df
    t = pd.to_datetime(df[time_col], utc=True)
    if by is None:
        last = t.max()
        return df[t == last] if pd.notna(last) else df[df["file"] == df["file"].iloc[-1]]
    latest = t.groupby(df[by]).transform("max")
    return df[(t == latest) | (latest.isna())]


def replicas_from_describe(tp: pd.DataFrame) -> pd.DataFrame:
    """:data:`REPLICA_COLUMNS` from ``topic_partitions`` rows: the last description of each
    partition, its replica list exploded (``position`` 0 is the preferred leader)."""
    if not len(tp):
        return pd.DataFrame(columns=REPLICA_COLUMNS)
    last = _last(tp, ["topic", "partition"], "snapshot_ts")
    last = last[last["replicas"].notna() & (last["replicas"].astype("string").str.len() > 0)]
    ids = last["replicas"].astype("string").str.split(",")
    ex = last.assign(broker_id=ids).explode("broker_id")
    ex["broker_id"] = pd.to_numeric(ex["broker_id"].astype("string").str.strip(), errors="coerce").astype("Int64")
    ex = ex[ex["broker_id"].notna()]
    ex["position"] = ex.groupby(level=0).cumcount()
    ex["rf"] = ex.groupby(level=0)["broker_id"].transform("size")
    leader = pd.to_numeric(ex["leader"], errors="coerce").astype("Int64")
    out = pd.DataFrame(
        {
            "topic": ex["topic"].astype("string"),
            "partition": pd.to_numeric(ex["partition"]).astype("int64"),
            "broker_id": ex["broker_id"].astype("int64"),
            "position": ex["position"].astype("int64"),
            "preferred": ex["position"] == 0,
            "leads": (leader == ex["broker_id"]).fillna(False).astype(bool),
            "leader": leader,
            "rf": ex["rf"].astype("int64"),
            "complete": True,
            "file": ex["file"].astype("string"),
            "line": ex["line"],
        }
    )
    return out.reset_index(drop=True)


def log_dir_snapshots(ld: pd.DataFrame, gap_s: float = 2.0) -> pd.DataFrame:
    """``log_dirs`` rows with ``snap_ts``: the time of the snapshot each row belongs to. A capture
    stamps its rows a few milliseconds apart; rows of one file further apart than ``gap_s`` (in
    file order) start a new snapshot, and a snapshot's time is its first row's."""
    if not len(ld):
        return ld.assign(snap_ts=pd.Series(dtype="datetime64[ns, UTC]"))
    ld = ld.sort_values(["file", "line"], kind="stable")
    ts = pd.to_datetime(ld["ts"], utc=True)
    f = ld["file"].astype("string")
    new = (f != f.shift()) | ((ts - ts.shift()).dt.total_seconds().abs() > gap_s) | (ts.isna() != ts.shift().isna())
    sid = np.cumsum(new.to_numpy(dtype=bool, na_value=True))
    return ld.assign(snap_ts=ts.groupby(sid).transform("min").to_numpy())


def replicas_from_log_dirs(ld: pd.DataFrame) -> pd.DataFrame:
    """:data:`REPLICA_COLUMNS` from ``log_dirs`` rows: each broker's latest snapshot, future
    replicas (moving between directories) left out; who leads is unknown. A log dir that went
    offline takes its replicas out of the listing, so the replication factor of a topic is the
    most replicas any of its partitions has, and a partition with fewer is marked not
    ``complete`` (the layout checks leave it out)."""
    if not len(ld):
        return pd.DataFrame(columns=REPLICA_COLUMNS)
    ld = ld[ld["topic"].notna() & ld["partition"].notna() & ~ld["is_future"].fillna(False).astype(bool)]
    ld = _latest_snapshot(log_dir_snapshots(ld), "snap_ts", by="broker_id")
    ld = ld.drop_duplicates(["topic", "partition", "broker_id"], keep="last")
    out = pd.DataFrame(
        {
            "topic": ld["topic"].astype("string"),
            "partition": pd.to_numeric(ld["partition"]).astype("int64"),
            "broker_id": pd.to_numeric(ld["broker_id"]).astype("int64"),
            "position": -1,
            "preferred": False,
            "leads": False,
            "leader": pd.Series(pd.NA, index=ld.index, dtype="Int64"),
            "file": ld["file"].astype("string"),
            "line": ld["line"],
        }
    )
    have = out.groupby(["topic", "partition"])["broker_id"].transform("size").astype("int64")
    out["rf"] = have.groupby(out["topic"]).transform("max").astype("int64")
    out["complete"] = (have == out["rf"]).to_numpy(dtype=bool)
    return out[REPLICA_COLUMNS].reset_index(drop=True)


@per_bundle
def replicas(bundle) -> pd.DataFrame:
    """The cluster's replicas (:data:`REPLICA_COLUMNS`); ``attrs["source"]`` names the table
    they came from ('topic_partitions', 'log_dirs' or '' when neither has rows)."""
    tp = bundle.table("topic_partitions")
    if len(tp):
        out = replicas_from_describe(tp)
        out.attrs["source"] = "topic_partitions"
        return out
    out = replicas_from_log_dirs(bundle.table("log_dirs"))
    out.attrs["source"] = "log_dirs" if len(out) else ""
    return out


@per_bundle
def broker_settings(bundle, key: str) -> pd.DataFrame:
    """The latest value of broker config ``key`` per broker: from each broker's config dump
    (``KafkaConfig values:``, entity = node id) and live or saved kafka-configs output of a
    broker (scope 'broker', entity = its id; '<default>' for the cluster-wide dynamic default).
    Columns: broker (text), value, origin, host, file, line."""
    c = bundle.table("configs")
    cols = ["broker", "value", "origin", "host", "file", "line", "ts"]
    if not len(c):
        return pd.DataFrame(columns=cols)
    scope = c["scope"].astype("string")
    rows = c[(c["key"] == key) & scope.isin(["KafkaConfig", "broker"])]
    rows = rows.assign(broker=rows["entity"].astype("string").fillna(""))
    return _last(rows, ["broker"], "ts")[cols].reset_index(drop=True)


def _topic_config_pairs(tp: pd.DataFrame) -> pd.DataFrame:
    """``k=v`` pairs of the ``Configs:`` column of kafka-topics output, one row each."""
    tp = tp[tp["topic_configs"].notna() & (tp["topic_configs"].astype("string").str.len() > 0)]
    if not len(tp):
        return pd.DataFrame(columns=["entity", "key", "value", "ts", "file", "line"])
    tp = tp.drop_duplicates(["topic", "file", "snapshot_ts"])
    ex = tp.assign(pair=tp["topic_configs"].astype("string").str.split(",")).explode("pair")
    kv = ex["pair"].astype("string").str.strip().str.split("=", n=1, expand=True)
    if kv.shape[1] < 2:
        return pd.DataFrame(columns=["entity", "key", "value", "ts", "file", "line"])
    return pd.DataFrame(
        {
            "entity": ex["topic"].astype("string"),
            "key": kv[0],
            "value": kv[1],
            "ts": pd.to_datetime(ex["snapshot_ts"], utc=True),
            "file": ex["file"].astype("string"),
            "line": ex["line"],
        }
    ).dropna(subset=["value"])


@per_bundle
def topic_settings(bundle, key: str) -> pd.DataFrame:
    """The latest topic-level override of config ``key`` per topic (live captures, saved
    kafka-configs output, kafka-topics' ``Configs:``). Columns: topic, value, file, line."""
    c = bundle.table("configs")
    frames = []
    if len(c):
        rows = c[(c["key"] == key) & (c["scope"].astype("string") == "topic")]
        frames.append(rows[["entity", "key", "value", "ts", "file", "line"]])
    tp = bundle.table("topic_partitions")
    if len(tp):
        pairs = _topic_config_pairs(tp)
        frames.append(pairs[pairs["key"] == key])
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["topic", "value", "file", "line"])
    allrows = pd.concat([f.astype({"entity": "string", "value": "string", "file": "string"}) for f in frames])
    allrows["ts"] = pd.to_datetime(allrows["ts"], utc=True)
    last = _last(allrows, ["entity"], "ts")
    return last.rename(columns={"entity": "topic"})[["topic", "value", "file", "line"]].reset_index(drop=True)


def cluster_default(bundle, key: str) -> tuple[str | None, pd.DataFrame]:
    """The cluster-wide value of broker config ``key`` (a dynamic ``<default>`` when set, else
    the value most brokers have) and the rows it rests on."""
    s = broker_settings(bundle, key)
    s = s[s["value"].notna() & (s["value"].astype("string") != "null")]
    if not len(s):
        return None, s
    dyn = s[s["broker"] == "<default>"]
    if len(dyn):
        return str(dyn["value"].iloc[-1]), dyn
    mode = s["value"].astype("string").mode()
    return str(mode.iloc[0]), s


@per_bundle
def brokers(bundle) -> pd.DataFrame:
    """Broker ids the bundle knows, with their rack when known. Columns: broker_id, rack, host,
    file, line (the row that shows the broker)."""
    frames = []
    b = bundle.table("brokers")
    if len(b):
        last = _last(b, ["broker_id"], "ts")
        frames.append(
            pd.DataFrame(
                {
                    "broker_id": pd.to_numeric(last["broker_id"], errors="coerce"),
                    "rack": last["rack"].astype("string"),
                    "host": last["host"].astype("string"),
                    "file": last["file"].astype("string"),
                    "line": last["line"],
                }
            )
        )
    node = broker_settings(bundle, "node.id")
    if not len(node):
        node = broker_settings(bundle, "broker.id")
    if len(node):
        rack = broker_settings(bundle, "broker.rack")
        rack_of = rack.set_index("broker")["value"].astype("string").replace({"null": pd.NA})
        roles = broker_settings(bundle, "process.roles")
        role_of = roles.set_index("broker")["value"].astype("string")
        role = node["broker"].map(role_of).astype("string").fillna("broker")
        node = node[role.str.contains("broker", regex=False).fillna(True).astype(bool)]
        frames.append(
            pd.DataFrame(
                {
                    "broker_id": pd.to_numeric(node["value"], errors="coerce"),
                    "rack": node["broker"].map(rack_of).astype("string"),
                    "host": node["host"].astype("string"),
                    "file": node["file"].astype("string"),
                    "line": node["line"],
                }
            )
        )
    ld = bundle.table("log_dirs")
    if len(ld):
        last = ld.drop_duplicates("broker_id", keep="last")
        frames.append(
            pd.DataFrame(
                {
                    "broker_id": pd.to_numeric(last["broker_id"], errors="coerce"),
                    "rack": pd.Series(pd.NA, index=last.index, dtype="string"),
                    "host": last["host"].astype("string"),
                    "file": last["file"].astype("string"),
                    "line": last["line"],
                }
            )
        )
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=["broker_id", "rack", "host", "file", "line"])
    allb = pd.concat(frames, ignore_index=True)
    allb = allb[allb["broker_id"].notna()]
    allb["broker_id"] = allb["broker_id"].astype("int64")
    # the first source that knows a broker gives its row; a rack any source knows fills a gap
    rack = allb.dropna(subset=["rack"]).drop_duplicates("broker_id").set_index("broker_id")["rack"]
    out = allb.drop_duplicates("broker_id").copy()
    out["rack"] = out["broker_id"].map(rack).astype("string")
    return out.sort_values("broker_id").reset_index(drop=True)


@per_bundle
def broker_hosts(bundle) -> pd.DataFrame:
    """host -> broker id, from each broker's own config dump (``KafkaConfig values:`` in its log:
    ``node.id``, else ``broker.id``); a live capture's host is the cluster's, not a broker's."""
    c = bundle.table("configs")
    if not len(c):
        return pd.DataFrame(columns=["host", "broker_id"])
    own = c[
        (c["scope"].astype("string") == "KafkaConfig") & c["key"].isin(["node.id", "broker.id"]) & c["host"].notna()
    ]
    own = own.assign(order=(own["key"] == "node.id").astype(int)).sort_values(["order", "line"], kind="stable")
    ids = pd.to_numeric(own["value"], errors="coerce")
    out = pd.DataFrame({"host": own["host"].astype("string"), "broker_id": ids}).dropna()
    return out.drop_duplicates("host", keep="last").astype({"broker_id": "int64"})


def broker_count(bundle, reps: pd.DataFrame | None = None) -> int:
    """How many brokers the cluster has, as far as the bundle shows: the brokers it names, or
    the distinct brokers holding replicas when that is more."""
    n = len(brokers(bundle))
    if reps is None:
        reps = replicas(bundle)
    return int(max(n, reps["broker_id"].nunique() if len(reps) else 0))


def as_bool(values: pd.Series) -> pd.Series:
    """'true' / 'false' config values as booleans (anything else False)."""
    return values.astype("string").str.strip().str.lower().eq("true").fillna(False).astype(bool)


def as_int(values: pd.Series) -> pd.Series:
    """Config values as integers (NaN when not a number)."""
    return pd.to_numeric(values.astype("string").str.strip(), errors="coerce")


__all__ = [
    "INTERNAL_TOPICS",
    "REPLICA_COLUMNS",
    "as_bool",
    "as_int",
    "broker_count",
    "broker_hosts",
    "broker_settings",
    "brokers",
    "cluster_default",
    "replicas",
    "replicas_from_describe",
    "replicas_from_log_dirs",
    "topic_settings",
]
