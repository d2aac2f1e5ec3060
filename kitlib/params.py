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


PINNED_KEYS = ("START", "END", "HOSTS", "TZ", "SEARCH")  # what a pinned view may set


def write_pinned(path, values: dict, note: str = "") -> None:
    """Write a pinned view (notebook parameters: START, END, HOSTS, TZ, and SEARCH, the search as
    a mapping) as a small YAML file that ``kitlib report BUNDLE --params FILE`` and ``papermill
    -f FILE`` read. Keys outside :data:`PINNED_KEYS` are refused."""
    import yaml

    unknown = sorted(set(values) - set(PINNED_KEYS))
    if unknown:
        raise ValueError(f"not a pinned-view parameter: {', '.join(unknown)}")
    head = "".join(f"# {line}\n" for line in note.splitlines())
    text = head + yaml.safe_dump(
        {k: values[k] for k in PINNED_KEYS if k in values}, sort_keys=False, allow_unicode=True
    )
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def read_pinned(path) -> dict:
    """The parameters of a pinned view written by :func:`write_pinned` (or by hand): a mapping
    whose keys are among :data:`PINNED_KEYS`; anything else raises ``ValueError`` naming it.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "view.yaml")
        >>> write_pinned(p, {"START": "2026-11-23T12:00:00+00:00", "END": None})
        >>> read_pinned(p)
        {'START': '2026-11-23T12:00:00+00:00', 'END': None}
    """
    import yaml

    with open(path, encoding="utf-8") as fh:
        try:
            got = yaml.safe_load(fh)
        except yaml.YAMLError as e:
            raise ValueError(f"{path}: not YAML ({str(e).splitlines()[0]})") from None
    if got is None:
        return {}
    if not isinstance(got, dict):
        raise ValueError(f"{path}: expected a mapping of parameters (START, END, ...), found {type(got).__name__}")
    unknown = sorted(str(k) for k in got if k not in PINNED_KEYS)
    if unknown:
        raise ValueError(
            f"{path}: unknown parameter(s) {', '.join(unknown)}; a pinned view sets {', '.join(PINNED_KEYS)}"
        )
    for k in ("START", "END", "TZ"):
        if got.get(k) is not None and not isinstance(got[k], str):
            got[k] = str(got[k])
    return got
