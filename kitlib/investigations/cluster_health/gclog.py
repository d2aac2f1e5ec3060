"""JVM garbage-collection logs -> the ``gc_pauses`` table (format ``gclog``, detected by content).

Two families are read:

- JDK 9+ unified logging. Kafka's ``kafka-run-class.sh`` starts brokers with
  ``-Xlog:gc*:file=kafkaServer-gc.log:time,tags:filecount=10,filesize=100M``, which writes
  ``[2024-05-22T00:32:03.023+0000][gc,start    ] GC(11536) Pause Young (Normal) (G1 Evacuation Pause)``
  and, when the pause ends, ``[...][gc          ] GC(11536) Pause Young (Normal) (G1 Evacuation Pause)
  6746M->2016M(8192M) 40.514ms``. Other decorations work the same way: uptime ``[12.345s]``,
  ``[12345ms]``, the level ``[info]``, pid/tid, in any order. Pause lines of G1 (Young, Mixed, Full,
  Remark, Cleanup), Parallel and Serial (Young, Full), ZGC (``Pause Mark Start`` ..., generational
  ``Y:``/``O:``) and Shenandoah (``Pause Init Mark`` ...) become rows with ``is_pause`` true;
  ``Concurrent ...`` phases that report a duration and ``To-space exhausted`` become rows with
  ``is_pause`` false.
- JDK 8 ``-XX:+PrintGCDetails`` with ``-XX:+PrintGCDateStamps``/``-XX:+PrintGCTimeStamps``:
  ``2024-05-22T00:32:03.023+0000: 1234.567: [GC pause (G1 Evacuation Pause) (young), 0.0405140 secs]``,
  ``[Full GC (Allocation Failure) ...]``, ParNew/CMS and Parallel lines; G1's heap figures come from
  the ``[Eden: ... Heap: A(T)->B(T)]`` detail line that follows its pause; ``GC concurrent-*`` and
  ``CMS-concurrent-*`` phases with a duration are non-pause rows.

Line accounting: a line that became a row is parsed; so is every other line that carries GC-log
structure (a unified-logging decoration, JDK 8 detail lines indented under a pause, the JVM and
heap banners, ``Total time for which application threads were stopped``). Only lines with none of
that go to ``unparsed`` (reason ``not a GC log line``).

Vectorised: the file is cut into blocks of lines without a Python object per line (numpy finds the
newlines, the block becomes one Arrow string array) and every classification and capture is one
Arrow regex kernel (RE2) over the whole block.

Example:
    >>> rows, unparsed = parse_text("[2024-05-22T00:32:03.063+0000][gc] GC(11536) Pause Young (Normal) "
    ...                             "(G1 Evacuation Pause) 6746M->2016M(8192M) 40.514ms\\n")
    >>> print(*rows.loc[0, ["gc_id", "kind", "cause", "heap_after", "duration_ms", "is_pause"]], sep=" | ")
    11536 | Young (Normal) | G1 Evacuation Pause | 2113929216 | 40.514 | True
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.formats import Context, register, times, unparsed_frame, with_provenance
from kitlib.sources import SourceError, SourceFile, read_chunks

tables.declare(
    "gc_pauses",
    "JVM garbage collections from GC logs (JDK 9+ unified logging, JDK 8 PrintGCDetails): "
    "one row per stop-the-world pause, plus concurrent phases and to-space exhaustion "
    "(is_pause false).",
    [
        (
            "ts",
            "ts",
            "when the pause ended (unified: the line's time decoration; JDK 8: its date stamp, "
            "taken at the start, plus the duration); NaT when the log carries only uptime",
        ),
        ("uptime_s", "float", "JVM uptime in seconds at that line, when decorated with it"),
        ("gc_id", "int", "the collection's number, GC(N) (unified logging only)"),
        (
            "kind",
            "category",
            "what ran: Young (Normal), Young (Mixed), Young (Concurrent Start), Full, "
            "Remark, Cleanup, Mark Start, Init Mark, Concurrent Mark, "
            "To-space exhausted, ...",
        ),
        (
            "cause",
            "str",
            "why it ran: G1 Evacuation Pause, Allocation Failure, G1 Humongous "
            "Allocation, Metadata GC Threshold, System.gc(), ...",
        ),
        ("heap_before", "int", "heap used before, bytes"),
        ("heap_after", "int", "heap used after, bytes"),
        ("heap_total", "int", "heap committed after, bytes"),
        ("duration_ms", "float", "pause (or phase) duration in milliseconds"),
        ("is_pause", "bool", "true for stop-the-world pauses; false for concurrent phases and to-space exhaustion"),
        ("log_format", "category", "unified (JDK 9+) or jdk8"),
        ("message", "str", "the line, without its decorations"),
    ],
)

TS_UNIFIED = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:[+-]\d{4}|Z)"
# the first bracket of a unified-logging line is one of its decorations (lowercase tags, never "[GC ")
UNIFIED = (
    r"^\[(?:" + TS_UNIFIED + r"|\d+(?:[.,]\d+)?s|\d+ms|\d+ns|(?:trace|debug|info|warning|error) *"
    r"|[a-z]+(?:,[a-z]+)* *|\d+)\]"
)
DECO = r"^((?:\[[^\]]*\])+) ?(.*)$"
SIZE = r"\d+(?:[.,]\d+)?[BKMGT]"
U_PAUSE = rf"^GC\((\d+)\) (?:[YO]: )?Pause (.+?)(?: ({SIZE})->({SIZE})\(({SIZE})\))? (\d+(?:[.,]\d+)?)ms$"
U_CONC = rf"^GC\((\d+)\) (?:[YO]: )?(Concurrent [A-Za-z ]+?)(?: \([^)]*\))*(?: {SIZE}->{SIZE}\({SIZE}\))? (\d+(?:[.,]\d+)?)ms$"
U_TOSPACE = r"^GC\((\d+)\) (To-space exhausted)"
U_CANDIDATE = r"\] ?GC\(\d+\) (?:[YO]: )?(?:Pause|Concurrent|To-space).*(?:\dms|exhausted)$"
# a known phase word in parentheses belongs to the kind, the last other parenthesised word is the cause
KIND_CAUSE = (
    r"^(.+?(?: \((?:Normal|Mixed|Prepare Mixed|Concurrent Start|Initial Mark|Major|Minor)\))?)(?: \(([^\(\)]*)\))?$"
)

J8_PREFIX = rf"^(?:({TS_UNIFIED}): )?(?:(\d+[.,]\d+): )?(.*)$"
J8_PAUSE = r"^\[(Full GC|GC)( pause| remark| cleanup)?((?: \([^\(\)]*\))*)"
J8_DURATION = r"^.*, (\d+[.,]\d+) secs\]"
J8_HEAP = rf"^.*?({SIZE})->({SIZE})\(({SIZE})\)(?:, \[Metaspace: [^\]]*\])?, \d+[.,]\d+ secs\]\s*(?:\[Times:.*)?$"
J8_G1HEAP = rf"Heap: ({SIZE})\({SIZE}\)->({SIZE})\(({SIZE})\)"
J8_CONC = r"^\[(?:GC concurrent|CMS-concurrent)-([a-z-]+?)(?:-end)?(?:[,:] (\d+[.,]\d+)(?:/\d+[.,]\d+)? secs)\]"
J8_STRUCT = (
    r"^(?:\s|\{|\}|Heap\b|Java HotSpot|OpenJDK|Memory: |CommandLine flags: |Total time for which|"
    r"Application time: |\[(?:GC|Full GC|CMS-concurrent|Times:|Eden:)|(?:" + TS_UNIFIED + r": )?\d+[.,]\d+: )"
)
J8_DETECT = re.compile(
    rb"^(?:\d{4}-\d\d-\d\dT[\d:.+-]+: )?(?:\d+\.\d+: )?\[(?:GC[ (]|Full GC)|^CommandLine flags: .*Print", re.M
)
UNIFIED_DETECT = re.compile(rb"^(?:\[[^\]\n]*\])*\[(?:gc|safepoint)(?:,\w+)* *\]", re.M)
UNITS = {"B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
CHUNK_LINES = 65536


def detect(head: bytes, src) -> bool:
    """A GC log: one of its first 60 lines has a unified-logging ``[gc...]`` tag decoration, or looks
    like a JDK 8 ``[GC ...`` / ``[Full GC ...`` line (or its ``CommandLine flags`` banner)."""
    sample = b"\n".join(head.split(b"\n", 60)[:60])
    return bool(UNIFIED_DETECT.search(sample) or J8_DETECT.search(sample))


def _bytes(sizes: pa.Array) -> np.ndarray:
    """'6746M', '2016.0M', '5392.1K', '0.0B' -> bytes (NaN where absent)."""
    s = pc.replace_substring(sizes, ",", ".")
    num = pc.cast(pc.utf8_slice_codeunits(s, 0, -1), pa.float64())
    unit = pc.utf8_slice_codeunits(s, -1)
    mult = np.zeros(len(s))
    for u, m in UNITS.items():
        mult[np.asarray(pc.fill_null(pc.equal(unit, u), False).to_numpy(zero_copy_only=False), bool)] = m
    out = np.asarray(num.to_numpy(zero_copy_only=False), float) * mult
    out[~np.asarray(pc.is_valid(s).to_numpy(zero_copy_only=False), bool)] = np.nan
    return np.round(out)


def _float(a: pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(pc.replace_substring(a, ",", "."), pa.float64()).to_numpy(zero_copy_only=False), float)


def _extract(texts: pa.Array, pattern: str, names: list[str]) -> tuple[np.ndarray, list[pa.Array]]:
    """(matched mask, one Arrow array per named group) for an RE2 pattern with unnamed groups."""
    k = iter(names)
    named = re.sub(r"(?<!\\)\((?!\?)", lambda m: f"(?P<{next(k)}>", pattern)
    got = pc.extract_regex(texts, named)
    ok = np.asarray(pc.is_valid(got).to_numpy(zero_copy_only=False), bool)
    parts = [
        pc.if_else(pc.equal(pc.struct_field(got, n), ""), pa.scalar(None, pa.string()), pc.struct_field(got, n))
        for n in names
    ]
    return ok, parts


def _frame(n: int) -> dict[str, np.ndarray]:
    return {
        "ts": np.full(n, None, object),
        "uptime_s": np.full(n, np.nan),
        "gc_id": np.full(n, np.nan),
        "kind": np.full(n, None, object),
        "cause": np.full(n, None, object),
        "heap_before": np.full(n, np.nan),
        "heap_after": np.full(n, np.nan),
        "heap_total": np.full(n, np.nan),
        "duration_ms": np.full(n, np.nan),
        "is_pause": np.zeros(n, bool),
    }


def _kind_cause(desc: pa.Array) -> tuple[list, list]:
    ok, (kind, cause) = _extract(desc, KIND_CAUSE, ["k", "c"])
    kind = pc.if_else(pa.array(ok), kind, desc)
    return kind.to_pylist(), cause.to_pylist()


def classify_block(lines: pa.Array) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Rows of one block of lines; returns (rows with a ``row`` column = index in the block,
    mask of lines accounted as parsed, mask of lines that are not GC-log lines)."""
    n = len(lines)
    cols = _frame(n)
    is_row = np.zeros(n, bool)
    fmt = np.full(n, None, object)
    message = np.full(n, None, object)
    unified = np.asarray(pc.match_substring_regex(lines, UNIFIED).to_numpy(zero_copy_only=False), bool)
    parsed = unified.copy()

    # JDK 9+ unified logging: only pause ends, concurrent phases with a duration and to-space
    # exhaustion become rows; one cheap regex pass picks them, the captures run on those alone
    cand = unified & np.asarray(pc.match_substring_regex(lines, U_CANDIDATE).to_numpy(zero_copy_only=False), bool)
    at = np.flatnonzero(cand)
    if len(at):
        sub = lines.take(pa.array(at))
        _, (deco, msg) = _extract(sub, DECO, ["d", "m"])
        deco = pc.fill_null(deco, "")
        msg = pc.fill_null(msg, "")
        _, (ts,) = _extract(deco, r"\[(" + TS_UNIFIED + r")\]", ["t"])
        _, (up,) = _extract(deco, r"\[(\d+(?:[.,]\d+)?)s\]", ["u"])
        _, (upms,) = _extract(deco, r"\[(\d+)ms\]", ["u"])
        uptime = _float(up)
        ms = _float(upms) / 1000
        uptime = np.where(np.isnan(uptime), ms, uptime)
        cols["ts"][at] = ts.to_pylist()
        cols["uptime_s"][at] = uptime
        message[at] = msg.to_pylist()
        fmt[at] = "unified"
        hit, (gid, desc, hb, ha, ht, dur) = _extract(msg, U_PAUSE, ["g", "d", "b", "a", "t", "ms"])
        w = np.flatnonzero(hit)
        if len(w):
            idx = pa.array(w)
            rows = at[w]
            cols["gc_id"][rows] = _float(gid.take(idx))
            cols["kind"][rows], cols["cause"][rows] = _kind_cause(desc.take(idx))
            cols["heap_before"][rows] = _bytes(hb.take(idx))
            cols["heap_after"][rows] = _bytes(ha.take(idx))
            cols["heap_total"][rows] = _bytes(ht.take(idx))
            cols["duration_ms"][rows] = _float(dur.take(idx))
            cols["is_pause"][rows] = True
            is_row[rows] = True
        for pattern, names in ((U_CONC, ["g", "k", "ms"]), (U_TOSPACE, ["g", "k"])):
            hit, groups = _extract(msg, pattern, names)
            w = np.flatnonzero(hit & ~is_row[at])
            if not len(w):
                continue
            idx = pa.array(w)
            rows = at[w]
            cols["gc_id"][rows] = _float(groups[0].take(idx))
            cols["kind"][rows] = groups[1].take(idx).to_pylist()
            if len(groups) > 2:
                cols["duration_ms"][rows] = _float(groups[2].take(idx))
            is_row[rows] = True

    # JDK 8 PrintGCDetails
    at = np.flatnonzero(~unified)
    if len(at):
        sub = lines.take(pa.array(at))
        struct = np.asarray(pc.match_substring_regex(sub, J8_STRUCT).to_numpy(zero_copy_only=False), bool)
        blank = np.asarray(pc.match_substring_regex(sub, r"^\s*$").to_numpy(zero_copy_only=False), bool)
        parsed[at] = struct | blank
        _, (ts, up, rest) = _extract(sub, J8_PREFIX, ["t", "u", "r"])
        rest = pc.fill_null(rest, "")
        hit, (full, what, paren) = _extract(rest, J8_PAUSE, ["f", "w", "p"])
        dur_hit, (dur,) = _extract(rest, J8_DURATION, ["d"])
        conc = np.asarray(pc.match_substring_regex(rest, J8_CONC).to_numpy(zero_copy_only=False), bool)
        w = np.flatnonzero(hit & dur_hit & ~conc)
        if len(w):
            idx = pa.array(w)
            rows = at[w]
            cols["ts"][rows] = ts.take(idx).to_pylist()
            cols["uptime_s"][rows] = _float(up.take(idx))
            cols["duration_ms"][rows] = _float(dur.take(idx)) * 1000
            cols["is_pause"][rows] = True
            cols["kind"][rows], cols["cause"][rows] = _j8_kind_cause(
                full.take(idx).to_pylist(), what.take(idx).to_pylist(), paren.take(idx).to_pylist()
            )
            _, (hb, ha, ht) = _extract(rest.take(idx), J8_HEAP, ["b", "a", "t"])
            cols["heap_before"][rows] = _bytes(hb)
            cols["heap_after"][rows] = _bytes(ha)
            cols["heap_total"][rows] = _bytes(ht)
            message[rows] = rest.take(idx).to_pylist()
            fmt[rows] = "jdk8"
            is_row[rows] = True
        hit, (phase, dur) = _extract(rest, J8_CONC, ["k", "d"])
        w = np.flatnonzero(hit)
        if len(w):
            idx = pa.array(w)
            rows = at[w]
            cols["ts"][rows] = ts.take(idx).to_pylist()
            cols["uptime_s"][rows] = _float(up.take(idx))
            cols["kind"][rows] = ["Concurrent " + p for p in phase.take(idx).to_pylist()]
            cols["duration_ms"][rows] = _float(dur.take(idx)) * 1000
            message[rows] = rest.take(idx).to_pylist()
            fmt[rows] = "jdk8"
            is_row[rows] = True
        # G1 detail line '[Eden: ... Heap: A(T)->B(T)]' belongs to the pause above it
        hit, (hb, ha, ht) = _extract(sub, J8_G1HEAP, ["b", "a", "t"])
        w = np.flatnonzero(hit)
        if len(w):
            pause_row = np.where(is_row & cols["is_pause"] & (fmt == "jdk8"), np.arange(n), -1)
            last = np.maximum.accumulate(pause_row)[at[w]]
            ok = last >= 0
            target, src_i = last[ok], w[ok]
            need = np.isnan(cols["heap_after"][target])
            target, src_i = target[need], src_i[need]
            idx = pa.array(src_i)
            cols["heap_before"][target] = _bytes(hb.take(idx))
            cols["heap_after"][target] = _bytes(ha.take(idx))
            cols["heap_total"][target] = _bytes(ht.take(idx))
    parsed |= is_row
    keep = np.flatnonzero(is_row)
    df = pd.DataFrame({k: v[keep] for k, v in cols.items()})
    df["log_format"] = fmt[keep]
    df["message"] = message[keep]
    df["row"] = keep
    return df, parsed, ~parsed


def _j8_kind_cause(full: list, what: list, paren: list) -> tuple[list, list]:
    """JDK 8 '[GC pause (G1 Evacuation Pause) (young)' -> ('Young', 'G1 Evacuation Pause')."""
    kinds, causes = [], []
    for f, w, p in zip(full, what, paren):
        groups = re.findall(r"\(([^\(\)]*)\)", p or "")
        phases = [
            g for g in groups if g in ("young", "mixed", "initial-mark", "to-space exhausted", "to-space overflow")
        ]
        others = [g for g in groups if g not in phases]
        if f == "Full GC":
            kind = "Full"
        elif w and w.strip() in ("remark", "cleanup"):
            kind = w.strip().capitalize()
        elif phases:
            kind = phases[0].capitalize() + "".join(f" ({x})" for x in phases[1:])
        elif others and others[0].startswith("CMS "):
            kind = others[0][4:]
        else:
            kind = "Young"
        kinds.append(kind)
        causes.append(others[0] if others else None)
    return kinds, causes


def _blocks(src: SourceFile, ctx: Context):
    """(first line number, lines as one Arrow string array) per block of the file, no Python
    object per line; counts lines in ``ctx``."""
    carry = b""
    first = 1
    try:
        for chunk in read_chunks(src):
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            body, carry = data[:cut], data[cut:]
            if body:
                yield first, _lines(body, src, ctx, first)
                first += body.count(b"\n")
    except SourceError as e:
        ctx.fail(f"{e}; last complete line {first - 1}", first)
    if carry:
        yield first, _lines(carry + b"\n", src, ctx, first)
        first += 1
    ctx.lines = first - 1


def _lines(body: bytes, src: SourceFile, ctx: Context, first: int) -> pa.Array:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        at = first + body.count(b"\n", 0, e.start)
        ctx.fail(f"{src.rel} line {at}: not valid UTF-8 (shown as \\x escapes)", at)
        body = body.decode("utf-8", errors="backslashreplace").encode("utf-8")
    nl = np.flatnonzero(np.frombuffer(body, np.uint8) == 10)
    offsets = np.concatenate([[0], nl + 1]).astype(np.int64)
    arr = pa.LargeStringArray.from_buffers(len(nl), pa.py_buffer(offsets), pa.py_buffer(body))
    return pc.utf8_rtrim(arr, characters="\r\n")


def parse(src: SourceFile, ctx: Context):
    for first, lines in _blocks(src, ctx):
        for i in range(0, len(lines), CHUNK_LINES):
            part = lines.slice(i, CHUNK_LINES)
            rows, parsed, bad = classify_block(part)
            reason = np.full(len(part), "not a GC log line", object)
            start = first + i
            if len(rows):
                ts, far = times.iso_to_utc(rows["ts"], TS_FORMAT)
                if far.any():  # a time the tables cannot hold costs its line only
                    at = rows["row"].to_numpy()[far]
                    parsed[at], bad[at] = False, True
                    reason[at] = [times.year_reason(int(t[:4])) for t in rows["ts"][far]]
                    ctx.fail(f"{src.rel} line {start + int(at[0])}: {reason[at[0]]}", start + int(at[0]))
                    rows, ts = rows[~far].reset_index(drop=True), ts[~far].reset_index(drop=True)
                rows["ts"] = ts
                rows["line"] = rows.pop("row").to_numpy() + start
                if len(rows):
                    yield "gc_pauses", with_provenance(_finish(rows, src), src)
            ctx.parsed += int(parsed.sum())
            if bad.any():
                w = np.flatnonzero(bad)
                un = unparsed_frame(src, (w + start).tolist(), part.take(pa.array(w)).to_pylist(), "")
                un["reason"] = reason[w]
                yield "unparsed", un


TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"


def _finish(rows: pd.DataFrame, src: SourceFile) -> pd.DataFrame:
    ts = rows["ts"]
    # JDK 8 stamps a collection when it starts; unified logging writes the pause line when it ends
    j8 = (rows["log_format"] == "jdk8").to_numpy()
    ts[j8] = ts[j8] + pd.to_timedelta(rows["duration_ms"][j8].fillna(0), unit="ms")
    up = rows["uptime_s"].to_numpy(copy=True)
    up[j8] = up[j8] + rows["duration_ms"][j8].fillna(0).to_numpy() / 1000
    rows["ts"], rows["uptime_s"] = ts, up
    for c in ("gc_id", "heap_before", "heap_after", "heap_total"):
        rows[c] = pd.array(rows[c].to_numpy(), dtype="Float64").round().astype("Int64")
    rows["message"] = rows["message"].astype("string").str.slice(0, 300)
    return rows


def parse_text(text: str, rel: str = "gc.log", host: str = "h") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse GC-log text (tests, docs): (gc_pauses rows, unparsed rows)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "gc.log"
        p.write_text(text)
        src = SourceFile(p, rel, host, size=p.stat().st_size)
        ctx = Context(src)
        out: dict[str, list] = {"gc_pauses": [], "unparsed": []}
        for name, df in parse(src, ctx):
            out[name].append(df)
    rows = (
        tables.conform("gc_pauses", pd.concat(out["gc_pauses"], ignore_index=True))
        if out["gc_pauses"]
        else tables.empty("gc_pauses")
    )
    un = (
        tables.conform("unparsed", pd.concat(out["unparsed"], ignore_index=True))
        if out["unparsed"]
        else tables.empty("unparsed")
    )
    return rows, un


register(
    "gclog",
    detect=detect,
    parse=parse,
    tables=("gc_pauses", "unparsed"),
    priority=25,
    doc="JVM GC logs: JDK 9+ unified logging (-Xlog:gc*) and JDK 8 PrintGCDetails",
)
