"""Dates in log records: the date formats a layout may write (:func:`date_regex`), their fields
read into epoch milliseconds on whole columns (:func:`fields_to_wall_ms`, :func:`epoch_ms`),
zones and offsets (:func:`zone_offsets_ms`, :func:`to_utc_ms`), and a file's record of the
daylight-saving changes its local times cross (:func:`fold_tracker`, :func:`note_times`). What
holds for the times of every format (the range the tables hold, reading a local time in a zone)
is in :mod:`kitlib.formats.times`.

Example:
    >>> epoch_ms(np.array([2024]), np.array([5]), np.array([22]), 0, 32, 3, 23).tolist()
    [1716337923023]
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.formats import Context, times
from kitlib.sources import SourceFile

# a row without a time, in a column of int64 epoch milliseconds
NO_STAMP = np.iinfo(np.int64).min

ANY_ISO = (
    r"(?P<Y>\d{4})-(?P<Mo>\d{2})-(?P<D>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})"
    r"(?:[.,](?P<f>\d{1,9}))?(?P<tz>Z|[+-]\d{2}(?::?\d{2})?)?"
)


ANY_TIME = r"(?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?"


NAMED_DATES = {
    "ISO8601": ANY_ISO,  # log4j 1 / logback: space; log4j2: 'T' -- both accepted
    "DEFAULT": "yyyy-MM-dd HH:mm:ss,SSS",
    "ISO8601_BASIC": "yyyyMMdd'T'HHmmss,SSS",
    "ISO8601_OFFSET_DATE_TIME_HHMM": "yyyy-MM-dd'T'HH:mm:ss,SSSXX",
    "ISO8601_OFFSET_DATE_TIME_HHCMM": "yyyy-MM-dd'T'HH:mm:ss,SSSXXX",
    "ABSOLUTE": "HH:mm:ss,SSS",
    "ABSOLUTE_MICROS": "HH:mm:ss,SSSSSS",
    "DATE": "dd MMM yyyy HH:mm:ss,SSS",
    "COMPACT": "yyyyMMddHHmmssSSS",
    "UNIX_MILLIS": r"(?P<epoch>\d{13})",
    "UNIX": r"(?P<epoch>\d{10})",
    "ANY_ISO": ANY_ISO,
    "ANY_TIME": ANY_TIME,
}


MONTHS = {
    m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
}


_DATE_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.DOTALL)


def date_regex(fmt: str) -> str:
    """RE2 for a ``SimpleDateFormat``/``DateTimeFormatter`` pattern or a named format, with the
    groups Y, Mo (or Mon), D, h, mi, s, f, ampm, tz, epoch that :func:`fields_to_wall_ms` reads.

    Example:
        >>> re.fullmatch(date_regex("yyyy-MM-dd'T'HH:mm:ss.SSSXXX"), "2024-05-22T00:32:03.023+02:00") is not None
        True
    """
    fmt = fmt.strip()
    if fmt in NAMED_DATES:
        fmt = NAMED_DATES[fmt]
        if "(?P<" in fmt:
            return fmt
    out, used = [], set()

    def grp(name, rx):
        if name in used:
            return f"(?:{rx})"
        used.add(name)
        return f"(?P<{name}>{rx})"

    for m in _DATE_TOKEN.finditer(fmt):
        tok = m.group(0)
        if tok.startswith("'"):
            out.append(re.escape(tok[1:-1].replace("''", "'")) if len(tok) > 2 else "'")
            continue
        c, n = tok[0], len(tok)
        if not c.isalpha():
            out.append(re.escape(tok))
        elif c in "yu":
            out.append(grp("Y", r"\d{2}" if n == 2 else r"\d{4}"))
        elif c in "ML":
            out.append(grp("Mo", r"\d{1,2}") if n <= 2 else grp("Mon", r"[A-Za-z]{3,9}"))
        elif c == "d":
            out.append(grp("D", r"\d{1,2}" if n == 1 else r"\d{2}"))
        elif c in "Hkhk":
            out.append(grp("h", r"\d{1,2}" if n == 1 else r"\d{2}"))
        elif c == "m":
            out.append(grp("mi", r"\d{2}"))
        elif c == "s":
            out.append(grp("s", r"\d{2}"))
        elif c in "Sn":
            out.append(grp("f", rf"\d{{{n}}}"))
        elif c == "a":
            out.append(grp("ampm", r"[AaPp][Mm]"))
        elif c in "XxZ":
            out.append(grp("tz", r"Z|[+-]\d{2}(?::?\d{2})?"))
        elif c in "zVO":
            out.append(grp("tz", r"[A-Za-z][A-Za-z0-9/_+-]{0,30}"))
        elif c == "E":
            out.append(r"[A-Za-z]{2,9}")
        else:
            out.append(r"\S+")
    return "".join(out)


def _ints(col, default: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A string column of digits -> (int64 values, present mask); '' and null are absent."""
    col = pc.fill_null(col, "")
    present = pc.greater(pc.utf8_length(col), 0)
    vals = pc.cast(pc.if_else(present, col, pa.scalar(str(default), col.type)), pa.int64())
    return vals.to_numpy(zero_copy_only=False), present.to_numpy(zero_copy_only=False)


