"""The ``events`` table: one row per log record, whatever format the log was written in.

Its schema is declared here once, as a table schema (for pandas and TABLES.md) and as the
Arrow schema the log parsers emit, with the one conversion between the two.

Example:
    >>> to_pandas(empty_events()).columns.tolist()
    ['ts', 'level', 'logger', 'message', 'host', 'file', 'line', 'nlines', 'template_id']
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kitlib import tables

LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]

tables.declare(
    "events",
    "One row per log4j record (multi-line records are one row).",
    [
        ("ts", "ts", "record time, converted to UTC from the file's timezone"),
        ("level", "category", "TRACE, DEBUG, INFO, WARN, ERROR or FATAL"),
        ("logger", "category", "logger name (Connect's ':line' suffix removed); empty when the layout has none"),
        ("message", "str", "message text; continuation lines (stack traces, blocks) joined with newlines"),
        ("host", "category", "host the file came from"),
        ("file", "category", "path of the source file relative to the bundle root"),
        ("line", "int", "1-based line number of the record's first line"),
        ("nlines", "int", "physical lines the record spans"),
        (
            "template_id",
            "category",
            "id of the Kafka log statement that wrote the record (its lineage across releases, see "
            "`kitlib templates`); empty for records no statement of the catalogue matches",
        ),
    ],
)

EVENTS_SCHEMA = pa.schema(
    [
        ("ts", pa.timestamp("ms", tz="UTC")),
        ("level", pa.dictionary(pa.int8(), pa.string())),
        ("logger", pa.dictionary(pa.int32(), pa.string())),
        ("message", pa.large_string()),
        ("host", pa.dictionary(pa.int32(), pa.string())),
        ("file", pa.dictionary(pa.int32(), pa.string())),
        ("line", pa.int64()),
        ("nlines", pa.int32()),
    ]
)


def same_value(value: str, n: int) -> pa.DictionaryArray:
    """A dictionary column of ``n`` rows that all hold ``value`` (a block's host, file or logger)."""
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value]))


def block_events(
    ts_ms: np.ndarray,
    stamped: np.ndarray,
    level: pa.Array,
    logger: pa.Array,
    message: pa.Array,
    host: str,
    file: str,
    line: np.ndarray,
    nlines: np.ndarray,
) -> pa.Table:
    """The events table of one parsed block of one file: times in UTC milliseconds (null where
    ``stamped`` is false), the record's first line and the physical lines it spans."""
    n = len(line)
    return pa.Table.from_arrays(
        [
            pa.array(ts_ms, pa.timestamp("ms", tz="UTC"), mask=~stamped),
            level,
            logger,
            message,
            same_value(host, n),
            same_value(file, n),
            pa.array(line, pa.int64()),
            pa.array(nlines, pa.int32()),
        ],
        schema=EVENTS_SCHEMA,
    )


def empty_events() -> pa.Table:
    """An events table with no rows."""
    return EVENTS_SCHEMA.empty_table()


def to_pandas(t: pa.Table) -> pd.DataFrame:
    """Events Arrow table -> DataFrame with the declared dtypes (strings stay Arrow-backed)."""
    df = t.to_pandas(
        types_mapper={pa.large_string(): pd.StringDtype("pyarrow"), pa.string(): pd.StringDtype("pyarrow")}.get
    )
    df["ts"] = df["ts"].astype("datetime64[ns, UTC]")
    df["line"] = df["line"].astype("Int64")
    df["nlines"] = df["nlines"].astype("Int64")
    if "template_id" not in df.columns:  # parser output, before the templates are matched
        df["template_id"] = pd.Series(pd.NA, index=df.index, dtype="string").astype("category")
    return df
