"""Authentication and authorization failures: a broker with a SASL_PLAINTEXT listener (PLAIN)
and the standard KRaft authorizer. The reporting application first connects with a wrong
password and keeps retrying (``Failed authentication with /127.0.0.1 (...)`` on the broker),
then with the right password but no ACL on its topic (authorizer denials in
kafka-authorizer.log, TOPIC_AUTHORIZATION_FAILED in its log), until an operator grants the ACL
and it reads.

Both passwords are made up at run time and never written to the bundle (the broker's JAAS config
carries them; Kafka logs it as ``[hidden]``); ``SECRETS`` holds them after a run so a test can
prove they are absent.

    .venv/bin/python lab/scenarios/auth_failures.py OUT_DIR
"""

from __future__ import annotations

import secrets
import sys
import time
from pathlib import Path

from kitlib import lab
from kitlib.lab import clients as labclients

TOPIC = "sales"
USER, CLIENT_ID = "reporting", "reporting-app"
SOCKET_MBEANS = ["kafka.server:type=socket-server-metrics,listener=SASL_PLAINTEXT,networkProcessor=*"]
SECRETS: list[str] = []  # the passwords of the last run (never written anywhere)


def _settings(sasl_port: int, passwords: dict[str, str]) -> dict[str, str]:
    users = " ".join(f'user_{u}="{p}"' for u, p in passwords.items())
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
        "CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{{port}},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # the PLAINTEXT listeners (controller, the lab's own admin) carry ANONYMOUS
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


def _consume(sasl: str, password: str, seconds: float, app) -> int:
    """What the reporting application does: connect, read ``TOPIC``; on an error log it and
    try again after 2 s (as a service restarted by its supervisor would)."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            c = KafkaConsumer(
                TOPIC,
                bootstrap_servers=sasl,
                client_id=CLIENT_ID,
                group_id="reporting",
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username=USER,
                sasl_plain_password=password,
                auto_offset_reset="earliest",
                request_timeout_ms=5000,
                bootstrap_timeout_ms=8000,
                consumer_timeout_ms=3000,
            )
            try:
                n = sum(1 for _ in c)
            finally:
                c.close()
            if n:
                app.info("read %d sales records", n)
                return n
            app.warning("no records read from %s", TOPIC)
        except KafkaError as e:
            app.error("could not read %s: %s: %s", TOPIC, type(e).__name__, e)
        time.sleep(2)
    return 0


def grant(admin, *rules) -> None:
    """Allow ``User:USER`` each (operation, resource type, name) of ``rules`` from any host."""
    from kafka.admin import ACL, ACLPermissionType, ResourcePattern

    admin.create_acls(
        [
            ACL(f"User:{USER}", "*", op, ACLPermissionType.ALLOW, ResourcePattern(rtype, name))
            for op, rtype, name in rules
        ]
    )


def run(out: str | Path, phase_s: float = 20, work: Path | None = None) -> Path:
    from kafka import KafkaProducer
    from kafka.admin import ACLOperation, KafkaAdminClient, NewTopic, ResourceType

    out = Path(out)
    host, clients = out / "broker-1", out / "clients"
    host.mkdir(parents=True, exist_ok=True)
    right, wrong = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
    SECRETS[:] = [right, wrong]
    sasl_port = lab.free_port()
    with lab.Scenario(out) as s:
        b = s.broker("auth-broker", work=work, request_log="DEBUG", settings=_settings(sasl_port, {USER: right}))
        sasl = f"127.0.0.1:{sasl_port}"
        jmx = s.jmxtool(b, lab.BROKER_MBEANS + SOCKET_MBEANS, host / "jmx-broker.csv")
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap, client_id="ops-admin")
        a.create_topics([NewTopic(TOPIC, 1, 1)])
        p = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="sales-api")
        for i in range(500):
            p.send(TOPIC, b'{"sale":%d,"eur":99}' % i)
        p.flush()
        p.close()
        with labclients.client_log(clients / "reporting-app.log") as app:
            app.info("starting with a mistyped password")
            _consume(sasl, wrong, phase_s, app)
            grant(a, (ACLOperation.READ, ResourceType.GROUP, "reporting"))
            app.info("password corrected; User:%s may use its group but has no ACL on topic %s yet", USER, TOPIC)
            _consume(sasl, right, phase_s / 2, app)
            grant(a, (ACLOperation.READ, ResourceType.TOPIC, TOPIC), (ACLOperation.DESCRIBE, ResourceType.TOPIC, TOPIC))
            app.info("ACLs on topic %s granted to User:%s", TOPIC, USER)
            time.sleep(2)
            n = _consume(sasl, right, phase_s, app)
        a.close()
        if not n:
            raise lab.LabError("the reporting application read nothing after the ACLs were granted")
        time.sleep(2)
        lab.finish_jmxtool(jmx, host / "jmx-broker.csv")
        s.finish(logs={"broker-1": b}, hosts={"clients": "clients"})
    lab.write_client_provenance(out, "wrong SASL password, then a missing ACL", "auth_failures.py", BODY, EVIDENCE)
    return out


BODY = f"""
- The broker has a second listener, `SASL_PLAINTEXT` with mechanism PLAIN (users in the
  listener's JAAS config), and the standard KRaft authorizer (`StandardAuthorizer`,
  `allow.everyone.if.no.acl.found=false`, `super.users=User:ANONYMOUS` for the lab's own
  PLAINTEXT listeners). Topic `{TOPIC}` holds 500 records.
- The application `{CLIENT_ID}` (kafka-python consumer, user `{USER}`, group `reporting`) starts
  with a mistyped password for 20 s: the broker closes each connection (`Failed authentication
  with /127.0.0.1 (channelId=...) (Authentication failed: Invalid username or password)`),
  kafka-python retries with back-off and gives up after 8 s (`Unable to bootstrap`), and the
  application starts over 2 s later. Then, with the right password, `User:{USER}` may use its
  group but has no ACL on the topic for 10 s: the authorizer denies (kafka-authorizer.log) and
  the client sees the topic as not authorized. Then an operator grants Read/Describe on the
  topic and the application reads all 500 records.
- Both passwords were random strings made for the run; neither appears anywhere in this bundle
  (the test of this scenario checks every file for them).
- `broker-1/`: server.log, kafka-request.log (request logger at DEBUG: principal, listener and
  error code of every request), kafka-authorizer.log, controller and state-change logs,
  `jmx-broker.csv` (JmxTool, 1 s) with the broker byte rates and the SASL_PLAINTEXT listener's
  `socket-server-metrics` (failed-authentication-total/-rate, successful-authentication-total, ...).
- `clients/{CLIENT_ID}.log`: the application's own log (Python `logging`, kafka-python at INFO, UTC).
"""
EVIDENCE = [
    lab.LineEvidence(
        "failed authentication (wrong password)", "broker-1/server.log*", "Failed authentication with /127.0.0.1"
    ),
    lab.LineEvidence("authorizer denial", "broker-1/kafka-authorizer.log*", f"Principal = User:{USER} is Denied"),
    lab.LineEvidence(
        "Metadata answered TOPIC_AUTHORIZATION_FAILED (29)",
        "broker-1/kafka-request.log*",
        '"errorCode":29,"name":"sales"',
    ),
    lab.LineEvidence(
        "client: connection closed during authentication", "clients/*.log", "Bootstrap connection to bootstrap-0 failed"
    ),
    lab.LineEvidence("client: gave up connecting", "clients/*.log", "Unable to bootstrap"),
    lab.LineEvidence("client: topic not authorized", "clients/*.log", "is not authorized for this client"),
]


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "sample_data/auth-failures"))
