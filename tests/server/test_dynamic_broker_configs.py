"""Dynamic broker configs (KIP-226): AlterConfigs / IncrementalAlterConfigs on BROKER
resources (a node id, or "" for the cluster default), DescribeConfigs sources and synonyms,
persistence across restarts, live effect on topic defaults; wire-level and with Java 4.3's
and confluent-kafka's AdminClient."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.cluster.alter_configs import OpType, ResourceType
from minibroker.config import ConfigSource
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaCluster
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.server.test_admin_configs import (
    alter,
    configs_of,
    create,
    describe,
    incremental,
    synonyms_of,
)
from tests.wire import WireClient

BROKER = ResourceType.BROKER
TOPIC = ResourceType.TOPIC
ELR_MIN_ISR = "min.insync.replicas"  # the cluster level has it while ELR is enabled (4.3)
_ProduceTopic = struct_type(ApiKey.Produce, "request", "TopicProduceData")
_ProducePartition = struct_type(
    ApiKey.Produce, "request", "TopicProduceData", "PartitionProduceData"
)


@pytest.fixture
def static_broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    """A broker with log.retention.ms set in its static config."""
    with ThreadedBroker(
        settings={"log.retention.ms": "5000"}, data_dir=tmp_path / "data"
    ) as running:
        yield running


@pytest.fixture
def client(bootstrap: str) -> Iterator[WireClient]:
    with WireClient(bootstrap) as wire:
        yield wire


def produce_error(client: WireClient, topic: str, size: int) -> int:
    batch = build_batch([(None, b"x" * size, [], int(time.time() * 1000))])
    response = client.call(
        ApiKey.Produce,
        9,
        transactional_id=None,
        acks=1,
        timeout_ms=1000,
        topic_data=[
            _ProduceTopic(name=topic, partition_data=[_ProducePartition(index=0, records=batch)])
        ],
    )
    code: int = response.responses[0].partition_responses[0].error_code
    return code


def test_cluster_default_and_node_levels(static_broker: ThreadedBroker) -> None:
    with WireClient(static_broker.bootstrap_servers) as wire:
        ok = incremental(wire, BROKER, "", [("log.retention.ms", OpType.SET, "7000")])
        assert (ok.error_code, ok.error_message) == (ErrorCode.NO_ERROR, None)
        default_level = describe(wire, BROKER, "")
        assert [(c.name, c.value, c.config_source) for c in default_level.configs] == [
            ("log.retention.ms", "7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (ELR_MIN_ISR, "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ]
        ok = incremental(wire, BROKER, "1", [("log.retention.ms", OpType.SET, "9000")])
        assert (ok.error_code, ok.error_message) == (ErrorCode.NO_ERROR, None)
        retention = configs_of(describe(wire, BROKER, "1"))["log.retention.ms"]
        assert (retention.value, retention.config_source) == (
            "9000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )
        assert not retention.read_only
        assert synonyms_of(retention) == [
            ("log.retention.ms", "9000", ConfigSource.DYNAMIC_BROKER_CONFIG),
            ("log.retention.ms", "7000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
        ]
        # the cluster-default resource never shows a node's own value
        (default_entry, _min_isr) = describe(wire, BROKER, "").configs
        assert [s[2] for s in synonyms_of(default_entry)] == [
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            ConfigSource.STATIC_BROKER_CONFIG,
            ConfigSource.DEFAULT_CONFIG,
        ]
        assert configs_of(describe(wire, BROKER, "1"))["num.partitions"].read_only


def test_topic_defaults_follow_dynamic_configs(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "plain")
    create(client, "own", configs={"retention.ms": "1234"})
    incremental(client, BROKER, "", [("log.retention.ms", OpType.SET, "60000")])
    incremental(client, BROKER, "1", [("message.max.bytes", OpType.SET, "2000")])
    plain = configs_of(describe(client, TOPIC, "plain"))
    assert (plain["retention.ms"].value, plain["retention.ms"].config_source) == (
        "60000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert plain["max.message.bytes"].config_source == ConfigSource.DYNAMIC_BROKER_CONFIG
    assert configs_of(describe(client, TOPIC, "own"))["retention.ms"].value == "1234"
    assert broker.broker is not None
    topics = broker.broker.cluster.topics
    assert topics["plain"].partitions[0].log.config.retention_ms == 60000
    assert topics["own"].partitions[0].log.config.retention_ms == 1234
    assert produce_error(client, "plain", 3000) == ErrorCode.MESSAGE_TOO_LARGE
    deleted = incremental(client, BROKER, "1", [("message.max.bytes", OpType.DELETE, None)])
    assert deleted.error_code == ErrorCode.NO_ERROR
    assert produce_error(client, "plain", 3000) == ErrorCode.NO_ERROR


def test_dynamic_configs_survive_a_restart(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "kept")
    incremental(client, BROKER, "", [("log.segment.bytes", OpType.SET, "2000000")])
    incremental(client, BROKER, "1", [("custom.setting", OpType.SET, "x")])
    client.close()
    broker.restart()
    assert broker.broker is not None
    assert broker.broker.cluster.topics["kept"].partitions[0].log.config.segment_bytes == 2000000
    with WireClient(broker.bootstrap_servers) as wire:
        configs = configs_of(describe(wire, BROKER, "1"))
    assert (configs["log.segment.bytes"].value, configs["log.segment.bytes"].config_source) == (
        "2000000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    custom = configs["custom.setting"]
    assert (custom.config_source, custom.read_only, custom.is_sensitive) == (
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        True,
        True,
    )


@pytest.mark.parametrize(
    ("name", "ops", "message"),
    [
        (
            "1",
            [("num.partitions", OpType.SET, "3"), ("log.dirs", OpType.SET, "/x")],
            "Cannot update these configs dynamically: [log.dirs, num.partitions]",
        ),
        (
            "",
            [("log.retention.hours", OpType.SET, "1")],
            "Cannot update these configs dynamically: [log.retention.hours]",
        ),
        (
            "1",
            [("log.retention.ms", OpType.SET, "soon")],
            "Invalid value soon for configuration log.retention.ms: Not a number of type LONG",
        ),
        (
            "1",
            [("log.preallocate", OpType.SET, "yes")],
            "Invalid value yes for configuration log.preallocate: "
            "Expected value to be either true or false",
        ),
        (
            "",
            [("compression.type", OpType.SET, "brotli")],
            "Invalid value brotli for configuration compression.type: "
            "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            "1",
            [("ssl.keystore.location", OpType.SET, "/k.pem")],
            "These security configs can be dynamically updated only per-listener using the "
            "listener prefix: [ssl.keystore.location]",
        ),
        (
            "",
            [("listener.name.plaintext.ssl.keystore.location", OpType.SET, "/k.pem")],
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: [listener.name.plaintext.ssl.keystore.location]",
        ),
        (
            "7",
            [("num.io.threads", OpType.SET, "4")],
            "Unexpected broker id, expected 1, but received 7",
        ),
        ("x", [("num.io.threads", OpType.SET, "4")], "Node id must be an integer, but it is: x"),
    ],
)
def test_refused_changes(
    client: WireClient, name: str, ops: list[tuple[str, OpType, str | None]], message: str
) -> None:
    result = incremental(client, BROKER, name, ops)
    assert (result.error_code, result.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert [c.name for c in describe(client, BROKER, "").configs] == [ELR_MIN_ISR]


def test_list_ops_validate_only_and_legacy_alter(client: WireClient) -> None:
    appended = incremental(client, BROKER, "1", [("metric.reporters", OpType.APPEND, "a.B")])
    assert appended.error_code == ErrorCode.NO_ERROR
    not_list = incremental(client, BROKER, "1", [("num.io.threads", OpType.APPEND, "2")])
    assert (not_list.error_code, not_list.error_message) == (
        ErrorCode.INVALID_CONFIG,
        "Config value append is not allowed for config key: num.io.threads",
    )
    checked = incremental(
        client, BROKER, "1", [("num.io.threads", OpType.SET, "4")], validate_only=True
    )
    assert checked.error_code == ErrorCode.NO_ERROR
    threads = configs_of(describe(client, BROKER, "1"))["num.io.threads"]
    assert threads.config_source == ConfigSource.DEFAULT_CONFIG
    # the legacy API replaces the resource's whole set
    assert alter(client, BROKER, "1", {"num.io.threads": "4"}).error_code == ErrorCode.NO_ERROR
    dynamic = {
        c.name: c.value
        for c in describe(client, BROKER, "1").configs
        if c.config_source == ConfigSource.DYNAMIC_BROKER_CONFIG
    }
    assert dynamic == {"num.io.threads": "4"}
    refused = alter(client, BROKER, "", {"listeners": "PLAINTEXT://:1"})
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "[listeners]",
    )


def test_each_node_of_a_cluster_has_its_own_level() -> None:
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        with WireClient(cluster.address(2)) as wire:
            own = incremental(wire, BROKER, "2", [("num.io.threads", OpType.SET, "16")])
            assert own.error_code == ErrorCode.NO_ERROR
            other = incremental(wire, BROKER, "1", [("num.io.threads", OpType.SET, "16")])
            assert other.error_message == "Unexpected broker id, expected 2, but received 1"
            threads = configs_of(describe(wire, BROKER, "2"))["num.io.threads"]
            assert (threads.value, threads.config_source) == (
                "16",
                ConfigSource.DYNAMIC_BROKER_CONFIG,
            )
        with WireClient(cluster.address(1)) as wire:
            threads = configs_of(describe(wire, BROKER, "1"))["num.io.threads"]
            assert (threads.value, threads.config_source) == ("8", ConfigSource.DEFAULT_CONFIG)


# -- real clients -------------------------------------------------------------------------------


def admin_job(bootstrap: str, op: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {"op": op, "bootstrap": bootstrap, "resources": resources}


def test_java_admin_client(bootstrap: str) -> None:
    changed = run_ok(
        "java-4.3",
        admin_job(
            bootstrap,
            "alter_configs",
            [
                {"type": "broker", "name": "", "set": {"log.retention.ms": "120000"}},
                {"type": "broker", "name": "1", "set": {"log.cleaner.threads": "2"}},
            ],
        ),
    )
    assert [r["error"] for r in changed["resources"]] == [None, None]
    refused = run_ok(
        "java-4.3",
        admin_job(
            bootstrap,
            "alter_configs",
            [{"type": "broker", "name": "1", "set": {"num.partitions": "4"}}],
        ),
    )
    assert refused["resources"][0]["error_name"] == "INVALID_REQUEST"
    described = run_ok(
        "java-4.3",
        admin_job(
            bootstrap,
            "describe_configs",
            [{"type": "broker", "name": "1"}, {"type": "broker", "name": ""}],
        ),
    )
    node, default = described["resources"]
    assert node["configs"]["log.cleaner.threads"]["value"] == "2"
    assert node["configs"]["log.cleaner.threads"]["source"] == "DYNAMIC_BROKER_CONFIG"
    assert node["configs"]["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert node["configs"]["num.partitions"]["read_only"] is True
    assert default["configs"] == {
        "log.retention.ms": {
            "value": "120000",
            "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
            "read_only": False,
            "sensitive": False,
        },
        ELR_MIN_ISR: {
            "value": "1",
            "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
            "read_only": False,
            "sensitive": False,
        },
    }


def test_confluent_admin_client(bootstrap: str) -> None:
    """librdkafka refuses a broker resource without a name before sending anything, so only
    the node level is reachable from confluent-kafka."""
    changed = run_ok(
        "confluent-kafka",
        admin_job(
            bootstrap,
            "alter_configs",
            [{"type": "broker", "name": "1", "set": {"log.retention.ms": "120000"}}],
        ),
    )
    assert changed["resources"][0]["error"] is None
    refused = run_ok(
        "confluent-kafka",
        admin_job(
            bootstrap,
            "alter_configs",
            [{"type": "broker", "name": "1", "set": {"log.dirs": "/elsewhere"}}],
        ),
    )
    assert refused["resources"][0]["error_name"] == "INVALID_REQUEST"
    described = run_ok(
        "confluent-kafka",
        admin_job(bootstrap, "describe_configs", [{"type": "broker", "name": "1"}]),
    )
    retention = described["resources"][0]["configs"]["log.retention.ms"]
    assert retention == {
        "value": "120000",
        "source": "DYNAMIC_BROKER_CONFIG",
        "read_only": False,
        "sensitive": False,
    }


# -- BROKER_LOGGER (KIP-412) ------------------------------------------------------------------

BROKER_LOGGER = ResourceType.BROKER_LOGGER
LOGGER = "minibroker.server.broker"


@pytest.fixture
def restore_log_level() -> Iterator[None]:
    logger = logging.getLogger(LOGGER)
    level = logger.level
    yield
    logger.setLevel(level)


@pytest.mark.usefixtures("restore_log_level")
def test_broker_loggers(client: WireClient) -> None:
    described = describe(client, BROKER_LOGGER, "1")
    levels = {c.name: (c.value, c.config_source, c.read_only) for c in described.configs}
    assert "root" in levels
    assert levels[LOGGER][1:] == (ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, False)
    before = logging.getLogger(LOGGER).level
    checked = incremental(client, BROKER_LOGGER, "1", [(LOGGER, OpType.SET, "TRACE")], True)
    assert checked.error_code == ErrorCode.NO_ERROR
    assert logging.getLogger(LOGGER).level == before
    changed = incremental(client, BROKER_LOGGER, "1", [(LOGGER, OpType.SET, "DEBUG")])
    assert (changed.error_code, changed.error_message) == (ErrorCode.NO_ERROR, None)
    assert logging.getLogger(LOGGER).level == logging.DEBUG
    assert configs_of(describe(client, BROKER_LOGGER, "1"))[LOGGER].value == "DEBUG"
    reset = incremental(client, BROKER_LOGGER, "1", [(LOGGER, OpType.DELETE, None)])
    assert reset.error_code == ErrorCode.NO_ERROR
    assert logging.getLogger(LOGGER).level == logging.NOTSET


@pytest.mark.parametrize(
    ("name", "ops", "expected"),
    [
        (
            "1",
            [("no.such.logger", OpType.SET, "DEBUG")],
            (ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!"),
        ),
        (
            "1",
            [(LOGGER, OpType.SET, "LOUD")],
            (
                ErrorCode.INVALID_CONFIG,
                f"Cannot set the log level of {LOGGER} to LOUD as it is not a supported log "
                "level. Valid log levels are TRACE, ERROR, INFO, FATAL, DEBUG, WARN",
            ),
        ),
        (
            "1",
            [("root", OpType.DELETE, None)],
            (ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"),
        ),
        (
            "1",
            [(LOGGER, OpType.APPEND, "DEBUG")],
            (
                ErrorCode.INVALID_REQUEST,
                "APPEND operation is not allowed for the BROKER_LOGGER resource",
            ),
        ),
        (
            "x",
            [(LOGGER, OpType.SET, "DEBUG")],
            (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        ),
    ],
)
@pytest.mark.usefixtures("restore_log_level")
def test_broker_logger_refusals(
    client: WireClient,
    name: str,
    ops: list[tuple[str, OpType, str | None]],
    expected: tuple[int, str],
) -> None:
    result = incremental(client, BROKER_LOGGER, name, ops)
    assert (result.error_code, result.error_message) == expected
    legacy = alter(client, BROKER_LOGGER, "1", {LOGGER: "DEBUG"})
    assert (legacy.error_code, legacy.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unknown resource type 8",
    )
    empty = describe(client, BROKER_LOGGER, "")
    assert (empty.error_code, empty.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Broker id must not be empty",
    )
