"""SASL listeners over hand-built frames: the handshake, PLAIN, SCRAM, raw v0 tokens, refusals."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest

from minibroker.config import BrokerConfig, ConfigError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.security.jaas import plain_users
from minibroker.server.security import listener_security
from minibroker.testing.threaded import ThreadedBroker
from tests.security.conftest import PLAIN_JAAS, USERS, sasl_listener_settings
from tests.security.scram_client import ScramClient
from tests.wire import WireClient

INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"
)


@pytest.fixture(scope="module")
def sasl_bootstrap() -> Iterator[str]:
    with ThreadedBroker(settings=sasl_listener_settings()) as running:
        yield running.bootstrap_servers


def plain_token(user: str, password: str, authorization_id: str = "") -> bytes:
    return f"{authorization_id}\0{user}\0{password}".encode()


def handshake(client: WireClient, mechanism: str, version: int = 1) -> None:
    response = client.call(ApiKey.SaslHandshake, version, mechanism=mechanism)
    assert response.error_code == ErrorCode.NO_ERROR
    assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def authenticate(client: WireClient, token: bytes, version: int = 2) -> object:
    return client.call(ApiKey.SaslAuthenticate, version, auth_bytes=token)


def raw_exchange(client: WireClient, token: bytes) -> bytes:
    client.send_raw(struct.pack(">i", len(token)) + token)
    return client.recv_frame()


def test_plain_login_then_requests_are_served(sasl_bootstrap: str) -> None:
    with WireClient(sasl_bootstrap) as client:
        versions = client.call(ApiKey.ApiVersions, 3)
        ranges = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert ranges[ApiKey.SaslHandshake] == (0, 1)
        assert ranges[ApiKey.SaslAuthenticate] == (0, 2)
        handshake(client, "PLAIN")
        response = authenticate(client, plain_token("alice", USERS["alice"]))
        assert (response.error_code, response.error_message) == (ErrorCode.NO_ERROR, None)
        assert response.session_lifetime_ms == 0
        assert client.call(ApiKey.Metadata, 12, topics=None).brokers
        again = authenticate(client, plain_token("alice", USERS["alice"]))
        assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert again.error_message == (
            "SaslAuthenticate request received after successful authentication"
        )
        assert client.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN").error_code == (
            ErrorCode.ILLEGAL_SASL_STATE
        )


@pytest.mark.parametrize("version", [0, 1])
def test_plain_wrong_password_fails_with_kafkas_message(sasl_bootstrap: str, version: int) -> None:
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN")
        response = authenticate(client, plain_token("alice", "wrong"), version)
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == "Authentication failed: Invalid username or password"
        assert client.is_closed_by_peer()


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (plain_token("mallory", "x"), "Authentication failed: Invalid username or password"),
        (plain_token("", "x"), "Authentication failed: username not specified"),
        (plain_token("alice", ""), "Authentication failed: password not specified"),
        (
            plain_token("alice", USERS["alice"], authorization_id="bob"),
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
        (b"alice\0alice-secret", INVALID_CREDENTIALS.format("PLAIN")),
    ],
)
def test_plain_refusals(sasl_bootstrap: str, token: bytes, message: str) -> None:
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN")
        response = authenticate(client, token)
        assert (response.error_code, response.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            message,
        )


@pytest.mark.parametrize(
    ("api_key", "version", "fields"),
    [
        (ApiKey.Metadata, 12, {"topics": None}),
        (ApiKey.Produce, 9, {"acks": 1, "timeout_ms": 1000, "topic_data": []}),
        (ApiKey.SaslAuthenticate, 2, {"auth_bytes": plain_token("alice", "alice-secret")}),
    ],
)
def test_requests_before_the_handshake_close_the_connection(
    sasl_bootstrap: str, api_key: int, version: int, fields: dict[str, object]
) -> None:
    with WireClient(sasl_bootstrap) as client:
        client.send(api_key, version, **fields)
        assert client.is_closed_by_peer()
    with WireClient(sasl_bootstrap) as client:
        client.call(ApiKey.ApiVersions, 3)
        client.send(api_key, version, **fields)
        assert client.is_closed_by_peer()


def test_other_request_during_authentication_gets_illegal_sasl_state(sasl_bootstrap: str) -> None:
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN")
        response = client.call(
            ApiKey.DescribeCluster, 0, include_cluster_authorized_operations=False
        )
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert client.is_closed_by_peer()
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN")
        client.send(ApiKey.Metadata, 12, topics=None)  # no top-level error code: just closed
        assert client.is_closed_by_peer()


def test_unsupported_mechanism(sasl_bootstrap: str) -> None:
    with WireClient(sasl_bootstrap) as client:
        response = client.call(ApiKey.SaslHandshake, 1, mechanism="GSSAPI")
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert response.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert client.is_closed_by_peer()


def test_v0_handshake_then_raw_plain_token(sasl_bootstrap: str) -> None:
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN", version=0)
        assert raw_exchange(client, plain_token("bob", USERS["bob"])) == b""
        assert client.call(ApiKey.Metadata, 1, topics=None).brokers
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "PLAIN", version=0)
        token = plain_token("bob", "x")
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert client.is_closed_by_peer()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_login(sasl_bootstrap: str, mechanism: str) -> None:
    scram = ScramClient(mechanism, "alice", USERS["alice"])
    with WireClient(sasl_bootstrap) as client:
        handshake(client, mechanism)
        first = authenticate(client, scram.first())
        assert first.error_code == ErrorCode.NO_ERROR
        final = authenticate(client, scram.final(first.auth_bytes))
        assert final.error_code == ErrorCode.NO_ERROR
        assert scram.verify(final.auth_bytes)
        assert client.call(ApiKey.Metadata, 12, topics=None).brokers


def test_scram_over_raw_v0_tokens(sasl_bootstrap: str) -> None:
    scram = ScramClient("SCRAM-SHA-256", "bob", USERS["bob"])
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "SCRAM-SHA-256", version=0)
        server_first = raw_exchange(client, scram.first())
        assert server_first.startswith(b"r=") and b",i=8192" in server_first
        assert scram.verify(raw_exchange(client, scram.final(server_first)))
        assert client.call(ApiKey.Metadata, 1, topics=None).brokers


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-256", "alice", "wrong"),
        ("SCRAM-SHA-512", "bob", USERS["bob"]),  # bob has no SHA-512 credential
        ("SCRAM-SHA-256", "mallory", "x"),
    ],
)
def test_scram_failures_share_one_message(
    sasl_bootstrap: str, mechanism: str, user: str, password: str
) -> None:
    scram = ScramClient(mechanism, user, password)
    with WireClient(sasl_bootstrap) as client:
        handshake(client, mechanism)
        response = authenticate(client, scram.first())
        if response.error_code == ErrorCode.NO_ERROR:
            response = authenticate(client, scram.final(response.auth_bytes))
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == INVALID_CREDENTIALS.format(mechanism)
        assert client.is_closed_by_peer()


@pytest.mark.parametrize(
    "client_final",
    [
        "c=biws,r={nonce},p=abc",  # the proof is not whole base64
        "c=biws,r={nonce},p=!!!!",
        "c=abc,r={nonce},p=AAAA",  # nor is the channel binding
        "c=biws,r={nonce}",  # no proof
        "r={nonce},p=AAAA",  # no channel binding
        "c=biws,p=AAAA",  # no nonce
        "",
    ],
)
def test_scram_malformed_client_final_fails_authentication(
    sasl_bootstrap: str, client_final: str
) -> None:
    scram = ScramClient("SCRAM-SHA-256", "alice", USERS["alice"])
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "SCRAM-SHA-256")
        first = authenticate(client, scram.first())
        nonce = dict(item.split("=", 1) for item in first.auth_bytes.decode().split(","))["r"]
        response = authenticate(client, client_final.format(nonce=nonce).encode())
        assert (response.error_code, response.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            INVALID_CREDENTIALS.format("SCRAM-SHA-256"),
        )
        assert client.is_closed_by_peer()


@pytest.mark.parametrize("stage", ["first", "final"])
def test_scram_message_that_is_not_utf8_fails_authentication(
    sasl_bootstrap: str, stage: str
) -> None:
    scram = ScramClient("SCRAM-SHA-256", "alice", USERS["alice"])
    not_utf8 = b"c=biws,r=\xff\xfe,p=AAAA"
    with WireClient(sasl_bootstrap) as client:
        handshake(client, "SCRAM-SHA-256")
        if stage == "final":
            assert authenticate(client, scram.first()).error_code == ErrorCode.NO_ERROR
        response = authenticate(client, not_utf8)
        assert (response.error_code, response.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            INVALID_CREDENTIALS.format("SCRAM-SHA-256"),
        )
        assert client.is_closed_by_peer()


def test_plaintext_listener_answers_sasl_requests_with_illegal_state(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        assert client.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN").error_code == (
            ErrorCode.ILLEGAL_SASL_STATE
        )
        response = authenticate(client, plain_token("alice", "x"))
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_listener_mechanisms_and_users_from_config() -> None:
    config = BrokerConfig(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_SSL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "plain, SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    security = listener_security(config, "SASL_PLAINTEXT")
    assert security.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert security.plain_users == USERS
    with pytest.raises(ConfigError, match="needs a keystore"):
        listener_security(config, "INTERNAL")
    gssapi = BrokerConfig({"sasl.enabled.mechanisms": "GSSAPI,PLAIN"})
    with pytest.raises(ConfigError, match="GSSAPI not supported"):
        listener_security(gssapi, "SASL_PLAINTEXT")


def test_jaas_values_with_quotes_escapes_and_several_entries() -> None:
    text = (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x\\"y" '
        "user_b=plain;\n"
        'org.apache.kafka.common.security.plain.PlainLoginModule optional user_c="semi;colon";'
    )
    assert plain_users(text) == {"a": 'x"y', "b": "plain", "c": "semi;colon"}
    with pytest.raises(ConfigError):
        plain_users('PlainLoginModule required user_a="x"')
