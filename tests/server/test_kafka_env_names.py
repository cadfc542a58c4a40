"""The Kafka images' environment names (apache/kafka's KAFKA_*, Bitnami's KAFKA_CFG_*) as
broker settings, their precedence, and KRaft controller listeners left unserved."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from minibroker.config import (
    ConfigError,
    apache_kafka_setting,
    bitnami_kafka_setting,
    from_kafka_image_environment,
    load_config,
)

APACHE_KAFKA_COMPOSE_ENV = {
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_LISTENERS": "CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"
    ),
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_LOG_DIRS": "/tmp/kraft-combined-logs",
    "KAFKA_HEAP_OPTS": "-Xmx1G",
    "KAFKA_JMX_PORT": "9101",
}


@pytest.mark.parametrize(
    ("variable", "setting"),
    [
        ("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable"),
        (
            "KAFKA_LISTENER_NAME_SASL__SSL_SASL_ENABLED_MECHANISMS",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms",
        ),
        ("KAFKA_SOME___DASHED_NAME", "some-dashed.name"),
        ("CLUSTER_ID", "cluster.id"),
        ("KAFKA_CFG_NUM_PARTITIONS", None),
        ("KAFKA_KRAFT_CLUSTER_ID", None),
        ("MINIBROKER_NUM_PARTITIONS", None),
        ("KAFKAESQUE", None),
    ],
)
def test_apache_kafka_names(variable: str, setting: str | None) -> None:
    assert apache_kafka_setting(variable) == setting


@pytest.mark.parametrize(
    ("variable", "setting"),
    [
        ("KAFKA_CFG_NUM_PARTITIONS", "num.partitions"),
        (
            "KAFKA_CFG_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        ("KAFKA_KRAFT_CLUSTER_ID", "cluster.id"),
        ("KAFKA_NUM_PARTITIONS", None),
        ("KAFKA_ENABLE_KRAFT", None),
    ],
)
def test_bitnami_names(variable: str, setting: str | None) -> None:
    assert bitnami_kafka_setting(variable) == setting


def test_a_compose_file_written_for_apache_kafka(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="minibroker.config"):
        config = load_config(None, {}, APACHE_KAFKA_COMPOSE_ENV)
    assert config.node_id == 1
    assert config.raw("cluster.id") == "4L6g3nShT-eMCtK--X86sw"
    assert config.get_int("offsets.topic.replication.factor") == 1
    assert config.get_int("group.initial.rebalance.delay.ms") == 0
    assert [str(path) for path in config.log_dirs] == ["/tmp/kraft-combined-logs"]
    assert [(x.name, x.host, x.port) for x in config.listeners] == [
        ("PLAINTEXT_HOST", "0.0.0.0", 9092),
        ("PLAINTEXT", "0.0.0.0", 19092),
    ]
    assert [(x.name, x.host, x.port) for x in config.advertised_listeners] == [
        ("PLAINTEXT_HOST", "localhost", 9092),
        ("PLAINTEXT", "broker", 19092),
    ]
    assert config.security_protocol("PLAINTEXT_HOST") == "PLAINTEXT"
    ignored = [r.getMessage() for r in caplog.records if r.name == "minibroker.config"]
    assert ignored == [
        "ignored environment variables (no minibroker setting): "
        "KAFKA_CONTROLLER_QUORUM_VOTERS, KAFKA_HEAP_OPTS, KAFKA_INTER_BROKER_LISTENER_NAME, "
        "KAFKA_JMX_PORT, KAFKA_PROCESS_ROLES"
    ]
    assert "process.roles" not in config.values


def test_nothing_is_logged_without_unknown_names(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="minibroker.config"):
        load_config(None, {}, {"KAFKA_NUM_PARTITIONS": "2", "HOME": "/root"})
    assert not [r for r in caplog.records if r.name == "minibroker.config"]


def test_a_bitnami_environment() -> None:
    settings, ignored = from_kafka_image_environment(
        {
            "KAFKA_ENABLE_KRAFT": "yes",
            "ALLOW_PLAINTEXT_LISTENER": "yes",
            "KAFKA_KRAFT_CLUSTER_ID": "abcdefghijklmnopqrstuv",
            "KAFKA_CFG_NODE_ID": "0",
            "KAFKA_CFG_PROCESS_ROLES": "controller,broker",
            "KAFKA_CFG_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "KAFKA_CFG_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:9092",
            "KAFKA_CFG_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE": "false",
            "KAFKA_CFG_LOG_RETENTION_HOURS": "",
        }
    )
    assert settings == {
        "cluster.id": "abcdefghijklmnopqrstuv",
        "node.id": "0",
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "advertised.listeners": "PLAINTEXT://localhost:9092",
        "controller.listener.names": "CONTROLLER",
        "auto.create.topics.enable": "false",
    }
    assert ignored == ["KAFKA_CFG_PROCESS_ROLES", "KAFKA_ENABLE_KRAFT"]


def test_precedence(tmp_path: Path) -> None:
    """--override > MINIBROKER_* > KAFKA_CFG_* > KAFKA_* > server.properties > defaults."""
    properties = tmp_path / "server.properties"
    properties.write_text(
        "num.partitions=1\ndefault.replication.factor=1\nmessage.max.bytes=1000\n"
        "log.retention.ms=1\nlog.segment.bytes=1048576\n"
    )
    environ = {
        "KAFKA_DEFAULT_REPLICATION_FACTOR": "2",
        "KAFKA_MESSAGE_MAX_BYTES": "2000",
        "KAFKA_CFG_MESSAGE_MAX_BYTES": "3000",
        "KAFKA_LOG_RETENTION_MS": "2",
        "KAFKA_CFG_LOG_RETENTION_MS": "3",
        "MINIBROKER_LOG_RETENTION_MS": "4",
        "KAFKA_NUM_PARTITIONS": "2",
        "KAFKA_CFG_NUM_PARTITIONS": "3",
        "MINIBROKER_NUM_PARTITIONS": "4",
    }
    config = load_config(properties, {"num.partitions": "5"}, environ)
    assert config.get_int("log.segment.bytes") == 1048576  # server.properties
    assert config.get_int("default.replication.factor") == 2  # KAFKA_*
    assert config.get_int("message.max.bytes") == 3000  # KAFKA_CFG_*
    assert config.get_int("log.retention.ms") == 4  # MINIBROKER_*
    assert config.get_int("num.partitions") == 5  # --override


def test_only_advertised_listeners_listens_on_their_ports_everywhere(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("listeners=PLAINTEXT://0.0.0.0:9092\n")
    environ = {"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka:19092,HOST://localhost:9092"}
    config = load_config(properties, {}, environ)
    assert [(x.name, x.host, x.port) for x in config.listeners] == [
        ("PLAINTEXT", "0.0.0.0", 19092),
        ("HOST", "0.0.0.0", 9092),
    ]


def test_only_listeners_are_advertised_as_they_are(tmp_path: Path) -> None:
    """The image's default advertised listener gives way, as Kafka advertises its listeners
    when none are given (a wildcard address as this host's name); never the controller's."""
    properties = tmp_path / "server.properties"
    properties.write_text("advertised.listeners=PLAINTEXT://localhost:9092\n")
    environ = {
        "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:19092,WIDE://:19094,CONTROLLER://:19093",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,WIDE:PLAINTEXT",
    }
    config = load_config(properties, {}, environ)
    assert [(x.name, x.host, x.port) for x in config.advertised_listeners] == [
        ("PLAINTEXT", "127.0.0.1", 19092),
        ("WIDE", socket.getfqdn(), 19094),
    ]


def test_minibroker_names_know_the_controller_listener() -> None:
    environ = {
        "MINIBROKER_LISTENERS": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "MINIBROKER_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    }
    config = load_config(None, {}, environ)
    assert [x.name for x in config.listeners] == ["PLAINTEXT"]


def test_a_client_listener_without_a_protocol_is_still_refused() -> None:
    config = load_config(None, {}, {"KAFKA_LISTENERS": "ODD://127.0.0.1:0"})
    with pytest.raises(ConfigError, match="No security protocol defined for listener ODD"):
        config.security_protocol(config.listeners[0].name)


def test_bad_values_from_kafka_names_are_refused() -> None:
    with pytest.raises(ConfigError):
        load_config(None, {}, {"KAFKA_NUM_PARTITIONS": "many"})
