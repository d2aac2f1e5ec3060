"""How many notebooks a report runs at once and how long a cell may take: what ``kitlib report``'s
arguments show as defaults, kept apart so that the command line is built without the report's
machinery."""

from __future__ import annotations

import os

EXEC_TIMEOUT = 600  # seconds per cell


def default_jobs() -> int:
    """Notebooks run at once by default: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
