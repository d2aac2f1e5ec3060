"""Notebook parameters as papermill passes them: a list parameter may come as a list (``-y``,
``-p`` with YAML) or as one comma-separated string (``-p HOSTS broker-1,broker-2``).

Example:
    >>> as_list("broker-1, broker-2")
    ['broker-1', 'broker-2']
    >>> as_list(["broker-1"]), as_list(None), as_list("")
    (['broker-1'], None, None)
"""

from __future__ import annotations


def as_list(value) -> list[str] | None:
    """``None`` (no filter), or the names given as a list or a comma-separated string."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    else:
        items = [str(v).strip() for v in value]
    items = [v for v in items if v]
    return items or None
