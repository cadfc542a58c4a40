"""Delegation tokens (CreateDelegationToken 38 ... DescribeDelegationToken 41) over the wire:
Kafka's lifetimes, errors, ACL rules and refusals, tokens kept across a restart, and SCRAM
logins with a token (`tokenauth=true`) that authenticate its owner."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.auth.authorizer import STANDARD_AUTHORIZER
from minibroker.config import BrokerConfig, ConfigError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.security.delegation_tokens import TOKENS_FILE
from minibroker.server.broker import Broker
from minibroker.testing import KafkaCluster
from minibroker.testing.threaded import ThreadedBroker
from tests.security.scram_client import ScramClient
from tests.wire import WireClient

SECRET = "token-secret-key"
DAY_MS = 24 * 60 * 60 * 1000
WEEK_MS = 7 * DAY_MS
USERS = ("admin", "alice", "bob", "carol")


def token_settings(**extra: str) -> dict[str, str]:
    """A SASL_PLAINTEXT listener (SCRAM users admin, alice, bob, carol; password
    `<name>-secret`) and a PLAINTEXT one, delegation tokens on."""
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "minibroker.scram.credentials": ",".join(
            f"{mechanism}=[name={user},password={user}-secret]"
            for user in USERS
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        ),
        "delegation.token.secret.key": SECRET,
        **extra,
    }


def acl_settings(**extra: str) -> dict[str, str]:
    return token_settings(
        **{"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin", **extra}
    )


def address(running: ThreadedBroker, listener: str) -> str:
    assert running.broker is not None
    port = next(b.port for b in running.broker.bound if b.listener.name == listener)
    return f"127.0.0.1:{port}"


def authenticate(
    client: WireClient,
    user: str,
    password: str,
    mechanism: str = "SCRAM-SHA-512",
    token: bool = False,
) -> int:
    """A SCRAM login on `client`; its error code (0: logged in)."""
    scram = ScramClient(mechanism, user, password, ",tokenauth=true" if token else "")
    client.call(ApiKey.SaslHandshake, 1, mechanism=mechanism)
    first = client.call(ApiKey.SaslAuthenticate, 2, auth_bytes=scram.first())
    if first.error_code:
        return int(first.error_code)
    final = client.call(ApiKey.SaslAuthenticate, 2, auth_bytes=scram.final(first.auth_bytes))
    if final.error_code == 0:
        assert scram.verify(final.auth_bytes)
    return int(final.error_code)


class Session:
    """A SASL connection logged in as `user` (or with a token), making token requests."""

    def __init__(
        self,
        target: ThreadedBroker | str,
        user: str,
        password: str = "",
        token: bool = False,
    ) -> None:
        """`target`: a broker (its SASL_PLAINTEXT listener) or a SASL listener's address."""
        where = target if isinstance(target, str) else address(target, "SASL_PLAINTEXT")
        self.client = WireClient(where)
        assert authenticate(self.client, user, password or f"{user}-secret", token=token) == 0

    def close(self) -> None:
        self.client.close()

    def create(
        self,
        renewers: tuple[str, ...] = (),
        max_lifetime_ms: int = -1,
        owner: str | None = None,
        version: int = 3,
    ) -> Any:
        kind, _, name = (owner or ":").partition(":")
        return self.client.call(
            ApiKey.CreateDelegationToken,
            version,
            owner_principal_type=kind or None,
            owner_principal_name=name or None,
            renewers=[
                {"principal_type": r.partition(":")[0], "principal_name": r.partition(":")[2]}
                for r in renewers
            ],
            max_lifetime_ms=max_lifetime_ms,
        )

    def renew(self, token_hmac: bytes, period_ms: int = -1) -> tuple[int, int]:
        response = self.client.call(
            ApiKey.RenewDelegationToken, 2, hmac=token_hmac, renew_period_ms=period_ms
        )
        return response.error_code, response.expiry_timestamp_ms

    def expire(self, token_hmac: bytes, period_ms: int = -1) -> tuple[int, int]:
        response = self.client.call(
            ApiKey.ExpireDelegationToken, 2, hmac=token_hmac, expiry_time_period_ms=period_ms
        )
        return response.error_code, response.expiry_timestamp_ms

    def describe(self, owners: list[str] | None = None) -> tuple[int, dict[str, Any]]:
        response = self.client.call(
            ApiKey.DescribeDelegationToken,
            3,
            owners=None
            if owners is None
            else [
                {"principal_type": o.partition(":")[0], "principal_name": o.partition(":")[2]}
                for o in owners
            ],
        )
        return response.error_code, {token.token_id: token for token in response.tokens}


