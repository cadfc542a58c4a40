"""The Kafka listener probed from outside, as a security reviewer would, over hand-built frames.

A broker with a SASL listener (PLAIN and SCRAM), the StandardAuthorizer and one super user
(alice) that owns a topic holding a record, a consumer group and its committed offset. Then:

(a) every API key the broker advertises, at its newest version, with a small valid body naming
    alice's topic, group and transactional id, sent by bob (authenticated, no ACLs): each is
    refused with an authorization error, or answers with nothing of alice's, as Kafka's
    KafkaApis does; the connection stays open.
(b) before authentication: any other request closes the connection unanswered; a frame larger
    than `sasl.server.max.receive.size` closes it from its size prefix alone, while an
    authenticated client may send frames up to `socket.request.max.bytes`.
(c) a failed authentication is answered (and the connection closed) only after
    `connection.failed.authentication.delay.ms`, while other connections are served.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import is_flexible, request_class, response_class
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from tests.security.conftest import USERS, sasl_listener_settings
from tests.security.scram_client import ScramClient
from tests.wire import WireClient, encode_request, request_frame

TOPIC, GROUP, TRANSACTIONAL_ID = "alice-topic", "alice-group", "alice-txn"
SECRET_VALUE = b"alice's secret value"
SASL_MAX_RECEIVE = 524288
AUTHORIZATION_ERRORS = {
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}
# Answered without an authorization check in Kafka too, with what they may answer to bob.
UNCHECKED = {
    ApiKey.ApiVersions: {ErrorCode.NO_ERROR},
    ApiKey.SaslHandshake: {ErrorCode.ILLEGAL_SASL_STATE},
    ApiKey.SaslAuthenticate: {ErrorCode.ILLEGAL_SASL_STATE},
    ApiKey.ListGroups: {ErrorCode.NO_ERROR},  # filtered to describable groups: none
    ApiKey.ListTransactions: {ErrorCode.NO_ERROR},  # likewise
    ApiKey.DescribeCluster: {ErrorCode.NO_ERROR},  # the brokers, as Metadata tells anyone
    ApiKey.GetTelemetrySubscriptions: {ErrorCode.NO_ERROR},
    ApiKey.PushTelemetry: {ErrorCode.INVALID_REQUEST},  # no subscription id: refused as such
    # No delegation.token.secret.key here: tokens disabled, answered before any ACL check.
    ApiKey.RenewDelegationToken: {ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED},
    ApiKey.ExpireDelegationToken: {ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED},
    ApiKey.DescribeDelegationToken: {ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED},
}
FAILURE_DELAY_S = 0.09  # connection.failed.authentication.delay.ms is 100


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    settings = {**sasl_listener_settings(), **AUTHORIZER_CONFIG, "super.users": "User:alice"}
    with KafkaBroker(storage="memory", config=settings) as running:
        running.create_topic(TOPIC)
        running.produce(TOPIC, SECRET_VALUE)
        with logged_in(running, "alice") as alice:
            commit = alice.call(
                ApiKey.OffsetCommit,
                8,
                group_id=GROUP,
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[
                    {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 1}]}
                ],
            )
            assert commit.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        yield running


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def login(client: WireClient, user: str, mechanism: str = "PLAIN") -> None:
    assert client.call(ApiKey.SaslHandshake, 1, mechanism=mechanism).error_code == 0
    token = plain_token(user, USERS[user])
    assert client.call(ApiKey.SaslAuthenticate, 2, auth_bytes=token).error_code == 0


def logged_in(broker: KafkaBroker, user: str) -> WireClient:
    client = WireClient(broker.bootstrap_servers)
    client.call(ApiKey.ApiVersions, 3)
    login(client, user)
    return client


def topic_id(broker: KafkaBroker) -> uuid.UUID:
    with logged_in(broker, "alice") as alice:
        metadata = alice.call(ApiKey.Metadata, 12, topics=[{"name": TOPIC}])
    return uuid.UUID(str(metadata.topics[0].topic_id))


# ---- (a) every API key as a user without ACLs -------------------------------------------------

# Field values by name (a field takes the first whose key is in its name), so that each
# request names alice's resources; other fields keep their defaults.
STRINGS = {
    "topic": TOPIC,
    "group": GROUP,
    "coordinator_key": GROUP,
    "transactional": TRANSACTIONAL_ID,
    "resource_name": TOPIC,
    "principal": "User:bob",
    "host": "*",
    "protocol_type": "consumer",
    "protocol_name": "range",
    "name": TOPIC,
    "user": "alice",
}
NUMBERS = {
    "acks": 1,
    "timeout_ms": 1000,
    "resource_type": 2,  # TOPIC
    "resource_type_filter": 2,
    "pattern_type": 3,  # LITERAL
    "pattern_type_filter": 3,
    "resource_pattern_type": 3,
    "operation": 2,  # ALL
    "permission_type": 3,  # ALLOW
}


def _string_for(field_name: str) -> str | None:
    return next((value for key, value in STRINGS.items() if key in field_name), None)


def probe_body(cls: Any, version: int, topic: uuid.UUID) -> dict[str, Any]:
    """Fields for `cls` at `version`: one element in each array, alice's names, her topic's
    id where a topic is named by id only."""
    present = {name: field for name, field in cls.fields.items() if field.for_version_q(version)}
    by_name = any(name in ("name", "topic", "topic_name") for name in present)
    body: dict[str, Any] = {}
    for name, field in present.items():
        kind = field.type_str
        if field.is_struct_array():
            body[name] = [probe_body(field.data_class, version, topic)]
        elif field.is_struct():
            body[name] = probe_body(field.data_class, version, topic)
        elif kind in ("string", "[]string") and (text := _string_for(name)) is not None:
            body[name] = [text] if kind.startswith("[]") else text
        elif kind == "[]int32" and "partition" in name:
            body[name] = [0]
        elif kind == "uuid" and name == "topic_id" and not by_name:
            body[name] = topic
        elif kind in ("int8", "int16", "int32") and name in NUMBERS:
            body[name] = NUMBERS[name]
    return body


def exchange(client: WireClient, api_key: int, version: int, **fields: Any) -> tuple[bytes, Any]:
    """The raw response frame and its decoded body."""
    sent = client.send(api_key, version, **fields)
    frame = client.recv_frame()
    assert struct.unpack_from(">i", frame)[0] == sent
    position = 5 if api_key != ApiKey.ApiVersions and is_flexible(api_key, version) else 4
    return frame, response_class(api_key).decode(frame[position:], version=version)


def error_codes(value: Any) -> set[int]:
    if isinstance(value, dict):
        found = {value["error_code"]} if "error_code" in value else set()
        return found.union(*(error_codes(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(error_codes(item) for item in value))
    return set()


def test_every_api_key_refuses_a_user_without_acls(broker: KafkaBroker) -> None:
    alice_topic = topic_id(broker)
    with logged_in(broker, "bob") as bob:
        advertised = bob.call(ApiKey.ApiVersions, 3).api_keys
        assert len(advertised) > 50
        unexpected = {}
        for entry in advertised:
            key, version = entry.api_key, entry.max_version
            body = probe_body(request_class(key), version, alice_topic)
            frame, response = exchange(bob, key, version, **body)
            assert SECRET_VALUE not in frame, ApiKey.name_of(key)
            codes = error_codes(response.to_dict())
            refused = bool(codes & AUTHORIZATION_ERRORS)
            if refused == (key in UNCHECKED) or (key in UNCHECKED and codes != UNCHECKED[key]):
                unexpected[ApiKey.name_of(key)] = (sorted(codes), str(response)[:300])
        assert unexpected == {}
        assert bob.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


def test_listings_show_a_user_without_acls_nothing(broker: KafkaBroker) -> None:
    with logged_in(broker, "bob") as bob:
        assert bob.call(ApiKey.Metadata, 12, topics=None).topics == []
        assert bob.call(ApiKey.ListGroups, 5).groups == []
        described = bob.call(ApiKey.DescribeCluster, 1, include_cluster_authorized_operations=True)
        assert described.authorized_operations == set()  # none of them
    with logged_in(broker, "alice") as alice:  # the same listings do hold alice's
        listed = {t.name for t in alice.call(ApiKey.Metadata, 12, topics=None).topics}
        assert listed == {TOPIC, "__consumer_offsets"}
        assert [g.group_id for g in alice.call(ApiKey.ListGroups, 5).groups] == [GROUP]


# ---- (b) before authentication ---------------------------------------------------------------


def closed_unanswered(connection: WireClient | socket.socket) -> bool:
    """The broker closed the connection without sending anything."""
    sock = connection.sock if isinstance(connection, WireClient) else connection
    sock.settimeout(5)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_other_requests_before_authentication_close_the_connection(broker: KafkaBroker) -> None:
    alice_topic = topic_id(broker)
    with WireClient(broker.bootstrap_servers) as probe:
        advertised = probe.call(ApiKey.ApiVersions, 3).api_keys
    for entry in advertised:
        if entry.api_key in (ApiKey.ApiVersions, ApiKey.SaslHandshake):
            continue
        body = probe_body(request_class(entry.api_key), entry.max_version, alice_topic)
        with WireClient(broker.bootstrap_servers) as client:
            client.send(entry.api_key, entry.max_version, **body)
            assert closed_unanswered(client), ApiKey.name_of(entry.api_key)


def padded_frame(api_key: int, version: int, size: int, **fields: Any) -> bytes:
    """A request whose frame is `size` bytes after its size prefix: the body, then zeros
    (bytes after a request's body are ignored, as Kafka ignores them)."""
    frame = request_frame(api_key, version, 1, encode_request(api_key, version, **fields))
    padding = size - (len(frame) - 4)
    return struct.pack(">i", size) + frame[4:] + bytes(padding)


def test_largest_unauthenticated_frame_is_served(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        client.send_raw(padded_frame(ApiKey.ApiVersions, 3, SASL_MAX_RECEIVE))
        _, response = client.recv(ApiKey.ApiVersions, 3)
        assert response.error_code == ErrorCode.NO_ERROR


def test_oversized_unauthenticated_frames_close_from_their_size_alone(
    broker: KafkaBroker,
) -> None:
    """Several sockets declare 100 MiB (one just over the limit) and send some data: each is
    closed, without the broker waiting for (or buffering) the body."""
    sockets = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(8)]
    try:
        for index, sock in enumerate(sockets):
            declared = SASL_MAX_RECEIVE + 1 if index == 0 else 100 * 1024 * 1024
            sock.sendall(struct.pack(">i", declared) + bytes(64 * 1024))
        assert all(closed_unanswered(sock) for sock in sockets)
    finally:
        for sock in sockets:
            sock.close()
    with WireClient(broker.bootstrap_servers) as client:  # after the handshake, too
        assert client.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN").error_code == 0
        client.send_raw(padded_frame(ApiKey.SaslAuthenticate, 2, SASL_MAX_RECEIVE + 1))
        assert closed_unanswered(client)


def test_authenticated_clients_send_frames_up_to_socket_request_max_bytes(
    broker: KafkaBroker,
) -> None:
    with logged_in(broker, "bob") as bob:
        bob.send_raw(padded_frame(ApiKey.Metadata, 12, 8 * 1024 * 1024, topics=None))
        _, response = bob.recv(ApiKey.Metadata, 12)
        assert response.brokers


def test_pipelined_login_is_answered_in_order(broker: KafkaBroker) -> None:
    """Unauthenticated requests are read one at a time, but all of them are answered."""
    with WireClient(broker.bootstrap_servers) as client:
        frames = [
            request_frame(ApiKey.ApiVersions, 3, 1, encode_request(ApiKey.ApiVersions, 3)),
            request_frame(
                ApiKey.SaslHandshake,
                1,
                2,
                encode_request(ApiKey.SaslHandshake, 1, mechanism="PLAIN"),
            ),
            request_frame(
                ApiKey.SaslAuthenticate,
                2,
                3,
                encode_request(
                    ApiKey.SaslAuthenticate, 2, auth_bytes=plain_token("bob", USERS["bob"])
                ),
            ),
            request_frame(ApiKey.Metadata, 12, 4, encode_request(ApiKey.Metadata, 12, topics=None)),
        ]
        client.send_raw(b"".join(frames))
        assert client.recv(ApiKey.ApiVersions, 3)[0] == 1
        assert client.recv(ApiKey.SaslHandshake, 1)[1].error_code == ErrorCode.NO_ERROR
        assert client.recv(ApiKey.SaslAuthenticate, 2)[1].error_code == ErrorCode.NO_ERROR
        correlation_id, metadata = client.recv(ApiKey.Metadata, 12)
        assert (correlation_id, metadata.topics) == (4, [])


# ---- (c) the failed-authentication delay -----------------------------------------------------


def timed_answer(
    client: WireClient, api_key: int, version: int, **fields: Any
) -> tuple[float, Any]:
    started = time.monotonic()
    response = client.call(api_key, version, **fields)
    return time.monotonic() - started, response


def test_wrong_plain_password_is_answered_after_the_delay(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        client.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN")
        waited, response = timed_answer(
            client, ApiKey.SaslAuthenticate, 2, auth_bytes=plain_token("bob", "guess")
        )
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert waited >= FAILURE_DELAY_S
        assert closed_unanswered(client)


@pytest.mark.parametrize("user", ["alice", "mallory"])
def test_wrong_scram_proof_or_unknown_user_is_answered_after_the_delay(
    broker: KafkaBroker, user: str
) -> None:
    scram = ScramClient("SCRAM-SHA-256", user, "guess")
    with WireClient(broker.bootstrap_servers) as client:
        client.call(ApiKey.SaslHandshake, 1, mechanism="SCRAM-SHA-256")
        waited, response = timed_answer(
            client, ApiKey.SaslAuthenticate, 2, auth_bytes=scram.first()
        )
        if response.error_code == ErrorCode.NO_ERROR:  # a known user: the proof fails
            assert waited < 5
            final = scram.final(response.auth_bytes)
            waited, response = timed_answer(client, ApiKey.SaslAuthenticate, 2, auth_bytes=final)
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert waited >= FAILURE_DELAY_S
        assert closed_unanswered(client)


def test_unsupported_mechanism_is_answered_after_the_delay(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        waited, response = timed_answer(client, ApiKey.SaslHandshake, 1, mechanism="GSSAPI")
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert waited >= FAILURE_DELAY_S


def test_raw_v0_token_failure_closes_after_the_delay(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        client.call(ApiKey.SaslHandshake, 0, mechanism="PLAIN")
        token = plain_token("bob", "guess")
        started = time.monotonic()
        client.send_raw(struct.pack(">i", len(token)) + token)
        assert closed_unanswered(client)
        assert time.monotonic() - started >= FAILURE_DELAY_S


def test_oversized_frame_closes_after_the_delay(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        started = time.monotonic()
        client.send_raw(struct.pack(">i", 100 * 1024 * 1024))
        assert closed_unanswered(client)
        assert time.monotonic() - started >= FAILURE_DELAY_S


def test_other_connections_are_served_while_a_failure_waits() -> None:
    settings = {**sasl_listener_settings(), "connection.failed.authentication.delay.ms": "1500"}
    with (
        KafkaBroker(storage="memory", config=settings) as running,
        WireClient(running.bootstrap_servers) as guesser,
    ):
        guesser.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN")
        started = time.monotonic()
        guesser.send(ApiKey.SaslAuthenticate, 2, auth_bytes=plain_token("bob", "guess"))
        with logged_in(running, "bob") as bob:
            assert bob.call(ApiKey.Metadata, 12, topics=None).brokers
        served_after = time.monotonic() - started
        _, failure = guesser.recv(ApiKey.SaslAuthenticate, 2)
        answered_after = time.monotonic() - started
    assert failure.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answered_after >= 1.4
    assert served_after < answered_after
