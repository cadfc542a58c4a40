"""`kafka.*` properties librdkafka lacks or refuses (Java-only) are dropped with a warning,
as Kafka's Java clients do with unknown properties; the others reach librdkafka."""

from __future__ import annotations

import logging

import pytest

from minibroker.spark import rdkafka

JAVA_ONLY = {
    "ssl.truststore.location": "/etc/truststore.jks",
    "ssl.keystore.type": "JKS",
    "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
}


def test_java_only_properties_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="minibroker.spark.rdkafka")
    consumer = rdkafka.consumer({"bootstrap.servers": "127.0.0.1:9", **JAVA_ONLY}, "g")
    consumer.close()
    rdkafka.producer({"bootstrap.servers": "127.0.0.1:9", **JAVA_ONLY}, lambda *_: None)
    dropped = {record.args[0] for record in caplog.records if isinstance(record.args, tuple)}
    assert dropped == set(JAVA_ONLY)


def test_bad_values_of_known_properties_still_fail() -> None:
    with pytest.raises(Exception, match="Invalid value"):
        rdkafka.producer({"bootstrap.servers": "127.0.0.1:9", "linger.ms": "soon"}, print)
