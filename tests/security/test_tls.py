"""TLS listeners: certificates, client authentication and keystore configuration."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig, ConfigError, parse_properties
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.security.tls import server_context
from minibroker.testing.threaded import ThreadedBroker
from tests.security.conftest import ssl_listener_settings
from tests.security.pki import Pki
from tests.wire import WireClient


def tls_client(bootstrap: str, pki: Pki, with_certificate: bool = False) -> WireClient:
    context = ssl.create_default_context(cafile=pki.ca)
    if with_certificate:
        context.load_cert_chain(pki.cert("client"), pki.key("client"))
    client = WireClient(bootstrap)
    client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
    return client


def test_ssl_listener_serves_requests_over_tls(pki: Pki) -> None:
    with (
        ThreadedBroker(settings=ssl_listener_settings(pki)) as running,
        tls_client(running.bootstrap_servers, pki) as client,
    ):
        response = client.call(ApiKey.Metadata, 12, topics=None)
        assert [(b.host, b.port) for b in response.brokers] == [("127.0.0.1", running.port)]
        peer = client.sock.getpeercert()
        assert peer is not None
        assert ("IP Address", "127.0.0.1") in peer["subjectAltName"]


def test_plaintext_client_on_an_ssl_listener_gets_no_kafka_answer(pki: Pki) -> None:
    with (
        ThreadedBroker(settings=ssl_listener_settings(pki)) as running,
        WireClient(running.bootstrap_servers) as client,
    ):
        client.send(ApiKey.ApiVersions, 0)
        with pytest.raises((ConnectionError, socket.timeout, OSError)):
            client.recv_frame()


@pytest.mark.parametrize("client_auth", ["requested", "required"])
def test_client_certificate_is_accepted(pki: Pki, client_auth: str) -> None:
    with (
        ThreadedBroker(settings=ssl_listener_settings(pki, client_auth)) as running,
        tls_client(running.bootstrap_servers, pki, with_certificate=True) as client,
    ):
        assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


def test_requested_client_auth_lets_a_client_without_certificate_in(pki: Pki) -> None:
    with (
        ThreadedBroker(settings=ssl_listener_settings(pki, "requested")) as running,
        tls_client(running.bootstrap_servers, pki) as client,
    ):
        assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


def test_required_client_auth_refuses_a_client_without_certificate(pki: Pki) -> None:
    with ThreadedBroker(settings=ssl_listener_settings(pki, "required")) as running:
        # With TLS 1.3 the client's handshake ends before the server checks its certificate;
        # the refusal arrives as an alert on the first read.
        with (
            pytest.raises((ssl.SSLError, ConnectionError)),
            tls_client(running.bootstrap_servers, pki) as client,
        ):
            client.call(ApiKey.ApiVersions, 3)
        with tls_client(running.bootstrap_servers, pki, with_certificate=True) as client:
            assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


def test_per_listener_settings_and_plaintext_side_by_side(pki: Pki) -> None:
    settings = {
        "listeners": "PLAINTEXT://127.0.0.1:0,CLIENTS://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SSL",
        "listener.name.clients.ssl.keystore.type": "PEM",
        "listener.name.clients.ssl.keystore.location": str(pki.keystore("server")),
        "listener.name.clients.ssl.client.auth": "required",
        "listener.name.clients.ssl.truststore.type": "PEM",
        "listener.name.clients.ssl.truststore.certificates": pki.ca.read_text(),
    }
    with ThreadedBroker(settings=settings) as running:
        assert running.broker is not None
        plain, tls = running.broker.bound
        with WireClient(f"127.0.0.1:{plain.port}") as client:
            assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR
        with tls_client(f"127.0.0.1:{tls.port}", pki, with_certificate=True) as client:
            response = client.call(ApiKey.Metadata, 12, topics=None)
            assert [b.port for b in response.brokers] == [tls.port]


def test_inline_pem_from_a_properties_file_with_continuations(pki: Pki, tmp_path: Path) -> None:
    def continued(pem: str) -> str:
        return " \\\n    ".join(pem.strip().splitlines())

    key = pki.key("server").read_text()
    chain = pki.cert("server").read_text()
    text = (
        "ssl.keystore.type=PEM\n"
        f"ssl.keystore.key={continued(key)}\n"
        f"ssl.keystore.certificate.chain={continued(chain)}\n"
    )
    values = parse_properties(text)
    assert "\n" not in values["ssl.keystore.key"]
    config = BrokerConfig({"listeners": "SSL://127.0.0.1:0", **values})
    with (
        ThreadedBroker(settings=dict(config.values)) as running,
        tls_client(running.bootstrap_servers, pki) as client,
    ):
        assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "x.jks"}, "PEM"),
        ({"ssl.keystore.location": "x.p12"}, "ssl.keystore.type JKS is not supported"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "x.p12"}, "set ssl.keystore"),
        ({}, "needs a keystore"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent.pem"}, "No such"),
        ({"ssl.client.auth": "sometimes"}, "ssl.client.auth"),
    ],
)
def test_keystore_configuration_errors(pki: Pki, settings: dict[str, str], message: str) -> None:
    values = {"listeners": "SSL://127.0.0.1:0", **settings}
    if "ssl.client.auth" in settings:
        values.update(ssl_listener_settings(pki, settings["ssl.client.auth"]))
    with pytest.raises(ConfigError, match=message):
        server_context(BrokerConfig(values), "SSL")


def test_truststore_must_be_pem(pki: Pki) -> None:
    values = {**ssl_listener_settings(pki), "ssl.truststore.type": "JKS"}
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.type JKS is not supported"):
        server_context(BrokerConfig(values), "SSL")


def test_listener_without_security_protocol_is_a_config_error() -> None:
    config = BrokerConfig(
        {"listeners": "EXTERNAL://127.0.0.1:0", "listener.security.protocol.map": "A:SSL"}
    )
    with pytest.raises(ConfigError, match="No security protocol defined for listener EXTERNAL"):
        server_context(config, "EXTERNAL")
