"""GROUP config resources (type 32) over TCP: IncrementalAlterConfigs, AlterConfigs,
DescribeConfigs and ListConfigResources as Kafka 4.3 answers them, persistence across a
restart, DeleteGroups keeping them, confluent-kafka's AdminClient, and the effective values
the coordinator reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from minibroker.config import BrokerConfig
from minibroker.groups.group_configs import GroupConfigs
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_group_wire import create_topic
from tests.groups.wirehelp import commit
from tests.wire import WireClient

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
GROUP_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 8, 4, 5
INT, STRING, BOOLEAN = 3, 2, 1
# A broker with its own consumer heartbeat interval (STATIC_BROKER_CONFIG).
SETTINGS = {"group.consumer.heartbeat.interval.ms": "6000", "offsets.topic.num.partitions": "1"}

_IncResource = struct_type(ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource")
_IncConfig = struct_type(
    ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource", "AlterableConfig"
)
_Resource = struct_type(ApiKey.AlterConfigs, "request", "AlterConfigsResource")
_Config = struct_type(ApiKey.AlterConfigs, "request", "AlterConfigsResource", "AlterableConfig")
_Describe = struct_type(ApiKey.DescribeConfigs, "request", "DescribeConfigsResource")

Op = tuple[str, int, str | None]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def alter(
    client: WireClient, name: str, ops: list[Op], validate_only: bool = False
) -> tuple[int, str | None]:
    response = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            _IncResource(
                resource_type=GROUP,
                resource_name=name,
                configs=[_IncConfig(name=n, config_operation=op, value=v) for n, op, v in ops],
            )
        ],
        validate_only=validate_only,
    )
    (result,) = response.responses
    assert (result.resource_type, result.resource_name) == (GROUP, name)
    return result.error_code, result.error_message


def legacy_alter(client: WireClient, name: str, configs: dict[str, str]) -> tuple[int, str | None]:
    response = client.call(
        ApiKey.AlterConfigs,
        2,
        resources=[
            _Resource(
                resource_type=GROUP,
                resource_name=name,
                configs=[_Config(name=n, value=v) for n, v in configs.items()],
            )
        ],
        validate_only=False,
    )
    (result,) = response.responses
    return result.error_code, result.error_message


def describe(client: WireClient, name: str, keys: list[str] | None = None) -> Any:
    response = client.call(
        ApiKey.DescribeConfigs,
        4,
        resources=[_Describe(resource_type=GROUP, resource_name=name, configuration_keys=keys)],
        include_synonyms=True,
        include_documentation=True,
    )
    (result,) = response.results
    return result


def values(client: WireClient, name: str) -> dict[str, tuple[str, int]]:
    return {c.name: (c.value, c.config_source) for c in describe(client, name).configs}


def listed_groups(client: WireClient) -> list[str]:
    response = client.call(ApiKey.ListConfigResources, 1, resource_types=[GROUP])
    return [r.resource_name for r in response.config_resources]


OK = (ErrorCode.NO_ERROR, None)
ALL_DEFAULTS = {
    "consumer.assignment.interval.ms": ("1000", DEFAULT_CONFIG),
    "consumer.heartbeat.interval.ms": ("6000", STATIC_BROKER_CONFIG),
    "consumer.session.timeout.ms": ("45000", DEFAULT_CONFIG),
    "share.assignment.interval.ms": ("1000", DEFAULT_CONFIG),
    "share.auto.offset.reset": ("latest", DEFAULT_CONFIG),
    "share.delivery.count.limit": ("5", DEFAULT_CONFIG),
    "share.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG),
    "share.isolation.level": ("read_uncommitted", DEFAULT_CONFIG),
    "share.partition.max.record.locks": ("2000", DEFAULT_CONFIG),
    "share.record.lock.duration.ms": ("30000", DEFAULT_CONFIG),
    "share.renew.acknowledge.enable": ("true", DEFAULT_CONFIG),
    "share.session.timeout.ms": ("45000", DEFAULT_CONFIG),
    "streams.assignment.interval.ms": ("1000", DEFAULT_CONFIG),
    "streams.heartbeat.interval.ms": ("5000", DEFAULT_CONFIG),
    "streams.initial.rebalance.delay.ms": ("3000", DEFAULT_CONFIG),
    "streams.num.standby.replicas": ("0", DEFAULT_CONFIG),
    "streams.session.timeout.ms": ("45000", DEFAULT_CONFIG),
}


def test_an_unknown_group_describes_every_group_config_with_its_default(
    client: WireClient,
) -> None:
    result = describe(client, "nobody")
    assert (result.error_code, result.resource_type, result.resource_name) == (0, GROUP, "nobody")
    assert [c.name for c in result.configs] == sorted(ALL_DEFAULTS)
    assert values(client, "nobody") == ALL_DEFAULTS
    by_name = {c.name: c for c in result.configs}
    session = by_name["consumer.session.timeout.ms"]
    assert (session.read_only, session.is_sensitive, session.config_type) == (False, False, INT)
    assert session.documentation
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)
    ]
    heartbeat = by_name["consumer.heartbeat.interval.ms"]
    assert [(s.name, s.value, s.source) for s in heartbeat.synonyms] == [
        ("group.consumer.heartbeat.interval.ms", "6000", STATIC_BROKER_CONFIG),
        ("group.consumer.heartbeat.interval.ms", "5000", DEFAULT_CONFIG),
    ]
    assert by_name["share.isolation.level"].config_type == STRING
    assert by_name["share.renew.acknowledge.enable"].config_type == BOOLEAN
    assert by_name["share.isolation.level"].synonyms == []


def test_set_describe_delete(client: WireClient) -> None:
    ops: list[Op] = [
        ("consumer.session.timeout.ms", SET, "50000"),
        ("consumer.heartbeat.interval.ms", SET, "7000"),
        ("share.isolation.level", SET, "read_committed"),
        ("share.auto.offset.reset", SET, "by_duration:PT1H30M"),
    ]
    assert alter(client, "g1", ops) == OK
    described = values(client, "g1")
    assert described["consumer.session.timeout.ms"] == ("50000", GROUP_CONFIG)
    assert described["consumer.heartbeat.interval.ms"] == ("7000", GROUP_CONFIG)
    assert described["share.isolation.level"] == ("read_committed", GROUP_CONFIG)
    assert described["share.auto.offset.reset"] == ("by_duration:PT1H30M", GROUP_CONFIG)
    assert described["share.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
    (session,) = describe(client, "g1", ["consumer.session.timeout.ms"]).configs
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("consumer.session.timeout.ms", "50000", GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG),
    ]
    assert listed_groups(client) == ["g1"]
    assert alter(client, "g1", [("share.isolation.level", DELETE, None)]) == OK
    assert values(client, "g1")["share.isolation.level"] == ("read_uncommitted", DEFAULT_CONFIG)
    remove_all: list[Op] = [(name, DELETE, None) for name, _, _ in ops]
    assert alter(client, "g1", remove_all) == OK
    assert values(client, "g1") == ALL_DEFAULTS
    assert listed_groups(client) == []


def test_validate_only_changes_nothing(client: WireClient) -> None:
    assert alter(client, "g2", [("consumer.session.timeout.ms", SET, "50000")], True) == OK
    assert values(client, "g2")["consumer.session.timeout.ms"] == ("45000", DEFAULT_CONFIG)
    assert listed_groups(client) == []


BAD = ErrorCode.INVALID_CONFIG


@pytest.mark.parametrize(
    ("name", "ops", "expected"),
    [
        ("g", [("nope", SET, "1")], (BAD, "Unknown group config name: nope")),
        (
            "g",
            [("consumer.session.timeout.ms", SET, "abc")],
            (
                BAD,
                "Invalid value abc for configuration consumer.session.timeout.ms: "
                "Not a number of type INT",
            ),
        ),
        (
            "g",
            [("consumer.session.timeout.ms", SET, "0")],
            (
                BAD,
                "Invalid value 0 for configuration consumer.session.timeout.ms: "
                "Value must be at least 1",
            ),
        ),
        (
            "g",
            [("consumer.session.timeout.ms", SET, "5")],
            (
                BAD,
                "consumer.session.timeout.ms must be greater than or equal to "
                "group.consumer.min.session.timeout.ms",
            ),
        ),
        (
            "g",
            [("consumer.session.timeout.ms", SET, "60001")],
            (
                BAD,
                "consumer.session.timeout.ms must be less than or equal to "
                "group.consumer.max.session.timeout.ms",
            ),
        ),
        (
            "g",
            [("consumer.heartbeat.interval.ms", SET, "4999")],
            (
                BAD,
                "consumer.heartbeat.interval.ms must be greater than or equal to "
                "group.consumer.min.heartbeat.interval.ms",
            ),
        ),
        (
            "g",
            [("share.delivery.count.limit", SET, "11")],
            (
                BAD,
                "share.delivery.count.limit must be less than or equal to "
                "group.share.max.delivery.count.limit",
            ),
        ),
        (
            "g",
            [("streams.num.standby.replicas", SET, "3")],
            (
                BAD,
                "streams.num.standby.replicas must be less than or equal to "
                "group.streams.max.standby.replicas",
            ),
        ),
        (
            "g",
            [("share.isolation.level", SET, "dirty")],
            (
                BAD,
                "Invalid value dirty for configuration share.isolation.level: "
                "String must be one of: read_committed, read_uncommitted",
            ),
        ),
        (
            "g",
            [("share.renew.acknowledge.enable", SET, "yes")],
            (
                BAD,
                "Invalid value yes for configuration share.renew.acknowledge.enable: "
                "Expected value to be either true or false",
            ),
        ),
        (
            "g",
            [("share.auto.offset.reset", SET, "none")],
            (
                BAD,
                "Invalid value none for configuration share.auto.offset.reset: Invalid value "
                "`none` for configuration share.auto.offset.reset. The value must be either "
                "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.",
            ),
        ),
        (
            "g",
            [("consumer.session.timeout.ms", APPEND, "1")],
            (BAD, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."),
        ),
        ("", [("consumer.session.timeout.ms", SET, "50000")], (ErrorCode.INVALID_REQUEST, None)),
        (
            "g",
            [("consumer.session.timeout.ms", SET, "1"), ("consumer.session.timeout.ms", SET, "2")],
            (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        ),
    ],
)
def test_bad_changes_get_kafkas_errors(
    client: WireClient, name: str, ops: list[Op], expected: tuple[int, str | None]
) -> None:
    error, message = alter(client, name, ops)
    assert error == expected[0]
    if expected[1] is not None:
        assert message == expected[1]
    assert listed_groups(client) == []


def test_session_timeout_must_exceed_the_heartbeat_interval_of_the_merged_configs(
    tmp_path: Path,
) -> None:
    wide = {
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
    }
    with (
        ThreadedBroker(data_dir=tmp_path / "d", settings=wide) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        # the broker's heartbeat interval (5000) meets the group's session timeout
        assert alter(client, "g", [("consumer.session.timeout.ms", SET, "5000")]) == (
            BAD,
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
        )
        ok: list[Op] = [
            ("consumer.session.timeout.ms", SET, "2000"),
            ("consumer.heartbeat.interval.ms", SET, "1000"),
        ]
        assert alter(client, "g", ok) == OK
        # dropping the heartbeat override alone breaks the pair again
        assert alter(client, "g", [("consumer.heartbeat.interval.ms", DELETE, None)])[0] == BAD


def test_describe_with_an_empty_name_is_invalid_request(client: WireClient) -> None:
    result = describe(client, "")
    assert (result.error_code, result.error_message, result.configs) == (
        ErrorCode.INVALID_REQUEST,
        "Group name must not be empty",
        [],
    )


def test_legacy_alter_configs_replaces_the_whole_set(client: WireClient) -> None:
    assert alter(client, "g3", [("share.isolation.level", SET, "read_committed")]) == OK
    assert legacy_alter(client, "g3", {"consumer.session.timeout.ms": "55000"}) == OK
    described = values(client, "g3")
    assert described["consumer.session.timeout.ms"] == ("55000", GROUP_CONFIG)
    assert described["share.isolation.level"] == ("read_uncommitted", DEFAULT_CONFIG)
    assert legacy_alter(client, "g3", {"bogus": "1"}) == (BAD, "Unknown group config name: bogus")
    assert legacy_alter(client, "g3", {}) == OK
    assert listed_groups(client) == []


def test_configs_survive_a_restart_and_group_deletion(broker: ThreadedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        create_topic(client, "t", 1)
        commit(client, "kept", {("t", 0): 1})
        assert alter(client, "kept", [("consumer.session.timeout.ms", SET, "50000")]) == OK
        assert alter(client, "only-configs", [("share.delivery.count.limit", SET, "3")]) == OK
        deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["kept"])
        assert deleted.results[0].error_code == ErrorCode.NO_ERROR
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        assert values(client, "kept")["consumer.session.timeout.ms"] == ("50000", GROUP_CONFIG)
        assert values(client, "only-configs")["share.delivery.count.limit"] == ("3", GROUP_CONFIG)
        assert listed_groups(client) == ["kept", "only-configs"]


def test_confluent_admin_client_alters_and_describes_group_configs(
    broker: ThreadedBroker,
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(
        ResourceType.GROUP,
        "cg",
        incremental_configs=[
            ConfigEntry(
                "consumer.session.timeout.ms",
                "52000",
                incremental_operation=AlterConfigOpType.SET,
            ),
            ConfigEntry(
                "consumer.heartbeat.interval.ms",
                "8000",
                incremental_operation=AlterConfigOpType.SET,
            ),
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=10)
    described = admin.describe_configs([ConfigResource(ResourceType.GROUP, "cg")])
    (entries,) = [future.result(timeout=10) for future in described.values()]
    assert entries["consumer.session.timeout.ms"].value == "52000"
    assert entries["consumer.heartbeat.interval.ms"].value == "8000"
    assert entries["share.session.timeout.ms"].value == "45000"
    bad = ConfigResource(
        ResourceType.GROUP,
        "cg",
        incremental_configs=[
            ConfigEntry(
                "consumer.session.timeout.ms", "1", incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    (failing,) = admin.incremental_alter_configs([bad]).values()
    with pytest.raises(Exception, match=r"group\.consumer\.min\.session\.timeout\.ms"):
        failing.result(timeout=10)


def test_effective_values_fall_back_to_the_broker_and_are_capped_to_its_bounds() -> None:
    store = GroupConfigs(None)
    broker = BrokerConfig({"group.consumer.session.timeout.ms": "50000"})
    plain = store.effective("g", broker)
    assert (plain.consumer_session_timeout_ms, plain.consumer_heartbeat_interval_ms) == (
        50000,
        5000,
    )
    assert (plain.share_isolation_level, plain.share_renew_acknowledge_enable) == (
        "read_uncommitted",
        True,
    )
    store.replace(
        "g",
        {
            "consumer.session.timeout.ms": "58000",
            "consumer.heartbeat.interval.ms": "12000",
            "share.renew.acknowledge.enable": "false",
            "streams.num.standby.replicas": "2",
        },
    )
    narrowed = BrokerConfig(
        {
            "group.consumer.max.session.timeout.ms": "55000",
            "group.consumer.max.heartbeat.interval.ms": "10000",
            "group.streams.max.standby.replicas": "1",
        }
    )
    capped = store.effective("g", narrowed)
    assert capped.consumer_session_timeout_ms == 55000
    assert capped.consumer_heartbeat_interval_ms == 10000
    assert capped.streams_num_standby_replicas == 1
    assert capped.share_renew_acknowledge_enable is False
    assert store.effective("other", narrowed).consumer_session_timeout_ms == 45000
