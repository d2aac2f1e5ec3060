"""What a log call's message is made of, shared by the two readers of Kafka's log statements
(:mod:`kitlib.formats.logs.statements` reads source files, :mod:`kitlib.formats.logs.classfiles`
released class files): one call as found, its pieces of literal text and slots, and each slot's
type guessed from the expression that fills it and the words around it (the types are listed in
:data:`kitlib.formats.logs.statements.TYPES`)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Found:
    """One log call in one source file: who logs, at which level, what (slots as ``{}``), the
    slots' types and the expressions that fill them (as written)."""

    logger: str
    level: str
    template: str
    types: tuple[str, ...]
    exprs: tuple[str, ...]
    line: int = 0


# a piece of a message: literal text (str) or a slot (the expression that fills it)
Piece = str | tuple[str]


def _name(expr: str) -> str:
    """The last identifier of an expression, lower case (``partition.topicPartition`` -> ``topicpartition``)."""
    e = re.sub(r"\((?:[^()]|\([^()]*\))*\)", "", expr)  # calls' arguments
    e = re.sub(r"\.(?:toString|get|getMessage|mkString|size|asScala|asJava|map|toSeq|toList|toSet|keys|keySet)\b",
               "", e)  # fmt: skip
    ids = re.findall(r"[A-Za-z_]\w*", e)
    return ids[-1].lower() if ids else ""


def slot_type(expr: str, before: str, after: str) -> str:
    """A slot's type from the expression filling it and the literal text around it (see :data:`TYPES`)."""
    n = _name(expr)
    full = expr.lower()
    b = before[-40:].lower().rstrip(" :=([")
    a = after[:12].lower()
    if (
        n in ("e", "ex", "t", "th", "throwable", "cause", "exception")
        or n.endswith(("exception", "error"))
        or ("getmessage" in full)
    ):
        return "exception"
    by_name = [
        ("epoch", "epoch" in n),
        ("replica_list", bool(re.search(r"isr|insync|replicas$|replicaids$", n))),
        ("offset", "offset" in n or n in ("hw", "highwatermark", "lso", "logstartoffset")),
        ("duration", bool(re.search(r"(ms|millis|nanos|duration|elapsed|delay|backoff|timeout|interval)$", n))
         and "timestamp" not in n),
        ("topic_partition", n in ("tp", "tps", "topicpartition", "topicpartitions", "topicidpartition", "tidp",
                                  "partitions") or (n == "partition" and not a.startswith(("]", ",")))),
        ("partition", n in ("partitionid", "partitionindex", "partitionnum", "partition")),
        ("topic", "topic" in n),
        ("broker_id", bool(re.search(r"(broker|node|controller|leader|follower|replica)(id)?$", n))),
        ("group_id", "groupid" in n or n == "group"),
    ]  # fmt: skip
    by_words = [
        ("epoch", b.endswith("epoch")),
        ("replica_list", bool(re.search(r"\bisr( from| to)?$", b))),
        ("offset", b.endswith("offset")),
        ("duration", bool(re.match(r"\s*(ms|milliseconds|seconds|secs|s|ns|nanoseconds)\b", a))),
        ("broker_id", bool(re.search(r"\b(broker|node|controller|leader)( id)?$", b))),
        ("group_id", b.endswith("group")),
    ]
    return next((t for t, hit in by_name + by_words if hit), "any")


def _template(pieces: list[Piece]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Pieces -> (template with ``{}`` slots, the slots' types, their expressions)."""
    merged: list[Piece] = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] = merged[-1] + p
        elif p != "":
            merged.append(p)
    text, types, exprs = [], [], []
    for i, p in enumerate(merged):
        if isinstance(p, str):
            text.append(p)
            continue
        before = merged[i - 1] if i and isinstance(merged[i - 1], str) else ""
        after = merged[i + 1] if i + 1 < len(merged) and isinstance(merged[i + 1], str) else ""
        text.append("{}")
        types.append(slot_type(p[0], before, after))  # type: ignore[arg-type]
        exprs.append(" ".join(p[0].split()))
    return "".join(text), tuple(types), tuple(exprs)
