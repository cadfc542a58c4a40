"""DescribeAcls, CreateAcls and DeleteAcls over TCP, every version: the bindings as Kafka groups
and lists them, SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED without
the cluster permission, Kafka's refusals of bad bindings and filters, and code 0 closing the
connection. Plain-text clients are `User:ANONYMOUS`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import admin as kafka_admin

from minibroker.auth.acls import ANONYMOUS, AclOperation, PatternType, PermissionType, ResourceType
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from tests.wire import WireClient

VERSIONS = [1, 2, 3]
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY
Op = AclOperation


@pytest.fixture(scope="module")
def admin_broker() -> Iterator[KafkaBroker]:
    """ACLs on, and the plain-text principal a super user."""
    config = {**AUTHORIZER_CONFIG, "super.users": ANONYMOUS}
    with KafkaBroker(config=config, storage="memory") as broker:
        yield broker


@pytest.fixture(scope="module")
def guarded_broker() -> Iterator[KafkaBroker]:
    """ACLs on, the plain-text principal allowed only what a test grants it."""
    with KafkaBroker(config=AUTHORIZER_CONFIG, storage="memory") as broker:
        yield broker


@pytest.fixture(scope="module")
def open_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as broker:
        yield broker


@pytest.fixture
def admin(admin_broker: KafkaBroker) -> Iterator[WireClient]:
    admin_broker.remove_acls()
    with WireClient(admin_broker.bootstrap_servers) as client:
        yield client


@pytest.fixture
def guarded(guarded_broker: KafkaBroker) -> Iterator[WireClient]:
    guarded_broker.remove_acls()
    with WireClient(guarded_broker.bootstrap_servers) as client:
        yield client


def creation(
    name: str = "t",
    operation: int = Op.READ,
    *,
    kind: int = TOPIC,
    pattern: int = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    permission: int = ALLOW,
) -> dict[str, Any]:
    return {
        "resource_type": kind,
        "resource_name": name,
        "resource_pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def acl_filter(
    name: str | None = None,
    *,
    kind: int = ResourceType.ANY,
    pattern: int = PatternType.ANY,
    principal: str | None = None,
    host: str | None = None,
    operation: int = Op.ANY,
    permission: int = PermissionType.ANY,
) -> dict[str, Any]:
    return {
        "resource_type_filter": kind,
        "resource_name_filter": name,
        "pattern_type_filter": pattern,
        "principal_filter": principal,
        "host_filter": host,
        "operation": operation,
        "permission_type": permission,
    }


def create(client: WireClient, version: int, *creations: dict[str, Any]) -> list[tuple[int, Any]]:
    response = client.call(ApiKey.CreateAcls, version, creations=list(creations))
    assert response.throttle_time_ms == 0
    return [(r.error_code, r.error_message) for r in response.results]


def describe(client: WireClient, version: int, **fields: Any) -> Any:
    return client.call(ApiKey.DescribeAcls, version, **acl_filter(**fields))


def described(
    client: WireClient, version: int, **fields: Any
) -> dict[tuple[int, str, int], set[tuple[Any, ...]]]:
    """(resource type, name, pattern type) -> {(principal, host, operation, permission)}."""
    response = describe(client, version, **fields)
    assert (response.error_code, response.error_message) == (ErrorCode.NO_ERROR, None)
    found = {
        (r.resource_type, r.resource_name, r.pattern_type): {
            (a.principal, a.host, a.operation, a.permission_type) for a in r.acls
        }
        for r in response.resources
    }
    assert len(found) == len(response.resources), "one entry per resource pattern"
    return found


def delete(client: WireClient, version: int, *filters: dict[str, Any]) -> Any:
    return client.call(ApiKey.DeleteAcls, version, filters=list(filters)).filter_results


def matched(result: Any) -> set[tuple[Any, ...]]:
    assert all(
        (m.error_code, m.error_message) == (ErrorCode.NO_ERROR, None) for m in result.matching_acls
    )
    return {
        (
            m.resource_type,
            m.resource_name,
            m.pattern_type,
            m.principal,
            m.host,
            m.operation,
            m.permission_type,
        )
        for m in result.matching_acls
    }


OK = (ErrorCode.NO_ERROR, None)


# -- the three APIs, every version ----------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_create_describe_delete_round_trip(admin: WireClient, version: int) -> None:
    assert (
        create(
            admin,
            version,
            creation("orders"),
            creation("orders", Op.WRITE, principal="User:bob", host="10.0.0.7", permission=DENY),
            creation("orders", pattern=PREFIXED),
            creation("billing", Op.ALL, kind=GROUP),
        )
        == [OK] * 4
    )
    assert described(admin, version) == {
        (TOPIC, "orders", LITERAL): {
            ("User:alice", "*", Op.READ, ALLOW),
            ("User:bob", "10.0.0.7", Op.WRITE, DENY),
        },
        (TOPIC, "orders", PREFIXED): {("User:alice", "*", Op.READ, ALLOW)},
        (GROUP, "billing", LITERAL): {("User:alice", "*", Op.ALL, ALLOW)},
    }
    results = delete(admin, version, acl_filter("orders", kind=TOPIC, pattern=LITERAL))
    assert len(results) == 1
    assert (results[0].error_code, results[0].error_message) == OK
    assert matched(results[0]) == {
        (TOPIC, "orders", LITERAL, "User:alice", "*", Op.READ, ALLOW),
        (TOPIC, "orders", LITERAL, "User:bob", "10.0.0.7", Op.WRITE, DENY),
    }
    assert set(described(admin, version)) == {
        (TOPIC, "orders", PREFIXED),
        (GROUP, "billing", LITERAL),
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_filters(admin: WireClient, version: int) -> None:
    create(
        admin,
        version,
        creation("orders-eu"),
        creation("orders-", pattern=PREFIXED),
        creation("*", Op.WRITE, principal="User:bob"),
        creation("payments", permission=DENY),
        creation("orders-eu", kind=GROUP),
    )
    match = described(admin, version, name="orders-eu", kind=TOPIC, pattern=PatternType.MATCH)
    assert set(match) == {
        (TOPIC, "orders-eu", LITERAL),
        (TOPIC, "orders-", PREFIXED),
        (TOPIC, "*", LITERAL),
    }
    assert set(described(admin, version, name="orders-eu")) == {
        (TOPIC, "orders-eu", LITERAL),
        (GROUP, "orders-eu", LITERAL),
    }
    assert set(described(admin, version, name="orders-", pattern=LITERAL)) == set()
    assert set(described(admin, version, principal="User:bob")) == {(TOPIC, "*", LITERAL)}
    assert set(described(admin, version, permission=DENY)) == {(TOPIC, "payments", LITERAL)}
    assert set(described(admin, version, operation=Op.WRITE)) == {(TOPIC, "*", LITERAL)}
    assert set(described(admin, version, host="10.0.0.1")) == set()


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_lists_matches_per_filter_and_a_filter_matching_nothing_is_no_error(
    admin: WireClient, admin_broker: KafkaBroker, version: int
) -> None:
    create(admin, version, creation("a"), creation("b"), creation("c", principal="User:bob"))
    results = delete(
        admin,
        version,
        acl_filter(principal="User:alice"),
        acl_filter("a", kind=TOPIC),
        acl_filter("nothing", kind=TOPIC),
    )
    assert [(r.error_code, r.error_message) for r in results] == [OK] * 3
    assert {m[1] for m in matched(results[0])} == {"a", "b"}
    assert {m[1] for m in matched(results[1])} == {"a"}
    assert results[2].matching_acls == []
    assert [b.resource_name for b in admin_broker.acls()] == ["c"]


@pytest.mark.parametrize("version", VERSIONS)
def test_creating_an_existing_binding_again_succeeds_once(
    admin: WireClient, admin_broker: KafkaBroker, version: int
) -> None:
    assert create(admin, version, creation(), creation()) == [OK, OK]
    assert create(admin, version, creation()) == [OK]
    assert len(admin_broker.acls()) == 1


# -- bad bindings and filters ---------------------------------------------------------------

NO_COLON = (
    "Could not parse principal from `alice` (no colon is present separating the principal "
    "type from the principal name)"
)


@pytest.mark.parametrize("version", VERSIONS)
def test_bad_bindings_are_refused_one_by_one(
    admin: WireClient, admin_broker: KafkaBroker, version: int
) -> None:
    results = create(
        admin,
        version,
        creation("other", Op.ALTER, kind=CLUSTER),
        creation(""),
        creation(principal="alice"),
        creation(kind=99),
        creation(pattern=42),
        creation(operation=-5),
        creation(permission=9),
        creation("kafka-cluster", Op.ALTER, kind=CLUSTER, principal="User:ops"),
    )
    invalid = ErrorCode.INVALID_REQUEST
    assert results == [
        (invalid, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (invalid, "Invalid empty resource name"),
        (invalid, NO_COLON),
        (invalid, "Invalid resourceType UNKNOWN"),
        (invalid, "Invalid patternType UNKNOWN"),
        (invalid, "Invalid operation UNKNOWN"),
        (invalid, "Invalid permissionType UNKNOWN"),
        OK,
    ]
    assert [(b.resource_type, b.principal) for b in admin_broker.acls()] == [(CLUSTER, "User:ops")]


@pytest.mark.parametrize(
    "bad",
    [
        creation(kind=ResourceType.ANY),
        creation(pattern=PatternType.ANY),
        creation(pattern=PatternType.MATCH),
        creation(operation=Op.ANY),
        creation(permission=PermissionType.ANY),
    ],
)
def test_filter_codes_in_a_creation_fail_the_whole_request(
    admin: WireClient, admin_broker: KafkaBroker, bad: dict[str, Any]
) -> None:
    # Kafka cannot build an AclBinding of ANY/MATCH: its handler throws and every result is
    # UNKNOWN_SERVER_ERROR, the valid creation included.
    assert create(admin, 3, creation("fine"), bad) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2
    assert admin_broker.acls() == []


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_filters_with_unknown_codes_are_refused(admin: WireClient, version: int) -> None:
    create(admin, version, creation())
    results = delete(
        admin,
        version,
        acl_filter(kind=77),
        acl_filter(pattern=-3),
        acl_filter(operation=100),
        acl_filter(permission=5),
        acl_filter(),
    )
    invalid = ErrorCode.INVALID_REQUEST
    assert [(r.error_code, r.error_message) for r in results[:4]] == [
        (invalid, "Unknown patternFilter."),
        (invalid, "Unknown patternFilter."),
        (invalid, "Unknown entryFilter."),
        (invalid, "Unknown entryFilter."),
    ]
    assert all(r.matching_acls == [] for r in results[:4])
    assert len(matched(results[4])) == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_describe_filter_with_unknown_codes_matches_nothing(
    admin: WireClient, version: int
) -> None:
    create(admin, version, creation())
    assert described(admin, version, kind=77) == {}
    assert described(admin, version, operation=100) == {}
    assert len(described(admin, version)) == 1


@pytest.mark.parametrize(
    ("api_key", "fields"),
    [
        (ApiKey.DescribeAcls, acl_filter(kind=0)),
        (ApiKey.DescribeAcls, acl_filter(pattern=0)),
        (ApiKey.DescribeAcls, acl_filter(operation=0)),
        (ApiKey.DescribeAcls, acl_filter(permission=0)),
        (ApiKey.CreateAcls, {"creations": [creation(), creation(kind=0)]}),
        (ApiKey.CreateAcls, {"creations": [creation(pattern=0)]}),
        (ApiKey.CreateAcls, {"creations": [creation(operation=0)]}),
        (ApiKey.CreateAcls, {"creations": [creation(permission=0)]}),
        (ApiKey.DeleteAcls, {"filters": [acl_filter(), acl_filter(kind=0)]}),
        (ApiKey.DeleteAcls, {"filters": [acl_filter(permission=0)]}),
    ],
)
def test_code_zero_closes_the_connection(
    admin: WireClient, admin_broker: KafkaBroker, api_key: int, fields: dict[str, Any]
) -> None:
    admin_broker.add_acl("User:alice", "READ", topic="kept")
    admin.send(api_key, 3, **fields)
    assert admin.is_closed_by_peer()
    assert len(admin_broker.acls()) == 1


# -- without an authorizer, and without the cluster permission ------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_no_authorizer_answers_security_disabled(open_broker: KafkaBroker, version: int) -> None:
    with WireClient(open_broker.bootstrap_servers) as client:
        response = describe(client, version)
        assert (response.error_code, response.error_message, response.resources) == (
            ErrorCode.SECURITY_DISABLED,
            "No Authorizer is configured on the broker",
            [],
        )
        disabled = (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        assert create(client, version, creation(), creation("u")) == [disabled] * 2
        results = delete(client, version, acl_filter(), acl_filter("t"))
        assert [(r.error_code, r.error_message, r.matching_acls) for r in results] == [
            (*disabled, [])
        ] * 2


def denied_message(api: str) -> str:
    return f"Request {api} from {ANONYMOUS} is not authorized."


@pytest.mark.parametrize("version", VERSIONS)
def test_without_cluster_permissions_every_answer_is_cluster_authorization_failed(
    guarded: WireClient, guarded_broker: KafkaBroker, version: int
) -> None:
    guarded_broker.add_acl("User:alice", "READ", topic="t")
    response = describe(guarded, version)
    assert (response.error_code, response.error_message, response.resources) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        denied_message("DescribeAcls"),
        [],
    )
    failed = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied_message("CreateAcls"))
    assert create(guarded, version, creation("u"), creation("v")) == [failed] * 2
    results = delete(guarded, version, acl_filter(), acl_filter("t"))
    assert [(r.error_code, r.error_message, r.matching_acls) for r in results] == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied_message("DeleteAcls"), [])
    ] * 2
    assert [b.resource_name for b in guarded_broker.acls()] == ["t"]


def test_alter_on_the_cluster_allows_create_and_delete_and_implies_describe(
    guarded: WireClient, guarded_broker: KafkaBroker
) -> None:
    guarded_broker.add_acl(ANONYMOUS, "ALTER", cluster=True)
    assert create(guarded, 3, creation("u")) == [OK]
    assert (TOPIC, "u", LITERAL) in described(guarded, 3)
    results = delete(guarded, 3, acl_filter("u", kind=TOPIC))
    assert {m[1] for m in matched(results[0])} == {"u"}


def test_describe_on_the_cluster_allows_describe_only(
    guarded: WireClient, guarded_broker: KafkaBroker
) -> None:
    guarded_broker.add_acl(ANONYMOUS, "DESCRIBE", cluster=True)
    assert set(described(guarded, 3)) == {(CLUSTER, "kafka-cluster", LITERAL)}
    assert create(guarded, 3, creation("u")) == [
        (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied_message("CreateAcls"))
    ]
    assert delete(guarded, 3, acl_filter())[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_a_deny_of_alter_on_the_cluster_wins_over_allow_all(
    guarded: WireClient, guarded_broker: KafkaBroker
) -> None:
    guarded_broker.add_acl("User:*", "ALL", cluster=True)
    guarded_broker.add_acl(ANONYMOUS, "ALTER", cluster=True, permission="deny")
    assert len(described(guarded, 3)) == 1
    assert create(guarded, 3, creation("u"))[0][0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_a_deny_from_another_host_does_not_apply(
    guarded: WireClient, guarded_broker: KafkaBroker
) -> None:
    guarded_broker.add_acl(ANONYMOUS, "ALTER", cluster=True)
    guarded_broker.add_acl(ANONYMOUS, "ALTER", cluster=True, permission="deny", host="10.0.0.7")
    assert create(guarded, 3, creation("u")) == [OK]
    guarded_broker.add_acl(ANONYMOUS, "ALTER", cluster=True, permission="deny", host="127.0.0.1")
    assert create(guarded, 3, creation("v"))[0][0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


# -- a real client --------------------------------------------------------------------------


def test_confluent_kafka_admin_creates_describes_and_deletes_acls(
    admin_broker: KafkaBroker,
) -> None:
    admin_broker.remove_acls()
    client = kafka_admin.AdminClient({"bootstrap.servers": admin_broker.bootstrap_servers})
    made = kafka_admin.AclBinding(
        kafka_admin.ResourceType.TOPIC,
        "orders-",
        kafka_admin.ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        kafka_admin.AclOperation.WRITE,
        kafka_admin.AclPermissionType.ALLOW,
    )
    for future in client.create_acls([made]).values():
        future.result(timeout=30)
    match = kafka_admin.AclBindingFilter(
        kafka_admin.ResourceType.TOPIC,
        "orders-1",
        kafka_admin.ResourcePatternType.MATCH,
        None,
        None,
        kafka_admin.AclOperation.ANY,
        kafka_admin.AclPermissionType.ANY,
    )
    assert client.describe_acls(match).result(timeout=30) == [made]
    deleted = client.delete_acls([match])
    assert [future.result(timeout=30) for future in deleted.values()] == [[made]]
    assert admin_broker.acls() == []