@pytest.fixture
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=token_settings()) as running:
        yield running


@pytest.fixture
def sessions(broker: ThreadedBroker) -> Iterator[dict[str, Session]]:
    opened = {user: Session(broker, user) for user in USERS}
    yield opened
    for session in opened.values():
        session.close()


def kafka_hmac(token_id: str, key: str = SECRET) -> bytes:
    """HmacSHA512 of the token id keyed by delegation.token.secret.key, as Kafka's."""
    return hmac.new(key.encode(), token_id.encode(), hashlib.sha512).digest()


def test_create_answers_kafkas_token(sessions: dict[str, Session]) -> None:
    before = int(time.time() * 1000)
    created = sessions["alice"].create(renewers=("User:bob",))
    assert created.error_code == ErrorCode.NO_ERROR
    assert (created.principal_type, created.principal_name) == ("User", "alice")
    requester = (created.token_requester_principal_type, created.token_requester_principal_name)
    assert requester == ("User", "alice")
    assert created.hmac == kafka_hmac(created.token_id)
    assert len(created.token_id) == 22  # Kafka's Uuid.toString(): URL-safe base64
    assert before <= created.issue_timestamp_ms <= int(time.time() * 1000)
    assert created.max_timestamp_ms - created.issue_timestamp_ms == WEEK_MS
    assert created.expiry_timestamp_ms - created.issue_timestamp_ms == DAY_MS
    error, tokens = sessions["alice"].describe()
    assert error == ErrorCode.NO_ERROR
    described = tokens[created.token_id]
    assert (described.principal_type, described.principal_name) == ("User", "alice")
    assert described.hmac == created.hmac
    assert [(r.principal_type, r.principal_name) for r in described.renewers] == [("User", "bob")]
    assert (described.issue_timestamp, described.expiry_timestamp, described.max_timestamp) == (
        created.issue_timestamp_ms,
        created.expiry_timestamp_ms,
        created.max_timestamp_ms,
    )


def test_versions_1_and_2(sessions: dict[str, Session]) -> None:
    """v1 and v2 create a token for the requester (no owner field) and describe, renew and
    expire as v3 does, without the requester fields."""
    client = sessions["bob"].client
    for version in (1, 2):
        created = sessions["bob"].create(version=version)
        assert created.error_code == ErrorCode.NO_ERROR
        assert (created.principal_type, created.principal_name) == ("User", "bob")
        assert created.hmac == kafka_hmac(created.token_id)
        described = client.call(ApiKey.DescribeDelegationToken, version, owners=None)
        assert created.token_id in {token.token_id for token in described.tokens}
        renewed = client.call(
            ApiKey.RenewDelegationToken, version, hmac=created.hmac, renew_period_ms=1000
        )
        assert renewed.error_code == ErrorCode.NO_ERROR
        expired = client.call(
            ApiKey.ExpireDelegationToken, version, hmac=created.hmac, expiry_time_period_ms=-1
        )
        assert expired.error_code == ErrorCode.NO_ERROR
    assert sessions["bob"].describe() == (ErrorCode.NO_ERROR, {})


def test_an_owner_without_a_type_fails_the_request(sessions: dict[str, Session]) -> None:
    answer = sessions["alice"].client.call(
        ApiKey.CreateDelegationToken,
        3,
        owner_principal_type=None,
        owner_principal_name="bob",
        renewers=[],
        max_lifetime_ms=-1,
    )
    assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert (answer.principal_name, answer.token_requester_principal_name) == (
        "ANONYMOUS",
        "ANONYMOUS",
    )
    assert sessions["alice"].describe() == (ErrorCode.NO_ERROR, {})


