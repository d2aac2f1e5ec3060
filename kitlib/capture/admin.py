"""The kafka-python admin client a capture uses. Security settings (``client_kw``) pass straight
to kafka-python and are never written to the bundle.
"""

from __future__ import annotations


def admin_client(bootstrap: str, client_kw: dict):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id="kitlib-capture", request_timeout_ms=30000, **client_kw
    )
