"""Numbers as a reader sees them, in a terminal, a notebook or a report page.

Example:
    >>> number(1234567), number(0.5), size(698_400_000)
    ('1,234,567', '0.5', '698.4 MB')
"""

from __future__ import annotations

import math


def number(v) -> str:
    """A number with thousands separators and as many decimals as its size deserves."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    v = float(v)
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.1f}"
    return f"{v:.2g}"


def size(v) -> str:
    """Bytes in decimal units: ``698.4 MB``."""
    v = float(v)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.1f} {unit}"
    return f"{v:,.0f} B"
