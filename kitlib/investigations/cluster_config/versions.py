"""Versions: brokers of one cluster started with different Kafka versions (the start-up
banner's ``Kafka version: x.y.z``, read into the ``restarts`` table). During a rolling upgrade
that is expected for a while; left so, the cluster runs at the features of its oldest broker
and each version has its own bugs.

**Clients on protocol versions Kafka 4.0 removes** (KIP-896): Kafka 3.7 to 3.9 mark the old
versions of 23 APIs deprecated (``deprecatedVersions`` in each request's JSON schema) and count
the requests that use them (``DeprecatedRequestsPerSec``, tagged with the request, its version and
the client software that sent it); Kafka 4.0 removes most of them. What 4.0 kept is read from its own
``kafka-clients-4.0.0`` classes (``LOWEST_SUPPORTED_VERSION`` of each request): Produce v3-v6,
Metadata v0-v3, FindCoordinator v0, DeleteGroups v0 and SaslHandshake v0 stay. :data:`REMOVED`
holds the highest removed version of each of the 19 APIs that lose versions. The evidence read: the request log (``requests``: API, version, client id,
address and software), and JMX ``RequestsPerSec`` / ``DeprecatedRequestsPerSec`` by ``version``
with a count above zero. A client of Kafka 2.1 or later (Java), or a 2021 release of librdkafka,
Sarama, KafkaJS or kafka-python, uses versions 4.0 keeps.

Example:
    >>> r = pd.DataFrame({"start_ts": pd.to_datetime([1, 2], unit="s", utc=True), "version": ["3.8.0", "3.9.1"],
    ...                   "host": ["b1", "b2"], "file": ["b1/server.log", "b2/server.log"], "line": [1, 1]})
    >>> latest_versions(r)["version"].tolist()
    ['3.8.0', '3.9.1']
"""

from __future__ import annotations

import pandas as pd

from kitlib.bundle import per_bundle
from kitlib.findings import Finding, detector, evidence

# highest version Kafka 4.0 removes, per API: one below each request's LOWEST_SUPPORTED_VERSION
# in kafka-clients 4.0.0 (3.9 deprecated more: Produce v3-v6, Metadata v0-v3, FindCoordinator v0,
# DeleteGroups v0 and SaslHandshake v0 were kept)
REMOVED = {
    "Produce": 2,
    "Fetch": 3,
    "ListOffsets": 0,
    "OffsetCommit": 1,
    "OffsetFetch": 0,
    "JoinGroup": 1,
    "OffsetForLeaderEpoch": 1,
    "CreateTopics": 1,
    "DeleteTopics": 0,
    "DescribeConfigs": 0,
    "AlterReplicaLogDirs": 0,
    "DescribeLogDirs": 0,
    "CreateAcls": 0,
    "DeleteAcls": 0,
    "DescribeAcls": 0,
    "CreateDelegationToken": 0,
    "RenewDelegationToken": 0,
    "ExpireDelegationToken": 0,
    "DescribeDelegationToken": 0,
}
# the same keyed as the request log and JMX spell them alike: lower case, no "_"
REMOVED_IN_4_0 = {k.lower(): v for k, v in REMOVED.items()}
API_NAME = {k.lower(): k for k in REMOVED}


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


def _api_key(names: pd.Series) -> pd.Series:
    return names.astype("string").str.replace("_", "", regex=False).str.lower()


def _software(props: pd.Series) -> pd.Series:
    """``name/version`` of the client software from a DeprecatedRequestsPerSec MBean's tags."""
    p = props.astype("string").fillna("")
    name = p.str.extract(r"clientSoftwareName=([^,]*)", expand=False)
    ver = p.str.extract(r"clientSoftwareVersion=([^,]*)", expand=False)
    return (name.fillna("unknown") + "/" + ver.fillna("unknown")).astype("string")


