"""JSON-structured logs (one JSON object per line) -> the ``events`` table.

Dialects recognised by their keys (the first key present wins):

============  ==========================================================================
time          ``@timestamp`` (ECS, logstash encoders), ``timestamp``, ``time``, ``instant``
              (log4j2 ``{epochSecond, nanoOfSecond}`` or a string), ``timeMillis``
level         ``log.level`` (ECS flat), ``log: {level}`` (ECS nested), ``level``, ``severity``
logger        ``log.logger``, ``log: {logger}``, ``logger_name`` (logstash), ``loggerName``
              (log4j2 JsonLayout), ``logger`` (Strimzi's log4j 1 JSON)
message       ``message``, ``msg``
stack trace   ``error.stack_trace`` (ECS / JsonTemplateLayout's EcsLayout), ``error: {stack_trace}``,
              ``stack_trace`` (logstash-logback-encoder), ``exception: {stacktrace}`` or a string
              (log4j-jsonevent-layout, Strimzi's JSON option), ``thrown: {extendedStackTrace}``
============  ==========================================================================

The stack trace is appended to the message after a newline, so a record stays whole. Thread
keys are read past (the events table has no thread column).

How it stays fast: the keys in use are found on the file's first lines; each block of lines is
then read by ``pyarrow.json`` with an explicit schema of just those keys (other keys ignored,
so varying extra fields do not matter); timestamps are split by one Arrow regex. Only a block
that Arrow cannot read (a line that is not JSON, a key whose type changes) is read line by line
with Python's ``json``, and its bad lines go to ``unparsed``.

Example:
    >>> from kitlib.formats.logs import parse_bytes
    >>> ev, un = parse_bytes(b'{"@timestamp":"2024-05-22T00:32:03.023Z","log.level":"WARN",'
    ...                      b'"message":"hi","log.logger":"kafka.Foo"}\\n', "json")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist()
    ['WARN', 'kafka.Foo', 'hi']
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from kitlib.events import LEVELS, block_events, empty_events
from kitlib.formats import Context, register, unparsed_frame
from kitlib.formats.logs import containers
from kitlib.formats.logs.blocks import head_lines, junk_lines, line_bounds, lines_array
from kitlib.formats.logs.containers import unwrap_block
from kitlib.formats.logs.dates import ANY_ISO, NO_STAMP, fields_to_wall_ms, to_utc_ms, zone_offsets_ms
from kitlib.formats.logs.inference import manifest_layout
from kitlib.formats.logs.records import clean_loggers, level_codes, redact_messages
from kitlib.sources import SourceError, SourceFile, read_chunks
from kitlib.sources import head as source_head

# candidate paths per role, in order of preference; a path is a key or key/subkey
TIME_KEYS = ["@timestamp", "timestamp", "time", "instant", "timeMillis", "date"]


LEVEL_KEYS = ["log.level", "log/level", "level", "severity", "loglevel"]


LOGGER_KEYS = ["log.logger", "log/logger", "logger_name", "loggerName", "logger", "logger.name"]


MESSAGE_KEYS = ["message", "msg", "@message"]


TRACE_KEYS = [
    "error.stack_trace",
    "error/stack_trace",
    "stack_trace",
    "exception/stacktrace",
    "exception",
    "thrown/extendedStackTrace",
    "stacktrace",
]


BLOCK = 16 * 1024 * 1024


@dataclass
class Dialect:
    """Which key holds each field, and the Arrow schema that reads just those keys."""

    time: str
    level: str | None
    logger: str | None
    message: str
    trace: str | None
    schema: pa.Schema


def _get(obj: dict, path: str):
    cur = obj
    for part in path.split("/"):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _arrow_type(v) -> pa.DataType:
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        return pa.int64()
    if isinstance(v, float):
        return pa.float64()
    return pa.string()


def dialect_of(objs: list[dict]) -> Dialect | None:
    """The dialect of these parsed lines, or None when they lack a message or a time."""

    def pick(keys):
        for k in keys:
            if any(_get(o, k) is not None for o in objs):
                return k
        return None

    time, message = pick(TIME_KEYS), pick(MESSAGE_KEYS)
    if time is None or message is None:
        return None
    level, logger, trace = pick(LEVEL_KEYS), pick(LOGGER_KEYS), pick(TRACE_KEYS)
    if trace == "exception" and any(isinstance(o.get("exception"), dict) for o in objs):
        trace = "exception/stacktrace" if any(_get(o, "exception/stacktrace") for o in objs) else None
    fields: dict[str, dict | pa.DataType] = {}
    for path in (time, level, logger, message, trace):
        if path is None:
            continue
        sample = next((_get(o, path) for o in objs if _get(o, path) is not None), "")
        top, _, sub = path.partition("/")
        if sub:
            fields.setdefault(top, {})[sub] = _arrow_type(sample)
        elif isinstance(sample, dict):  # log4j2 'instant': {epochSecond, nanoOfSecond}
            fields[top] = {k: _arrow_type(v) for k, v in sample.items() if k in ("epochSecond", "nanoOfSecond")}
        else:
            fields[top] = _arrow_type(sample)
    schema = pa.schema([(k, pa.struct(list(v.items())) if isinstance(v, dict) else v) for k, v in fields.items()])
    return Dialect(time, level, logger, message, trace, schema)


def _objects(head: bytes) -> tuple[list[dict], int]:
    """JSON objects among the first lines of ``head`` (container prefixes stripped), and how
    many non-blank lines were looked at."""
    lines = [ln for ln in head_lines(head, 100) if ln.strip()]
    if containers.has_prefix(lines):
        lines = [containers.PREFIX.sub(b"", ln, count=1) for ln in lines]
    objs = []
    for ln in lines:
        s = ln.strip()
        if s.startswith(b"{") and s.endswith(b"}"):
            try:
                o = json.loads(s)
            except ValueError:
                continue
            if isinstance(o, dict):
                objs.append(o)
    return objs, len(lines)


def detect(head: bytes, src: SourceFile) -> bool:
    """Most of the first lines are JSON objects with a time and a message (or ``bundle.yaml``
    says ``json`` for this file)."""
    forced = manifest_layout(src)
    if forced and forced.strip().lower() == "json":
        return True
    objs, n = _objects(head)
    return bool(objs) and len(objs) * 2 > n and dialect_of(objs) is not None


def _column(t: pa.Table, path: str | None):
    if path is None:
        return None
    top, _, sub = path.partition("/")
    if top not in t.column_names:
        return None
    col = t.column(top).combine_chunks()
    return pc.struct_field(col, sub) if sub else col


def _as_str(col, n: int):
    if col is None:
        return pa.array([""] * n, pa.large_string())
    if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
        col = pc.cast(col, pa.string()) if not pa.types.is_struct(col.type) else pa.nulls(n, pa.string())
    return pc.fill_null(pc.cast(col, pa.large_string()), "")


def _times(col, n: int, tz: str) -> tuple[np.ndarray, np.ndarray]:
    """(UTC ms, present) from a time column: ISO strings with or without zones, epoch numbers,
    log4j2's {epochSecond, nanoOfSecond}, or Arrow timestamps."""
    if col is None:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    t = col.type
    if pa.types.is_struct(t):
        names = {t.field(i).name for i in range(t.num_fields)}
        if "epochSecond" not in names:
            return np.zeros(n, np.int64), np.zeros(n, bool)
        sec = pc.struct_field(col, "epochSecond")
        ok = sec.is_valid().to_numpy(zero_copy_only=False)
        ms = pc.fill_null(pc.cast(sec, pa.int64()), 0).to_numpy(zero_copy_only=False) * 1000
        if "nanoOfSecond" in names:
            ms = (
                ms
                + pc.fill_null(pc.cast(pc.struct_field(col, "nanoOfSecond"), pa.int64()), 0).to_numpy(
                    zero_copy_only=False
                )
                // 1_000_000
            )
        return ms, ok
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        v = pc.fill_null(pc.cast(col, pa.float64()), np.nan).to_numpy(zero_copy_only=False)
        ok = ~np.isnan(v)
        v = np.where(ok, v, 0)
        return np.where(v < 1e11, v * 1000, v).astype(np.int64), ok
    if pa.types.is_timestamp(t):
        v = pc.cast(col if t.tz else pc.assume_timezone(col, "UTC"), pa.timestamp("ms", "UTC"))
        return pc.fill_null(pc.cast(v, pa.int64()), 0).to_numpy(zero_copy_only=False), v.is_valid().to_numpy(
            zero_copy_only=False
        )
    m = pc.extract_regex(pc.fill_null(pc.cast(col, pa.large_string()), ""), "^" + ANY_ISO)
    wall, ok = fields_to_wall_ms(m)
    return to_utc_ms(wall, ok, zone_offsets_ms(m.field("tz")), tz), ok


