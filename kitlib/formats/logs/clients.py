"""Logs of Kafka clients that are not Java -> the ``events`` table, the same rows a Java client's
log4j file gives, so the extractors (``group_events``, ``auth_failures``, ``txn_events``) read them
alike.

Formats (each registered; tried before the generic layout inference):

- **librdkafka** (confluent-kafka-python/-go/-dotnet, node-rdkafka, rdkafka-based apps): the
  library's own stderr line ``%4|1621691389.768|GETPID|rdkafka#producer-2| [thrd:main]: ...``
  (syslog level, epoch seconds with milliseconds, facility, client instance), also behind an
  application's or a shipper's own prefix (kept aside, the library's epoch time is the record's
  time), the .NET client's console logger (instance before facility, a local date:
  ``7|2020-03-20 10:00:00.123|rdkafka#consumer-1|FETCH| ...``),
  the C example's ``1524281199.398 RDKAFKA-7-MEMBERID: rdkafka#consumer-1: ...`` and the C++
  example's ``LOG-7-MEMBERID: [thrd:app]: ...``. The
  record's logger is ``rdkafka`` and its message ``FACILITY [instance] text``: the shape
  confluent-kafka-python gives a Python logger, so both read the same.
- **franz-go** (``kgo.BasicLogger``): ``[INFO] joined; group: g, member_id: ..., generation: 7``
  behind an optional prefix (a date when the application gives one); logger ``kgo``.
- **Sarama**: Go's standard logger with Sarama's prefix, ``[sarama] 2022/04/15 19:31:59 ...``
  (any case of the prefix); logger ``sarama``.
- **Python logging** (kafka-python, and confluent-kafka-python given a ``logger``): the usual
  ``%(asctime)s - %(name)s - %(levelname)s - %(message)s`` and ``basicConfig``'s
  ``LEVEL:name:message``, read as log4j-style layouts by :mod:`.patterned`.
- **Spring Boot 3.2+** console lines with the application name before the thread
  (``... INFO 1 --- [orders] [main] o.a.k.c.c.internals.ConsumerCoordinator : ...``); Boot's older
  default is already read by the layout inference.

How it stays fast: a block of whole lines is one Arrow string array over the block's bytes; one
``extract_regex`` finds the record first lines and their fields; records, times and levels are
numpy on whole columns; the message is put together with Arrow string kernels. Lines before the
first record, and lines a block boundary cut from their record, go to ``unparsed`` with a reason.

Example:
    >>> ev, un = parse_client_bytes(b"%4|1621691389.768|GETPID|rdkafka#producer-2| [thrd:main]: retrying\\n")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist(), str(ev.loc[0, "ts"])
    (['WARN', 'rdkafka', 'GETPID [rdkafka#producer-2] [thrd:main]: retrying'], '2021-05-22 13:49:49.768000+00:00')
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.events import LEVELS, block_events, empty_events, same_value, to_pandas
from kitlib.formats import Context, register, unparsed_frame
from kitlib.formats.logs import patterned
from kitlib.formats.logs.blocks import gather, head_lines, junk_lines, line_bounds, lines_array, trim_end
from kitlib.formats.logs.dates import NO_STAMP, fields_to_wall_ms, to_utc_ms
from kitlib.formats.logs.inference import best_layout
from kitlib.formats.logs.layouts import Layout, compile_pattern
from kitlib.formats.logs.records import emit, group_records, level_codes, redact_messages, unparsed_rows
from kitlib.sources import SourceError, SourceFile, count_lines, read_chunks
from kitlib.sources import head as source_head

# syslog severities librdkafka logs with -> the events table's levels
SYSLOG_LEVELS = ["FATAL", "FATAL", "FATAL", "ERROR", "WARN", "INFO", "INFO", "DEBUG"]

_ISO = r"(?P<Y>\d{4})-(?P<Mo>\d{2})-(?P<D>\d{2})[T ](?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?"


@dataclass(frozen=True)
class ClientFormat:
    """A client's line shape: ``header`` is RE2 matched on each line from its start; its named
    groups give the time (``sec`` and ``ms``: epoch seconds; or ``Y Mo D h mi s f``: a wall-clock
    date in the file's zone), the level (``lvl``: a syslog digit when ``syslog``, else a level
    word), the facility and client instance (``fac``/``name``, or ``f1``/``f2`` in either order);
    ``all`` spans the whole header, the message is the rest of the line. ``hint`` is RE2 at least one record line of a file must match."""

    name: str
    header: str
    logger: str
    syslog: bool = False
    hint: str | None = None
    doc: str = ""


LIBRDKAFKA = ClientFormat(
    "librdkafka",
    # the library's own line, behind anything an application or shipper puts first; the time is
    # epoch seconds (stderr printer) or a local date (.NET's console logger)
    r"^(?:(?P<all>(?P<pre>.*?)%?(?P<lvl>[0-7])\|(?:(?P<sec>\d{9,11})\.(?P<ms>\d{3})|" + _ISO + r")\|"
    r"(?P<f1>[^|\s]*)\|(?P<f2>[^|\s]*)\| ?)"
    # the C example's log callback: '1524281199.398 RDKAFKA-7-FAC: instance: text'
    # and the C++ example's event callback: 'LOG-7-FAC: text' (behind the application's own date)
    r"|(?P<all2>(?P<pre2>.*?)(?:(?P<sec2>\d{9,11})\.(?P<ms2>\d{3}) )?(?:RDKAFKA|LOG)-(?P<lvl2>[0-7])-"
    r"(?P<fac2>[A-Z0-9_]+): (?:(?P<name2>[^:\s\[]+): )?))",
    "rdkafka",
    syslog=True,
    doc="librdkafka's log lines (confluent-kafka-python/-go/-dotnet, node-rdkafka): "
    "%LEVEL|epoch|FACILITY|instance| message, also behind an application's own prefix",
)
FRANZ_GO = ClientFormat(
    "franz-go",
    r"^(?P<all>(?P<pre>(?:\[?" + _ISO + r"(?:Z|[+-]\d{2}:?\d{2})?\]? )?)\[(?P<lvl>ERROR|WARN|INFO|DEBUG)\] )",
    "kgo",
    hint=r"; (?:group|broker|addr|err|topic|member_id|generation|instance_id|why|req): ",
    doc="franz-go's BasicLogger: [LEVEL] message; key: value, ... (an optional date before)",
)
SARAMA = ClientFormat(
    "sarama",
    r"^(?P<all>(?P<pre>.*?)\[(?i:sarama)\] (?P<Y>\d{4})/(?P<Mo>\d{2})/(?P<D>\d{2}) (?P<h>\d{2}):(?P<mi>\d{2}):"
    r"(?P<s>\d{2})(?:\.(?P<f>\d{1,6}))? )",
    "sarama",
    doc="Sarama through Go's standard logger: [sarama] yyyy/MM/dd HH:mm:ss message",
)
REGEX_FORMATS = (LIBRDKAFKA, FRANZ_GO, SARAMA)

# Python logging's common formats and Spring Boot 3.2+'s, as log4j-style layouts
PYTHON_PATTERNS = (
    "%d{ISO8601} - %c - %p - %m%n",  # '%(asctime)s - %(name)s - %(levelname)s - %(message)s'
    "[%d{ISO8601}] %p [%c] %m%n",
    "%d{ISO8601} %p %c: %m%n",
    "%d{ISO8601}:%c:%p:%m%n",
    "%p:%c:%m%n",  # logging.basicConfig()
    "%-8p %c:%F:%L %m%n",  # pytest's captured log ('%(levelname)-8s %(name)s:%(filename)s:%(lineno)d %(message)s')
)
SPRING_PATTERNS = ("%d{ANY_ISO} %5p %pid --- [%t] [%t] %-40.40c : %m%n",)
_LAYOUTS: list[Layout] = []


def client_layouts() -> list[Layout]:
    if not _LAYOUTS:
        _LAYOUTS.extend(compile_pattern(p) for p in PYTHON_PATTERNS + SPRING_PATTERNS)
    return _LAYOUTS


# --- detection --------------------------------------------------------------------------------


def _head_array(head: bytes) -> pa.Array:
    lines = [ln for ln in head_lines(head) if ln.strip()]
    return pa.array([ln.decode("utf-8", "replace") + "\n" for ln in lines], pa.large_string())


def detector(fmt: ClientFormat, min_share: float = 0.2):
    """``detect`` for ``fmt``: at least three of the head's non-blank lines (or ``min_share`` of
    them, for a short file) start a record, and one matches the format's hint."""

    def detect(head: bytes, src) -> bool:
        arr = _head_array(head)
        if not len(arr):
            return False
        hit = pc.match_substring_regex(arr, fmt.header)
        heads = int(pc.sum(hit).as_py() or 0)
        if heads < min(3, max(1, int(np.ceil(min_share * len(arr))))):
            return False
        if fmt.hint is None:
            return True
        return bool(pc.any(pc.match_substring_regex(arr.filter(hit), fmt.hint)).as_py())

    return detect


