"""Applying the rules to one text (:func:`redact_text`), to one config value under its key
(:func:`redact_value`) and to one log message (:func:`redact_message`): the secret part of each
match becomes :data:`REDACTED`, quotes and newlines kept, so a redacted text has the same lines;
and to many texts at once (:func:`redact_texts`, same result, RE2 passes sparing most texts most
rules).
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kitlib.redact.keys import SECRET_WORDS, harmless, is_secret_key, names_an_api
from kitlib.redact.rules import PREFILTER, RULES, Rule

# what the secret part of a match becomes
REDACTED = "[redacted]"
# the pre-check of one text: PREFILTER in Python's re, its case and line flags over the whole
# expression (so it matches all PREFILTER matches, and a few more)
_PREFILTER_PY = re.compile(PREFILTER.replace("(?m:", "(?:").replace("(?i:", "(?:"), re.I | re.M)
# the same pre-check in RE2, for many texts at once: on a plain text (printable ASCII, blanks, tabs
# and line breaks) it matches exactly where the one above does (beyond that, Python's case folding
# and \s reach further: \s holds \v and \x1c-\x1f, RE2's does not)
_PREFILTER_RE2 = "(?im)" + PREFILTER.replace("(?m:", "(?:").replace("(?i:", "(?:")
_NOT_PLAIN = r"[^\t\n\r\x20-\x7e]"
# quick RE2 tests of the rules tried on most flagged texts: on a plain text, each
# matches wherever its rule can change the text (a secret's word in the key the rule needs,
# followed by what the rule needs after that key; or the shape the rule masks), so a text it
# does not match is spared the rule's Python pattern (key-value's costs some 150 us a line)
_WORD = rf"(?:{SECRET_WORDS}|user_)"
_GATES = {
    "key-value": rf"(?i){_WORD}[A-Za-z0-9_.\-]*(?:\\?[\"'])?[ \t]*[=:]",
    "key-blank-value": rf"(?i){_WORD}[a-z0-9_.\-]*[ \t]",
    "command-option": rf"(?i)-[A-Za-z0-9._\-]*{_WORD}[A-Za-z0-9._\-]*[ \t]",
    "aws-access-key-id": r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",
    "base64-key-line": r"(?m)^[ \t]*[A-Za-z0-9+/]{40}",
}


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


# each rule's words (``needs``) as one RE2 test: on a plain text, ``w in text.lower()`` holds
# exactly where RE2 finds ``w`` ignoring case (the words are lower case)
_NEEDS_RE2 = ["(?i)" + "|".join(re.escape(w) for w in r.needs) if r.needs else None for r in RULES]


def redact_texts(arr: pa.Array) -> list:
    """The values of a string Arrow array (None for nulls), each as :func:`redact_text` makes it,
    in fewer Python steps: the pre-check, each rule's words and the quick tests of :data:`_GATES`
    run as RE2 passes over all the values, so a plain text goes only through the rules that may
    change it (any other text goes through :func:`redact_text` itself).

    Example:
        >>> redact_texts(pa.array(["login failed: bad password", "password=x1", None]))
        ['login failed: bad password', 'password=[redacted]', None]
    """
    old = arr.to_pylist()
    if not old:
        return old
    plain = ~_bools(pc.match_substring_regex(arr, _NOT_PLAIN)) & _bools(pc.is_valid(arr))
    pre = _bools(pc.match_substring_regex(arr, _PREFILTER_RE2))
    out = list(old)
    for i in np.flatnonzero(~plain).tolist():
        out[i] = redact_text(old[i])
    idx = np.flatnonzero(plain & pre)
    if not len(idx):
        return out
    sub = arr.take(pa.array(idx))
    need = np.ones((len(idx), len(RULES)), bool)  # the rule's words are in the text
    may = np.ones((len(idx), len(RULES)), bool)  # ... and its quick test passes too
    for k, rule in enumerate(RULES):
        if _NEEDS_RE2[k] is not None:
            need[:, k] = _bools(pc.match_substring_regex(sub, _NEEDS_RE2[k]))
        may[:, k] = need[:, k]
        if rule.name in _GATES:
            may[:, k] &= _bools(pc.match_substring_regex(sub, _GATES[rule.name]))
    # a text no rule may change stays as it came
    for j in np.flatnonzero(may.any(axis=1)).tolist():
        i = int(idx[j])
        out[i] = _apply_some(old[i], np.flatnonzero(may[j]).tolist(), need[j])
    return out


def _apply_some(text: str, tried: list[int], need: np.ndarray) -> str:
    """``text`` through the rules at positions ``tried`` in turn; once one changes it, the quick
    tests (made on the text as it came) no longer hold, so every later rule whose words it holds
    (``need``) is tried, as :func:`redact_text` does."""
    orig = text
    for k in tried:
        text = _sub_rule(RULES[k], text)
        if text != orig:
            for k2 in range(k + 1, len(RULES)):
                if need[k2]:
                    text = _sub_rule(RULES[k2], text)
            return text
    return text


def _bools(a) -> np.ndarray:
    return np.asarray(pc.fill_null(a, False).to_numpy(zero_copy_only=False), bool)


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
