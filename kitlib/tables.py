"""Table schemas: the one place where every table the kit produces is declared.

Each producer module declares its table once with :func:`declare`; everything else
(empty tables, column order, dtypes, the docs in TABLES.md) comes from here.

Example:
    >>> from kitlib import tables
    >>> list(tables.empty("unparsed").columns)
    ['file', 'line', 'host', 'text', 'reason']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa

from kitlib import registry

# dtype labels used in schemas and what pandas dtype they become
DTYPES = {
    "ts": "datetime64[ns, UTC]",
    "str": "string",
    "category": "category",
    "int": "Int64",
    "float": "float64",
    "bool": "boolean",
    "object": "object",
}


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    doc: str


@dataclass
class Table:
    name: str
    doc: str
    columns: list[Column] = field(default_factory=list)
    time: str = "ts"  # the column a time window cuts the table by ("" for none)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


SCHEMAS = registry.TABLES  # name -> Table, filled by declare()

# Every table carries these provenance columns so findings can cite evidence.
PROVENANCE = [
    Column("host", "category", "host the file came from (folder name or bundle manifest)"),
    Column("file", "category", "path of the source file relative to the bundle root"),
    Column("line", "int", "1-based line number of the row's first line in that file"),
]


def declare(
    name: str, doc: str, columns: list[tuple[str, str, str]], provenance: bool = True, time: str = "ts"
) -> Table:
    """Declare a table schema; returns it. Columns are (name, dtype label, doc); ``time`` names
    the column a time window (START/END) cuts the table by, when it is not ``ts``.

    Example:
        >>> t = declare("demo_table", "a demo", [("x", "int", "a number")])
        >>> t.names
        ['x', 'host', 'file', 'line']
    """
    cols = [Column(*c) for c in columns]
    if provenance:
        have = {c.name for c in cols}
        cols += [c for c in PROVENANCE if c.name not in have]
    for c in cols:
        if c.dtype not in DTYPES:
            raise ValueError(f"{name}.{c.name}: unknown dtype label {c.dtype!r}")
    t = Table(name, doc, cols, time)
    SCHEMAS[name] = t
    return t


def time_column(name: str) -> str:
    """The column a time window cuts table ``name`` by: ``ts`` unless its declaration names
    another (``restarts`` is cut by ``start_ts``); ``files`` is never cut by time.

    Example:
        >>> time_column("unparsed"), time_column("no-such-table")
        ('ts', 'ts')
    """
    if name == "files":
        return ""
    spec = SCHEMAS.get(name)
    return spec.time if spec is not None else "ts"


# the Arrow type each dtype label is written as when a table is handed on in pieces (every piece
# of a table gets the same schema, whatever values that piece happens to hold)
ARROW_TYPES = {
    "ts": pa.timestamp("ns", tz="UTC"),
    "str": pa.large_string(),
    "category": pa.dictionary(pa.int32(), pa.large_string()),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "object": pa.large_string(),
}


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of table ``name`` (see :data:`ARROW_TYPES`).

    Example:
        >>> arrow_schema("unparsed").field("line").type
        DataType(int64)
    """
    return pa.schema([(c.name, ARROW_TYPES[c.dtype]) for c in SCHEMAS[name].columns])


def to_arrow(name: str, df: pd.DataFrame) -> pa.Table:
    """A conformed frame of table ``name`` as Arrow, in :func:`arrow_schema`."""
    return pa.Table.from_pandas(df, schema=arrow_schema(name), preserve_index=False)


def contiguous(t: pa.Table) -> pa.Table:
    """``t`` with each column in one piece, column by column (memory holds the table and one
    column's copy at most). A Parquet read gives a piece per row group, and pandas' take on an
    Arrow string column of many pieces joins them all first: picking 20 rows of a 490k-row
    message column took 16 ms instead of 16 us, on every filter and group a detector makes.
    A text column too big for one piece of 32-bit offsets stays in pieces.

    Example:
        >>> t = pa.Table.from_batches([pa.record_batch({"a": ["x"]}), pa.record_batch({"a": ["y"]})])
        >>> t.column("a").num_chunks, contiguous(t).column("a").num_chunks
        (2, 1)
    """
    if all(c.num_chunks <= 1 for c in t.columns):
        return t
    schema, columns = t.schema, list(t.columns)
    del t
    for i, c in enumerate(columns):
        if c.num_chunks > 1:
            try:
                columns[i] = pa.chunked_array([c.combine_chunks()], c.type)
            except (pa.ArrowInvalid, pa.ArrowCapacityError):  # over 2 GB of text in a 32-bit-offset column
                pass
    return pa.Table.from_arrays(columns, schema=schema)


