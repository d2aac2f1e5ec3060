"""A JVM that ran out of memory or crashed, from what it wrote outside log4j (``jvm_errors``, read
by :mod:`kitlib.formats.jvm`): stderr's OutOfMemoryError lines, -XX:+ExitOnOutOfMemoryError's
last words, the native out-of-memory banner and hs_err_pid*.log. One finding per host and kind
(out of memory, crash), naming the process (``kafka.Kafka`` is a broker) when the file says.

Example:
    >>> import pandas as pd
    >>> je = pd.DataFrame({"kind": ["oom_uncaught", "oom_exit"], "host": ["b1", "b1"], "error": [None, "Java heap space"],
    ...                    "thread": ["group-metadata-manager-0", None], "process": [None, None], "heap_max": [None, None]})
    >>> describe(je)
    'java.lang.OutOfMemoryError: Java heap space; 1 thread(s) died of it (group-metadata-manager-0); the JVM exited on it'
"""

from __future__ import annotations

import pandas as pd

from kitlib.findings import Finding, detector, evidence

OOM_KINDS = ("oom", "oom_uncaught", "oom_exit", "native_oom", "commit_failed")


def describe(rows: pd.DataFrame) -> str:
    """What one host's out-of-memory rows say, in a sentence."""
    k = rows["kind"].astype("string")
    bits = []
    heap = rows.loc[k.isin(["oom", "oom_exit"]), "error"].dropna().astype(str).unique().tolist()
    if k.isin(["oom", "oom_uncaught", "oom_exit"]).any():
        bits.append("java.lang.OutOfMemoryError" + (": " + ", ".join(heap) if heap else ""))
    threads = rows.loc[k == "oom_uncaught", "thread"].dropna().astype(str).tolist()
    if threads:
        bits.append(
            f"{len(threads)} thread(s) died of it ({', '.join(threads[:3])}{', ...' if len(threads) > 3 else ''})"
        )
    if (k == "oom_exit").any():
        bits.append("the JVM exited on it")
    if k.isin(["native_oom", "commit_failed"]).any():
        nbytes = pd.to_numeric(rows.loc[k.isin(["native_oom", "commit_failed"]), "bytes"], errors="coerce").max()
        size = f" ({nbytes / 2**20:,.0f} MiB refused)" if nbytes == nbytes else ""
        bits.append("the JVM could not get native memory from the system" + size)
    return "; ".join(bits)


def _who(rows: pd.DataFrame, host: str) -> str:
    proc = rows["process"].dropna().astype(str).unique().tolist()
    xmx = rows["heap_max"].dropna().astype(str).unique().tolist()
    name = ("broker " if proc == ["kafka.Kafka"] else "") + host
    extra = ", ".join(([proc[0]] if proc else []) + ([f"-Xmx{xmx[0]}"] if xmx else []))
    return f"{name} ({extra})" if extra else name


@detector(
    ids=["jvm-out-of-memory", "jvm-crash"],
    needs=["jvm_errors"],
    checks="the JVM's own out-of-memory and fatal-error output (stderr, -XX:+ExitOnOutOfMemoryError, hs_err_pid*.log)",
)
def jvm_errors(bundle) -> list[Finding]:
    je = bundle.table("jvm_errors")
    kind = je["kind"].astype("string")
    out = []
    for host, rows in je[kind.isin(list(OOM_KINDS))].groupby(je["host"].astype(str), sort=True):
        k = rows["kind"].astype("string")
        native = k.isin(["native_oom", "commit_failed"]).any() and not k.isin(["oom", "oom_uncaught", "oom_exit"]).any()
        fixes = []
        if native:
            fixes.append(
                "the machine or container had less free memory than the JVM asked for (usually the heap at "
                "start-up): lower -Xmx/-Xms (KAFKA_HEAP_OPTS) below the container's limit, leaving room for the "
                "page cache and direct buffers, or give the host more memory"
            )
        else:
            fixes.append(
                "the heap is too small for the load: raise -Xmx (KAFKA_HEAP_OPTS), and look for what allocates "
                "(very large batches or message.max.bytes, many partitions or connections, down-conversion for old "
                "clients)"
            )
        if (k == "oom_uncaught").any() and not (k == "oom_exit").any():
            fixes.append(
                "threads died but the process kept running, half-dead: start the JVM with "
                "-XX:+ExitOnOutOfMemoryError so that it exits and is restarted"
            )
        out.append(
            Finding(
                "jvm-out-of-memory",
                "critical",
                f"JVM out of memory on {_who(rows, str(host))}: {describe(rows)}",
                numbers={
                    "host": str(host),
                    "process": ", ".join(rows["process"].dropna().astype(str).unique()),
                    "heap_max": ", ".join(rows["heap_max"].dropna().astype(str).unique()),
                    "oom_lines": int(k.isin(["oom", "oom_uncaught", "oom_exit"]).sum()),
                    "threads_died": int((k == "oom_uncaught").sum()),
                    "native_memory_refused": bool(k.isin(["native_oom", "commit_failed"]).any()),
                },
                recommendation="; ".join(fixes)[:1].upper() + "; ".join(fixes)[1:] + ".",
                evidence=evidence(rows.head(6)),
                counted_from={"oom_lines": ("jvm_errors", f"host == {str(host)!r} and kind.str.startswith('oom')")},
            )
        )
    crashes = je[kind == "fatal_error"]
    for host, rows in crashes.groupby(crashes["host"].astype(str), sort=True):
        signal = ", ".join(rows["error"].dropna().astype(str).unique()) or "a fatal error"
        frame = ", ".join(rows["frame"].dropna().astype(str).unique())
        out.append(
            Finding(
                "jvm-crash",
                "critical",
                f"JVM crashed on {_who(rows, str(host))}: {signal}" + (f" in {frame[:160]}" if frame else ""),
                numbers={
                    "host": str(host),
                    "process": ", ".join(rows["process"].dropna().astype(str).unique()),
                    "signal": signal,
                    "frame": frame,
                    "jre": ", ".join(rows["jre"].dropna().astype(str).unique()),
                    "pid": ", ".join(str(int(p)) for p in rows["pid"].dropna().unique()),
                },
                recommendation=(
                    "The JVM itself failed (hs_err_pid*.log): a crash in compiled Java code or the JVM is a JVM bug, "
                    "so upgrade the JDK to its latest update (the problematic frame names the method); a crash in a "
                    "native library points at that library. Keep the hs_err file and the core dump for the report."
                ),
                evidence=evidence(rows.head(3)),
            )
        )
    return out