def detect_layout(head: bytes, src) -> bool:
    return client_layout(head, src) is not None


def client_layout(head: bytes, src) -> Layout | None:
    """The Python-logging or Spring Boot layout this file is written in (cached per file)."""
    key = "client_layout"
    if src is not None and key in getattr(src, "meta", {}):
        return src.meta[key]
    from kitlib.formats.logs.inference import choose_layout, manifest_layout

    lay = best_layout(client_layouts(), head, 0.2)[0]
    if lay is not None and src is not None and getattr(src, "meta", None) is not None:
        # only where the layout the bundle names or the inference finds does not read it as well
        theirs = None if manifest_layout(src) else choose_layout(head, src)
        if manifest_layout(src) or (theirs is not None and best_layout([lay, theirs], head)[0] is theirs):
            lay = None
    if src is not None and hasattr(src, "meta"):
        src.meta[key] = lay
    return lay


def parse_layout(src: SourceFile, ctx: Context, **kw):
    yield from patterned.parse(src, ctx, layout=client_layout(source_head(src), src), **kw)


# --- reading ----------------------------------------------------------------------------------


def _S(text: str) -> pa.Scalar:
    return pa.scalar(text, pa.large_string())


def _field(m: pa.StructArray, names: set[str], *keys: str) -> pa.Array | None:
    """The first of ``keys`` that the regex has, with empty strings where the alternative that
    filled another key matched (RE2 leaves unmatched groups empty)."""
    got = None
    for k in keys:
        if k not in names:
            continue
        col = pc.fill_null(m.field(k), "")
        got = col if got is None else pc.if_else(pc.equal(got, ""), col, got)
    return got