def test_max_lifetime_is_clamped_to_the_brokers() -> None:
    settings = token_settings(**{"delegation.token.max.lifetime.ms": "3600000"})
    with ThreadedBroker(settings=settings) as running:
        session = Session(running, "alice")
        longer = session.create(max_lifetime_ms=WEEK_MS)
        assert longer.max_timestamp_ms - longer.issue_timestamp_ms == 3_600_000
        # the expiry (default 24 hours) is never past the max timestamp
        assert longer.expiry_timestamp_ms == longer.max_timestamp_ms
        shorter = session.create(max_lifetime_ms=60_000)
        assert shorter.max_timestamp_ms - shorter.issue_timestamp_ms == 60_000
        assert shorter.expiry_timestamp_ms == shorter.max_timestamp_ms
        session.close()


def test_renew_by_owner_and_renewer_only(sessions: dict[str, Session]) -> None:
    created = sessions["alice"].create(renewers=("User:bob",))
    error, expiry = sessions["bob"].renew(created.hmac, 60_000)
    assert error == ErrorCode.NO_ERROR
    assert 0 < expiry - int(time.time() * 1000) <= 60_000
    # a renew period above delegation.token.expiry.time.ms gets the expiry time
    error, expiry = sessions["alice"].renew(created.hmac, 10 * DAY_MS)
    assert error == ErrorCode.NO_ERROR
    assert DAY_MS - 5_000 < expiry - int(time.time() * 1000) <= DAY_MS
    assert sessions["carol"].renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert sessions["carol"].expire(created.hmac) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    assert sessions["alice"].describe()[1][created.token_id].expiry_timestamp == expiry


def test_unknown_token_is_not_found(sessions: dict[str, Session]) -> None:
    unknown = kafka_hmac("no-such-token")
    assert sessions["alice"].renew(unknown) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
    assert sessions["alice"].expire(unknown) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_expire_now_removes_the_token(sessions: dict[str, Session]) -> None:
    created = sessions["alice"].create(renewers=("User:bob",))
    error, expiry = sessions["bob"].expire(created.hmac, -1)
    assert error == ErrorCode.NO_ERROR
    assert abs(expiry - int(time.time() * 1000)) < 5_000
    assert sessions["alice"].describe() == (ErrorCode.NO_ERROR, {})
    assert sessions["alice"].renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)


def test_expire_with_a_period_moves_the_expiry(sessions: dict[str, Session]) -> None:
    created = sessions["alice"].create()
    error, expiry = sessions["alice"].expire(created.hmac, 30_000)
    assert error == ErrorCode.NO_ERROR
    assert 0 < expiry - int(time.time() * 1000) <= 30_000
    assert sessions["alice"].describe()[1][created.token_id].expiry_timestamp == expiry


def test_expired_token_is_refused_then_removed() -> None:
    settings = token_settings(
        **{
            "delegation.token.expiry.time.ms": "300",
            "delegation.token.expiry.check.interval.ms": "1500",
        }
    )
    with ThreadedBroker(settings=settings) as running:
        alice = Session(running, "alice")
        created = alice.create()
        assert created.expiry_timestamp_ms - created.issue_timestamp_ms == 300
        time.sleep(0.5)
        assert alice.renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
        assert alice.expire(created.hmac, 1000) == (ErrorCode.DELEGATION_TOKEN_EXPIRED, 0)
        # expired, not yet removed: described (and still a login), as in Kafka
        assert created.token_id in alice.describe()[1]
        deadline = time.monotonic() + 10
        while created.token_id in alice.describe()[1]:
            assert time.monotonic() < deadline, "the expired token was never removed"
            time.sleep(0.2)
        assert alice.renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
        with WireClient(address(running, "SASL_PLAINTEXT")) as client:
            password = base64.b64encode(created.hmac).decode()
            assert authenticate(client, created.token_id, password, token=True) == (
                ErrorCode.SASL_AUTHENTICATION_FAILED
            )
        alice.close()


