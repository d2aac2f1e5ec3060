"""Charts for the compression notebook.

Example:
    >>> from kitlib.investigations.compression.charts import tradeoff
    >>> tradeoff(table)          # doctest: +SKIP
"""

from __future__ import annotations

import altair as alt
import pandas as pd


def tradeoff(table: pd.DataFrame, speed: str = "compress_mb_per_s"):
    """Compression ratio against speed, one point per codec (up and right is better)."""
    d = table.dropna(subset=[speed])
    return alt.Chart(d, name=f"codec_tradeoff_{speed}").mark_point(size=120, filled=True).encode(
        x=alt.X(f"{speed}:Q", title=speed.replace("_", " ").replace("mb per s", "MB/s")),
        y=alt.Y("ratio:Q", title="compression ratio (× smaller)"),
        color=alt.Color("codec:N", legend=None),
        tooltip=["codec:N", f"{speed}:Q", "ratio:Q"],
    ).properties(width=420, height=260, title=f"Ratio vs {speed.split('_')[0]} speed") + alt.Chart(
        d, name=f"codec_labels_{speed}"
    ).mark_text(dy=-12).encode(x=f"{speed}:Q", y="ratio:Q", text="codec:N")


def producer_rates(table: pd.DataFrame):
    """Producer MB/s per codec from the broker probe."""
    d = table.dropna(subset=["producer_mb_per_s"])
    return (
        alt.Chart(d, name="codec_producer_rates")
        .mark_bar()
        .encode(
            x=alt.X("codec:N", sort="-y", title=None),
            y=alt.Y("producer_mb_per_s:Q", title="producer MB/s (broker probe)"),
            color=alt.Color("codec:N", legend=None),
            tooltip=["codec:N", "producer_mb_per_s:Q", "broker_ratio:Q"],
        )
        .properties(width=320, height=220, title="Producer throughput against a broker")
    )


def table_text(table: pd.DataFrame) -> str:
    """The measurements as fixed-width text (speeds end in 'MB/s' so a report diff can mask them)."""

    def mbs(v):
        return "-" if pd.isna(v) else f"{v:,.0f} MB/s"

    lines = [
        f"{'codec':8} {'ratio':>6} {'compress':>13} {'decompress':>13} {'producer (broker)':>18} {'on-disk ratio':>14}"
    ]
    for r in table.itertuples():
        br = "-" if pd.isna(getattr(r, "broker_ratio", float("nan"))) else f"{r.broker_ratio:.2f}"
        lines.append(
            f"{r.codec:8} {r.ratio:6.2f} {mbs(r.compress_mb_per_s):>13} {mbs(r.decompress_mb_per_s):>13} "
            f"{mbs(getattr(r, 'producer_mb_per_s', float('nan'))):>18} {br:>14}"
        )
    return "\n".join(lines)
