"""The notebook's views of the commits: per-task counts, commits of one task in a window, and
commit health before and after each change of the task producer's settings.
"""

from __future__ import annotations

import pandas as pd

from kitlib import tables  # noqa: F401  (the examples use it)
from kitlib.investigations.connect_offsets import commits as _commits  # noqa: F401  (declares the commits table)
from kitlib.investigations.connect_offsets.settings import producer_client_id, producer_history
from kitlib.window import Window


def task_summary(commits: pd.DataFrame) -> pd.DataFrame:
    """Per task: attempts, outcomes, outstanding at flush (median/max), remaining on timeout,
    first and last failure.

    Example:
        >>> task_summary(tables.empty("commits")).empty
        True
    """
    if commits.empty:
        return pd.DataFrame(
            columns=[
                "connector",
                "task",
                "kind",
                "attempts",
                "success",
                "timeout",
                "failed",
                "outstanding_median",
                "outstanding_max",
                "remaining_max",
                "first_failure",
                "last_failure",
            ]
        )
    c = commits.copy()
    c["bad_ts"] = c["ts"].where(c["outcome"].isin(["timeout", "failed"]))
    g = c.groupby(["connector", "task", "kind"], observed=True)
    out = g.agg(
        attempts=("outcome", "size"),
        success=("outcome", lambda s: int((s == "success").sum())),
        timeout=("outcome", lambda s: int((s == "timeout").sum())),
        failed=("outcome", lambda s: int((s == "failed").sum())),
        outstanding_median=("outstanding", "median"),
        outstanding_max=("outstanding", "max"),
        remaining_max=("remaining", "max"),
        first_failure=("bad_ts", "min"),
        last_failure=("bad_ts", "max"),
    ).reset_index()
    return out


def filter_commits(
    commits: pd.DataFrame, connector: str | None = None, task: int | None = None, start=None, end=None
) -> pd.DataFrame:
    """Commits of one connector / task in ``start <= ts < end`` (ISO strings, UTC unless they
    carry an offset: a :class:`~kitlib.window.Window`); None means no filter.

    Example:
        >>> filter_commits(tables.empty("commits"), "orders", 0, "2024-01-01", None).empty
        True
    """
    c = commits
    if connector is not None:
        c = c[c["connector"].astype(str) == str(connector)]
    if task is not None:
        c = c[c["task"] == int(task)]
    return Window.of(start, end).frame(c).reset_index(drop=True)


def before_after(commits: pd.DataFrame, configs: pd.DataFrame, connector: str, task: int) -> pd.DataFrame:
    """Commit health before and after each change of the task producer's batch.size / linger.ms
    (from the config dumps): attempts, failure share, outstanding at flush, commit time.
    Empty when the bundle holds a single setting.

    Example:
        >>> before_after(tables.empty("commits"), pd.DataFrame(columns=["ts", "scope", "entity", "key", "value"]), "c", 0).empty
        True
    """
    cols = [
        "period",
        "from",
        "batch.size",
        "linger.ms",
        "attempts",
        "failed_or_timeout",
        "failure_pct",
        "outstanding_median",
        "outstanding_max",
        "duration_ms_max",
    ]
    h = producer_history(configs)
    if h.empty:
        return pd.DataFrame(columns=cols)
    cid = producer_client_id(connector, task)
    hh = h[h["client_id"] == cid]
    if hh.empty:
        hh = h[h["client_id"].astype(str).str.contains(connector, regex=False)]
    hh = hh.assign(sig=hh["batch.size"].astype(str) + "/" + hh["linger.ms"].astype(str))
    hh = hh[hh["sig"] != hh["sig"].shift()]
    if len(hh) < 2:
        return pd.DataFrame(columns=cols)
    c = filter_commits(commits, connector, task)
    rows = []
    bounds = list(hh["ts"]) + [pd.Timestamp.max.tz_localize("UTC")]
    for i, (_, r) in enumerate(hh.iterrows()):
        lo = bounds[i] if i else pd.Timestamp.min.tz_localize("UTC")
        part = c[(c["ts"] >= lo) & (c["ts"] < bounds[i + 1])]
        bad = part["outcome"].isin(["timeout", "failed"]).sum()
        o = pd.to_numeric(part["outstanding"], errors="coerce")
        d = pd.to_numeric(part["duration_ms"], errors="coerce")
        rows.append(
            {
                "period": "before" if i == 0 else f"after change {i}",
                "from": r["ts"],
                "batch.size": r["batch.size"],
                "linger.ms": r["linger.ms"],
                "attempts": len(part),
                "failed_or_timeout": int(bad),
                "failure_pct": round(100.0 * bad / len(part), 1) if len(part) else None,
                "outstanding_median": o.median(),
                "outstanding_max": o.max(),
                "duration_ms_max": d.max(),
            }
        )
    return pd.DataFrame(rows, columns=cols)
