"""Applying the rules to one text (:func:`redact_text`), to one config value under its key
(:func:`redact_value`) and to one log message (:func:`redact_message`): the secret part of each
match becomes :data:`REDACTED`, quotes and newlines kept, so a redacted text has the same lines.
"""

from __future__ import annotations

import re

from kitlib.redact.keys import harmless, is_secret_key, names_an_api
from kitlib.redact.rules import PREFILTER, RULES, Rule

# what the secret part of a match becomes
REDACTED = "[redacted]"
# the pre-check of one text: PREFILTER in Python's re, its case and line flags over the whole
# expression (so it matches all PREFILTER matches, and a few more)
_PREFILTER_PY = re.compile(PREFILTER.replace("(?m:", "(?:").replace("(?i:", "(?:"), re.I | re.M)


def _mask_value(value: str) -> str:
    """``[redacted]`` in place of a value, keeping its quotes and its newlines (so the text keeps
    its line count)."""
    for q in ('\\"', '"', "'"):
        if len(value) >= 2 * len(q) and value.startswith(q) and value.endswith(q):
            return q + REDACTED + q
    if "\n" in value:
        return "\n".join(REDACTED if ln.strip() else ln for ln in value.split("\n"))
    return REDACTED


def _sub_rule(rule: Rule, text: str) -> str:
    def repl(m: re.Match) -> str:
        if "value" not in m.re.groupindex:
            return REDACTED
        value = m.group("value")
        if value is None or harmless(value):
            return m.group(0)
        if "key" in m.re.groupindex:  # rules that find a value by its key: only a secret's key counts
            key = m.group("key")
            if not is_secret_key(key):
                return m.group(0)
            if names_an_api(key, value):
                return m.group(0)
        if rule.name == "base64-key-line" and not (
            re.search(r"[A-Z]", value) and re.search(r"[a-z]", value) and re.search(r"[0-9]", value)
        ):
            return m.group(0)
        s, e = m.span("value")
        s, e = s - m.start(), e - m.start()
        whole = m.group(0)
        return whole[:s] + _mask_value(value) + whole[e:]

    return rule.pattern.sub(repl, text)


def redact_text(text: str) -> str:
    """``text`` with every secret the rules know replaced by ``[redacted]``; text without one is
    returned unchanged, and the number of lines never changes.

    Example:
        >>> redact_text('login: user_bob="b0b-pw" password=\\\\"x1\\\\"')
        'login: user_bob="[redacted]" password=\\\\"[redacted]\\\\"'
    """
    if not isinstance(text, str) or not _PREFILTER_PY.search(text):
        return text
    low = text.lower()
    for rule in RULES:
        if rule.needs and not any(w in low for w in rule.needs):
            continue
        text = _sub_rule(rule, text)  # (masking only takes words away: ``low`` may stay as it was)
    return text


def redact_value(key: str, value) -> str:
    """The value to store for config ``key``: ``[redacted]`` for secret keys (unless the value
    is empty or a placeholder), otherwise the value with any embedded secret masked."""
    v = "" if value is None else str(value)
    if is_secret_key(str(key)):
        return v if harmless(v) else REDACTED
    return redact_text(v)


def redact_message(text: str) -> str:
    """Redact a log message (kept for callers of the earlier API; same as :func:`redact_text`).

    Example:
        >>> redact_message("ConnectorConfig values: \\n\\tdatabase.password = hunter2\\n\\ttasks.max = 1")
        'ConnectorConfig values: \\n\\tdatabase.password = [redacted]\\n\\ttasks.max = 1'
    """
    return redact_text(text)
