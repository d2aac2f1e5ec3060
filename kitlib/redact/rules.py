"""The rule set: :class:`Rule` and the table :data:`RULES`, one rule a kind of secret, each with an
example it must catch, in the order they are applied; and :data:`PREFILTER`, the RE2 pre-check
every value a rule can change matches (a new rule's words go into both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kitlib.redact.keys import SECRET_WORDS

_KEY = rf"[A-Za-z0-9_.\-]*?(?:{SECRET_WORDS})[A-Za-z0-9_.\-]*|user_[A-Za-z0-9_.\-]+"
# a value: JSON-escaped quotes (\"...\"), double or single quotes, or a bare word
_VALUE = r"""\$\{[^}\n]*\}|\\"(?:(?!\\")[^\n])*\\"|"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,;&"'<>{}\[\]()]+"""
# between a key and its value: '=' (a properties file may continue the value on the next line
# after a backslash) or ':' (YAML and pretty-printed JSON may put the value on the next line,
# unless that line holds the next key or a list item)
_SEP = (
    r"""[ \t]*(?:=[ \t]*(?:\\[ \t]*\r?\n[ \t]*)?"""
    r"""|:[ \t]*(?:\r?\n[ \t]*(?![^\s"'=:]*[=:](?:\s|$)|-\s|#|$))?)"""
)
# a key and its value held in two fields of one record: JSON {"name"/"key": ..., "value": ...},
# Java maps {name=..., value=...}, YAML env lists (- name: X / value: y), on one line or several;
# what lies between the two fields holds no brace, bracket or other name/key field
_FIELD_GAP = r"""(?:(?!\b(?:name|key)\b)[^{}\[\]]){0,300}?"""
_FIELD_KEY = r"""\\?["']?(?P<key>[A-Za-z0-9_.\-]+)\\?["']?"""
_FIELD_SEP = r"""\\?["']?\s*[:=]\s*"""
# a value written on a command line (up to a blank or a quote)
_ARG = r"""["']?(?P<value>[^\s"'|;&]+)"""
# words a key followed by a blank (not '=' or ':') may be followed by in prose: not a value
_PROSE = (
    r"is|was|were|are|be|been|not|has|have|had|must|should|will|would|can|could|may|might|for|of|to|the"
    r"|a|an|and|or|in|on|at|by|with|without|from|into|as|if|set|unset|missing|required|changed|updated"
    r"|provided|configured|invalid|expired|cannot|does|did|ignored|supplied|value|config|configuration"
)


@dataclass(frozen=True)
class Rule:
    """One kind of secret: ``pattern`` finds it, its group ``value`` (or the whole match) is
    what gets replaced; ``example`` is a spelling it must catch (the tests plant each one)."""

    name: str
    doc: str
    example: str
    pattern: re.Pattern
    # words (lower case) one of which a text must hold for the pattern to be tried: a quick test
    # that spares most texts the pattern (empty: always tried)
    needs: tuple[str, ...] = ()


