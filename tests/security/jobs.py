"""Real-client jobs shared by the TLS and SASL tests."""

from __future__ import annotations

import base64

from tests.clients.runner import run_ok
from tests.security.client_config import Security, client_config


def produce_and_consume(client: str, bootstrap: str, security: Security, topic: str) -> None:
    """Produce three records and read them back, both over `security`."""
    config = client_config(client, security)
    values = [f"{client}-{n}".encode() for n in range(3)]
    produced = run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "config": config,
            "records": [
                {"key": None, "value": base64.b64encode(v).decode(), "headers": [], "partition": 0}
                for v in values
            ],
        },
    )
    assert [r["offset"] for r in produced["results"]] == [0, 1, 2]
    consumed = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "config": config,
            "count": 3,
            "from": "earliest",
            "group": None if client != "kafkajs" else f"{topic}-group",
            "timeout_ms": 20_000,
        },
    )
    assert [base64.b64decode(r["value"]) for r in consumed["records"]] == values