def parse_block(block: bytes, lines_before: int, src: SourceFile, fmt: ClientFormat, first: bool = True):
    """(events Arrow table, unparsed frame, lines in records, lines) of a block of whole lines."""
    a = np.frombuffer(block, np.uint8)
    starts, ends = line_bounds(a, block)
    nlines = len(starts)
    if nlines == 0:
        return empty_events(), unparsed_frame(src, [], [], ""), 0, 0
    eff = ends - ((ends > starts) & (a[np.maximum(ends - 1, 0)] == 13))
    is_j, junk_reason = junk_lines(a, block, starts, ends)
    lines = lines_array(block, starts, ~is_j)
    m = pc.extract_regex(lines, fmt.header)
    is_h = m.is_valid().to_numpy(zero_copy_only=False) & ~is_j
    H, last, span, lead, un_idx = group_records(is_h, is_j)
    un = unparsed_rows(src, a, block, starts, eff, un_idx, is_j, junk_reason, lead, first, lines_before)
    nrec = len(H)
    if nrec == 0:
        return empty_events(), un, 0, nlines
    hm = m.take(pa.array(H))
    names = {hm.type.field(i).name for i in range(hm.type.num_fields)}

    # time: the library's epoch where the line has one, else a wall-clock date in the file's zone
    wall, ok = fields_to_wall_ms(hm)
    ts = to_utc_ms(wall, ok, np.full(nrec, NO_STAMP, np.int64), src.tz)
    sec = _field(hm, names, "sec", "sec2")
    if sec is not None:
        ms = _field(hm, names, "ms", "ms2")
        has = pc.greater(pc.utf8_length(sec), 0).to_numpy(zero_copy_only=False)
        s = pc.cast(pc.if_else(pa.array(has), sec, "0"), pa.int64()).to_numpy(zero_copy_only=False)
        f = pc.cast(pc.if_else(pa.array(has), ms, "0"), pa.int64()).to_numpy(zero_copy_only=False)
        ts = np.where(has, s * 1000 + f, ts)
        ok = ok | has

    pre = _field(hm, names, "pre", "pre2")
    if pre is not None and not ok.all():  # no time of the library's own: the application's date before it
        dm = pc.extract_regex(pre, _ISO)
        wall2, ok2 = fields_to_wall_ms(dm)
        ts2 = to_utc_ms(wall2, ok2, np.full(nrec, NO_STAMP, np.int64), src.tz)
        use = ~ok & ok2
        ts, ok = np.where(use, ts2, ts), ok | use

    raw_level = _field(hm, names, "lvl", "lvl2")
    if fmt.syslog:
        digit = pc.cast(pc.if_else(pc.equal(raw_level, ""), "7", raw_level), pa.int8()).to_numpy(zero_copy_only=False)
        lvl = np.array([LEVELS.index(x) for x in SYSLOG_LEVELS], np.int8)[digit]
    else:
        lvl = level_codes(raw_level) if raw_level is not None else np.full(nrec, -1, np.int8)
    level = pa.DictionaryArray.from_arrays(pa.array(lvl, mask=lvl < 0), pa.array(LEVELS))

    # the message: the rest of the header line (the header's length is the ``all`` group's), cut out
    # of the block's bytes, not captured by the regex (a capture to the line's end is RE2's slow path)
    head_len = pc.binary_length(_field(hm, names, "all", "all2")).to_numpy(zero_copy_only=False).astype(np.int64)
    r1s = starts[H] + head_len
    r1e = np.maximum(trim_end(a, starts[H], eff[H]), r1s)
    msg = gather(a, memoryview(block), [(r1s, r1e)], nrec)
    if "f1" in names:  # librdkafka: FACILITY|instance (stderr) or instance|FACILITY (.NET)
        f1, f2 = hm.field("f1"), hm.field("f2")
        f1_is_fac = pc.match_substring_regex(f1, r"^[A-Z][A-Z0-9_]*$")
        fac = pc.if_else(f1_is_fac, f1, f2)
        inst = pc.if_else(f1_is_fac, f2, f1)
        fac = pc.if_else(pc.equal(pc.fill_null(fac, ""), ""), _field(hm, names, "fac2"), fac)
        inst = pc.if_else(pc.equal(pc.fill_null(inst, ""), ""), _field(hm, names, "name2"), inst)
        named = pc.binary_join_element_wise(fac, _S(" ["), inst, _S("] "), msg, _S(""))
        msg = pc.if_else(pc.equal(pc.fill_null(inst, ""), ""), pc.binary_join_element_wise(fac, msg, _S(" ")), named)
    # continuation lines (a stack trace, a wrapped message) follow after a newline
    nonblank = eff > starts
    lastnb = np.maximum.accumulate(np.where(nonblank, np.arange(nlines), -1))[last]
    cont_last = np.maximum(lastnb, H)
    multi = cont_last > H
    if multi.any():
        r2s = np.where(multi, ends[H] + 1, 0)
        r2e = np.where(multi, eff[cont_last], 0)
        cont = gather(a, memoryview(block), [(r2s, r2e)], nrec)
        msg = pc.if_else(pa.array(multi), pc.binary_join_element_wise(msg, cont, _S("\n")), msg)
    message = redact_messages(pc.cast(msg, pa.large_string()))
    logger = same_value(fmt.logger, nrec)
    t = block_events(ts, ok, level, logger, message, src.host, src.rel, lines_before + H + 1, span)
    return t, un, int(span.sum()), nlines


