"""What a JVM writes outside log4j when it runs out of memory or crashes -> ``jvm_errors``.

A broker killed by its heap often leaves no log4j record of it: the JVM writes to stderr (the
broker's ``.out`` file, a container's output) and, on a fatal error, an ``hs_err_pid<pid>.log``.
Lines read:

- ``java.lang.OutOfMemoryError: Java heap space`` (also as ``Exception in thread "x" ...`` and
  the ``# java.lang.OutOfMemoryError: ...`` banner of ``-XX:OnOutOfMemoryError``);
- ``Exception: java.lang.OutOfMemoryError thrown from the UncaughtExceptionHandler in thread "x"``;
- ``Terminating due to java.lang.OutOfMemoryError: ...`` (``-XX:+ExitOnOutOfMemoryError``) and
  ``Aborting due to ...`` (``-XX:+CrashOnOutOfMemoryError``);
- ``os::commit_memory(0x..., 1073741824, 0) failed; error='Cannot allocate memory' (errno=12)``;
- hs_err's header: ``# There is insufficient memory for the Java Runtime Environment to
  continue.``, ``# Native memory allocation (mmap) failed to map N bytes ...``, ``# A fatal error
  has been detected by the Java Runtime Environment:`` with its signal line, the problematic
  frame, the JRE version, and further down ``Command Line:`` (the main class names the process:
  ``kafka.Kafka`` is a broker) and ``Time:``.

One row per error line; what the file says once (pid, process, ``-Xmx``, JRE, problematic frame,
time of the crash) is set on every row of the file. The rest of an hs_err report (registers,
threads, memory maps) and the stack frames under an error are its structure: counted as read,
not rows. In a stderr file, lines that are none of these go to ``unparsed``.

All lines of a block are matched at once with Arrow's regex kernels (RE2), no Python per line.

Example:
    >>> from kitlib.formats import detect
    >>> detect(b"Terminating due to java.lang.OutOfMemoryError: Java heap space\\n").name
    'jvm-errors'
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kitlib import tables
from kitlib.formats import Context, register, unparsed_frame
from kitlib.formats.logs.blocks import head_lines, junk_lines, line_bounds, lines_array
from kitlib.formats.logs.dates import fields_to_wall_ms, to_utc_ms
from kitlib.redact import redact_array
from kitlib.sources import SourceError, SourceFile, count_lines, read_chunks

tables.declare(
    "jvm_errors",
    "JVM out-of-memory errors and fatal errors written outside log4j (stderr, hs_err_pid*.log), "
    "one row per error line, with what the file says about the process.",
    [
        ("ts", "ts", "time of the crash (hs_err 'Time:' line); NaT for stderr lines, which carry none"),
        (
            "kind",
            "category",
            "oom (an OutOfMemoryError), oom_uncaught (thrown from the UncaughtExceptionHandler), oom_exit "
            "(-XX:+ExitOnOutOfMemoryError / CrashOnOutOfMemoryError ending the JVM), native_oom (no memory "
            "for the JVM itself), commit_failed (os::commit_memory refused), fatal_error (hs_err crash)",
        ),
        ("error", "str", "what ran out or failed: 'Java heap space', 'Metaspace', the signal, the errno text"),
        ("thread", "str", "the thread named on the line"),
        ("bytes", "int", "bytes the JVM failed to map or commit"),
        ("pid", "int", "process id (hs_err)"),
        ("process", "str", "main class from the command line: kafka.Kafka (a broker), Connect's, ZooKeeper's"),
        ("heap_max", "str", "-Xmx of the command line, as written"),
        ("jre", "str", "JRE version (hs_err)"),
        ("frame", "str", "the problematic frame (hs_err of a crash)"),
        ("message", "str", "the line, without a container prefix or the '# ' of hs_err"),
    ],
)

# a container's prefix ('kafka_1  | ', 'kafka-1 | ') and hs_err's '# ' before the text
_PRE = r"^(?:[\w.-]+ +\| ?)?(?:#\s*)?"
# error lines: kind and RE2 pattern (first that matches wins)
RULES = [
    (
        "oom_uncaught",
        _PRE + r"(?P<m>Exception: java\.lang\.OutOfMemoryError thrown from the UncaughtExceptionHandler in thread "
        r'"(?P<thread>[^"]*)")',
    ),
    (
        "oom_exit",
        _PRE + r"(?P<m>(?:Terminating|Aborting) due to java\.lang\.OutOfMemoryError(?:: (?P<error>.*?))?)\s*$",
    ),
    (
        "oom",
        _PRE + r'(?P<m>(?:Exception in thread "(?P<thread>[^"]*)" )?java\.lang\.OutOfMemoryError(?:: (?P<error>.*?))?)'
        r"\s*$",
    ),
    ("native_oom", _PRE + r"(?P<m>There is insufficient memory for the Java Runtime Environment to continue\.?)\s*$"),
    (
        "native_oom",
        _PRE + r"(?P<m>Native memory allocation \((?P<error>\w+)\) failed to (?:map|allocate) (?P<bytes>\d+) bytes.*?)"
        r"\s*$",
    ),
    (
        "commit_failed",
        _PRE + r"(?P<m>.*os::commit_memory\(0x[0-9a-fA-F]+, (?P<bytes>\d+), \d+\) failed; "
        r"error='(?P<error>[^']*)'.*?)\s*$",
    ),
    ("fatal_error", _PRE + r"(?P<m>A fatal error has been detected by the Java Runtime Environment:?)\s*$"),
]
# what a file says once (hs_err) -> columns of every row of the file
FACTS = {
    "signal": _PRE + r"(?P<v>SIG[A-Z]+ \(0x[0-9a-fA-F]+\)) at pc=\S+, pid=\d+",
    "pid": _PRE + r"(?:.*[ (,]pid=(?P<v>\d+)[,) ]|\S+ Runtime Environment .*?, pid=(?P<v2>\d+))",
    "jre": _PRE + r"JRE version: (?P<v>.*?)\s*$",
    "frame": r"^#\s+(?P<v>[CJjVv] +(?:\[|\d).*?)\s*$",
    "command": r"^(?:Command Line|java_command): (?P<v>.*?)\s*$",
}
TIME = (
    r"^[Tt]ime: \w{3} (?P<Mon>\w{3}) +(?P<D>\d{1,2}) (?P<h>\d{2}):(?P<mi>\d{2}):(?P<s>\d{2}) (?P<Y>\d{4})"
    r"(?: (?P<zone>[A-Z]{2,5}))?"
)
MAIN = (
    r"(?P<v>kafka\.Kafka|io\.confluent\.\S*Kafka\w*|org\.apache\.kafka\.connect\.cli\.\w+|"
    r"org\.apache\.zookeeper\.server\.quorum\.QuorumPeerMain|kafka\.tools\.\w+|org\.apache\.kafka\.tools\.\w+)(?:\s|$)"
)
# lines that belong to an error as its structure: stack frames, causes, '... N more'
STRUCTURE = r"^(?:[\w.-]+ +\| ?)?(?:\s+at |\s*Caused by: |\s*\.\.\. \d+ more|\s*#\s*$|\s*#\s|\s*$)"
# head signature (detection)
SIGNATURE = (
    r"java\.lang\.OutOfMemoryError|There is insufficient memory for the Java Runtime Environment|"
    r"A fatal error has been detected by the Java Runtime Environment|os::commit_memory\(0x"
)


# an hs_err report's banner, and a log record's start (a date, or a level word, near the line's start)
HS_ERR = r"^#\s+(?:A fatal error has been detected by|There is insufficient memory for) the Java Runtime Environment"
RECORD = (
    r"^.{0,40}?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}|^(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b|"
    r"^.{0,60}?\b(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+\["
)


def detect(head: bytes, src) -> bool:
    """A JVM error report or a stderr capture: one of the first lines is a JVM error line, and
    they are not log4j records (those go to the log readers, whose records keep the error)."""
    lines = [ln for ln in head_lines(head, 100) if ln.strip()]
    if not lines:
        return False
    arr = pa.array([ln.decode("utf-8", "replace") for ln in lines], pa.large_string())
    if not pc.any(pc.match_substring_regex(arr, SIGNATURE)).as_py():
        return False
    if pc.any(pc.match_substring_regex(arr, HS_ERR)).as_py():
        return True
    # a log whose records carry an OutOfMemoryError in their stack traces belongs to a log reader
    records = pc.match_substring_regex(arr, RECORD)
    return not pc.any(records).as_py()


def _vals(m: pa.StructArray, *names: str) -> pa.Array:
    got = None
    for n in names:
        if n in {m.type.field(i).name for i in range(m.type.num_fields)}:
            col = pc.if_else(pc.equal(m.field(n), ""), pa.scalar(None, pa.large_string()), m.field(n))
            got = col if got is None else pc.coalesce(got, col)
    return got if got is not None else pa.nulls(len(m), pa.large_string())


def _first(col: pa.Array):
    valid = col.drop_null()
    return valid[0].as_py() if len(valid) else None


def parse(src: SourceFile, ctx: Context, block_size: int | None = None, **_):
    """Rows of the file's error lines (yielded at the end: the file-level facts fill every row)."""
    hs_err = src.rel.rsplit("/", 1)[-1].startswith("hs_err")
    rows: list[pd.DataFrame] = []
    facts: dict[str, object] = {}
    lines_before, carry = 0, b""

    def block_rows(block: bytes):
        nonlocal lines_before
        a = np.frombuffer(block, np.uint8)
        starts, ends = line_bounds(a, block)
        n = len(starts)
        is_j, reason = junk_lines(a, block, starts, ends)
        lines = pc.utf8_rtrim(lines_array(block, starts, ~is_j), "\r\n")
        which = np.full(n, -1, np.int16)
        for i, (_kind, pat) in enumerate(RULES):
            todo = which < 0
            hit = np.asarray(pc.fill_null(pc.match_substring_regex(lines, pat), False).to_numpy(zero_copy_only=False))
            which[todo & hit.astype(bool)] = i
        fact = np.zeros(n, bool)
        for key, pat in FACTS.items():
            m = pc.extract_regex(lines, pat)
            got = _vals(m, "v", "v2")
            fact |= got.is_valid().to_numpy(zero_copy_only=False)
            if key not in facts:
                v = _first(got)
                if v is not None:
                    facts[key] = v
        tm = pc.extract_regex(lines, TIME)
        ok_t = tm.is_valid().to_numpy(zero_copy_only=False)
        if ok_t.any() and "ts" not in facts:
            t = tm.filter(pa.array(ok_t))
            wall, ok = fields_to_wall_ms(t)
            zone = _vals(t, "zone")
            utc = pc.fill_null(pc.is_in(zone, pa.array(["UTC", "GMT"], pa.large_string())), False)
            local = to_utc_ms(wall, ok, np.where(utc.to_numpy(zero_copy_only=False), 0, np.iinfo(np.int64).min), src.tz)
            if ok[0]:
                facts["ts"] = pd.Timestamp(int(local[0]), unit="ms", tz="UTC")
        fact |= ok_t
        structure = np.asarray(
            pc.fill_null(pc.match_substring_regex(lines, STRUCTURE), False).to_numpy(zero_copy_only=False), bool
        )
        err = np.flatnonzero(which >= 0)
        if len(err):
            kinds = np.array([k for k, _ in RULES], dtype=object)[which[err]]
            sub = lines.take(pa.array(err))
            cols = {c: np.full(len(err), None, object) for c in ("m", "error", "thread", "bytes")}
            for i, (_kind, pat) in enumerate(RULES):
                sel = np.flatnonzero(which[err] == i)
                if not len(sel):
                    continue
                m = pc.extract_regex(sub.take(pa.array(sel)), pat)
                for c in cols:
                    if c in {m.type.field(j).name for j in range(m.type.num_fields)}:
                        cols[c][sel] = np.array(_vals(m, c).to_pylist(), dtype=object)
            rows.append(
                pd.DataFrame(
                    {
                        "kind": kinds,
                        "error": cols["error"],
                        "thread": cols["thread"],
                        "bytes": pd.to_numeric(pd.Series(cols["bytes"]), errors="coerce").astype("Int64").to_numpy(),
                        "message": redact_array(pa.array(cols["m"].tolist(), pa.large_string())).to_pylist(),
                        "line": err + lines_before + 1,
                    }
                )
            )
        rest = np.flatnonzero((which < 0) & ~fact & ~structure & ~is_j)
        junk = np.flatnonzero(is_j)
        done = n - (0 if hs_err else len(rest)) - len(junk)
        ctx.lines += n
        ctx.parsed += done
        out = []
        if len(junk):
            out.append(
                unparsed_frame(
                    src,
                    (junk + lines_before + 1).tolist(),
                    [bytes(block[starts[i] : ends[i]]).decode("utf-8", "backslashreplace") for i in junk.tolist()],
                    [reason.get(int(i), "invalid UTF-8") for i in junk.tolist()],
                )
            )
        if len(rest) and not hs_err:
            out.append(
                unparsed_frame(
                    src,
                    (rest + lines_before + 1).tolist(),
                    lines.take(pa.array(rest)).to_pylist(),
                    "not a JVM error line",
                )
            )
        lines_before += count_lines(block) + (0 if block.endswith(b"\n") else 1)
        return out

    try:
        for chunk in read_chunks(src, block_size) if block_size else read_chunks(src):
            buf = carry + chunk if carry else chunk
            cut = buf.rfind(b"\n") + 1
            if cut <= 0:
                carry = buf
                continue
            block, carry = bytes(buf[:cut]), buf[cut:]
            for un in block_rows(block):
                yield "unparsed", un
    except SourceError as e:
        ctx.fail(f"{e}; content up to line {lines_before} was read", lines_before + 1)
    if carry:
        for un in block_rows(bytes(carry)):
            yield "unparsed", un
    if not rows:
        return
    df = pd.concat(rows, ignore_index=True)
    command = str(facts.get("command") or "")
    main = pc.struct_field(pc.extract_regex(pa.array([command], pa.large_string()), MAIN), "v")[0].as_py()
    xmx = pc.struct_field(
        pc.extract_regex(pa.array([command], pa.large_string()), r"-Xmx(?P<v>\d+[kKmMgGtT]?)(?:\s|$)"), "v"
    )[0].as_py()
    df["ts"] = facts.get("ts", pd.NaT)
    fatal = df["kind"] == "fatal_error"
    df.loc[fatal, "error"] = facts.get("signal")
    df["pid"] = pd.array([int(facts["pid"]) if facts.get("pid") else None] * len(df), dtype="Int64")  # type: ignore[call-overload]
    df["process"] = main or None
    df["heap_max"] = xmx or None
    df["jre"] = facts.get("jre")
    df["frame"] = facts.get("frame")
    df["host"] = src.host
    df["file"] = src.rel
    yield "jvm_errors", df


register(
    "jvm-errors",
    detect=detect,
    parse=parse,
    tables=("jvm_errors", "unparsed"),
    priority=45,
    doc="JVM output outside log4j: OutOfMemoryError on stderr, -XX:+ExitOnOutOfMemoryError, hs_err_pid*.log",
)
