"""Capacity: disk use per broker and log directory, and how fast a log directory fills.

**Disk use against the cluster average** (Lenses' alert): the bytes of each broker's latest
log-dir snapshot (``kafka-log-dirs --describe`` or a live capture; future replicas left out)
against the average of the brokers. From :data:`DISK_LOW` (+20 %) a low finding, from
:data:`DISK_MEDIUM` (+100 %: twice the average) medium; below :data:`DISK_MIN_BYTES` on the
fullest broker the differences say nothing about capacity and nothing is reported.

**Fill forecast**: each log directory's total bytes at every snapshot, a least-squares line
through them (bytes per second, and R² for how well a line fits), and — when the capacity of
the disk is known — the time until the line reaches it. ``kafka-log-dirs`` and Kafka's JMX do
not report a disk's capacity; ``df`` output in the bundle does (the ``disk_usage`` table): each log
dir is joined to the file system whose mount point is the longest prefix of its path, on the
broker's own host (:func:`log_dir_filesystems`), and the time until full is the file system's
free bytes at its latest ``df`` divided by the log dir's growth. Without ``df`` the capacity is a
parameter (``capacity_bytes``: one number, or one per broker or per ``(broker, log_dir)``);
without either the forecast gives the growth per hour and day.
Two snapshots give a line but no fit quality: the forecast says so (``fit`` = 'two snapshots').
Retention bounds a topic's size once its oldest segment expires, so a line fitted over a short
window overestimates growth for topics that have reached their retention; the window is stated.

Example:
    >>> snaps = pd.DataFrame({"ts": pd.to_datetime([0, 60, 120], unit="s", utc=True), "broker_id": 2,
    ...                       "log_dir": "/d", "bytes": [0.0, 6e6, 12e6]})
    >>> f = fill_forecast(snaps, capacity_bytes=24e6)
    >>> float(f["bytes_per_s"].iloc[0]), float(f["seconds_to_full"].iloc[0]), f["fit"].iloc[0]
    (100000.0, 120.0, 'least squares over 3 snapshots')
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kitlib.bundle import per_bundle
from kitlib.findings import Finding, detector, evidence
from kitlib.investigations.cluster_config import model

DISK_LOW = 20.0
DISK_MEDIUM = 100.0
DISK_MIN_BYTES = 32 * 1024**2
FILL_MIN_R2 = 0.9  # a steady fill: the line explains at least 90 % of the variation
FILL_MIN_SNAPSHOTS = 3
FILL_HORIZON_S = 7 * 86400  # full within a week: medium (a week is the time to order and add disks)


@per_bundle
def dir_sizes(bundle) -> pd.DataFrame:
    """Bytes per broker, log directory and snapshot time (future replicas left out). Columns:
    ts, broker_id, log_dir, bytes, partitions, file, line (the snapshot's first row)."""
    ld = bundle.table("log_dirs")
    cols = ["ts", "broker_id", "log_dir", "bytes", "partitions", "file", "line"]
    if not len(ld):
        return pd.DataFrame(columns=cols)
    ld = ld[~ld["is_future"].fillna(False).astype(bool) & ld["log_dir"].notna()]
    ld = model.log_dir_snapshots(ld)
    ld["ts"] = ld["snap_ts"]
    ld["size_bytes"] = pd.to_numeric(ld["size_bytes"], errors="coerce").fillna(0)
    ld["log_dir"] = ld["log_dir"].astype("string")
    g = ld.groupby(["ts", "broker_id", "log_dir", "file"], dropna=False, observed=True, sort=True)
    out = g.agg(bytes=("size_bytes", "sum"), partitions=("partition", "count"), line=("line", "min")).reset_index()
    out["file"] = out["file"].astype("string")
    return out[cols]


@per_bundle
def broker_disk_use(bundle) -> pd.DataFrame:
    """Each broker's bytes at its latest snapshot, against the cluster average. Columns:
    broker_id, bytes, log_dirs, partitions, vs_average_pct, ts, file, line."""
    d = dir_sizes(bundle)
    if not len(d):
        return pd.DataFrame(columns=["broker_id", "bytes", "log_dirs", "partitions", "vs_average_pct"])
    last_ts = d.groupby("broker_id")["ts"].transform("max")
    d = d[(d["ts"] == last_ts) | last_ts.isna()]
    per = d.groupby("broker_id").agg(
        bytes=("bytes", "sum"),
        log_dirs=("log_dir", "nunique"),
        partitions=("partitions", "sum"),
        ts=("ts", "max"),
        file=("file", "last"),
        line=("line", "min"),
    )
    avg = per["bytes"].mean()
    per["vs_average_pct"] = 100.0 * (per["bytes"] - avg) / avg if avg > 0 else 0.0
    return per.reset_index()


def fill_forecast(sizes: pd.DataFrame, capacity_bytes=None) -> pd.DataFrame:
    """Per broker and log directory: a least-squares line through its sizes over time. Columns:
    broker_id, log_dir, snapshots, first_ts, last_ts, last_bytes, bytes_per_s, bytes_per_day, r2,
    fit, capacity_bytes, seconds_to_full, full_at. ``capacity_bytes`` is one number, or a dict by
    broker id or by ``(broker_id, log_dir)``."""
    cols = [
        "broker_id",
        "log_dir",
        "snapshots",
        "first_ts",
        "last_ts",
        "last_bytes",
        "bytes_per_s",
        "bytes_per_day",
        "r2",
        "fit",
        "capacity_bytes",
        "seconds_to_full",
        "full_at",
    ]
    s = sizes[sizes["ts"].notna()] if len(sizes) else sizes
    if not len(s):
        return pd.DataFrame(columns=cols)
    s = s.groupby(["broker_id", "log_dir", "ts"], as_index=False)["bytes"].sum()
    key = ["broker_id", "log_dir"]
    t0 = s.groupby(key)["ts"].transform("min")
    x = (s["ts"] - t0).dt.total_seconds()
    y = s["bytes"].astype("float64")
    g = pd.DataFrame({"broker_id": s["broker_id"], "log_dir": s["log_dir"], "x": x, "y": y})
    g["xy"], g["xx"], g["yy"] = g["x"] * g["y"], g["x"] ** 2, g["y"] ** 2
    a = g.groupby(key).agg(
        n=("x", "size"), sx=("x", "sum"), sy=("y", "sum"), sxy=("xy", "sum"), sxx=("xx", "sum"), syy=("yy", "sum")
    )
    vx = a["sxx"] - a["sx"] ** 2 / a["n"]
    vy = a["syy"] - a["sy"] ** 2 / a["n"]
    cxy = a["sxy"] - a["sx"] * a["sy"] / a["n"]
    slope = (cxy / vx).where(vx > 0)
    r2 = (cxy**2 / (vx * vy)).where((vx > 0) & (vy > 0))
    span = s.groupby(key).agg(first_ts=("ts", "min"), last_ts=("ts", "max"))
    last = s.sort_values("ts").groupby(key)["bytes"].last()
    out = pd.DataFrame(
        {
            "snapshots": a["n"],
            "first_ts": span["first_ts"],
            "last_ts": span["last_ts"],
            "last_bytes": last,
            "bytes_per_s": slope,
            "bytes_per_day": slope * 86400,
            "r2": r2.where(a["n"] > 2),
        }
    ).reset_index()
    out["fit"] = np.where(
        out["snapshots"] > 2,
        "least squares over " + out["snapshots"].astype(str) + " snapshots",
        np.where(
            out["snapshots"] == 2, "two snapshots: a line through two points, no fit quality", "one snapshot: no trend"
        ),
    )
    out["capacity_bytes"] = _capacity(out, capacity_bytes)
    # the line's own level at the last snapshot, so the forecast follows the fit rather than one point
    level = a["sy"].to_numpy() / a["n"].to_numpy() + slope.to_numpy() * (
        (out["last_ts"] - out["first_ts"]).dt.total_seconds().to_numpy() - (a["sx"] / a["n"]).to_numpy()
    )
    left = out["capacity_bytes"] - level
    out["seconds_to_full"] = (left / out["bytes_per_s"]).where((out["bytes_per_s"] > 0) & out["capacity_bytes"].notna())
    out["full_at"] = out["last_ts"] + pd.to_timedelta(out["seconds_to_full"], unit="s")
    return out[cols]


def _capacity(rows: pd.DataFrame, capacity_bytes) -> pd.Series:
    if capacity_bytes is None:
        return pd.Series(np.nan, index=rows.index)
    if not isinstance(capacity_bytes, dict):
        return pd.Series(float(capacity_bytes), index=rows.index)
    by_dir = pd.Series(list(zip(rows["broker_id"], rows["log_dir"]))).map(capacity_bytes)
    by_broker = rows["broker_id"].map(capacity_bytes)
    return pd.to_numeric(by_dir.where(by_dir.notna(), by_broker), errors="coerce").astype("float64")


FS_COLUMNS = [
    "broker_id",
    "log_dir",
    "mount",
    "filesystem",
    "size_bytes",
    "used_bytes",
    "avail_bytes",
    "df_ts",
    "file",
    "line",
]


@per_bundle
def log_dir_filesystems(bundle) -> pd.DataFrame:
    """Each log dir's file system from ``df`` output (:data:`FS_COLUMNS`): the latest ``df`` row
    whose mount point is the longest prefix of the log dir's path. A ``df`` file in a broker's
    folder describes that broker's host; one from another folder (a single machine's capture)
    describes the brokers that have none of their own."""
    du = bundle.table("disk_usage")
    dirs = dir_sizes(bundle)
    if not len(du) or not len(dirs):
        return pd.DataFrame(columns=FS_COLUMNS)
    dirs = dirs.drop_duplicates(["broker_id", "log_dir"])[["broker_id", "log_dir"]]
    dirs["broker_id"] = pd.to_numeric(dirs["broker_id"]).astype("int64")
    du = du.assign(df_ts=pd.to_datetime(du["snapshot_ts"], utc=True), host=du["host"].astype("string"))
    du = du.sort_values(["df_ts", "file", "line"], kind="stable", na_position="first")
    du = du.drop_duplicates(["host", "mount"], keep="last")
    owner = du["host"].map(model.broker_hosts(bundle).set_index("host")["broker_id"])
    own = du[owner.notna()].assign(broker_id=owner[owner.notna()].astype("int64"))
    pairs = dirs.merge(own, on="broker_id")
    shared = du[owner.isna()]
    if len(shared):
        rest = dirs[~dirs["broker_id"].isin(own["broker_id"])]
        pairs = pd.concat([pairs, rest.merge(shared.drop(columns=["host"]), how="cross")], ignore_index=True)
    if not len(pairs):
        return pd.DataFrame(columns=FS_COLUMNS)
    path = pairs["log_dir"].astype("string").str.rstrip("/") + "/"
    mount = pairs["mount"].astype("string").str.rstrip("/") + "/"
    inside = pd.Series(
        np.char.startswith(path.to_numpy(dtype=str), mount.to_numpy(dtype=str)), index=pairs.index, dtype=bool
    )
    pairs = pairs[inside].assign(depth=mount[inside].str.len())
    best = pairs.sort_values("depth", kind="stable").drop_duplicates(["broker_id", "log_dir"], keep="last")
    return best[FS_COLUMNS].sort_values(["broker_id", "log_dir"]).reset_index(drop=True)


def forecast(bundle, capacity_bytes=None) -> pd.DataFrame:
    """:func:`fill_forecast` of the bundle's log dirs, with the time until full: from
    ``capacity_bytes`` when given, else from ``df`` (the file system's free bytes at its latest
    ``df``, shared by the log dirs on it: their growth adds up). Extra columns: mount, avail_bytes,
    df_ts, capacity_from ('parameter', 'df' or '')."""
    f = fill_forecast(dir_sizes(bundle), capacity_bytes)
    f["capacity_from"] = np.where(f["capacity_bytes"].notna(), "parameter", "")
    fs = log_dir_filesystems(bundle)
    if not len(f) or not len(fs):
        return f.assign(mount=pd.NA, avail_bytes=np.nan, df_ts=pd.NaT)
    f = f.merge(fs[["broker_id", "log_dir", "mount", "avail_bytes", "size_bytes", "df_ts"]], how="left")
    use = f["capacity_bytes"].isna() & f["avail_bytes"].notna()
    growth = f["bytes_per_s"].clip(lower=0).groupby([f["broker_id"], f["mount"]], dropna=False).transform("sum")
    full_at = f["df_ts"].fillna(f["last_ts"]) + pd.to_timedelta(f["avail_bytes"] / growth, unit="s")
    ok = use & (f["bytes_per_s"] > 0)
    f.loc[use, "capacity_bytes"] = f.loc[use, "size_bytes"].astype("float64")
    f.loc[use, "capacity_from"] = "df"
    f.loc[ok, "full_at"] = full_at[ok]
    f.loc[ok, "seconds_to_full"] = (full_at[ok] - f.loc[ok, "last_ts"]).dt.total_seconds()
    return f.drop(columns=["size_bytes"])


def _gb(b: float) -> str:
    return f"{b / 1e9:,.2f} GB" if b >= 1e8 else f"{b / 1e6:,.1f} MB"


@detector(
    ids=["disk-use-skew"],
    checks=f"bytes per broker against the cluster average (from +{DISK_LOW:.0f} % low, +{DISK_MEDIUM:.0f} % medium; "
    f"fullest broker over {DISK_MIN_BYTES // 1024**2} MiB)",
    needs=["log_dirs"],
)
def disk_skew(bundle) -> list[Finding]:
    use = broker_disk_use(bundle)
    if len(use) < 2 or use["bytes"].max() < DISK_MIN_BYTES:
        return []
    worst = use.loc[use["vs_average_pct"].idxmax()]
    pct = float(worst["vs_average_pct"])
    if pct < DISK_LOW:
        return []
    avg = float(use["bytes"].mean())
    d = dir_sizes(bundle)
    d = d[(d["broker_id"] == worst["broker_id"]) & (d["ts"] == worst["ts"])]
    ld = model.log_dir_snapshots(bundle.table("log_dirs"))
    ld = ld[(ld["broker_id"] == worst["broker_id"]) & (ld["snap_ts"] == worst["ts"])]
    top = ld.assign(size=pd.to_numeric(ld["size_bytes"], errors="coerce"))
    top = top[top["size"] > 0].nlargest(5, "size")
    return [
        Finding(
            "disk-use-skew",
            "medium" if pct >= DISK_MEDIUM else "low",
            f"broker {int(worst['broker_id'])} holds {_gb(worst['bytes'])} in its log dirs, {pct:.0f} % above the "
            f"cluster average of {_gb(avg)} (current {_gb(worst['bytes'])} -> recommended about {_gb(avg)})",
            numbers={
                "broker": int(worst["broker_id"]),
                "bytes": int(worst["bytes"]),
                "average_bytes": int(avg),
                "vs_average_pct": round(pct, 1),
                "per_broker": ", ".join(f"{int(b)}: {_gb(v)}" for b, v in zip(use["broker_id"], use["bytes"])),
                "log_dirs": ", ".join(d["log_dir"].astype(str)),
                "thresholds": f"low from +{DISK_LOW:.0f} %, medium from +{DISK_MEDIUM:.0f} % over the average",
            },
            recommendation="The fullest broker runs out of disk first, and a full log dir takes its partitions "
            "offline. Find the partitions that make the difference (below, the largest ones) and move some with "
            "kafka-reassign-partitions, or lower their retention.",
            evidence=evidence(
                top, lambda r: f"broker {r['broker_id']} {r['log_dir']}: {r['topic']}-{r['partition']} {_gb(r['size'])}"
            ),
        )
    ]


@detector(
    ids=["log-dir-filling"],
    checks=f"log dirs growing steadily across {FILL_MIN_SNAPSHOTS}+ snapshots (R² >= {FILL_MIN_R2}) at a rate "
    "that adds over 10 % of their size per hour",
    needs=["log_dirs"],
)
def log_dir_filling(bundle, capacity_bytes=None) -> list[Finding]:
    sizes = dir_sizes(bundle)
    f = forecast(bundle, capacity_bytes)
    if not len(f):
        return []
    steady = f[
        (f["snapshots"] >= FILL_MIN_SNAPSHOTS)
        & (f["r2"] >= FILL_MIN_R2)
        & (f["bytes_per_s"] * 3600 > 0.1 * f["last_bytes"])
        & (f["last_bytes"] >= DISK_MIN_BYTES)
    ]
    out = []
    for _, r in steady.iterrows():  # one finding per growing log dir: few
        span_s = (r["last_ts"] - r["first_ts"]).total_seconds()
        known = pd.notna(r["seconds_to_full"])
        on_df = r["capacity_from"] == "df"
        where = f" ({r['mount']} has {_gb(r['avail_bytes'])} free of {_gb(r['capacity_bytes'])} by df)" if on_df else ""
        full = (
            f"at this rate it is full in {r['seconds_to_full'] / 3600:,.1f} h ({r['full_at']:%Y-%m-%d %H:%M} UTC)"
            + where
            if known
            else "the disk's capacity is not in the bundle (no df output): time until full = free bytes / "
            f"{r['bytes_per_s'] / 1e6:,.2f} MB/s"
        )
        # what keeps a week of this growth: the free space it needs, stated against what there is
        week = float(r["bytes_per_s"]) * FILL_HORIZON_S
        advice = (
            f" (current {_gb(r['avail_bytes'])} free -> recommended at least {_gb(week)} free, a week at this rate, "
            "or a retention bound)"
            if on_df and known
            else ""
        )
        rows = sizes[(sizes["broker_id"] == r["broker_id"]) & (sizes["log_dir"] == r["log_dir"])]
        numbers = {
            "broker": int(r["broker_id"]),
            "log_dir": r["log_dir"],
            "bytes": int(r["last_bytes"]),
            "bytes_per_s": round(float(r["bytes_per_s"]), 1),
            "r2": round(float(r["r2"]), 4),
            "snapshots": int(r["snapshots"]),
            "window_s": round(span_s, 1),
            "seconds_to_full": r["seconds_to_full"],
            "fit": r["fit"],
            "capacity_from": r["capacity_from"] or "unknown",
        }
        if on_df:
            numbers.update(
                mount=r["mount"],
                avail_bytes=int(r["avail_bytes"]),
                capacity_bytes=int(r["capacity_bytes"]),
                df_at=r["df_ts"],
                threshold=f"medium when full within {FILL_HORIZON_S // 86400} days",
            )
        ev = evidence(rows, lambda x: f"{x['ts']:%H:%M:%S} broker {x['broker_id']} {x['log_dir']}: {_gb(x['bytes'])}")
        if on_df:
            fs = log_dir_filesystems(bundle)
            fs = fs[(fs["broker_id"] == r["broker_id"]) & (fs["log_dir"] == r["log_dir"])]
            ev = (
                evidence(
                    fs,
                    lambda x: (
                        f"df: {x['filesystem']} on {x['mount']}: {_gb(x['size_bytes'])} size, "
                        f"{_gb(x['avail_bytes'])} available"
                    ),
                )
                + ev
            )
        out.append(
            Finding(
                "log-dir-filling",
                "medium" if known and r["seconds_to_full"] < FILL_HORIZON_S else "low",
                f"log dir {r['log_dir']} of broker {int(r['broker_id'])} grows {_gb(r['bytes_per_day'])} a day "
                f"({r['bytes_per_s'] / 1e6:,.2f} MB/s, a line through {int(r['snapshots'])} snapshots over "
                f"{span_s / 60:,.1f} min, R² {r['r2']:.3f}); {full}{advice}",
                numbers=numbers,
                recommendation=("" if on_df else "Check the disk's free space against this rate (df on the broker). ")
                + "Find what writes it: the partitions that grew most between the first and last snapshot. "
                "Retention (retention.ms / retention.bytes) bounds a topic once its oldest segments expire; a topic "
                "without a bound fills the disk, and a full log dir goes offline with every partition on it. The "
                "forecast is a straight line over the window above: traffic that varies over the day needs a "
                "window of a day to forecast days.",
                evidence=ev,
            )
        )
    return out


def partitions_per_broker(bundle) -> pd.DataFrame:
    """Replica count and bytes per broker at the latest snapshot (the capacity table of the
    notebook)."""
    use = broker_disk_use(bundle)
    return use[["broker_id", "partitions", "bytes", "vs_average_pct"]] if len(use) else use
