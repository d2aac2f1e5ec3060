"""Versions: brokers of one cluster started with different Kafka versions (the start-up
banner's ``Kafka version: x.y.z``, read into the ``restarts`` table). During a rolling upgrade
that is expected for a while; left so, the cluster runs at the features of its oldest broker
and each version has its own bugs.

Example:
    >>> r = pd.DataFrame({"start_ts": pd.to_datetime([1, 2], unit="s", utc=True), "version": ["3.8.0", "3.9.1"],
    ...                   "host": ["b1", "b2"], "file": ["b1/server.log", "b2/server.log"], "line": [1, 1]})
    >>> latest_versions(r)["version"].tolist()
    ['3.8.0', '3.9.1']
"""

from __future__ import annotations

import pandas as pd

from kitlib.findings import Finding, detector, evidence


def latest_versions(restarts: pd.DataFrame) -> pd.DataFrame:
    """The version each host started with last. Columns: host, version, start_ts, file, line."""
    r = restarts[restarts["version"].notna() & (restarts["version"].astype("string").str.len() > 0)]
    r = r.sort_values("start_ts", kind="stable").drop_duplicates("host", keep="last")
    return r[["host", "version", "start_ts", "file", "line"]].reset_index(drop=True)


@detector(
    ids=["broker-versions-mixed"],
    checks="brokers whose last start-up banner names different Kafka versions",
    needs=["restarts"],
)
def mixed_versions(bundle) -> list[Finding]:
    v = latest_versions(bundle.table("restarts"))
    if v["version"].nunique() < 2:
        return []
    per = v.groupby("version")["host"].agg(lambda h: ", ".join(sorted(h.astype(str))))
    newest = max(v["version"].astype(str), key=lambda s: tuple(int(p) if p.isdigit() else 0 for p in s.split(".")))
    return [
        Finding(
            "broker-versions-mixed",
            "low",
            f"{v['version'].nunique()} Kafka versions among {len(v)} brokers: "
            + "; ".join(f"{ver} on {hosts}" for ver, hosts in per.items())
            + f" (current mixed -> recommended all on {newest})",
            numbers={"versions": ", ".join(per.index.astype(str)), "brokers": len(v), "newest": newest},
            recommendation="Finish the rolling upgrade (or roll back) so every broker runs one version; until then "
            "the cluster runs at the features of its oldest broker (metadata.version / inter.broker.protocol.version) "
            "and a problem may be one version's alone.",
            evidence=evidence(v, lambda r: f"{r['host']} started with Kafka {r['version']}"),
        )
    ]