def test_describe_filters_by_owner(sessions: dict[str, Session]) -> None:
    alices = sessions["alice"].create(renewers=("User:carol",)).token_id
    bobs = sessions["bob"].create().token_id
    for_bob = sessions["admin"].create(owner="User:bob").token_id
    admin = sessions["admin"]
    assert set(admin.describe()[1]) == {alices, bobs, for_bob}
    assert set(admin.describe(["User:bob"])[1]) == {bobs, for_bob}
    # an owner filter matches the owner, the requester and the renewers
    assert set(admin.describe(["User:carol"])[1]) == {alices}
    assert set(admin.describe(["User:admin"])[1]) == {for_bob}
    assert admin.describe([]) == (ErrorCode.NO_ERROR, {})
    described = admin.describe(["User:bob"])[1][for_bob]
    assert (described.principal_name, described.token_requester_principal_name) == (
        "bob",
        "admin",
    )


def test_refused_over_plaintext(broker: ThreadedBroker) -> None:
    with WireClient(address(broker, "PLAINTEXT")) as client:
        created = client.call(
            ApiKey.CreateDelegationToken,
            3,
            owner_principal_type=None,
            owner_principal_name=None,
            renewers=[],
            max_lifetime_ms=-1,
        )
        assert created.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert (created.principal_type, created.principal_name) == ("User", "ANONYMOUS")
        assert (created.issue_timestamp_ms, created.max_timestamp_ms, created.token_id) == (
            -1,
            -1,
            "",
        )
        for key in (ApiKey.RenewDelegationToken, ApiKey.ExpireDelegationToken):
            fields = {"hmac": b"x", "renew_period_ms": -1, "expiry_time_period_ms": -1}
            if key == ApiKey.RenewDelegationToken:
                del fields["expiry_time_period_ms"]
            else:
                del fields["renew_period_ms"]
            answer = client.call(key, 2, **fields)
            assert (answer.error_code, answer.expiry_timestamp_ms) == (
                ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                -1,
            )
        described = client.call(ApiKey.DescribeDelegationToken, 3, owners=None)
        assert (described.error_code, described.tokens) == (
            ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            [],
        )


def test_disabled_without_a_secret_key() -> None:
    settings = token_settings()
    del settings["delegation.token.secret.key"]
    with ThreadedBroker(settings=settings) as running:
        alice = Session(running, "alice")
        created = alice.create()
        assert created.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
        assert (created.issue_timestamp_ms, created.token_id, created.hmac) == (0, "", b"")
        assert alice.renew(b"x") == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
        assert alice.expire(b"x") == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0)
        assert alice.describe() == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, {})
        alice.close()


def test_token_login_is_the_owner_and_may_not_use_token_apis(broker: ThreadedBroker) -> None:
    admin = Session(broker, "admin")
    created = admin.create(owner="User:alice")
    password = base64.b64encode(created.hmac).decode()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        with WireClient(address(broker, "SASL_PLAINTEXT")) as client:
            assert authenticate(client, created.token_id, password, mechanism, token=True) == 0
    token_session = Session(broker, created.token_id, password, token=True)
    answer = token_session.create()
    assert answer.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    # the connection's principal is the token's owner
    assert (answer.principal_name, answer.token_requester_principal_name) == ("alice", "alice")
    assert token_session.renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)
    assert token_session.expire(created.hmac) == (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
        -1,
    )
    assert token_session.describe() == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, {})
    token_session.close()
    admin.close()