def fields_to_wall_ms(m: pa.StructArray, p: str = "") -> tuple[np.ndarray, np.ndarray]:
    """Wall-clock epoch ms from the date groups of an ``extract_regex`` result (prefix ``p``),
    and a mask of rows where a full date and time was present."""
    names = {m.type.field(i).name for i in range(m.type.num_fields)}
    n = len(m)
    if f"{p}epoch" in names:
        v, ok = _ints(m.field(f"{p}epoch"))
        return np.where(v < 10**11, v * 1000, v), ok
    if not {f"{p}D", f"{p}h"} <= names or not ({f"{p}Mo", f"{p}Mon"} & names) or f"{p}Y" not in names:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    y, ok = _ints(m.field(f"{p}Y"))
    y = np.where(_two_digit(m.field(f"{p}Y")), y + 2000, y)  # yy: this century; yyyy as written
    ok &= times.years_ok(y)  # a year the tables cannot hold is no time (see out_of_range_years)
    if f"{p}Mo" in names:
        mo, okm = _ints(m.field(f"{p}Mo"))
    else:
        d = pc.utf8_lower(pc.utf8_slice_codeunits(pc.fill_null(m.field(f"{p}Mon"), ""), 0, 3)).dictionary_encode()
        look = np.array([MONTHS.get(v, 0) for v in d.dictionary.to_pylist()] + [0], np.int64)
        idx = d.indices.to_numpy(zero_copy_only=False)
        mo = look[idx] if len(look) > 1 else np.zeros(n, np.int64)
        okm = mo > 0
    day, okd = _ints(m.field(f"{p}D"))
    hh, okh = _ints(m.field(f"{p}h"))
    mi, _ = _ints(m.field(f"{p}mi")) if f"{p}mi" in names else (np.zeros(n, np.int64), None)
    ss, _ = _ints(m.field(f"{p}s")) if f"{p}s" in names else (np.zeros(n, np.int64), None)
    if f"{p}f" in names:
        f3 = pc.utf8_slice_codeunits(pc.utf8_rpad(pc.fill_null(m.field(f"{p}f"), ""), 3, "0"), 0, 3)
        frac, _ = _ints(f3)
    else:
        frac = np.zeros(n, np.int64)
    if f"{p}ampm" in names:
        pm = pc.equal(pc.utf8_upper(pc.fill_null(m.field(f"{p}ampm"), "")), "PM").to_numpy(zero_copy_only=False)
        hh = np.where(pm & (hh < 12), hh + 12, np.where(~pm & (hh == 12), 0, hh))
    ok = ok & okm & okd & okh & (mo >= 1) & (mo <= 12) & (day >= 1) & (day <= 31) & (hh < 24) & (mi < 60) & (ss < 61)
    valid = m.is_valid().to_numpy(zero_copy_only=False)
    ok &= valid
    mo = np.where(ok, mo, 1)
    day = np.where(ok, day, 1)
    return epoch_ms(y, mo, day, hh, mi, ss, frac), ok


def _two_digit(col) -> np.ndarray:
    return np.asarray(pc.equal(pc.utf8_length(pc.fill_null(col, "")), 2).to_numpy(zero_copy_only=False), bool)


def out_of_range_years(m: pa.StructArray, p: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(mask, years) of the rows whose date has a year the tables cannot hold (a four-digit
    year is taken as written: 0001 is not 2001)."""
    n = len(m)
    if f"{p}Y" not in {m.type.field(i).name for i in range(m.type.num_fields)}:
        return np.zeros(n, bool), np.zeros(n, np.int64)
    y, present = _ints(m.field(f"{p}Y"))
    y = np.where(_two_digit(m.field(f"{p}Y")), y + 2000, y)
    return present & ~times.years_ok(y), y


def zone_offsets_ms(col) -> np.ndarray:
    """UTC offsets in ms of zone strings ('Z', '+02:00', '+0200', '-05', 'UTC'); ``NO_STAMP``
    where there is none or it is a name other than UTC/GMT (then the file's zone applies)."""
    d = pc.fill_null(col, "").dictionary_encode()
    look = []
    for z in d.dictionary.to_pylist():
        mz = re.fullmatch(r"([+-])(\d{2}):?(\d{2})?", z)
        if z in ("Z", "UTC", "GMT", "Etc/UTC"):
            look.append(0)
        elif mz:
            sign = -1 if mz.group(1) == "-" else 1
            look.append(sign * (int(mz.group(2)) * 60 + int(mz.group(3) or 0)) * 60000)
        else:
            look.append(NO_STAMP)
    table = np.array([*look, NO_STAMP], np.int64)
    return table[d.indices.to_numpy(zero_copy_only=False)] if len(d) else np.zeros(0, np.int64)


def to_utc_ms(wall: np.ndarray, ok: np.ndarray, off: np.ndarray, tz: str, gaps: list[int] | None = None) -> np.ndarray:
    """UTC ms from wall-clock ms: minus the stamp's own offset where it has one, else read in
    the file's zone ``tz`` (see :func:`kitlib.formats.times.localize`; the number of local times
    that do not exist there is appended to ``gaps``)."""
    out = wall - np.where(off == NO_STAMP, 0, off)
    local = ok & (off == NO_STAMP)
    if local.any() and tz not in ("UTC", "Etc/UTC", "utc", "Z", None, ""):
        out[local], _, n_gap = times.localize(wall[local], tz)
        if gaps is not None:
            gaps.append(n_gap)
    return out


def epoch_ms(y, m, d, hh, mi, ss, ms):
    y = y.astype(np.int64) - (m <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (m.astype(np.int64) + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    days = era * 146097 + doe - 719468
    return (((days * 24 + hh) * 60 + mi) * 60 + ss) * 1000 + ms


def fold_tracker(src: SourceFile, tz: str | None = None) -> times.FoldTracker:
    """The file's record of its daylight-saving changes (made fresh when a parse starts)."""
    tracker = times.FoldTracker(tz or src.tz)
    src.meta["fold"] = tracker
    return tracker


def note_times(src: SourceFile, ctx: Context) -> None:
    """Say in the file's note what was assumed about its local times."""
    tracker = src.meta.get("fold")
    note = tracker.note() if tracker is not None else ""
    if note:
        ctx.notes.append(note)