def reader(fmt: ClientFormat):
    """``parse`` for ``fmt``: the file in blocks cut after a newline (each block read whole; a
    record's continuation lines cut off by a block boundary go to ``unparsed`` with that reason)."""

    def parse(src: SourceFile, ctx: Context, block_size: int | None = None, **_):
        lines_before, first, carry = 0, True, b""

        def one(block: bytes, first: bool):
            nonlocal lines_before
            res = parse_block(block, lines_before, src, fmt, first)
            lines_before += count_lines(block) + (0 if block.endswith(b"\n") else 1)
            return emit(res, 0, src, ctx)

        try:
            for chunk in read_chunks(src, block_size) if block_size else read_chunks(src):
                buf = carry + chunk if carry else chunk
                cut = buf.rfind(b"\n") + 1
                if cut <= 0:
                    carry = buf
                    continue
                block, carry = bytes(buf[:cut]), buf[cut:]
                yield from one(block, first)
                first = False
        except SourceError as e:
            ctx.fail(f"{e}; content up to line {lines_before} was read", lines_before + 1)
        if carry:
            yield from one(bytes(carry), first)

    return parse


def parse_client_bytes(data: bytes, fmt: ClientFormat | str = LIBRDKAFKA, host: str = "test", rel: str = "app.log"):
    """Read a client log held in memory with ``fmt`` (a :class:`ClientFormat`, or ``"layout"``
    for the Python-logging and Spring layouts); (events frame, unparsed frame). For tests."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        src = SourceFile(p, rel, host, "UTC")
        ctx = Context(src)
        chunks = parse_layout(src, ctx) if fmt == "layout" else reader(fmt)(src, ctx)  # type: ignore[arg-type]
        evs: list[pa.Table] = []
        uns: list[pd.DataFrame] = []
        for name, chunk in chunks:
            (evs if name == "events" else uns).append(chunk)
    ev = to_pandas(pa.concat_tables(evs)) if evs else to_pandas(empty_events())
    un = pd.concat(uns, ignore_index=True) if uns else unparsed_frame(src, [], [], "")
    return ev, un


for _fmt in REGEX_FORMATS:
    register(
        _fmt.name,
        detect=detector(_fmt),
        parse=reader(_fmt),
        tables=("events", "unparsed"),
        priority=40,
        doc=_fmt.doc,
    )
register(
    "python-logging",
    detect=detect_layout,
    parse=parse_layout,
    tables=("events", "unparsed"),
    priority=55,
    doc="Python logging's common layouts (kafka-python, confluent-kafka-python with a logger) and "
    "Spring Boot 3.2+'s console layout",
)