@pytest.mark.parametrize(
    ("real_id", "real_hmac", "tokenauth"),
    [(True, True, False), (True, False, True), (False, True, True)],
    ids=["without-tokenauth", "wrong-hmac", "unknown-token"],
)
def test_token_login_failures(
    broker: ThreadedBroker, real_id: bool, real_hmac: bool, tokenauth: bool
) -> None:
    admin = Session(broker, "admin")
    created = admin.create()
    admin.close()
    user = created.token_id if real_id else "no-such-token"
    password = base64.b64encode(created.hmac if real_hmac else b"wrong").decode()
    with WireClient(address(broker, "SASL_PLAINTEXT")) as client:
        error = authenticate(client, user, password, token=tokenauth)
        assert error == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_tokens_survive_a_restart(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=token_settings()) as running:
        alice = Session(running, "alice")
        created = alice.create(renewers=("User:bob",))
        alice.close()
        stored = (tmp_path / "data" / TOKENS_FILE).read_text()
        assert created.token_id in stored
        assert base64.b64encode(created.hmac).decode() not in stored
        running.restart()
        alice = Session(running, "alice")
        described = alice.describe()[1][created.token_id]
        assert described.hmac == created.hmac
        assert described.expiry_timestamp == created.expiry_timestamp_ms
        alice.close()
        password = base64.b64encode(created.hmac).decode()
        with WireClient(address(running, "SASL_PLAINTEXT")) as client:
            assert authenticate(client, created.token_id, password, token=True) == 0


def test_a_new_secret_key_changes_every_hmac(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ThreadedBroker(data_dir=data, settings=token_settings()) as running:
        alice = Session(running, "alice")
        created = alice.create()
        alice.close()
    settings = token_settings(**{"delegation.token.secret.key": "another-key"})
    with ThreadedBroker(data_dir=data, settings=settings) as running:
        alice = Session(running, "alice")
        described = alice.describe()[1][created.token_id]
        assert described.hmac == kafka_hmac(created.token_id, "another-key")
        assert alice.renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0)
        alice.close()


def test_nodes_of_a_cluster_share_the_tokens() -> None:
    settings = {**token_settings(), "listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
    with KafkaCluster(nodes=2, config=settings, storage="memory") as cluster:
        on_first = Session(cluster.address(1), "alice")
        on_second = Session(cluster.address(2), "bob")
        created = on_first.create(renewers=("User:bob",))
        assert on_second.renew(created.hmac, 1000)[0] == ErrorCode.NO_ERROR
        assert created.token_id in on_second.describe()[1]
        with WireClient(cluster.address(2)) as client:
            password = base64.b64encode(created.hmac).decode()
            assert authenticate(client, created.token_id, password, token=True) == 0
        on_first.close()
        on_second.close()


# -- ACLs ----------------------------------------------------------------------------------


def grant(running: ThreadedBroker, principal: str, operation: str, **resource: str) -> None:
    from minibroker.auth.acls import (
        AclBinding,
        AclOperation,
        PatternType,
        PermissionType,
        ResourceType,
    )

    ((kind, name),) = resource.items()
    assert running.broker is not None and running.broker.authorizer is not None
    binding = AclBinding(
        ResourceType[kind.upper()],
        name,
        PatternType.LITERAL,
        principal,
        "*",
        AclOperation[operation],
        PermissionType.ALLOW,
    )
    running.call(_create_acl(running, binding))


async def _create_acl(running: ThreadedBroker, binding: Any) -> None:
    assert running.broker is not None and running.broker.authorizer is not None
    running.broker.authorizer.create([binding])


@pytest.fixture
def acl_broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=acl_settings()) as running:
        yield running


def test_creating_for_another_owner_needs_create_tokens(acl_broker: ThreadedBroker) -> None:
    bob = Session(acl_broker, "bob")
    refused = bob.create(owner="User:alice")
    assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (refused.principal_name, refused.token_requester_principal_name) == ("alice", "bob")
    assert refused.max_timestamp_ms == -1
    # a token of one's own needs no ACL
    assert bob.create().error_code == ErrorCode.NO_ERROR
    grant(acl_broker, "User:bob", "CREATE_TOKENS", user="User:alice")
    created = bob.create(owner="User:alice")
    assert created.error_code == ErrorCode.NO_ERROR
    assert (created.principal_name, created.token_requester_principal_name) == ("alice", "bob")
    # the requester, not the owner's renewer, may describe it but not renew it
    assert created.token_id in bob.describe()[1]
    assert bob.renew(created.hmac) == (ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0)
    bob.close()


