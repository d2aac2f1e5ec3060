"""File names as tables and messages show them."""

from __future__ import annotations


def shown(name: str) -> str:
    """A file name as tables and messages show it: bytes that are not UTF-8 (kept by Python as
    lone surrogates) become ``\\xNN``.

    Example:
        >>> import os
        >>> shown(os.fsdecode(b"caf\\xe9.log"))
        'caf\\\\xe9.log'
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
