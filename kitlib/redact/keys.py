"""What makes a key name a secret's name: the words :data:`SECRET_WORDS`, the key names holding one
whose value is no secret (durations, sizes, file names, Kafka's API numbers), and the values that
hold nothing to hide (empty, placeholders, config-provider references).
"""

from __future__ import annotations

import re

# words that make a key name a secret's name, wherever they sit in it (ssl.key.password,
# database.password, aws.secret.access.key, client_secret, X-Api-Key, ldap.bind.pw, ...)
SECRET_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[._-]?key|credentials?|access[._-]?key"
    r"|auth[._-]user[._-]info|bind[._-]pw|private[._-]?key|keystore[._-]key|jaas"
    r"|storepass|keypass|account[._-]?key|cookie"
    r"|(?:encryption|signing|license|hmac|master|cipher)[._-]?key"
)
_SECRET_KEY = re.compile(rf"(?:{SECRET_WORDS})|^user_[A-Za-z0-9]", re.I)
# key names holding a word above whose value is not a secret: durations, sizes, switches, names
# of algorithms, classes and files (delegation.token.expiry.time.ms, password.encoder.cipher.algorithm,
# ssl.keystore.location, sasl.oauthbearer.token.endpoint.url)
_NOT_SECRET_KEY = re.compile(
    r"(?:[._-](?:ms|seconds|secs|sec|bytes|size|length|iterations|count|enable|enabled|type|types|algorithm"
    r"|class|classes|location|file|path|url|uri|endpoint|mechanism|mechanisms|protocol|provider|name|names"
    r"|expiry|version|format|header|prefix|policy|mode|timeout|scope|id)$)"
    r"|^(?:key\.(?:converter|serializer|deserializer|ignore)|message\.key|record\.key|partition\.key)$",
    re.I,
)
# Kafka's request log names the protocol API in every line: "requestApiKey":1 and
# "requestApiKeyName":"FETCH" are no secrets (a numeric apiKey is an API number)
API_NUMBER_KEY = re.compile(r"^(?:request)?[Aa]piKey$")
API_NAME_KEY = re.compile(r"^requestApiKeyName$")
# values that hold nothing: empty, placeholders, references to a config provider (${file:...})
# (a YAML block scalar's indicator, | or >-, is no value: the lines after it are)
_HARMLESS = re.compile(r"^(?:|null|none|nil|\*+|\[hidden\]|\[redacted\]|<redacted>|\$\{[^}]*\}|[|>][+-]?[0-9]?)$", re.I)


# an access key's id is half of a credential (S3-compatible stores have no AKIA prefix to find it by)
_ACCESS_KEY_ID = re.compile(r"access[._-]?key[._-]?id$", re.I)


def is_secret_key(key: str) -> bool:
    """True for key names whose value must never be stored.

    Example:
        >>> is_secret_key("sasl.jaas.config"), is_secret_key("delegation.token.expiry.time.ms")
        (True, False)
        >>> is_secret_key("aws_access_key_id"), is_secret_key("encryption.key"), is_secret_key("password.encoder.iterations")
        (True, True, False)
    """
    k = key.strip().strip("\"'")
    if _ACCESS_KEY_ID.search(k):
        return True
    return bool(_SECRET_KEY.search(k)) and not _NOT_SECRET_KEY.search(k)


def harmless(value: str) -> bool:
    return bool(_HARMLESS.match(value.strip().strip("\"'\\")))