def test_renewers_must_be_users(acl_broker: ThreadedBroker) -> None:
    alice = Session(acl_broker, "alice")
    refused = alice.create(renewers=("User:bob", "Group:ops"))
    assert refused.error_code == ErrorCode.INVALID_PRINCIPAL_TYPE
    assert refused.issue_timestamp_ms == -1
    assert alice.describe() == (ErrorCode.NO_ERROR, {})
    alice.close()


def test_describe_shows_others_tokens_by_acl(acl_broker: ThreadedBroker) -> None:
    alice, carol = Session(acl_broker, "alice"), Session(acl_broker, "carol")
    first = alice.create().token_id
    second = alice.create().token_id
    assert carol.describe() == (ErrorCode.NO_ERROR, {})
    grant(acl_broker, "User:carol", "DESCRIBE", delegation_token=second)
    assert set(carol.describe()[1]) == {second}
    grant(acl_broker, "User:carol", "DESCRIBE_TOKENS", user="User:alice")
    assert set(carol.describe()[1]) == {first, second}
    assert set(carol.describe(["User:alice"])[1]) == {first, second}
    assert set(carol.describe(["User:bob"])[1]) == set()
    alice.close()
    carol.close()


def test_token_login_gets_the_owners_acls(acl_broker: ThreadedBroker) -> None:
    admin = Session(acl_broker, "admin")
    created = admin.create(owner="User:alice")
    admin.close()
    grant(acl_broker, "User:alice", "CREATE", topic="alices-topic")
    password = base64.b64encode(created.hmac).decode()
    with WireClient(address(acl_broker, "SASL_PLAINTEXT")) as client:
        assert authenticate(client, created.token_id, password, token=True) == 0
        topics: list[dict[str, Any]] = [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name in ("alices-topic", "other-topic")
        ]
        response = client.call(
            ApiKey.CreateTopics, 7, topics=topics, timeout_ms=10_000, validate_only=False
        )
        errors = {topic.name: topic.error_code for topic in response.topics}
        assert errors == {
            "alices-topic": ErrorCode.NO_ERROR,
            "other-topic": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        }


# -- releases ------------------------------------------------------------------------------


@pytest.mark.parametrize(("release", "served"), [("3.4", False), ("3.5", False), ("3.6", True)])
def test_releases_without_tokens_do_not_advertise_them(release: str, served: bool) -> None:
    settings = {"minibroker.emulate.kafka.version": release}
    with ThreadedBroker(settings=settings) as running, WireClient(running.bootstrap_servers) as c:
        advertised = {k.api_key for k in c.call(ApiKey.ApiVersions, 3).api_keys}
    token_keys = {38, 39, 40, 41}
    assert (token_keys <= advertised) is served
    assert (token_keys & advertised == set()) is not served


# -- settings ------------------------------------------------------------------------------


def test_settings_are_described_as_kafkas(broker: ThreadedBroker) -> None:
    names = [
        "delegation.token.secret.key",
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
    ]
    with WireClient(address(broker, "PLAINTEXT")) as client:
        response = client.call(
            ApiKey.DescribeConfigs,
            4,
            resources=[{"resource_type": 4, "resource_name": "1", "configuration_keys": names}],
            include_synonyms=False,
            include_documentation=False,
        )
    (result,) = response.results
    described = {c.name: (c.value, c.is_sensitive) for c in result.configs}
    assert described == {
        "delegation.token.secret.key": (None, True),
        "delegation.token.max.lifetime.ms": ("604800000", False),
        "delegation.token.expiry.time.ms": ("86400000", False),
        "delegation.token.expiry.check.interval.ms": ("3600000", False),
    }


@pytest.mark.parametrize(
    "name",
    [
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
    ],
)
def test_lifetimes_below_one_ms_are_refused(name: str) -> None:
    config = BrokerConfig({**token_settings(), name: "0"})
    with pytest.raises(ConfigError, match=f"Invalid value 0 for configuration {name}"):
        Broker(config, in_memory=True)