RULES: list[Rule] = [
    Rule(
        "pem-private-key",
        "PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED); a block cut "
        "off before its END line is masked to the end of the text",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3\n-----END RSA PRIVATE KEY-----",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?P<value>.*?)"
            r"(?=-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        needs=("-----begin",),
    ),
    Rule(
        "yaml-block-scalar",
        "the lines of a YAML block scalar (`key: |` or `key: >-`, the value indented on the lines "
        "after it) whose key is a secret's name",
        "ssl.key.password: |\n  s3cr3t-value\nssl.keystore.type: JKS",
        re.compile(
            r"(?m)^(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?P<key>[A-Za-z0-9_.\-]+)[\"']?[ \t]*:[ \t]*[|>][+-]?[0-9]?[ \t]*\r?\n"
            r"(?P<value>(?:(?P=indent)[ \t]+\S[^\n]*(?:\n|\Z)|[ \t]*\r?\n)*(?:(?P=indent)[ \t]+\S[^\n]*))"
        ),
        needs=("|", ">"),
    ),
    Rule(
        "jaas-config",
        "the whole value of a JAAS configuration (sasl.jaas.config, "
        "listener.name.*.sasl.jaas.config, KAFKA_OPTS style): quoted, or up to the ';' that ends it "
        "(or the end of the line; a backslash at a line's end continues it on the next)",
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";',
        re.compile(
            r"""(?i)jaas[._-]config\\?["']?\s*[=:]\s*(?P<value>\\"(?:(?!\\")[^\n])*\\"|"(?:[^"\\\n]|\\.)*"|"""
            r"""[^\n;\\]*(?:\\(?:\r?\n|[^\n])[^\n;\\]*)*)"""
        ),
        needs=("jaas",),
    ),
    Rule(
        "jaas-user",
        'JAAS PlainLoginModule user_<name>="password" options',
        'user_alice="alice-secret"',
        re.compile(rf"(?<![A-Za-z0-9_.\-])user_[A-Za-z0-9_.\-]+\s*=\s*(?P<value>{_VALUE})"),
        needs=("user_",),
    ),
    Rule(
        "authorization-header",
        "HTTP Authorization header value (Bearer, Basic, Digest, ...)",
        "Authorization: Basic YWRtaW46YWRtaW4tc2VjcmV0",
        re.compile(
            r"""(?i)\bauthorization\\?["']?\s*[:=]\s*\[?\s*\\?["']?(?:(?:bearer|basic|digest|token|negotiate|apikey)\s+)?"""
            r"""(?P<value>\[redacted\]|[^\s"'\\,;\]}]+)"""
        ),
        needs=("authorization",),
    ),
    Rule(
        "http-header",
        "the value of an HTTP Cookie, Set-Cookie, X-Api-Key, X-Auth-Token or Authorization header held "
        'in a JSON array (`["Cookie", "..."]`) or a map of lists (`"Cookie": ["..."]`, `Cookie=[...]`)',
        '["Set-Cookie", "session=s3cr3t-value; Path=/"]',
        re.compile(
            # the name quoted when a comma follows (an array's element: prose such as "not having
            # DESCRIBE authorization, {}" is no header), and a bare value never takes a quote (the
            # end of the string that holds it)
            r"""(?i)(?:["']\b(?:cookie|set-cookie|x-api-key|x-auth-token|proxy-authorization|authorization)["']"""
            r"""\s*,\s*|["']?\b(?:cookie|set-cookie|x-api-key|x-auth-token|proxy-authorization|authorization)["']?"""
            r"""\s*[:=]\s*\[\s*)(?!redacted\]|["']?[^\]\n,"']*\[redacted\])(?P<value>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\]\n,"']+)"""
        ),
        needs=("cookie", "api-key", "auth-token", "authorization"),
    ),
    Rule(
        "name-value-fields",
        'a value whose key is held in a separate field before it: JSON `{"name"/"key": ..., '
        '"value": ...}`, Java maps `{name=..., value=...}`, YAML env lists (`- name: X` then '
        "`value: y`), on one line or over several",
        '{"name": "connection.password", "value": "s3cr3t-value"}',
        re.compile(
            rf"""(?i)\b(?:name|key)\b{_FIELD_SEP}{_FIELD_KEY}{_FIELD_GAP}\bvalue\b{_FIELD_SEP}(?P<value>{_VALUE})"""
        ),
        needs=("value",),
    ),
    Rule(
        "value-name-fields",
        "the same with the value field first (`{value=..., name=...}`, as a Java map may print it)",
        "{value=s3cr3t-value, name=database.password}",
        re.compile(
            rf"""(?i)\bvalue\b{_FIELD_SEP}(?P<value>{_VALUE}){_FIELD_GAP.replace("name|key", "value")}"""
            rf"""\b(?:name|key)\b{_FIELD_SEP}{_FIELD_KEY}"""
        ),
        needs=("value",),
    ),
    Rule(
        "xml-name-value",
        "Hadoop-style XML properties: `<name>secret key</name>` then `<value>...</value>`",
        "<property><name>fs.s3a.secret.key</name><value>s3cr3t-value</value></property>",
        re.compile(
            r"(?is)<name>\s*(?P<key>[^<>\s]+)\s*</name>\s*(?:<description>[^<]*</description>\s*)?"
            r"<value>(?P<value>[^<]*)</value>"
        ),
        needs=("<name>",),
    ),
    Rule(
        "xml-element",
        "the text of an XML element named like a secret (`<password>...</password>`, over several lines too)",
        "<password>s3cr3t-value</password>",
        re.compile(
            rf"(?is)<(?P<key>[A-Za-z0-9_.:\-]*?(?:{SECRET_WORDS})[A-Za-z0-9_.:\-]*)(?:\s[^<>]*)?>(?P<value>[^<]+)</(?P=key)\s*>"
        ),
        needs=("</",),
    ),
    Rule(
        "xml-entry",
        'the text of an XML element whose key or name attribute is a secret\'s name (`<entry key="ssl.key.password">...</entry>`)',
        '<entry key="ssl.key.password">s3cr3t-value</entry>',
        re.compile(
            r"""(?is)<(?P<tag>[A-Za-z][A-Za-z0-9_.:\-]*)\b[^<>]*?\b(?:key|name)\s*=\s*["'](?P<key>[^"'<>]+)["'][^<>]*?(?<!/)>"""
            r"""(?P<value>[^<]+)</(?P=tag)\s*>"""
        ),
        needs=("</",),
    ),
    Rule(
        "xml-attribute",
        'the value attribute of an XML element whose key or name attribute is a secret\'s name (`<property name="sasl.password" value="..."/>`)',
        '<property name="sasl.password" value="s3cr3t-value"/>',
        re.compile(
            r"""(?is)<[A-Za-z][A-Za-z0-9_.:\-]*\b[^<>]*?\b(?:key|name)\s*=\s*["'](?P<key>[^"'<>]+)["'][^<>]*?"""
            r"""\bvalue\s*=\s*(?P<value>"[^"]*"|'[^']*')"""
        ),
        needs=("value",),
    ),
    Rule(
        "key-value",
        "a value assigned to a secret's key name: key=value, key: value, key = value, "
        '"key": "value", \'key\': \'value\', key=\\"value\\" (JSON-escaped), for key names holding '
        "password, passwd, passphrase, pwd, secret, token, api.key/apikey/api-key, credentials, "
        "access.key, auth.user.info (basic.auth.user.info), bind.pw (ldap.bind.pw), private.key, "
        "keystore.key; durations, sizes, file names and the like (*.ms, *.location, *.algorithm) excepted",
        '"client_secret": "s3cr3t-value"',
        re.compile(rf"""(?<![A-Za-z0-9_.\-])(?P<key>{_KEY})(?:\\?["'])?{_SEP}(?P<value>{_VALUE})""", re.I),
    ),
    Rule(
        "url-encoded",
        "a secret's key and value URL-encoded (`token%3D...`, `password%3A...`), up to the next `&` or `%26`",
        "callback?state=x%26token%3Ds3cr3t-value%26y%3D1",
        re.compile(
            rf"""(?i)(?<![A-Za-z0-9_.\-])(?P<key>{_KEY})(?:%22)?%3[DA](?:%22)?(?P<value>(?:[^\s&%"'<>]|%(?!26|22)[0-9A-Fa-f]{{2}})+)"""
        ),
        needs=("%3",),
    ),
    Rule(
        "key-blank-value",
        "a lower-case dotted config key of a secret followed by a blank and its value "
        "(`oauth.client.secret s3cr3t`); a word of prose after the key (is, was, not, ...) is kept",
        "oauth.client.secret s3cr3t-value",
        re.compile(
            rf"""(?<![A-Za-z0-9_.\-])(?P<key>[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)+)[ \t]+(?!(?:{_PROSE})\b)(?=["']?[^\s,;&"'<>{{}}\[\]()]*[A-Za-z0-9])["']?(?P<value>[^\s,;&"'<>{{}}\[\]()=:][^\s,;&"'<>{{}}\[\]()]*)"""
        ),
    ),
    Rule(
        "command-option",
        "a command line's secret option and its value (`--password pw`, `-storepass pw`, `-keypass pw`, "
        "`--client-secret pw`, `-srcstorepass pw`)",
        "keytool -list -keystore k.jks -storepass s3cr3t-value",
        re.compile(rf"""(?<![^\s'"])--?(?P<key>[A-Za-z][A-Za-z0-9._\-]*)[ \t]+(?!-){_ARG}"""),
        needs=("-",),
    ),
    Rule(
        "command-password",
        "the password argument of clients that take it as -p or -a (mysql, mariadb, sshpass -p; "
        "redis-cli -a), blank or no blank before it",
        "mysql -u app -p s3cr3t-value orders",
        re.compile(rf"""(?i)\b(?:mysql\w*|mariadb\w*|sshpass|redis-cli)\b[^\n|;&]*?[ \t]-[pa][ \t]*{_ARG}"""),
        needs=("mysql", "mariadb", "sshpass", "redis-cli"),
    ),
    Rule(
        "pass-argument",
        "OpenSSL's `pass:<password>` argument (-passin, -passout)",
        "openssl rsa -in k.pem -passin pass:s3cr3t-value",
        re.compile(r"""(?<![A-Za-z0-9])pass:(?P<value>[^\s"']+)"""),
        needs=("pass:",),
    ),
    Rule(
        "curl-user",
        "the password of `curl -u user:password` (also --user, --proxy-user)",
        "curl -u admin:s3cr3t-value http://connect:8083/connectors",
        re.compile(r"""(?<!\S)(?:-u|-U|--user|--proxy-user)[ \t]*["']?[^\s:"']+:(?P<value>[^\s"']+)"""),
        needs=("-u", "--user", "--proxy-user"),
    ),
    Rule(
        "jmx-role",
        "the password after a JMX role name (a jmxremote.password line: `monitorRole s3cr3t`)",
        "monitorRole s3cr3t-value",
        re.compile(r"""\b(?:monitorRole|controlRole)[ \t]+(?P<value>[^\s"']+)"""),
        needs=("monitorrole", "controlrole"),
    ),
    Rule(
        "cloud-signature",
        "cloud request signatures: Azure SAS `sig=`, AWS SigV4 `Signature=` and `X-Amz-Signature=`, "
        "`X-Goog-Signature=`",
        "https://acct.blob.core.windows.net/c/b?sv=2021-08-06&sig=s3cr3t-value",
        re.compile(
            r"""(?i)(?<![A-Za-z0-9_.\-])(?:sig|signature|x-amz-signature|x-goog-signature)=(?P<value>[^&\s"',;<>]+)"""
        ),
        needs=("sig",),
    ),
    Rule(
        "bearer-token",
        "a bearer token anywhere (`Bearer <token>`, 8+ characters, a digit or symbol among them)",
        "Bearer abc.def-123_ghi",
        re.compile(
            r"(?i)\bbearer\s+(?P<value>(?=[A-Za-z]*[0-9._~+/=-])(?=[A-Za-z0-9._~+/\-]{8})[A-Za-z0-9._~+/\-]+=*)(?![^\s\"',;)\]}])"
        ),
        needs=("bearer",),
    ),
    Rule(
        "url-credentials",
        "the password of user:password@ in a URL (http, jdbc:..., mongodb, redis://:password@ ...)",
        "jdbc:postgresql://app:s3cret@db:5432/x",
        re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@\"']*:(?P<value>[^@\s\"']+)@"),
        needs=("://",),
    ),
    Rule(
        "jdbc-oracle",
        "the password of an Oracle JDBC URL's user/password@ form",
        "jdbc:oracle:thin:scott/s3cr3t-value@db:1521/ORCL",
        re.compile(r"(?i)\bjdbc:oracle:[a-z0-9]+:(?://)?[^/\s:@\"']+/(?P<value>[^@\s\"']+)@"),
        needs=("jdbc:oracle",),
    ),
    Rule(
        "aws-access-key-id",
        "AWS access key id (AKIA..., ASIA...)",
        "AKIAIOSFODNN7EXAMPLE",
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ),
    Rule(
        "jwt",
        "a JSON Web Token (three base64url parts, the first two starting eyJ)",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        re.compile(r"\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_\-]*"),
        needs=("eyj",),
    ),
    Rule(
        "github-token",
        "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)",
        "ghp_" + "a1B2" * 9,
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
        needs=("gh",),
    ),
    Rule(
        "slack-token",
        "Slack token (xoxb-, xoxp-, ...)",
        "xoxb-1234567890-abcdefghij",
        re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
        needs=("xox",),
    ),
    Rule(
        "google-api-key",
        "Google API key (AIza...)",
        "AIza" + "Sy" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"),
        needs=("aiza",),
    ),
    Rule(
        "base64-key-line",
        "a line that is only a base64 run of 40+ characters mixing upper case, "
        "lower case and digits (the body of a PEM key whose BEGIN line is elsewhere; shorter runs are "
        "Kafka's own ids: cluster, topic and member ids are 22 characters)",
        "MIIEowIBAAKCAQEA7bq3xYz0PqR9aB3cD4eF5gH6iJ7k (on a line of its own)",
        re.compile(r"(?m)^[ \t]*(?P<value>[A-Za-z0-9+/]{40,}={0,2})[ \t]*$"),
    ),
]

# the RE2 pre-check over whole columns: every value a rule can change matches it (the tests
# check this for every rule's example); values it does not match are left as they are
PREFILTER = (
    r"(?i:pass|pwd|secret|token|api[._-]key|credential|access.?key|auth.user.info|bind.pw|jaas"
    r"|private.?key|keystore.key|user_|authorization|bearer|://[^/\s:@]*:[^@\s]+@|eyj|gh[pousr]_|xox[abprs]-|aiza"
    r"|cookie|account.?key|(?:encryption|signing|license|hmac|master|cipher).?key|sig=|signature="
    r"|monitorrole|controlrole|jdbc:oracle|mysql|mariadb|redis-cli|curl|-u[ \t]|--user|--proxy-user)"
    r"|apikey|APIKEY|(?:^|[^A-Za-z])[Aa]piKey\\?[\"']?\s*[=:]\s*[^\s0-9]|AKIA|ASIA|ABIA|ACCA"
    r"|(?m:^[ \t]*[A-Za-z0-9+/]{40,}={0,2}[ \t]*$)"
)
