"""Reading times safely: the one home for turning stamps, epoch numbers and local wall-clock
times into the UTC times the tables hold.

- The tables hold ``datetime64[ns]``: 1678..2261. A time outside that costs its line (kept in
  ``unparsed`` with :func:`year_reason`), never the file, and is never shifted into range.
- Epoch numbers: the unit (s, ms, us, ns) is read per column from the magnitude of its values
  (:func:`epoch_unit`); zero and negative values are no times at all.
- Local times in a zone with daylight saving time: a wall-clock time of the repeated hour (the
  autumn change) is ambiguous. :func:`localize` reads it as the first pass (summer time); a
  reader then moves the records written after the clock went back (the lines' order says so:
  :class:`FoldTracker`) to the second pass. A wall-clock time that does not exist (the spring
  change's gap) is read with the offset before the change. Both are counted, so the file's
  ``note`` says what was assumed.

Example:
    >>> ms, ok = epoch_to_ms(np.array([1795391000.5, 0, -5]), "s")
    >>> ms.tolist(), ok.tolist()
    ([1795391000500, 0, 0], [True, False, False])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

YEAR_MIN, YEAR_MAX = 1678, 2261  # whole years datetime64[ns] holds
MS_MIN = int(pd.Timestamp(f"{YEAR_MIN}-01-01", tz="UTC").value // 1_000_000)
MS_MAX = int(pd.Timestamp(f"{YEAR_MAX}-12-31 23:59:59.999", tz="UTC").value // 1_000_000)
UTC_NAMES = ("UTC", "Etc/UTC", "utc", "Z", "GMT", "Etc/GMT", None, "")

# epoch units by magnitude: a value below the bound is read in that unit (1e11 s is year 5138,
# 1e14 ms is 5138, ...; the present is ~1.8e9 s, ~1.8e12 ms, ~1.8e15 us, ~1.8e18 ns)
_UNITS = (("s", 1e11, 1000.0), ("ms", 1e14, 1.0), ("us", 1e17, 1e-3), ("ns", float("inf"), 1e-6))


def year_reason(year: int) -> str:
    """The unparsed reason of a time whose year the tables cannot hold.

    Example:
        >>> year_reason(1)
        'timestamp year 0001 is out of range (1678-2261)'
    """
    return f"timestamp year {int(year):04d} is out of range ({YEAR_MIN}-{YEAR_MAX})"


def years_ok(year: np.ndarray) -> np.ndarray:
    """Which four-digit years the tables hold."""
    return (year >= YEAR_MIN) & (year <= YEAR_MAX)


def epoch_unit(values: np.ndarray) -> str:
    """The unit of a column of epoch numbers, from the median of its positive values (``ms``
    when there is none).

    Example:
        >>> epoch_unit(np.array([1795391000, 1795391001])), epoch_unit(np.array([1.795391e12]))
        ('s', 'ms')
    """
    v = np.asarray(values, dtype=np.float64)
    pos = v[np.isfinite(v) & (v > 0)]
    if not len(pos):
        return "ms"
    med = float(np.median(pos))
    return next(name for name, bound, _ in _UNITS if med < bound)


def epoch_to_ms(values: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Epoch numbers in ``unit`` -> (int64 epoch ms, ok). Not ok: zero, negative, not finite,
    or out of the tables' range (the ms value is then 0)."""
    v = np.asarray(values, dtype=np.float64)
    factor = next(f for name, _, f in _UNITS if name == unit)
    with np.errstate(invalid="ignore", over="ignore"):
        ms = np.round(v * factor)
    ok = np.isfinite(ms) & (v > 0) & (ms >= MS_MIN) & (ms <= MS_MAX)
    return np.where(ok, ms, 0).astype(np.int64), ok


def epoch_reason(value: float, unit: str) -> str:
    """Why an epoch number is no time (see :func:`epoch_to_ms`)."""
    if not np.isfinite(value):
        return f"time {value} is not a number"
    shown = np.format_float_positional(value, trim="-")
    if value <= 0:
        return f"time {shown} is {'zero' if value == 0 else 'negative'}: no epoch time"
    return f"time {shown} is out of range (epoch {unit} for {YEAR_MIN}-{YEAR_MAX})"


