"""Log files -> the ``events`` table: Kafka's log4j layout, the other log4j/log4j2/logback pattern
layouts and JSON logs, each record a row (stack traces and multi-line messages stay whole), the
lines no record holds in ``unparsed``.

The modules, bottom to top:

- :mod:`~kitlib.formats.logs.blocks`: a file's bytes cut into blocks of whole lines, a block's
  lines as numpy offsets and Arrow strings;
- :mod:`~kitlib.formats.logs.dates`: the dates a layout writes, zones, daylight-saving changes;
- :mod:`~kitlib.formats.logs.containers`: the prefixes container tooling writes before each line;
- :mod:`~kitlib.formats.logs.records`: a block's records -> the events table and unparsed rows
  (shared by every reader), and the compiled scan (``_scan.c``);
- :mod:`~kitlib.formats.logs.layouts`: pattern layouts compiled into regexes;
- :mod:`~kitlib.formats.logs.inference`: which layout a file is written in;
- the readers, each registering its format: :mod:`~kitlib.formats.logs.log4j` (Kafka's default
  layout), :mod:`~kitlib.formats.logs.patterned` (any other pattern layout) and
  :mod:`~kitlib.formats.logs.jsonlog` (JSON logs).

:func:`parse_bytes` reads text held in memory with any of them.

Example:
    >>> ev, un = parse_bytes(b"[2024-05-22 00:32:03,023] INFO Hello (kafka.Foo)\\n")
    >>> ev.loc[0, ["level", "logger", "message"]].tolist(), len(un)
    (['INFO', 'kafka.Foo', 'Hello'], 0)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa

from kitlib.events import empty_events, to_pandas
from kitlib.formats import Context, unparsed_frame
from kitlib.formats.logs import jsonlog, log4j, patterned
from kitlib.formats.logs.blocks import THREADS
from kitlib.formats.logs.layouts import Layout, compile_pattern
from kitlib.sources import SourceFile


def parse_bytes(
    data: bytes,
    layout: Layout | str | None = "kafka",
    host: str = "test",
    rel: str = "test.log",
    tz: str = "UTC",
    threads: int = THREADS,
    block_size: int | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse log text held in memory; returns (events frame, unparsed frame). For tests and quick
    looks; bundles go through :func:`kitlib.load_bundle`.

    ``layout`` says which reader: ``"kafka"`` Kafka's default layout (:mod:`.log4j`), ``"json"``
    a JSON log (:mod:`.jsonlog`), a pattern or a :class:`~kitlib.formats.logs.layouts.Layout`
    that layout, None the layout inferred from the text (:mod:`.patterned`)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        src = SourceFile(p, rel, host, tz)
        ctx = Context(src)
        if layout == "kafka":
            chunks = log4j.parse(src, ctx, block_size=block_size, threads=threads)
        elif layout == "json":
            chunks = jsonlog.parse(src, ctx, block_size=block_size or jsonlog.BLOCK)
        else:
            lay = compile_pattern(layout) if isinstance(layout, str) else layout
            chunks = patterned.parse(src, ctx, block_size=block_size, threads=threads, layout=lay)
        evs: list[pa.Table] = []
        uns: list[pd.DataFrame] = []
        for name, chunk in chunks:
            (evs if name == "events" else uns).append(chunk)
    ev = to_pandas(pa.concat_tables(evs)) if evs else to_pandas(empty_events())
    un = pd.concat(uns, ignore_index=True) if uns else unparsed_frame(src, [], [], "")
    return ev, un
