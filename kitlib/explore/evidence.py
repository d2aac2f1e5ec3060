"""The findings' evidence rows as the explore panel shows them (a table, and marks on the
timeline), cut to a window; :data:`MAX_POINTS`, the most marks one live chart carries."""

from __future__ import annotations

import pandas as pd

MAX_POINTS = 5000  # the most marks one live chart carries; more rows are aggregated first


def evidence_rows(findings, window=None) -> pd.DataFrame:
    """Every evidence row of ``findings`` (finding id, host, ts, file:line, text), only those whose
    time lies in ``window`` when one is given (rows without a time are kept only by a window open
    on both sides)."""
    from kitlib.window import Window

    rows = [
        {
            "host": e.get("host"),
            "ts": e.get("ts"),
            "where": f"{e.get('file')}:{e.get('line')}" if e.get("file") else None,
            "finding": f.id,
            "text": e.get("text"),
            "file": e.get("file"),
            "line": e.get("line"),
        }
        for f in findings
        for e in f.evidence
    ]
    d = pd.DataFrame(rows, columns=["host", "ts", "where", "finding", "text", "file", "line"])
    d["ts"] = pd.to_datetime(d["ts"], utc=True, errors="coerce", format="ISO8601")
    d = d.sort_values(["ts", "host", "where"], na_position="last").reset_index(drop=True)
    w = window if window is not None else Window()
    return w.frame(d, "ts")