def empty(name: str) -> pd.DataFrame:
    """An empty DataFrame with the declared columns and dtypes of table ``name`` (a fresh copy
    each call; the first one per table is kept as the template, since building the dtypes column
    by column costs far more than copying them)."""
    spec = SCHEMAS[name]
    cached = _EMPTY.get(name)
    if cached is None or cached[0] is not spec:
        cached = _EMPTY[name] = (spec, conform(name, pd.DataFrame()))
    return cached[1].copy()


_EMPTY: dict[str, tuple[Table, pd.DataFrame]] = {}


def conform(name: str, df: pd.DataFrame, redact: bool = True) -> pd.DataFrame:
    """Return ``df`` with exactly the declared columns of ``name``, in order, with their dtypes,
    and every string value passed through :func:`kitlib.redact.redact_frame` (the one place every
    table goes through before it is stored or shown; ``redact=False`` only for tables read back
    from the kit's own Parquet output, which was redacted when written).

    Missing columns are added as NA; extra columns are dropped.

    Example:
        >>> conform("unparsed", pd.DataFrame({"file": ["a.log"], "line": [3], "text": ["x"]})).line.dtype
        Int64Dtype()
    """
    spec = SCHEMAS[name]
    if not len(df) and not len(df.columns):
        cached = _EMPTY.get(name)
        if cached is not None and cached[0] is spec:
            return cached[1].copy()
    out = {}
    for c in spec.columns:
        target = DTYPES[c.dtype]
        if c.name in df.columns:
            out[c.name] = _cast(df[c.name], c.dtype, target)
        else:
            out[c.name] = _missing(df.index, c.dtype, target)
    res = pd.DataFrame(out, index=df.index).reset_index(drop=True)
    if redact:
        from kitlib.redact import redact_frame

        res = redact_frame(name, res)
    return res


def _missing(index: pd.Index, label: str, target: str) -> pd.Series:
    """A column of NA values of the declared dtype (categories of a categorical are strings)."""
    if label == "category":
        return pd.Series(index=index, dtype="string").astype("category")
    return pd.Series(index=index, dtype=target)


def _cast(s: pd.Series, label: str, target: str) -> pd.Series:
    if str(s.dtype) == target and label != "category":
        return s
    if label == "ts":
        try:
            if isinstance(s.dtype, pd.DatetimeTZDtype):
                return s.dt.tz_convert("UTC").astype(target)
            if pd.api.types.is_datetime64_any_dtype(s.dtype):
                return s.dt.tz_localize("UTC").astype(target)
            return pd.to_datetime(s, utc=True, errors="coerce").astype(target)
        except (OverflowError, ValueError, pd.errors.OutOfBoundsDatetime):
            # a value beyond what datetime64[ns] holds (parsers send those lines to unparsed;
            # this is the backstop): that value becomes NaT, the table is kept
            return pd.to_datetime(s.astype("object").map(_in_ns_range), utc=True, errors="coerce").astype(target)
    if label == "category":
        return s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("string").astype("category")
    if label == "str":
        return s if str(s.dtype) == "string" else s.astype("string")
    if label == "int":
        return pd.to_numeric(s, errors="coerce").astype("Int64") if str(s.dtype) != "Int64" else s
    if label == "float":
        return pd.to_numeric(s, errors="coerce").astype("float64")
    if label == "bool":
        return s.astype("boolean")
    return s.astype("object")


def _in_ns_range(v):
    try:
        t = pd.Timestamp(v)
        return t if pd.Timestamp.min < t.tz_localize(None) < pd.Timestamp.max else pd.NaT
    except (ValueError, TypeError, OverflowError):
        return pd.NaT


def markdown() -> str:
    """All declared schemas as Markdown (this is what TABLES.md holds)."""
    out = [
        "# Tables\n",
        "Every table `kitlib` produces, with its columns. Generated from "
        "`kitlib.tables.SCHEMAS` (`kitlib tables > TABLES.md`).\n",
    ]
    registry.load()
    for name in sorted(SCHEMAS):
        t = SCHEMAS[name]
        out.append(f"\n## `{name}`\n\n{t.doc}\n\n| column | type | meaning |\n|---|---|---|")
        for c in t.columns:
            out.append(f"| `{c.name}` | {c.dtype} | {c.doc} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # pragma: no cover
    # run as a script this file is a second copy of the module: print through the imported one
    # (loaded by name, the way the registry loads the modules that declare tables into it)
    import importlib

    print(importlib.import_module("kitlib.tables").markdown(), end="")