def _read(buf: bytes, n: int, dialect: Dialect) -> tuple[pa.Table | None, list[int]]:
    """Arrow table of the ``n`` JSON lines in ``buf`` (rows in order); when Arrow cannot read
    them, the table of the lines Python's json can read and the indexes of those it cannot."""
    try:
        t = pj.read_json(
            io.BytesIO(buf),
            read_options=pj.ReadOptions(block_size=max(len(buf) + 1, 1 << 20)),
            parse_options=pj.ParseOptions(explicit_schema=dialect.schema, unexpected_field_behavior="ignore"),
        )
        if t.num_rows == n:
            return t, []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    lines = buf.split(b"\n")[:n]
    rows: list[dict | None] = []
    bad: list[int] = []
    for i, ln in enumerate(lines):
        try:
            o = json.loads(ln)
            if not isinstance(o, dict):
                raise TypeError("not an object")
            rows.append({f.name: _fit(o.get(f.name), f.type) for f in dialect.schema})
        except (ValueError, TypeError):
            bad.append(i)
            rows.append(None)
    good = [r for r in rows if r is not None]
    return pa.Table.from_pylist(good, schema=dialect.schema) if good else None, bad


def _fit(v, t: pa.DataType):
    """A Python value coerced to the schema's type (None when it cannot be)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return (
            {t.field(i).name: _fit(v.get(t.field(i).name), t.field(i).type) for i in range(t.num_fields)}
            if isinstance(v, dict)
            else None
        )
    if pa.types.is_string(t):
        return v if isinstance(v, str) else json.dumps(v)
    if pa.types.is_integer(t):
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if pa.types.is_floating(t):
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return v


def parse_block(block: bytes, lines_before: int, src: SourceFile, dialect: Dialect, wrapped: bool):
    """Lines of ``block`` -> (events table, unparsed frame, lines in records, lines)."""
    cts = None
    if wrapped:
        block, cts = unwrap_block(block)
    a = np.frombuffer(block, np.uint8)
    starts, ends = line_bounds(a, block)
    nlines = len(starts)
    eff = ends - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))
    is_j, junk_reason = junk_lines(a, block, starts, ends)
    arr = lines_array(block, starts, ~is_j)
    trimmed = pc.utf8_trim_whitespace(pc.fill_null(arr, ""))
    blank = pc.equal(trimmed, "").to_numpy(zero_copy_only=False) & ~is_j
    cand = (
        pc.starts_with(trimmed, "{").to_numpy(zero_copy_only=False)
        & pc.ends_with(trimmed, "}").to_numpy(zero_copy_only=False)
        & ~is_j
    )
    idx = np.flatnonzero(cand)
    # the candidate lines' bytes, in one numpy selection (each line keeps its newline)
    buf = a[np.repeat(cand, np.diff(np.append(starts, len(a))))].tobytes()
    if buf and not buf.endswith(b"\n"):
        buf += b"\n"
    table, bad = _read(buf, len(idx), dialect) if len(idx) else (None, [])
    ok_idx = np.delete(idx, bad) if bad else idx
    not_json = np.zeros(nlines, bool)
    not_json[~cand & ~blank & ~is_j] = True
    if bad:
        not_json[idx[bad]] = True
    un_i = np.flatnonzero(not_json | is_j)
    un = unparsed_frame(
        src,
        (lines_before + un_i + 1).tolist(),
        [
            block[starts[i] : eff[i]].decode("utf-8", errors="backslashreplace").replace("\x00", "\\x00")
            for i in un_i.tolist()
        ],
        [junk_reason.get(i, "not a JSON record") for i in un_i.tolist()],
    )
    n_parsed = int(blank.sum())
    if table is None or table.num_rows == 0:
        return empty_events(), un, n_parsed, nlines
    n = table.num_rows
    ts, ok = _times(_column(table, dialect.time), n, src.tz)
    if cts is not None:
        c = cts[ok_idx]
        use = ~ok & (c != NO_STAMP)
        ts, ok = np.where(use, c, ts), ok | use
    msg = _as_str(_column(table, dialect.message), n)
    trace = pc.utf8_rtrim_whitespace(_as_str(_column(table, dialect.trace), n)) if dialect.trace else None
    if trace is not None:
        has = pc.greater(pc.utf8_length(trace), 0)
        joined = pc.binary_join_element_wise(msg, trace, pa.scalar("\n", pa.large_string()))
        msg = pc.if_else(has, joined, msg)
    lvl = level_codes(_as_str(_column(table, dialect.level), n)) if dialect.level else np.full(n, -1, np.int8)
    logger, _ = clean_loggers(_as_str(_column(table, dialect.logger), n))
    level = pa.DictionaryArray.from_arrays(pa.array(lvl, mask=lvl < 0), pa.array(LEVELS))
    message = redact_messages(pc.cast(msg, pa.large_string()))
    t = block_events(ts, ok, level, logger, message, src.host, src.rel, lines_before + ok_idx + 1, np.ones(n, np.int32))
    return t, un, n_parsed + n, nlines


def parse(src: SourceFile, ctx: Context, block_size: int = BLOCK):
    """Stream a JSON log as (table, chunk) pairs; one record per line."""
    head = source_head(src)
    objs, _ = _objects(head)
    dialect = dialect_of(objs) if objs else None
    if dialect is None:
        from kitlib.formats import unknown_lines

        yield from unknown_lines(src, ctx)
        return
    raw = [ln for ln in head_lines(head, 100) if ln.strip()]
    wrapped = containers.has_prefix(raw) and not raw[0].lstrip().startswith(b"{")
    carry, lines_before = b"", 0

    def emit(block):
        ev, un, parsed, nlines = parse_block(block, lines_before, src, dialect, wrapped)
        ctx.lines += nlines
        ctx.parsed += parsed
        bad = un[un["reason"] != "not a JSON record"] if len(un) else un
        if len(bad):
            ctx.fail(f"{src.rel} line {int(bad['line'].iloc[0])}: {bad['reason'].iloc[0]}", int(bad["line"].iloc[0]))
        out = []
        if len(un):
            out.append(("unparsed", un))
        if ev.num_rows:
            out.append(("events", ev))
        return out, nlines

    try:
        for chunk in read_chunks(src, block_size):
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut <= 0:
                carry = buf
                continue
            block, carry = buf[:cut], buf[cut:]
            out, nl = emit(block)
            lines_before += nl
            yield from out
    except SourceError as e:
        ctx.fail(f"{e}; content up to line {lines_before} was read", lines_before + 1)
    if carry:
        out, nl = emit(carry)
        yield from out


register(
    "jsonlog",
    detect=detect,
    parse=parse,
    tables=("events", "unparsed"),
    priority=15,
    doc="JSON logs: log4j2 JsonTemplateLayout (EcsLayout), JsonLayout, ECS, logstash-logback-encoder, "
    "log4j-jsonevent-layout (Strimzi's JSON option)",
)
