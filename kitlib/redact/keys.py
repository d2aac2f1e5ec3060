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
# "requestApiKeyName":"FETCH" (2.8 on), RequestHeader(apiKey=FETCH, ...) (1.0 to 2.7) and
# {api_key=1,api_version=...} (0.10) are no secrets: an apiKey that is a number, or one of the
# names of Kafka's protocol APIs (the ApiKeys enum of its clients, 0.10 to 3.9), is an API
API_NUMBER_KEY = re.compile(r"^(?:request)?[Aa]piKey$")
API_NAME_KEY = re.compile(r"^requestApiKeyName$")
OLD_API_NUMBER_KEY = re.compile(r"^api_key$")  # 0.10's request header struct: the API's number
KAFKA_API_NAMES = frozenset(
    """ADD_OFFSETS_TO_TXN ADD_PARTITIONS_TO_TXN ADD_RAFT_VOTER ALLOCATE_PRODUCER_IDS ALTER_CLIENT_QUOTAS
    ALTER_CONFIGS ALTER_ISR ALTER_PARTITION ALTER_PARTITION_REASSIGNMENTS ALTER_REPLICA_LOG_DIRS
    ALTER_USER_SCRAM_CREDENTIALS API_VERSIONS ASSIGN_REPLICAS_TO_DIRS BEGIN_QUORUM_EPOCH BROKER_HEARTBEAT
    BROKER_REGISTRATION CONSUMER_GROUP_DESCRIBE CONSUMER_GROUP_HEARTBEAT CONTROLLED_SHUTDOWN
    CONTROLLER_REGISTRATION CREATE_ACLS CREATE_DELEGATION_TOKEN CREATE_PARTITIONS CREATE_TOPICS DELETE_ACLS
    DELETE_GROUPS DELETE_RECORDS DELETE_SHARE_GROUP_STATE DELETE_TOPICS DESCRIBE_ACLS DESCRIBE_CLIENT_QUOTAS
    DESCRIBE_CLUSTER DESCRIBE_CONFIGS DESCRIBE_DELEGATION_TOKEN DESCRIBE_GROUPS DESCRIBE_LOG_DIRS
    DESCRIBE_PRODUCERS DESCRIBE_QUORUM DESCRIBE_TOPIC_PARTITIONS DESCRIBE_TRANSACTIONS
    DESCRIBE_USER_SCRAM_CREDENTIALS ELECT_LEADERS END_QUORUM_EPOCH END_TXN ENVELOPE EXPIRE_DELEGATION_TOKEN
    FETCH FETCH_SNAPSHOT FIND_COORDINATOR GET_TELEMETRY_SUBSCRIPTIONS GROUP_COORDINATOR HEARTBEAT
    INCREMENTAL_ALTER_CONFIGS INITIALIZE_SHARE_GROUP_STATE INIT_PRODUCER_ID JOIN_GROUP LEADER_AND_ISR
    LEAVE_GROUP LIST_CLIENT_METRICS_RESOURCES LIST_GROUPS LIST_OFFSETS LIST_PARTITION_REASSIGNMENTS
    LIST_TRANSACTIONS METADATA OFFSET_COMMIT OFFSET_DELETE OFFSET_FETCH OFFSET_FOR_LEADER_EPOCH PRODUCE
    PUSH_TELEMETRY READ_SHARE_GROUP_STATE READ_SHARE_GROUP_STATE_SUMMARY REMOVE_RAFT_VOTER
    RENEW_DELEGATION_TOKEN SASL_AUTHENTICATE SASL_HANDSHAKE SHARE_ACKNOWLEDGE SHARE_FETCH
    SHARE_GROUP_DESCRIBE SHARE_GROUP_HEARTBEAT STOP_REPLICA SYNC_GROUP TXN_OFFSET_COMMIT UNREGISTER_BROKER
    UPDATE_FEATURES UPDATE_METADATA UPDATE_RAFT_VOTER VOTE WRITE_SHARE_GROUP_STATE WRITE_TXN_MARKERS""".split()
)


def names_an_api(key: str, value: str) -> bool:
    """True when ``key=value`` is Kafka's request log naming a protocol API, not a secret.

    Example:
        >>> names_an_api("apiKey", "FETCH"), names_an_api("requestApiKey", "1"), names_an_api("api_key", "12")
        (True, True, True)
        >>> names_an_api("apiKey", "FETCHER"), names_an_api("api_key", "s3cr3t"), names_an_api("api_key", "12345678")
        (False, False, False)
    """
    v = value.strip("\"'")
    if API_NAME_KEY.match(key):
        return True
    if API_NUMBER_KEY.match(key):
        return v.isdigit() or v in KAFKA_API_NAMES
    return bool(OLD_API_NUMBER_KEY.match(key)) and v.isdigit() and len(v) <= 3


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
