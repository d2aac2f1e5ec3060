"""The drain model as the notebook shows it: the source task that failed most often in the window,
its :class:`~kitlib.investigations.connect_offsets.model.DrainModel` told in a few lines, and
the what-if table of its current and proposed producer settings.

Example:
    >>> from kitlib import tables
    >>> from kitlib.investigations.connect_offsets import views
    >>> commits = tables.empty("commits")
    >>> worst = worst_task(None, views.task_summary(commits), commits)
    >>> print(worst.text())
    No source task timed out or failed to commit in this window.
    >>> worst.table().empty
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from kitlib.investigations.connect_offsets.arithmetic import what_if
from kitlib.investigations.connect_offsets.model import DrainModel, task_model

# what the drain table and chart say when the bundle cannot give the drain time
NO_DRAIN = (
    "Drain time needs how many messages were still unacknowledged when a flush timed out. Kafka 2.x workers "
    "log it ('timed out while waiting for producer to flush outstanding N messages'); 3.x workers do not, "
    "and there a timeout is the offset write itself, not the producer drain (see the finding below)."
)


@dataclass
class WorstTask:
    """The source task with the most timed-out or failed commits: its model (None when no source
    task failed) and the what-if rows (empty when the model lacks a figure it needs)."""

    model: DrainModel | None
    whatif: pd.DataFrame = field(default_factory=pd.DataFrame)

    def text(self) -> str:
        """The model in a few lines: failures, settings, records per request, outstanding messages,
        and the round trip or what the model lacks."""
        m = self.model
        if m is None:
            return "No source task timed out or failed to commit in this window."
        lines = [
            f"task {m.connector}-{m.task}: {m.failed} of {m.attempts} commits failed",
            f"  offset.flush.timeout.ms {m.timeout_ms:,.0f} ms; batch.size {m.batch_size:,.0f} bytes; "
            f"linger.ms {m.linger_ms:,.0f} ms; max.in.flight {m.in_flight}",
            f"  records per request ~{m.records_per_request:,.1f} ({m.records_per_request_source})",
            f"  outstanding at flush: median {m.outstanding:,.0f}, max {m.outstanding_max:,.0f} ({m.outstanding_source})",
        ]
        if not m.missing:
            lines.append(
                f"  acknowledged per timeout window: {m.drained_per_timeout:,.0f} -> round trip "
                f"{m.round_trip_s * 1000:.2f} ms ({m.round_trip_source})"
            )
        else:
            lines.append("  the drain model lacks " + "; ".join(m.missing))
        return "\n".join(lines)

    def table(self) -> pd.DataFrame:
        """The what-if rows as shown: the timeout in milliseconds, as the worker's setting is given."""
        if self.model is None or not len(self.whatif):
            return self.whatif
        return self.whatif.drop(columns=["timeout_s"]).assign(timeout_ms=self.model.timeout_ms)


def worst_task(
    bundle,
    summary: pd.DataFrame,
    commits: pd.DataFrame,
    record_bytes: float | None = None,
    new_batch_size: float | None = None,
    new_linger_ms: float | None = None,
) -> WorstTask:
    """The drain model of the source task in ``summary`` (:func:`~.views.task_summary` of
    ``commits``) with the most timed-out or failed commits, and its what-if rows for
    ``new_batch_size`` (default 20 times the current) and ``new_linger_ms`` (default the current
    one, at least 10). ``record_bytes`` is the average record size when the bundle has no producer
    metrics."""
    bad = summary.assign(bad=summary["timeout"] + summary["failed"]).sort_values("bad", ascending=False)
    bad = bad[(bad["bad"] > 0) & (bad["kind"] == "source")]
    if bad.empty:
        return WorstTask(None)
    w = bad.iloc[0]
    m = task_model(bundle, str(w["connector"]), int(w["task"]), commits, record_bytes_hint=record_bytes)
    if m.missing:
        return WorstTask(m)
    whatif = what_if(
        m.outstanding,
        m.batch_size,
        m.records_per_request,
        m.round_trip_s,
        m.timeout_ms,
        m.in_flight,
        m.linger_ms,
        new_batch_size,
        new_linger_ms if new_linger_ms is not None else max(m.linger_ms, 10),
        m.max_request_size,
    )
    return WorstTask(m, whatif)