@per_bundle
def removed_requests(bundle) -> pd.DataFrame:
    """Requests at versions Kafka 4.0 removes, one row per source, API, version and client.
    Columns: api, version, removed_through, client (client id, address or client software), software,
    requests (count), host, source ('request log' or the JMX metric), file, line."""
    cols = ["api", "version", "removed_through", "client", "software", "requests", "host", "source", "file", "line"]
    frames = []
    r = bundle.table("requests")
    if len(r):
        key = _api_key(r["api_name"])
        top = key.map(REMOVED_IN_4_0)
        old = r[top.notna() & (pd.to_numeric(r["api_version"], errors="coerce") <= top)]
        if len(old):
            old = old.assign(
                api=_api_key(old["api_name"]).map(API_NAME).astype("string"),
                version=old["api_version"].astype("int64"),
                client=old["client_id"].astype("string").fillna("")
                + " at "
                + old["client_address"].astype("string").fillna("?").str.rsplit(":", n=1).str[0],
                software=old["software"].astype("string"),
            )
            g = old.groupby(["api", "version", "client", "software"], dropna=False, sort=True)
            agg = g.agg(requests=("ts", "size"), host=("host", "first"), file=("file", "first"), line=("line", "min"))
            frames.append(agg.reset_index().assign(source="request log"))
    m = bundle.table("metrics")
    if len(m):
        name = m["name"].astype("string")
        v = m[
            name.isin(["RequestsPerSec", "DeprecatedRequestsPerSec"])
            & (m["attribute"].astype("string") == "Count")
            & m["version"].notna()
            & (m["value"] > 0)
        ]
        if len(v):
            top = _api_key(v["request"]).map(REMOVED_IN_4_0)
            v = v[top.notna() & (pd.to_numeric(v["version"], errors="coerce") <= top)]
        if len(v):
            v = v.sort_values("ts").assign(
                api=_api_key(v["request"]).map(API_NAME).astype("string"),
                version=pd.to_numeric(v["version"]).astype("int64"),
                software=_software(v["props"]),
                source=v["name"].astype("string"),
                host=v["host"].astype("string"),
            )
            # the deprecated meter names the client software; the plain one does not
            v = v.assign(software=v["software"].where(v["source"] == "DeprecatedRequestsPerSec", pd.NA))
            last = v.drop_duplicates(["host", "mbean"], keep="last")
            frames.append(
                pd.DataFrame(
                    {
                        "api": last["api"],
                        "version": last["version"],
                        "client": "client software " + last["software"].fillna("not named by this metric"),
                        "software": last["software"],
                        "requests": last["value"].astype("int64"),
                        "host": last["host"],
                        "source": "JMX " + last["source"],
                        "file": last["file"].astype("string"),
                        "line": last["line"],
                    }
                )
            )
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    out["removed_through"] = _api_key(out["api"]).map(REMOVED_IN_4_0).astype("int64")
    return out[cols].sort_values(["api", "version", "host"], kind="stable").reset_index(drop=True)


def _major(v: str) -> int:
    head = str(v).split(".")[0]
    return int(head) if head.isdigit() else 0


@detector(
    ids=["clients-on-removed-protocol"],
    checks="requests at API versions Kafka 4.0 removes (KIP-896): the request log, JMX RequestsPerSec / "
    "DeprecatedRequestsPerSec by version",
    needs=[],
)
def removed_protocol(bundle) -> list[Finding]:
    old = removed_requests(bundle)
    if not len(old):
        return []
    brokers = latest_versions(bundle.table("restarts"))
    running = ", ".join(sorted(set(brokers["version"].astype(str)))) if len(brokers) else "unknown"
    if len(brokers) and all(_major(v) >= 4 for v in brokers["version"].astype(str)):
        return []  # a 4.x broker refuses them: an incident for the client, not a risk of an upgrade
    apis = old.groupby("api")["version"].agg(lambda s: ", ".join(f"v{x}" for x in sorted(set(s))))
    named = old[old["source"] == "request log"]
    soft = old["software"].dropna().astype(str)
    clients = sorted(set(named["client"].astype(str))) or sorted(
        {f"client software {x}" for x in soft} or {"clients the metrics do not name"}
    )
    keep = ", ".join(f"{a} v{int(old[old['api'] == a]['removed_through'].iloc[0]) + 1}+" for a in apis.index)
    return [
        Finding(
            "clients-on-removed-protocol",
            "medium",
            f"{len(clients)} client(s) use protocol versions Kafka 4.0 removes (KIP-896): "
            + "; ".join(f"{a} {vs}" for a, vs in apis.items())
            + f", from {', '.join(clients[:5])}"
            + (f" and {len(clients) - 5} more" if len(clients) > 5 else "")
            + f" (current {', '.join(f'{a} {vs}' for a, vs in apis.items())} -> recommended {keep}: "
            "a client of Kafka 2.1 or later)",
            numbers={
                "clients": ", ".join(clients),
                "apis": "; ".join(f"{a} {vs}" for a, vs in apis.items()),
                "requests": int(old["requests"].sum()),
                "client_software": ", ".join(sorted(set(soft))) or "not named",
                "brokers_run": running,
                "removed_in": "Apache Kafka 4.0",
                "sources": ", ".join(sorted(set(old["source"].astype(str)))),
            },
            recommendation="These clients stop working when the brokers move to Kafka 4.0: the broker answers "
            "UNSUPPORTED_VERSION and closes the connection. Upgrade them before the brokers: Java clients to 2.1 or "
            "later (3.x is better), librdkafka-based clients to a release from 2021 or later (KIP-896 checked 1.8.2), "
            "Sarama 1.30.1+, KafkaJS 1.15.0+, kafka-python 2.0.2+; and remove a pinned api_version / "
            "broker.version.fallback that holds a client back. Kafka 3.7+ counts them per client software in "
            "kafka.network:type=RequestMetrics,name=DeprecatedRequestsPerSec.",
            evidence=evidence(
                old,
                lambda r: (
                    f"{r['host']}: {r['api']} v{r['version']} x{r['requests']} from {r['client']} ({r['source']})"
                ),
            ),
        )
    ]
