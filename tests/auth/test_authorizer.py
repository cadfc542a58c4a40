"""The authorizer's decisions as Kafka's StandardAuthorizer makes them (StandardAuthorizerData,
Authorizer.authorizeByResourceType), ACL filters as Kafka matches them, the checks on new
bindings and DeleteAcls filters, and bindings kept across a broker restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.auth.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourceType,
    UnknownAclElement,
)
from minibroker.auth.authorizer import ACLS_FILE, STANDARD_AUTHORIZER, Authorizer
from minibroker.config import BrokerConfig, ConfigError
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker

Op = AclOperation
T = ResourceType
ALICE = "User:alice"
BOB = "User:bob"
HOST = "127.0.0.1"


def binding(
    name: str = "t",
    operation: AclOperation = Op.READ,
    *,
    principal: str = ALICE,
    kind: ResourceType = T.TOPIC,
    pattern: PatternType = PatternType.LITERAL,
    permission: PermissionType = PermissionType.ALLOW,
    host: str = "*",
) -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, operation, permission)


def deny(name: str = "t", operation: AclOperation = Op.READ, **fields: object) -> AclBinding:
    return binding(name, operation, permission=PermissionType.DENY, **fields)  # type: ignore[arg-type]


def authorizer(
    *bindings: AclBinding, super_users: str = "", allow_if_no_acl: bool = False
) -> Authorizer:
    found = Authorizer(
        frozenset(u for u in super_users.split(";") if u), allow_if_no_acl=allow_if_no_acl
    )
    found.create(bindings)
    return found


def may(
    found: Authorizer,
    operation: AclOperation = Op.READ,
    name: str = "t",
    *,
    principal: str = ALICE,
    host: str = HOST,
    kind: ResourceType = T.TOPIC,
) -> bool:
    return found.authorize(principal, host, operation, kind, name)


# -- resource patterns --------------------------------------------------------------------


def test_literal_binding_applies_to_its_name_only() -> None:
    found = authorizer(binding("orders"))
    assert may(found, name="orders")
    assert not may(found, name="orders-eu")
    assert not may(found, name="order")


def test_prefixed_binding_applies_to_names_starting_with_it() -> None:
    found = authorizer(binding("orders-", pattern=PatternType.PREFIXED))
    assert may(found, name="orders-")
    assert may(found, name="orders-eu")
    assert not may(found, name="orders")
    assert not may(found, name="xorders-eu")


def test_literal_wildcard_applies_to_every_name_of_its_type() -> None:
    found = authorizer(binding("*"))
    assert may(found, name="anything")
    assert may(found, name="*")
    assert not may(found, name="anything", kind=T.GROUP)


def test_prefixed_star_is_a_plain_prefix_not_a_wildcard() -> None:
    found = authorizer(binding("*", pattern=PatternType.PREFIXED))
    assert may(found, name="*x")
    assert not may(found, name="x")


def test_binding_applies_to_its_resource_type_only() -> None:
    found = authorizer(binding("t", kind=T.GROUP))
    assert may(found, kind=T.GROUP)
    assert not may(found, kind=T.TOPIC)
    assert not may(found, kind=T.TRANSACTIONAL_ID)


# -- principals and hosts -----------------------------------------------------------------


def test_binding_applies_to_its_principal_only() -> None:
    found = authorizer(binding())
    assert may(found, principal=ALICE)
    assert not may(found, principal=BOB)
    assert not may(found, principal="Group:alice")


def test_wildcard_principal_applies_to_everybody() -> None:
    found = authorizer(binding(principal="User:*"))
    assert may(found, principal=ALICE)
    assert may(found, principal="User:ANONYMOUS")


def test_host_must_match_unless_the_binding_says_star() -> None:
    found = authorizer(binding(host="10.0.0.7"))
    assert may(found, host="10.0.0.7")
    assert not may(found, host=HOST)
    assert may(authorizer(binding(host="*")), host="10.9.9.9")


def test_deny_from_one_host_leaves_other_hosts_allowed() -> None:
    found = authorizer(binding(), deny(host="10.0.0.7"))
    assert may(found, host=HOST)
    assert not may(found, host="10.0.0.7")


# -- deny, ALL, implied operations --------------------------------------------------------


def test_deny_wins_over_allow() -> None:
    assert not may(authorizer(binding(), deny()))
    assert not may(authorizer(binding(principal="User:*"), deny()))
    assert not may(authorizer(binding(), deny(principal="User:*")))


def test_prefixed_deny_wins_over_literal_allow_and_wildcard_deny_over_everything() -> None:
    assert not may(
        authorizer(binding("orders"), deny("ord", pattern=PatternType.PREFIXED)), name="orders"
    )
    assert not may(authorizer(binding("orders"), deny("*")), name="orders")


def test_all_allows_every_operation_and_denies_every_operation() -> None:
    allowed = authorizer(binding(operation=Op.ALL))
    for operation in (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE,
        Op.ALTER_CONFIGS,
    ):
        assert may(allowed, operation)
    denied = authorizer(binding(operation=Op.ALL), deny(operation=Op.ALL))
    assert not may(denied, Op.READ)
    assert not may(denied, Op.DESCRIBE)


def test_deny_of_one_operation_leaves_the_others_of_an_allow_all() -> None:
    found = authorizer(binding(operation=Op.ALL), deny(operation=Op.WRITE))
    assert may(found, Op.READ)
    assert not may(found, Op.WRITE)


@pytest.mark.parametrize("operation", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_allow_of_read_write_delete_alter_implies_describe(operation: AclOperation) -> None:
    assert may(authorizer(binding(operation=operation)), Op.DESCRIBE)


@pytest.mark.parametrize("operation", [Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS])
def test_other_operations_do_not_imply_describe(operation: AclOperation) -> None:
    assert not may(authorizer(binding(operation=operation)), Op.DESCRIBE)


def test_alter_configs_implies_describe_configs_and_nothing_else_does() -> None:
    assert may(authorizer(binding(operation=Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS)
    assert not may(authorizer(binding(operation=Op.ALTER)), Op.DESCRIBE_CONFIGS)
    assert not may(authorizer(binding(operation=Op.DESCRIBE_CONFIGS)), Op.ALTER_CONFIGS)


def test_implied_operations_are_not_reversed() -> None:
    assert not may(authorizer(binding(operation=Op.DESCRIBE)), Op.READ)


def test_a_deny_read_does_not_deny_describe() -> None:
    found = authorizer(binding(operation=Op.DESCRIBE), deny(operation=Op.READ))
    assert may(found, Op.DESCRIBE)
    assert not may(found, Op.READ)
    only_denied = authorizer(binding(operation=Op.WRITE), deny(operation=Op.READ))
    assert may(only_denied, Op.DESCRIBE)


def test_a_deny_alter_configs_does_not_deny_describe_configs() -> None:
    found = authorizer(binding(operation=Op.DESCRIBE_CONFIGS), deny(operation=Op.ALTER_CONFIGS))
    assert may(found, Op.DESCRIBE_CONFIGS)


def test_authorized_operations_lists_the_supported_ones_allowed() -> None:
    found = authorizer(binding(operation=Op.READ), binding("g", Op.READ, kind=T.GROUP))
    assert found.authorized_operations(ALICE, HOST, T.TOPIC, "t") == {Op.READ, Op.DESCRIBE}
    assert found.authorized_operations(ALICE, HOST, T.GROUP, "g") == {Op.READ, Op.DESCRIBE}
    everything = authorizer(binding(CLUSTER_NAME, Op.ALL, kind=T.CLUSTER))
    assert Op.IDEMPOTENT_WRITE in everything.authorized_operations(
        ALICE, HOST, T.CLUSTER, CLUSTER_NAME
    )


# -- super users and allow.everyone.if.no.acl.found --------------------------------------


def test_super_users_are_allowed_everything_even_against_a_deny() -> None:
    found = authorizer(deny(operation=Op.ALL, principal="User:*"), super_users="User:root;User:ops")
    assert may(found, Op.WRITE, principal="User:root")
    assert may(found, Op.ALTER, "other", principal="User:ops", kind=T.CLUSTER)
    assert not may(found, principal=ALICE)


def test_super_users_config_is_semicolon_separated() -> None:
    config = BrokerConfig({**AUTHORIZER_CONFIG, "super.users": " User:root ; User:ops;"})
    found = Authorizer.from_config(config, None)
    assert found is not None
    assert found.super_users == {"User:root", "User:ops"}


def test_without_bindings_on_the_resource_nothing_is_allowed_by_default() -> None:
    found = authorizer(binding("other"))
    assert not may(found)


def test_allow_everyone_if_no_acl_found_allows_resources_without_bindings() -> None:
    found = authorizer(binding("other", principal=BOB), allow_if_no_acl=True)
    assert may(found, Op.WRITE, "unprotected")
    assert may(found, Op.ALTER, CLUSTER_NAME, kind=T.CLUSTER)


def test_allow_everyone_if_no_acl_found_does_not_apply_when_others_have_bindings() -> None:
    found = authorizer(binding("t", principal=BOB), allow_if_no_acl=True)
    assert not may(found, principal=ALICE)
    assert may(found, principal=BOB)
    prefixed = authorizer(
        binding("t", principal=BOB, pattern=PatternType.PREFIXED), allow_if_no_acl=True
    )
    assert not may(prefixed, name="topic", principal=ALICE)
    wildcard = authorizer(binding("*", Op.WRITE, principal=BOB), allow_if_no_acl=True)
    assert not may(wildcard, Op.READ, "any", principal=ALICE)


def test_allow_everyone_if_no_acl_found_does_not_override_a_deny() -> None:
    assert not may(authorizer(deny(), allow_if_no_acl=True))


# -- authorize_by_resource_type (Kafka's Authorizer.authorizeByResourceType) ---------------


def by_type(
    found: Authorizer, operation: AclOperation = Op.WRITE, principal: str = ALICE, host: str = HOST
) -> bool:
    return found.authorize_by_resource_type(principal, host, operation, T.TOPIC)


def test_by_type_needs_an_allow_somewhere() -> None:
    assert not by_type(authorizer())
    assert by_type(authorizer(binding("t", Op.WRITE)))
    assert by_type(authorizer(binding("t-", Op.WRITE, pattern=PatternType.PREFIXED)))
    assert not by_type(authorizer(binding("t", Op.READ)))
    assert not by_type(authorizer(binding("t", Op.WRITE, kind=T.GROUP)))


def test_by_type_implies_nothing_but_takes_all() -> None:
    assert not by_type(authorizer(binding("t", Op.WRITE)), Op.DESCRIBE)
    assert by_type(authorizer(binding("t", Op.ALL)), Op.DESCRIBE)


def test_by_type_with_no_acls_follows_allow_everyone_if_no_acl_found() -> None:
    assert by_type(authorizer(allow_if_no_acl=True))
    # Kafka asks about a resource named "hardcode": others' bindings elsewhere do not count...
    assert by_type(authorizer(binding("t", Op.WRITE, principal=BOB), allow_if_no_acl=True))
    # ...but a binding that applies to that name does.
    others = authorizer(binding("*", Op.WRITE, principal=BOB), allow_if_no_acl=True)
    assert not by_type(others)


def test_by_type_super_user_is_allowed_against_denies() -> None:
    assert by_type(authorizer(deny("*", Op.WRITE, principal="User:*"), super_users=ALICE))


def test_by_type_principal_and_host_must_match() -> None:
    assert not by_type(authorizer(binding("t", Op.WRITE, principal=BOB)))
    assert by_type(authorizer(binding("t", Op.WRITE, principal="User:*")))
    assert not by_type(authorizer(binding("t", Op.WRITE, host="10.0.0.7")))
    assert by_type(authorizer(binding("t", Op.WRITE, host=HOST)))


def test_by_type_literal_deny_of_the_same_name_dominates() -> None:
    assert not by_type(authorizer(binding("t", Op.WRITE), deny("t", Op.WRITE)))
    assert by_type(authorizer(binding("t", Op.WRITE), deny("u", Op.WRITE)))


def test_by_type_unrelated_deny_does_not_dominate() -> None:
    found = authorizer(
        binding("abc", Op.WRITE), deny("abc", Op.WRITE, principal=BOB), deny("abd", Op.WRITE)
    )
    assert by_type(found)


def test_by_type_prefixed_deny_dominates_the_allows_it_covers() -> None:
    assert not by_type(
        authorizer(binding("abc", Op.WRITE), deny("ab", Op.WRITE, pattern=PatternType.PREFIXED))
    )
    prefixed_allow = binding("abc", Op.WRITE, pattern=PatternType.PREFIXED)
    assert not by_type(
        authorizer(prefixed_allow, deny("a", Op.WRITE, pattern=PatternType.PREFIXED))
    )
    # A deny on a longer prefix leaves names of the shorter prefix allowed.
    short_allow = binding("a", Op.WRITE, pattern=PatternType.PREFIXED)
    assert by_type(authorizer(short_allow, deny("ab", Op.WRITE, pattern=PatternType.PREFIXED)))
    # A literal deny does not dominate a prefixed allow of the same name.
    assert by_type(authorizer(prefixed_allow, deny("abc", Op.WRITE)))


def test_by_type_one_undominated_allow_is_enough() -> None:
    found = authorizer(binding("abc", Op.WRITE), binding("xyz", Op.WRITE), deny("abc", Op.WRITE))
    assert by_type(found)


@pytest.mark.parametrize("allow_first", [True, False])
def test_by_type_wildcard_deny_wins_over_wildcard_allow(allow_first: bool) -> None:
    bindings = [binding("*", Op.WRITE), deny("*", Op.WRITE)]
    found = authorizer(*(bindings if allow_first else reversed(bindings)))
    assert not by_type(found)


def test_by_type_wildcard_allow_wins_over_prefixed_denies() -> None:
    found = authorizer(binding("*", Op.WRITE), deny("h", Op.WRITE, pattern=PatternType.PREFIXED))
    assert by_type(found)


# -- filters --------------------------------------------------------------------------------

BINDINGS = [
    binding("orders"),
    binding("orders", Op.WRITE, principal=BOB, host="10.0.0.7"),
    binding("ord", pattern=PatternType.PREFIXED),
    binding("orders-eu", pattern=PatternType.PREFIXED),
    binding("*"),
    deny("payments"),
    binding("orders", kind=T.GROUP),
]


def matching(acl_filter: AclBindingFilter) -> list[AclBinding]:
    return authorizer(*BINDINGS).acls(acl_filter)


def test_any_filter_matches_every_binding() -> None:
    assert matching(AclBindingFilter()) == BINDINGS


def test_literal_filter_matches_that_literal_name_only() -> None:
    found = matching(AclBindingFilter(T.TOPIC, "orders", PatternType.LITERAL))
    assert found == BINDINGS[:2]
    assert matching(AclBindingFilter(T.TOPIC, "*", PatternType.LITERAL)) == [BINDINGS[4]]


def test_prefixed_filter_matches_that_prefix_binding_only() -> None:
    assert matching(AclBindingFilter(T.TOPIC, "ord", PatternType.PREFIXED)) == [BINDINGS[2]]
    assert matching(AclBindingFilter(T.TOPIC, "orders", PatternType.PREFIXED)) == []


def test_any_pattern_filter_with_a_name_matches_that_exact_name_of_any_pattern() -> None:
    assert matching(AclBindingFilter(T.TOPIC, "ord", PatternType.ANY)) == [BINDINGS[2]]
    assert matching(AclBindingFilter(T.ANY, "orders", PatternType.ANY)) == [
        *BINDINGS[:2],
        BINDINGS[6],
    ]


def test_match_filter_finds_every_binding_that_applies_to_the_name() -> None:
    found = matching(AclBindingFilter(T.TOPIC, "orders-eu-1", PatternType.MATCH))
    assert found == [BINDINGS[2], BINDINGS[3], BINDINGS[4]]
    assert matching(AclBindingFilter(T.TOPIC, "orders", PatternType.MATCH)) == [
        *BINDINGS[:3],
        BINDINGS[4],
    ]


def test_match_filter_without_a_name_matches_every_binding_of_the_type() -> None:
    assert matching(AclBindingFilter(T.TOPIC, None, PatternType.MATCH)) == BINDINGS[:6]


def test_entry_filters_match_principal_host_operation_and_permission() -> None:
    assert matching(AclBindingFilter(principal=BOB)) == [BINDINGS[1]]
    assert matching(AclBindingFilter(host="10.0.0.7")) == [BINDINGS[1]]
    assert matching(AclBindingFilter(operation=Op.WRITE)) == [BINDINGS[1]]
    assert matching(AclBindingFilter(permission=PermissionType.DENY)) == [BINDINGS[5]]
    # An ALL binding is matched by an ALL filter only, not by one naming an operation.
    assert authorizer(binding(operation=Op.ALL)).acls(AclBindingFilter(operation=Op.READ)) == []


def test_filters_with_unknown_codes_match_nothing() -> None:
    for acl_filter in (
        AclBindingFilter(resource_type=T.UNKNOWN),
        AclBindingFilter(pattern_type=PatternType.UNKNOWN),
        AclBindingFilter(operation=Op.UNKNOWN),
        AclBindingFilter(permission=PermissionType.UNKNOWN),
    ):
        assert matching(acl_filter) == []


def test_delete_removes_what_each_filter_matches_and_lists_it_per_filter() -> None:
    found = authorizer(*BINDINGS)
    deleted = found.delete(
        [
            AclBindingFilter(T.TOPIC, "orders", PatternType.LITERAL),
            AclBindingFilter(principal=BOB),
            AclBindingFilter(T.TOPIC, "nothing"),
        ]
    )
    assert deleted == [BINDINGS[:2], [BINDINGS[1]], []]
    assert found.acls(AclBindingFilter()) == BINDINGS[2:]


def test_a_binding_created_twice_is_kept_once() -> None:
    found = authorizer(binding(), binding())
    found.create([binding()])
    assert found.acls(AclBindingFilter()) == [binding()]


# -- codes and checks on new bindings and on filters --------------------------------------


def test_code_zero_is_unknown_to_kafka_and_fails_parsing() -> None:
    with pytest.raises(UnknownAclElement):
        AclBinding.of_codes(0, "t", 3, ALICE, "*", 3, 3)
    with pytest.raises(UnknownAclElement):
        AclBindingFilter.of_codes(1, None, 1, None, None, 0, 1)


def test_codes_kafka_does_not_know_read_as_unknown() -> None:
    made = AclBinding.of_codes(99, "t", -1, ALICE, "*", 42, 7)
    assert (made.resource_type, made.pattern_type, made.operation, made.permission) == (
        T.UNKNOWN,
        PatternType.UNKNOWN,
        Op.UNKNOWN,
        PermissionType.UNKNOWN,
    )


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (
            binding("other", kind=T.CLUSTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (
            binding("", kind=T.CLUSTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        (binding(""), "Invalid empty resource name"),
        (binding(kind=T.UNKNOWN), "Invalid resourceType UNKNOWN"),
        (binding(pattern=PatternType.UNKNOWN), "Invalid patternType UNKNOWN"),
        (binding(operation=Op.UNKNOWN), "Invalid operation UNKNOWN"),
        (binding(permission=PermissionType.UNKNOWN), "Invalid permissionType UNKNOWN"),
        (
            binding(principal="alice"),
            "Could not parse principal from `alice` (no colon is present separating the "
            "principal type from the principal name)",
        ),
    ],
)
def test_invalid_new_bindings_get_kafkas_messages(made: AclBinding, message: str) -> None:
    with pytest.raises(InvalidAcl) as refused:
        made.validate()
    assert str(refused.value) == message


def test_valid_new_bindings_pass() -> None:
    binding().validate()
    binding(CLUSTER_NAME, Op.ALTER, kind=T.CLUSTER, principal="User:*").validate()
    binding("p-", pattern=PatternType.PREFIXED, permission=PermissionType.DENY).validate()


def test_filter_codes_are_what_kafka_cannot_build_a_binding_of() -> None:
    assert binding(kind=T.ANY).has_filter_codes
    assert binding(pattern=PatternType.MATCH).has_filter_codes
    assert binding(pattern=PatternType.ANY).has_filter_codes
    assert binding(operation=Op.ANY).has_filter_codes
    assert binding(permission=PermissionType.ANY).has_filter_codes
    assert not binding(kind=T.UNKNOWN).has_filter_codes


@pytest.mark.parametrize(
    ("acl_filter", "message"),
    [
        (AclBindingFilter(resource_type=T.UNKNOWN), "Unknown patternFilter."),
        (AclBindingFilter(pattern_type=PatternType.UNKNOWN), "Unknown patternFilter."),
        (AclBindingFilter(operation=Op.UNKNOWN), "Unknown entryFilter."),
        (AclBindingFilter(permission=PermissionType.UNKNOWN), "Unknown entryFilter."),
    ],
)
def test_delete_filters_with_unknown_codes_are_refused(
    acl_filter: AclBindingFilter, message: str
) -> None:
    with pytest.raises(InvalidAcl) as refused:
        acl_filter.validate()
    assert str(refused.value) == message
    AclBindingFilter(T.ANY, None, PatternType.MATCH).validate()


# -- configuration and persistence --------------------------------------------------------


def test_no_authorizer_without_authorizer_class_name() -> None:
    assert Authorizer.from_config(BrokerConfig({}), None) is None


def test_other_authorizer_classes_are_refused() -> None:
    config = BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ConfigError):
        Authorizer.from_config(config, None)


def test_bindings_are_saved_in_the_data_dir_and_loaded_again(tmp_path: Path) -> None:
    config = BrokerConfig({"authorizer.class.name": STANDARD_AUTHORIZER})
    first = Authorizer.from_config(config, tmp_path)
    assert first is not None
    first.create(BINDINGS)
    first.delete([AclBindingFilter(permission=PermissionType.DENY)])
    assert (tmp_path / ACLS_FILE).exists()
    again = Authorizer.from_config(config, tmp_path)
    assert again is not None
    assert again.acls(AclBindingFilter()) == BINDINGS[:5] + BINDINGS[6:]
    assert may(again, name="orders-eu-1")


def test_bindings_survive_a_broker_restart(tmp_path: Path) -> None:
    with KafkaBroker(config=AUTHORIZER_CONFIG, data_dir=tmp_path) as broker:
        broker.add_acl(ALICE, "WRITE", topic="orders-", pattern="prefixed")
        broker.add_acl("User:*", "describe", cluster=True, permission="deny", host="10.0.0.7")
        broker.add_acl(BOB, "READ", group="billing")
        broker.remove_acls(group="billing")
        before = broker.acls()
        broker.restart()
        assert broker.acls() == before
        assert len(before) == 2
        restarted = broker.node(broker.node_ids[0]).authorizer
        assert restarted is not None
        assert may(restarted, Op.WRITE, "orders-1")
        assert not restarted.authorize(ALICE, "10.0.0.7", Op.DESCRIBE, T.CLUSTER, CLUSTER_NAME)
