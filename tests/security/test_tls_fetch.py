"""Fetch responses over TLS: records read from the segment files in chunks into the TLS
transport (no sendfile), whole and in order."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Producer

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.security.conftest import ssl_listener_settings
from tests.security.pki import Pki
from tests.security.test_tls import tls_client
from tests.server.test_fetch_write_path import TOPIC, VALUE, fetch_fields, stored_bytes

RECORDS = 3000


def test_large_fetches_over_tls(pki: Pki, tmp_path: Path) -> None:
    with ThreadedBroker(tmp_path / "data", settings=ssl_listener_settings(pki)) as running:
        producer = Producer(
            {
                "bootstrap.servers": running.bootstrap_servers,
                "security.protocol": "SSL",
                "ssl.ca.location": str(pki.ca),
                "linger.ms": 5,
            }
        )
        for _ in range(RECORDS):
            producer.produce(TOPIC, VALUE, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        with tls_client(running.bootstrap_servers, pki) as client:
            sent = [client.send(ApiKey.Fetch, 12, **fetch_fields(offset)) for offset in (0, 7)]
            for offset, correlation_id in zip((0, 7), sent, strict=True):
                received_id, response = client.recv(ApiKey.Fetch, 12)
                assert received_id == correlation_id
                partition = response.responses[0].partitions[0]
                assert partition.error_code == ErrorCode.NO_ERROR
                assert partition.records == stored_bytes(running, offset)
                assert len(partition.records) > 1 << 20
