"""The request path: are the brokers refusing or slowing clients? Authentication and
authorization failures, quota throttling, saturated request handlers and network threads, a
broker slower than its peers.

This is kept apart from :mod:`kitlib.investigations.consumer_groups` because it answers another
question from other evidence: that one follows a group's members, offsets and transactions over
time; this one reads what happens to each request at the broker (``requests`` from the request
log, ``auth_failures`` from the selector's and the authorizer's lines, the handler and throttle
metrics) and its fix is on the broker or in the client's credentials and quotas, not in the
consumer's poll loop.
"""

from kitlib.findings import Severity
from kitlib.investigations import FindingKind, Investigation, Rows
from kitlib.investigations.client_requests import analysis, auth, connections, quotas  # noqa: F401  (registers tables and detectors)

INVESTIGATION = Investigation(
    name="client_requests",
    title="Client requests: authentication, quotas, saturation",
    question="Are the brokers refusing clients (authentication, authorization), throttling them (quotas) or "
    "too busy to answer (request handlers, network threads, one slow broker)?",
    tables=("auth_failures", "requests", "metrics", "configs", "quota_changes", "client_connections"),
    findings=(
        FindingKind(
            "auth-failures",
            Severity.MEDIUM,
            "clients fail to authenticate (SASL, TLS) or are denied by the authorizer, again and again",
        ),
        FindingKind(
            "quota-throttling", Severity.MEDIUM, "the brokers delay a client's requests because it exceeds a quota"
        ),
        FindingKind(
            "request-saturation",
            Severity.MEDIUM,
            "request handler or network threads are nearly never idle and requests wait in the queue",
        ),
    ),
    relevant_when=("auth_failures", "requests", Rows("metrics", "name", among=analysis.IDLE_NAMES)),
    loggers=(
        "kafka.request.logger",
        "kafka.authorizer.logger",
        "kafka.network",
        "kafka.server.KafkaApis",
        "kafka.server.ClientQuotaManager",
        "kafka.server.ControllerMutationQuotaManager",
        "kafka.server.KafkaRequestHandler",
        "kafka.server.metadata.ClientQuotaMetadataManager",
        "org.apache.kafka.controller.ClientQuotaControlManager",
        "org.apache.kafka.common.network",
        "org.apache.kafka.common.security",
    ),
    examples={
        "auth-failures": ("auth-failures",),
        "quota-throttling": ("quota-throttling",),
        "request-saturation": ("request-saturation",),
    },
)
