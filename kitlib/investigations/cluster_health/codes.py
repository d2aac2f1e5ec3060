"""Columns of the cluster-health models read by their codes: a categorical column (a host, a file)
turned into node ids or text once per category and spread to the rows by its codes, never one
Python object made per row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def host_ids(host: pd.Series, ids: dict[str, int]) -> pd.Series:
    """The node id (``ids``) of each row's ``host`` as Float64; a categorical host looked up per category.

    Example:
        >>> host_ids(pd.Series(["b-1", None, "b-9"], dtype="category"), {"b-1": 1}).tolist()
        [1.0, <NA>, <NA>]
    """
    if isinstance(host.dtype, pd.CategoricalDtype):
        per = np.array([ids.get(str(c), np.nan) for c in host.cat.categories], dtype="float64")
        codes = host.cat.codes.to_numpy()
        got = np.append(per, np.nan)[np.where(codes < 0, len(per), codes)]
    else:
        got = host.astype("string").map(ids).astype("Float64").to_numpy("float64", na_value=np.nan)
    return pd.Series(pd.array(got, dtype="Float64"), index=host.index)


def text_values(values: pd.Series) -> np.ndarray:
    """What ``values.astype(str).to_numpy()`` gives (a categorical's missing value stays NaN): a
    categorical column's rows share its categories' strings (one per category, not one per row), and
    a column of strings alone is handed back as it is.

    Example:
        >>> text_values(pd.Series(["a", None, "a"], dtype="category")).tolist()
        ['a', nan, 'a']
    """
    if values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string":
        return values.to_numpy()  # strings already (astype would copy them through fixed-width text)
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return values.astype(str).to_numpy()
    names = np.array([str(c) for c in values.cat.categories] + [np.nan], dtype=object)
    codes = values.cat.codes.to_numpy()
    return names[np.where(codes < 0, len(names) - 1, codes)]


def text_counts(values: pd.Series) -> pd.Series:
    """``values.astype(str).value_counts()``: a categorical column's rows counted as that text
    without a Python string made per row (the text of its categories taken by its codes, in
    Arrow), the same counts in the same order.

    Example:
        >>> text_counts(pd.Series(["b", "a", "b"], dtype="category")).to_dict()
        {'b': 2, 'a': 1}
    """
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return values.astype(str).value_counts()
    names = pd.array([str(c) for c in values.cat.categories], dtype=str)
    return pd.Series(names.take(values.cat.codes.to_numpy(), allow_fill=True)).value_counts()


def earliest(rows: pd.DataFrame, n: int) -> pd.DataFrame:
    """``rows.sort_values("ts").head(n)`` with only the times sorted (the same order, ties and
    missing times alike): a fencing's hundreds of thousands of rows are not copied to show eight.

    Example:
        >>> earliest(pd.DataFrame({"ts": [3, 1, 2], "x": list("abc")}), 2)["x"].tolist()
        ['b', 'c']
    """
    order = rows["ts"].reset_index(drop=True).sort_values().index[:n]
    return rows.iloc[order]


def arrow_text(values: pd.Series):
    """A text column as Arrow strings (the column's own buffers where it is Arrow-backed; a
    categorical one's categories taken by its codes, in Arrow).

    Example:
        >>> arrow_text(pd.Series(["b", None, "a"], dtype="category")).to_pylist()
        ['b', None, 'a']
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        names = pa.array(values.cat.categories.astype("string").array)
        got = pc.take(names, pa.array(codes, mask=codes < 0))
    else:
        got = pa.array(values.astype("string").array)
    return got if isinstance(got, pa.ChunkedArray) else pa.chunked_array([got])


def text_codes(values: pd.Series) -> np.ndarray:
    """One int64 code per row of a text column, equal where the texts are equal, -1 where there is
    none: a categorical column's own codes, else Arrow's dictionary codes of the text.

    Example:
        >>> text_codes(pd.Series(["b", None, "b"], dtype="string")).tolist()
        [0, -1, 0]
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.codes.to_numpy().astype(np.int64)
    codes = pc.dictionary_encode(arrow_text(values).combine_chunks()).indices
    return np.asarray(pc.fill_null(codes, -1).to_numpy(zero_copy_only=False), np.int64)
