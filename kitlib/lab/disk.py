"""Disk use of a lab node's log directories, as an operator records it on a broker host: ``df``
of each directory, appended to a file after an ISO time line (``date -Is; df -k DIR``), so the
bundle holds the size and free space of the file system the log dirs fill.

Example:
    >>> from kitlib import lab
    >>> lab.record_df(["/var/lib/kafka/data"], "bundle/broker-1/df.txt")   # doctest: +SKIP
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path


def record_df(paths: list[str | Path], out: str | Path, timeout: float = 10) -> str:
    """Append ``df -k`` of ``paths`` to ``out`` after an ISO time line; returns the output (empty
    when df failed, which the file then does not record)."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    r = subprocess.run(
        ["df", "-k", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    )
    if r.returncode != 0 or not r.stdout.strip():
        return ""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(f"{stamp}\n{r.stdout}")
    return r.stdout
