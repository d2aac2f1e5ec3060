"""Checking that an output folder leaves the bundle untouched."""

from __future__ import annotations

import os
from pathlib import Path

from kitlib.sources.names import shown


def check_output(bundle: str | os.PathLike, out: str | os.PathLike, what: str = "--out") -> None:
    """Refuse (ValueError, before anything is written or removed) an output folder that is the
    bundle, inside it, or around it (a parent of the bundle): writing or replacing it would touch
    the input. Symlinks are resolved first.

    Example:
        >>> check_output("/data/b", "/data/b/tables")
        Traceback (most recent call last):
        ...
        ValueError: --out /data/b/tables is inside the bundle /data/b: input files are never written to
    """
    b = Path(os.path.realpath(bundle))
    o = Path(os.path.realpath(out))
    if o == b:
        raise ValueError(f"{what} {shown(str(out))} is the bundle itself: input files are never written to")
    if b in o.parents:
        raise ValueError(
            f"{what} {shown(str(out))} is inside the bundle {shown(str(bundle))}: input files are never written to"
        )
    if o in b.parents:
        raise ValueError(
            f"{what} {shown(str(out))} holds the bundle {shown(str(bundle))}: input files are never written to"
        )
