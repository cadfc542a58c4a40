"""Client properties for TLS and SASL, in each real client's own names (the job `config`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.security.pki import Pki

TLS_AND_SASL_CLIENTS = [
    "java-4.3",
    "confluent-kafka",
    "kafka-python-3",
    "aiokafka",
    "kafkajs",
    "kcat",
]

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@dataclass(frozen=True)
class Security:
    protocol: str  # SSL, SASL_PLAINTEXT or SASL_SSL
    pki: Pki | None = None
    client_certificate: bool = False
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def client_config(client: str, security: Security) -> dict[str, Any]:
    if client.startswith("java-"):
        return _java(security)
    if client in ("confluent-kafka", "kcat"):
        return _librdkafka(security)
    if client.startswith("kafka-python") or client == "aiokafka":
        return _kafka_python(security)  # the aiokafka program makes an ssl_context of the files
    if client == "kafkajs":
        return _kafkajs(security)
    raise KeyError(client)


def _java(security: Security) -> dict[str, Any]:
    config: dict[str, Any] = {"security.protocol": security.protocol}
    if security.tls:
        assert security.pki is not None
        config["ssl.truststore.type"] = "PEM"
        config["ssl.truststore.location"] = str(security.pki.ca)
        if security.client_certificate:
            config["ssl.keystore.type"] = "PEM"
            config["ssl.keystore.location"] = str(security.pki.keystore("client"))
    if security.mechanism:
        config["sasl.mechanism"] = security.mechanism
        config["sasl.jaas.config"] = (
            f"{_JAAS_MODULES[security.mechanism]} required "
            f'username="{security.username}" password="{security.password}";'
        )
    return config


def _librdkafka(security: Security) -> dict[str, Any]:
    config: dict[str, Any] = {"security.protocol": security.protocol}
    if security.tls:
        assert security.pki is not None
        config["ssl.ca.location"] = str(security.pki.ca)
        if security.client_certificate:
            config["ssl.certificate.location"] = str(security.pki.cert("client"))
            config["ssl.key.location"] = str(security.pki.key("client"))
    if security.mechanism:
        config["sasl.mechanisms"] = security.mechanism
        config["sasl.username"] = security.username
        config["sasl.password"] = security.password
    return config


def _kafka_python(security: Security) -> dict[str, Any]:
    config: dict[str, Any] = {"security_protocol": security.protocol}
    if security.tls:
        assert security.pki is not None
        config["ssl_cafile"] = str(security.pki.ca)
        if security.client_certificate:
            config["ssl_certfile"] = str(security.pki.cert("client"))
            config["ssl_keyfile"] = str(security.pki.key("client"))
    if security.mechanism:
        config["sasl_mechanism"] = security.mechanism
        config["sasl_plain_username"] = security.username
        config["sasl_plain_password"] = security.password
    return config


def _kafkajs(security: Security) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if security.tls:
        assert security.pki is not None
        ssl: dict[str, Any] = {"ca": [security.pki.ca.read_text()]}
        if security.client_certificate:
            ssl["cert"] = security.pki.cert("client").read_text()
            ssl["key"] = security.pki.key("client").read_text()
        config["ssl"] = ssl
    if security.mechanism:
        config["sasl"] = {
            "mechanism": security.mechanism.lower(),
            "username": security.username,
            "password": security.password,
        }
    return config
