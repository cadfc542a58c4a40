"""Broker configuration: server.properties, then MINIBROKER_* variables, then overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.config import ConfigError, ConfigSource, load_config


def test_sources_and_their_precedence(tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(
        "# a comment\n"
        "num.partitions=3\n"
        "log.retention.hours = 48\n"
        "auto.create.topics.enable: false\n"
        "message.max.bytes=2000\n"
    )
    environ = {"MINIBROKER_NUM_PARTITIONS": "5", "MINIBROKER_NOT_A_SETTING": "x"}
    config = load_config(properties, {"message.max.bytes": "4000"}, environ)
    assert config.get_int("num.partitions") == 5
    assert config.get_bool("auto.create.topics.enable") is False
    assert config.get_int("message.max.bytes") == 4000
    assert config.topic_default("retention.ms") == (
        str(48 * 3_600_000),
        ConfigSource.STATIC_BROKER_CONFIG,
        "log.retention.hours",
    )
    assert config.topic_default("max.message.bytes")[0] == "4000"
    assert config.topic_default("segment.bytes") == (
        "1073741824",
        ConfigSource.DEFAULT_CONFIG,
        None,
    )
    assert "not.a.setting" not in config.values


def test_listeners_and_advertised_listeners() -> None:
    config = load_config(
        None,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://0.0.0.0:29092",
            "advertised.listeners": "PLAINTEXT://localhost:9092",
        },
        {},
    )
    assert [(x.name, x.host, x.port) for x in config.listeners] == [
        ("PLAINTEXT", "127.0.0.1", 0),
        ("INTERNAL", "0.0.0.0", 29092),
    ]
    assert [(x.host, x.port) for x in config.advertised_listeners] == [("localhost", 9092)]


def test_bad_values_are_refused() -> None:
    with pytest.raises(ConfigError):
        load_config(None, {"num.partitions": "many"}, {})
    with pytest.raises(ConfigError):
        load_config(None, {"auto.create.topics.enable": "perhaps"}, {})
