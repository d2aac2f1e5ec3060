"""``kafka-configs --describe`` output (Kafka 1.x to 4.x) -> the ``configs`` table (source 'cli').

Layouts::

    Dynamic configs for broker 1 are:                   (also "All configs for ...", "Default
      log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, ...}
    Dynamic configs for topic orders are:               configs for brokers in the cluster are:")
      retention.ms=604800000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=604800000}
    Quota configs for client-id 'reporting' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0
    Quota configs for user-principal 'alice', client-id 'c1' are request_percentage=50.0
    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192
    Configs for topic 'orders' are retention.ms=1000,cleanup.policy=compact      (--zookeeper, <= 2.x)

Each key is one row: ``scope`` is broker, topic, client-id, user-principal, ip, broker-logger...,
``entity`` the name (``<default>`` for cluster/entity defaults), ``origin`` the first synonym's
source (the one in effect). Sensitive entries (``sensitive=true``) are stored as
``[redacted]``, and every value passes through :func:`kitlib.redact.redact_value`; synonyms are
not stored.

Example:
    >>> detect(b"Dynamic configs for broker 1 are:\\n  log.cleaner.threads=2 sensitive=false synonyms={}\\n", None)
    True
"""

from __future__ import annotations

import re

from kitlib.formats import register
from kitlib.formats.cli.frame import ToolOutput, head_lines
from kitlib.redact import redact_value

_BLOCK = re.compile(
    r"^(?P<kind>Dynamic|All|Default) configs for (?:(?P<dscope>[\w-]+?)s? in the cluster|"
    r"(?P<scope>[\w-]+?)s? (?P<entity>.+?)) are:\s*$"
)
_ENTRY = re.compile(r"^\s+(?P<key>[^=\s]+)=(?P<value>.*?) sensitive=(?P<sens>true|false) synonyms=\{(?P<syn>.*)\}\s*$")
_INLINE = re.compile(r"^(?:(?P<what>Quota|SCRAM credential) configs|Configs) for (?P<ents>.+?) are ?(?P<rest>.*)$")
_ENT = re.compile(r"(?:the default (?P<dscope>[\w-]+)|(?P<scope>[\w-]+) '(?P<name>[^']*)')")
_SCRAM_PARTS = {"salt", "stored_key", "server_key", "iterations"}
_SCOPES = {
    "brokers": "broker",
    "topics": "topic",
    "clients": "client-id",
    "users": "user-principal",
    "broker-loggers": "broker-logger",
    "ips": "ip",
}


def detect(head: bytes, src) -> bool:
    return any(_BLOCK.match(ln) or (_INLINE.match(ln) and _ENT.search(ln)) for ln in head_lines(head, 20))


def _scope(s: str) -> str:
    return _SCOPES.get(s, s)


def _inline(m: re.Match) -> tuple[str, str, list[tuple[str, str]]] | None:
    ents = list(_ENT.finditer(m.group("ents")))
    if not ents:
        return None
    scopes, names = [], []
    for e in ents:
        scopes.append(_scope(e.group("scope") or e.group("dscope")))
        names.append("<default>" if e.group("dscope") else e.group("name"))
    rest = m.group("rest").strip()
    items: list[tuple[str, str]] = []
    if rest:  # "a=1.0, b=2.0" (3.x quotas) or "a=1,b=2" (ZooKeeper era); SCRAM values hold '=' and ','
        parts = (
            re.split(r",\s*(?=[\w.-]+=)", rest)
            if m.group("what") != "SCRAM credential"
            else re.split(r",\s*(?=SCRAM-)", rest)
        )
        for p in parts:
            k, sep, v = p.partition("=")
            if not sep:
                return None
            if k.strip() in _SCRAM_PARTS and items and items[-1][0].upper().startswith("SCRAM-"):
                items[-1] = (items[-1][0], f"{items[-1][1]},{p.strip()}")  # ZooKeeper era: credential fields
                continue
            items.append((k.strip(), v.strip()))
    return (
        "/".join(scopes),
        "/".join(names),
        [(k, _scram(v) if k.upper().startswith("SCRAM-") else v) for k, v in items],
    )


def _scram(value: str) -> str:
    """Only the iteration count of a SCRAM credential; salt and keys are never stored."""
    m = re.search(r"iterations=(\d+)", value)
    return f"iterations={m.group(1)}" if m else "[redacted]"


class Configs(ToolOutput):
    """``kafka-configs --describe``: blocks of entries under a ``... configs for ... are:`` line,
    and the one-line quota and SCRAM listings."""

    block: tuple[str, str] | None = None  # (scope, entity) of the entries that follow

    def line(self, n: int, text: str) -> None:
        out, snap = self.out, self.snap
        m = _BLOCK.match(text)
        if m:
            if m.group("dscope"):
                self.block = (_scope(m.group("dscope") + "s"), "<default>")
            else:
                self.block = (_scope(m.group("scope") + "s"), m.group("entity").strip("'"))
            out.structure()
            return
        m, block = _ENTRY.match(text), self.block
        if m and block:
            key = m.group("key")
            value = "[redacted]" if m.group("sens") == "true" else redact_value(key, m.group("value"))
            syn = m.group("syn")
            origin = syn.split(":", 1)[0] if syn else None
            out.add(
                "configs",
                n,
                ts=snap,
                source="cli",
                scope=block[0],
                entity=block[1],
                key=key,
                value=value,
                origin=origin,
            )
            out.structure()
            return
        m = _INLINE.match(text)
        got = _inline(m) if m else None
        if m is None or got is None:
            out.bad(n, text, "not a kafka-configs --describe line")
            return
        scope, entity, items = got
        origin = "SCRAM_CREDENTIAL" if m.group("what") == "SCRAM credential" else None
        for k, v in items:
            out.add(
                "configs",
                n,
                ts=snap,
                source="cli",
                scope=scope,
                entity=entity,
                key=k,
                value=redact_value(k, v),
                origin=origin,
            )
        out.structure()


register(
    "configs_cli",
    detect=detect,
    parse=Configs.parse,
    tables=("configs",),
    priority=26,
    doc="kafka-configs --describe output (brokers, topics, clients, users, quotas; old and new layouts)",
)
