"""The time window (and host list) a bundle is looked at through: ``start <= time < end``, UTC,
END always exclusive.

One type, three forms of the same cut, so a table read from memory, from Parquet or through
DuckDB keeps exactly the same rows:

- :meth:`Window.frame` cuts a pandas frame,
- :meth:`Window.arrow` is the filter pushed down to a Parquet scan,
- :meth:`Window.sql` is the ``where`` clause of a DuckDB query.

Each takes the name of the column that holds a table's time (``ts`` for most tables; see
:func:`kitlib.tables.time_column`); an empty name, or a frame without that column, means the
table is cut only by host.

Example:
    >>> import pandas as pd
    >>> w = Window.of("2026-11-23 10:00", "2026-11-23 10:05", ["broker-1"])
    >>> df = pd.DataFrame({"ts": pd.to_datetime(["2026-11-23 10:00", "2026-11-23 10:05"], utc=True),
    ...                    "host": ["broker-1", "broker-1"]})
    >>> len(w.frame(df))
    1
    >>> print(w.sql())
    ts >= TIMESTAMPTZ '2026-11-23T10:00:00+00:00' and ts < TIMESTAMPTZ '2026-11-23T10:05:00+00:00' and CAST("host" AS VARCHAR) IN ('broker-1')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow.compute as pc


def utc(t) -> pd.Timestamp:
    """``t`` (ISO text, a datetime or a Timestamp) as a UTC Timestamp; a naive time is taken as UTC.

    Example:
        >>> utc("2026-11-23T10:00+01:00")
        Timestamp('2026-11-23 09:00:00+0000', tz='UTC')
    """
    ts = pd.Timestamp(t)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


@dataclass(frozen=True)
class Window:
    """``start <= time < end`` (UTC; None means open on that side) on ``hosts`` (None means all)."""

    start: pd.Timestamp | None = None
    end: pd.Timestamp | None = None
    hosts: tuple[str, ...] | None = None

    @classmethod
    def of(cls, start=None, end=None, hosts=None) -> Window:
        """A window from what a user types: ISO strings or Timestamps (naive means UTC), and a
        list of host names (an empty list means all hosts)."""
        return cls(
            utc(start) if start is not None else None,
            utc(end) if end is not None else None,
            tuple(str(h) for h in hosts) if hosts else None,
        )

    @property
    def whole(self) -> bool:
        """Whether this window keeps everything."""
        return self.start is None and self.end is None and not self.hosts

    def within(self, other: Window) -> Window:
        """The part of this window that also lies in ``other`` (the later start, the earlier end,
        ``other``'s hosts where it names some).

        Example:
            >>> Window.of("2026-01-01", "2026-01-03").within(Window.of("2026-01-02", None)).start.day
            2
        """
        return Window(
            max(filter(None, [self.start, other.start]), default=None),
            min(filter(None, [self.end, other.end]), default=None),
            other.hosts if other.hosts is not None else self.hosts,
        )

    def mask(self, df: pd.DataFrame, time_column: str = "ts") -> np.ndarray:
        """A boolean per row of ``df``: whether the row lies in the window. A missing time is
        outside any window that has a start or an end."""
        keep = np.ones(len(df), bool)
        if time_column and time_column in df.columns and pd.api.types.is_datetime64_any_dtype(df[time_column]):
            t = df[time_column]
            if self.start is not None:
                keep &= (t >= self.start).fillna(False).to_numpy(bool)
            if self.end is not None:
                keep &= (t < self.end).fillna(False).to_numpy(bool)
        if self.hosts and "host" in df.columns:
            keep &= df["host"].astype("string").isin(list(self.hosts)).fillna(False).to_numpy(bool)
        return keep

    def frame(self, df: pd.DataFrame, time_column: str = "ts") -> pd.DataFrame:
        """The rows of ``df`` in the window (``df`` itself when it keeps them all)."""
        keep = self.mask(df, time_column)
        return df if keep.all() else df[keep].reset_index(drop=True)

    def arrow(self, names: list[str], time_column: str = "ts") -> pc.Expression | None:
        """The window as a filter for a pyarrow dataset whose columns are ``names``; None when it
        keeps everything."""
        import pyarrow as pa
        import pyarrow.compute as pc

        cond = []
        if time_column and time_column in names:
            if self.start is not None:
                cond.append(pc.field(time_column) >= _arrow_time(self.start))
            if self.end is not None:
                cond.append(pc.field(time_column) < _arrow_time(self.end))
        if self.hosts and "host" in names:
            cond.append(pc.field("host").cast(pa.string()).isin(list(self.hosts)))
        if not cond:
            return None
        out = cond[0]
        for c in cond[1:]:
            out = out & c
        return out

    def sql(self, time_column: str = "ts") -> str:
        """The window as a DuckDB ``where`` condition (``true`` when it keeps everything)."""
        cond = []
        if time_column and self.start is not None:
            cond.append(f"{time_column} >= TIMESTAMPTZ '{self.start.isoformat()}'")
        if time_column and self.end is not None:
            cond.append(f"{time_column} < TIMESTAMPTZ '{self.end.isoformat()}'")
        if self.hosts:
            cond.append(f'CAST("host" AS VARCHAR) IN ({sql_values(self.hosts)})')
        return " and ".join(cond) or "true"


def sql_values(values) -> str:
    """``values`` as a quoted DuckDB list body: ``'a', 'b'``."""
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)


def _arrow_time(t: pd.Timestamp):
    import pyarrow as pa

    return pa.scalar(t.value, pa.timestamp("ns", tz="UTC"))