def timestamp(value, unit: str | None = None, tz: str | None = None) -> pd.Timestamp | None:
    """One time as a UTC Timestamp, or None when it cannot be read or the tables cannot hold it
    (a scalar parse that never raises: year 9999, 1e30 ms, 'nonsense').

    Example:
        >>> timestamp("9999-12-31T00:00:00Z") is None, str(timestamp(1795391000, "s"))
        (True, '2026-11-22 23:43:20+00:00')
    """
    try:
        if unit is not None:
            v = float(value)
            got, ok = epoch_to_ms(np.array([v]), unit)
            return pd.Timestamp(int(got[0]), unit="ms", tz="UTC") if ok[0] else None
        t = pd.Timestamp(value)
        if t is pd.NaT:
            return None
        t = t.tz_localize(tz or "UTC", ambiguous=True, nonexistent="shift_forward") if t.tzinfo is None else t
        t = t.tz_convert("UTC")
        ms = int(t.asm8.astype("datetime64[ms]").astype(np.int64))  # in the stamp's own unit: no overflow
    except (ValueError, TypeError, OverflowError, ArithmeticError):
        return None
    return t.as_unit("ns") if MS_MIN <= ms <= MS_MAX else None


def iso_to_utc(texts: pd.Series, fmt: str) -> tuple[pd.Series, np.ndarray]:
    """ISO-8601 strings (with their offsets) -> (``datetime64[ns, UTC]`` series, out of range).
    A string whose four-digit year the tables cannot hold is NaT and flagged; one that does not
    parse is NaT and not flagged."""
    s = texts.astype("string")
    year = pd.to_numeric(s.str.slice(0, 4), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    far = np.isfinite(year) & ~years_ok(year)
    ts = pd.to_datetime(s.where(~far), format=fmt, utc=True, errors="coerce").astype("datetime64[ns, UTC]")
    return ts, far


def localize(wall_ms: np.ndarray, tz: str | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Wall-clock epoch ms read in ``tz`` -> (UTC epoch ms, ambiguous mask, nonexistent count).

    An ambiguous time (the repeated hour) is read as its first pass, summer time (a reader moves
    the second pass, see :class:`FoldTracker`); a time in the spring gap is read with the offset
    in force before the change (a clock not yet moved on)."""
    n = len(wall_ms)
    if tz in UTC_NAMES or not n:
        return wall_ms, np.zeros(n, bool), 0
    off = _steady_offset(int(wall_ms.min()), int(wall_ms.max()), tz, wall=True)
    if off is not None:  # no change of offset near these times: one subtraction
        return wall_ms - off, np.zeros(n, bool), 0
    idx = pd.DatetimeIndex(wall_ms.astype("datetime64[ms]"))
    first = idx.tz_localize(tz, ambiguous=np.ones(n, bool), nonexistent="NaT")
    utc = first.as_unit("ms").asi8.copy()
    gap = np.asarray(first.isna())
    if gap.any():  # offset before the change: that of the same wall time a few hours earlier
        before = (idx[gap] - pd.Timedelta(hours=6)).tz_localize(tz, ambiguous=True, nonexistent="shift_forward")
        off = before.tz_localize(None).as_unit("ms").asi8 - before.as_unit("ms").asi8
        utc[gap] = wall_ms[gap] - off
    second = idx.tz_localize(tz, ambiguous=np.zeros(n, bool), nonexistent="NaT").as_unit("ms").asi8
    amb = ~gap & (second != utc)
    return utc, amb, int(gap.sum())


_PAD_MS = 3 * 3_600_000
_SPAN_MS = 100 * 86_400_000


def _steady_offset(lo: int, hi: int, tz: str, wall: bool) -> int | None:
    """The UTC offset (ms) of ``tz`` over [lo, hi] (wall-clock or UTC ms) when it does not
    change within a few hours of that range, else None. Offsets alternate twice a year: equal
    offsets at both padded ends of a range shorter than 100 days mean no change inside."""
    if hi - lo > _SPAN_MS:
        return None
    ends = pd.DatetimeIndex(np.array([lo - _PAD_MS, hi + _PAD_MS]).astype("datetime64[ms]"))
    if wall:
        loc = ends.tz_localize(tz, ambiguous=np.array([True, True]), nonexistent="NaT")
        if loc.isna().any():
            return None
        offs = ends.as_unit("ms").asi8 - loc.as_unit("ms").asi8
    else:
        offs = ends.tz_localize("UTC").tz_convert(tz).tz_localize(None).as_unit("ms").asi8 - ends.as_unit("ms").asi8
    return int(offs[0]) if offs[0] == offs[1] else None


@dataclass
class FoldTracker:
    """Carries, across the blocks of one file, what its lines' order says about the repeated
    hour: once the wall clock goes back inside it (by more than ``jitter_ms``: records of
    several threads are a little out of order), later records of that hour are its second
    pass. ``moved`` and ``ambiguous`` count records for the file's note."""

    tz: str | None
    jitter_ms: int = 60_000
    last_wall: int | None = None  # the largest wall time seen so far
    second_day: int | None = None  # the local day whose repeated hour is in its second pass
    ambiguous: int = 0
    moved: int = 0
    gaps: int = 0
    days: set = field(default_factory=set)

    def resolve(self, utc_ms: np.ndarray) -> np.ndarray | None:
        """The ms to add to each record (records in file order; None when none changes)."""
        if self.tz in UTC_NAMES or not len(utc_ms):
            return None
        off = _steady_offset(int(utc_ms.min()), int(utc_ms.max()), self.tz, wall=False)
        if off is not None:
            top = int(utc_ms.max()) + off
            self.last_wall = top if self.last_wall is None else max(self.last_wall, top)
            return None
        t = pd.DatetimeIndex(utc_ms.astype("datetime64[ms]")).tz_localize("UTC").tz_convert(self.tz)
        wall = t.tz_localize(None).as_unit("ms").asi8
        prior = np.maximum.accumulate(wall)
        if self.last_wall is not None:
            prior = np.maximum(prior, self.last_wall)
        before = np.empty_like(prior)
        before[0] = self.last_wall if self.last_wall is not None else np.iinfo(np.int64).min
        before[1:] = prior[:-1]
        self.last_wall = int(prior[-1])
        _, amb, _ = localize(wall, self.tz)
        if not amb.any():
            return None
        k = np.flatnonzero(amb)
        day = wall[k] // 86_400_000
        drop = wall[k] < before[k] - self.jitter_ms
        # a drop starts the second pass of that day's repeated hour; it lasts to the hour's end
        pos = np.arange(len(k))
        last_drop = np.maximum.accumulate(np.where(drop, pos, -1))
        new_day = np.ones(len(k), bool)
        new_day[1:] = day[1:] != day[:-1]
        day_start = np.maximum.accumulate(np.where(new_day, pos, 0))
        second = last_drop >= day_start
        if self.second_day is not None:
            second |= day == self.second_day
        if second.any():
            self.second_day = int(day[second][-1])
        self.ambiguous += len(k)
        self.moved += int(second.sum())
        self.days.update(int(d) for d in np.unique(day))
        shift = np.zeros(len(utc_ms), np.int64)
        if second.any():
            sw = wall[k[second]]
            std = pd.DatetimeIndex(sw.astype("datetime64[ms]")).tz_localize(self.tz, ambiguous=np.zeros(len(sw), bool))
            shift[k[second]] = std.as_unit("ms").asi8 - utc_ms[k[second]]
        return shift if shift.any() else None

    def note(self) -> str:
        """What was assumed, for the file's note ('' when nothing)."""
        out = []
        if self.ambiguous:
            out.append(
                f"{self.ambiguous} records in the repeated hour of a daylight-saving change in {self.tz}: "
                f"{self.ambiguous - self.moved} read as its first pass (summer time), {self.moved} as its "
                "second, from the order of the lines"
            )
        if self.gaps:
            out.append(
                f"{self.gaps} records at local times that do not exist in {self.tz} (the spring-forward gap): "
                "read with the offset before the change"
            )
        return "; ".join(out)
