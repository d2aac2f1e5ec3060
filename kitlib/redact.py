"""Keeping secrets out of every table: config keys and values that look like credentials are
replaced before anything is stored.

Example:
    >>> redact_value("ssl.keystore.password", "hunter2")
    '[redacted]'
    >>> redact_value("batch.size", "16384")
    '16384'
    >>> redact_value("connection.url", "jdbc:mysql://app:s3cret@db:3306/x")
    'jdbc:mysql://app:[redacted]@db:3306/x'
"""
from __future__ import annotations

import re

REDACTED = "[redacted]"
# key names that hold secrets (Kafka's own PASSWORD-typed keys, JAAS, connector credentials)
_SECRET_KEY = re.compile(
    r"(password|passwd|pwd|secret|token|jaas|credential|private[._-]?key|api[._-]?key|access[._-]?key"
    r"|keystore\.key|(^|[._-])key$|auth(entication)?\.info|sasl\.oauthbearer\.assertion)", re.I)
# keys that end in 'key' but are not secrets
_NOT_SECRET = re.compile(r"(^|\.)(key\.(converter|serializer|deserializer|ignore)|message\.key|record\.key|partition\.key)", re.I)
# empty-ish values that carry nothing
_HARMLESS = {"", "null", "none", "[hidden]", REDACTED}
# secrets embedded in other values: password=..., user:pass@host URLs, JAAS options
_INLINE = [
    (re.compile(r"(?i)((?:password|passwd|pwd|secret|token|apikey|api_key)\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s;,&\"']+)"), r"\1" + REDACTED),
    (re.compile(r"(://[^/:@\s]+:)([^@/\s]+)(@)"), r"\1" + REDACTED + r"\3"),
]


def is_secret_key(key: str) -> bool:
    """True for config keys whose value must never be stored."""
    return bool(_SECRET_KEY.search(key)) and not _NOT_SECRET.search(key)


def redact_value(key: str, value) -> str:
    """The value to store for ``key``: ``[redacted]`` for secret keys, otherwise the value
    with any embedded credentials (``password=...``, ``user:pass@``) masked."""
    v = "" if value is None else str(value)
    if is_secret_key(key):
        return v if v.strip().lower() in _HARMLESS else REDACTED
    return redact_text(v)


def redact_text(text: str) -> str:
    """Mask credentials embedded in free text (a log message, a JAAS line, a URL)."""
    for rx, rep in _INLINE:
        text = rx.sub(rep, text)
    return text


# a message that may hold a secret (checked on whole columns of log messages at ingest). An API
# key counts only when a value is assigned to it: the request log names "requestApiKey" and
# "apiKeys" in every line, and sending all of those through redact_message (which would change
# nothing in them) made a big kafka-request.log ingest ten times slower.
SUSPECT = r"(?i)passw|secret|jaas|token|credential|api.?key[\w.-]*\s*[=:]|private.?key|://[^/\s:@]+:[^@/\s]+@"
_KV_LINE = re.compile(r"^(\s*)([A-Za-z0-9_.\-]+)( = )(.*)$")


def redact_message(text: str) -> str:
    """Redact a log message: ``key = value`` lines (config dumps) by key, everything else by
    the embedded-credential patterns.

    Example:
        >>> redact_message("ConnectorConfig values: \\n\\tdatabase.password = hunter2\\n\\ttasks.max = 1")
        'ConnectorConfig values: \\n\\tdatabase.password = [redacted]\\n\\ttasks.max = 1'
    """
    out = []
    for ln in text.split("\n"):
        m = _KV_LINE.match(ln)
        if m:
            out.append(m.group(1) + m.group(2) + m.group(3) + redact_value(m.group(2), m.group(4)))
        else:
            out.append(redact_text(ln))
    return "\n".join(out)
