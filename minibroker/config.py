"""Broker and topic configuration, by Apache Kafka's names.

Broker settings come from a `server.properties` file, then the environment names of the Kafka
images (apache/kafka's `KAFKA_<NAME>`, then Bitnami's `KAFKA_CFG_<NAME>`), then environment
variables `MINIBROKER_<NAME>` (dots as underscores, upper case), then `--override key=value`,
each later source winning. Topic settings are Kafka's topic-level names; a topic's effective value
is its own override, else the broker synonym that was set, else Kafka's default.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import NamedTuple

LONG_MAX = 9223372036854775807

log = logging.getLogger(__name__)


class ConfigType(IntEnum):
    """Kafka's DescribeConfigs ConfigType values."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigs ConfigSource values."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A setting that Kafka would refuse (unknown name for topics, bad value)."""


# The definitions are named tuples, not frozen dataclasses: this module is on every start's
# path, where a dataclass costs about 0.5 ms to define.
class ConfigDef(NamedTuple):
    name: str
    type: ConfigType
    default: str | None
    doc: str = ""
    sensitive: bool = False


def _broker(name: str, type_: ConfigType, default: str | None, doc: str = "") -> ConfigDef:
    return ConfigDef(name, type_, default, doc)


def _secret(name: str, doc: str = "") -> ConfigDef:
    return ConfigDef(name, ConfigType.PASSWORD, None, doc, sensitive=True)


B, S, INT, L, LI = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.LIST,
)

BROKER_CONFIGS: dict[str, ConfigDef] = {
    d.name: d
    for d in [
        _broker("node.id", INT, "1", "This broker's id."),
        _broker("broker.id", INT, None, "Synonym of node.id."),
        _broker("cluster.id", S, None, "Cluster id; generated and kept in meta.properties."),
        _broker("listeners", LI, "PLAINTEXT://127.0.0.1:9092"),
        _broker("advertised.listeners", LI, None),
        _broker(
            "listener.security.protocol.map",
            LI,
            "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        ),
        _broker("log.dirs", S, None),
        _broker("log.dir", S, "/tmp/kafka-logs"),
        _broker("num.partitions", INT, "1"),
        _broker("default.replication.factor", INT, "1"),
        _broker("auto.create.topics.enable", B, "true"),
        _broker("delete.topic.enable", B, "true"),
        _broker("socket.request.max.bytes", INT, "104857600"),
        _broker("socket.listen.backlog.size", INT, "50"),
        _broker("max.connections", INT, "2147483647"),
        _broker("max.connections.per.ip", INT, "2147483647"),
        _broker("max.connections.per.ip.overrides", S, ""),
        _broker(
            "queued.max.request.bytes",
            L,
            "536870912",
            "Bytes of requests being handled, across all connections, past which no more "
            "requests are read (-1: unbounded, Kafka's default; minibroker bounds it).",
        ),
        _broker(
            "connections.max.idle.ms",
            L,
            "600000",
            "Close connections with no request for this long (bytes of an unfinished request "
            "do not count, so a slow sender cannot hold a connection forever).",
        ),
        _broker("message.max.bytes", INT, "1048588"),
        _broker("compression.type", S, "producer"),
        _broker("log.cleanup.policy", LI, "delete"),
        _broker("log.segment.bytes", INT, "1073741824"),
        _broker("log.roll.ms", L, None),
        _broker("log.roll.hours", INT, "168"),
        _broker("log.index.size.max.bytes", INT, "10485760"),
        _broker("log.index.interval.bytes", INT, "4096"),
        _broker("log.retention.ms", L, None),
        _broker("log.retention.minutes", INT, None),
        _broker("log.retention.hours", INT, "168"),
        _broker("log.retention.bytes", L, "-1"),
        _broker("log.retention.check.interval.ms", L, "300000"),
        _broker("log.initial.task.delay.ms", L, "30000"),
        _broker("log.flush.interval.messages", L, str(LONG_MAX)),
        _broker("log.flush.interval.ms", L, None),
        _broker("log.flush.scheduler.interval.ms", L, str(LONG_MAX)),
        _broker("log.message.timestamp.type", S, "CreateTime"),
        _broker("log.message.downconversion.enable", B, "true"),
        _broker("log.message.timestamp.before.max.ms", L, str(LONG_MAX)),
        _broker("log.message.timestamp.after.max.ms", L, "3600000"),
        _broker("min.insync.replicas", INT, "1"),
        _broker("unclean.leader.election.enable", B, "false"),
        _broker("log.cleaner.enable", B, "true"),
        _broker("log.cleaner.backoff.ms", L, "15000"),
        _broker("log.cleaner.delete.retention.ms", L, "86400000"),
        _broker("log.cleaner.min.compaction.lag.ms", L, "0"),
        _broker("log.cleaner.max.compaction.lag.ms", L, str(LONG_MAX)),
        _broker("log.cleaner.min.cleanable.ratio", ConfigType.DOUBLE, "0.5"),
        _broker("log.segment.delete.delay.ms", L, "60000"),
        _broker("log.preallocate", B, "false"),
        _broker("log.roll.jitter.ms", L, None),
        _broker("log.roll.jitter.hours", INT, "0"),
        _broker("log.local.retention.ms", L, "-2"),
        _broker("log.local.retention.bytes", L, "-2"),
        _broker("compression.gzip.level", INT, "-1"),
        _broker("compression.lz4.level", INT, "9"),
        _broker("compression.zstd.level", INT, "3"),
        _broker("log.cleaner.threads", INT, "1"),
        _broker("log.cleaner.dedupe.buffer.size", L, "134217728"),
        _broker("log.cleaner.io.buffer.size", INT, "524288"),
        _broker("log.cleaner.io.buffer.load.factor", ConfigType.DOUBLE, "0.9"),
        _broker("log.cleaner.io.max.bytes.per.second", ConfigType.DOUBLE, "1.7976931348623157E308"),
        _broker("num.io.threads", INT, "8"),
        _broker("num.network.threads", INT, "3"),
        _broker("num.replica.fetchers", INT, "1"),
        _broker("replica.lag.time.max.ms", L, "30000"),
        _broker("replica.fetch.max.bytes", INT, "1048576"),
        _broker("replica.fetch.response.max.bytes", INT, "10485760"),
        _broker("replica.fetch.wait.max.ms", INT, "500"),
        _broker("replica.fetch.min.bytes", INT, "1"),
        _broker("replica.fetch.backoff.ms", INT, "1000"),
        _broker("num.recovery.threads.per.data.dir", INT, "2"),
        _broker("background.threads", INT, "10"),
        _broker("max.connection.creation.rate", INT, "2147483647"),
        _broker("metric.reporters", LI, ""),
        _broker("transaction.partition.verification.enable", B, "true"),
        _broker("producer.id.expiration.ms", INT, "86400000"),
        _broker("transaction.max.timeout.ms", INT, "900000"),
        _broker("transaction.state.log.num.partitions", INT, "50"),
        _broker("transaction.state.log.segment.bytes", INT, "104857600"),
        _broker("transactional.id.expiration.ms", INT, "604800000"),
        _broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, "10000"),
        _broker("transaction.remove.expired.transaction.cleanup.interval.ms", INT, "3600000"),
        _broker("group.initial.rebalance.delay.ms", INT, "0", "minibroker's default is 0."),
        _broker("group.min.session.timeout.ms", INT, "6000"),
        _broker("group.max.session.timeout.ms", INT, "1800000"),
        _broker("group.consumer.session.timeout.ms", INT, "45000"),
        _broker("group.consumer.min.session.timeout.ms", INT, "45000"),
        _broker("group.consumer.max.session.timeout.ms", INT, "60000"),
        _broker("group.consumer.heartbeat.interval.ms", INT, "5000"),
        _broker("group.consumer.min.heartbeat.interval.ms", INT, "5000"),
        _broker("group.consumer.max.heartbeat.interval.ms", INT, "15000"),
        _broker("group.consumer.max.size", INT, "2147483647"),
        _broker("group.consumer.assignors", LI, "uniform,range"),
        _broker("group.consumer.migration.policy", S, "bidirectional"),
        # The broker defaults and bounds of GROUP configs (groups/group_configs.py).
        _broker("group.consumer.assignment.interval.ms", INT, "1000"),
        _broker("group.consumer.min.assignment.interval.ms", INT, "0"),
        _broker("group.consumer.max.assignment.interval.ms", INT, "15000"),
        _broker("group.share.max.size", INT, "200"),
        _broker("group.share.assignors", LI, "simple"),
        _broker("group.share.session.timeout.ms", INT, "45000"),
        _broker("group.share.min.session.timeout.ms", INT, "45000"),
        _broker("group.share.max.session.timeout.ms", INT, "60000"),
        _broker("group.share.heartbeat.interval.ms", INT, "5000"),
        _broker("group.share.min.heartbeat.interval.ms", INT, "5000"),
        _broker("group.share.max.heartbeat.interval.ms", INT, "15000"),
        _broker("group.share.assignment.interval.ms", INT, "1000"),
        _broker("group.share.min.assignment.interval.ms", INT, "0"),
        _broker("group.share.max.assignment.interval.ms", INT, "15000"),
        _broker("group.share.record.lock.duration.ms", INT, "30000"),
        _broker("group.share.min.record.lock.duration.ms", INT, "15000"),
        _broker("group.share.max.record.lock.duration.ms", INT, "60000"),
        _broker("group.share.delivery.count.limit", INT, "5"),
        _broker("group.share.min.delivery.count.limit", INT, "2"),
        _broker("group.share.max.delivery.count.limit", INT, "10"),
        _broker("group.share.partition.max.record.locks", INT, "2000"),
        _broker("group.share.min.partition.max.record.locks", INT, "100"),
        _broker("group.share.max.partition.max.record.locks", INT, "4000"),
        _broker("group.share.max.share.sessions", INT, "2000"),
        _broker("share.coordinator.state.topic.num.partitions", INT, "50"),
        _broker("share.coordinator.state.topic.segment.bytes", INT, "104857600"),
        _broker("share.coordinator.state.topic.replication.factor", INT, "1"),
        _broker("share.coordinator.state.topic.min.isr", INT, "1"),
        _broker("offsets.topic.replication.factor", INT, "1"),
        _broker("transaction.state.log.replication.factor", INT, "1"),
        _broker("transaction.state.log.min.isr", INT, "1"),
        _broker("group.streams.session.timeout.ms", INT, "45000"),
        _broker("group.streams.min.session.timeout.ms", INT, "45000"),
        _broker("group.streams.max.session.timeout.ms", INT, "60000"),
        _broker("group.streams.heartbeat.interval.ms", INT, "5000"),
        _broker("group.streams.min.heartbeat.interval.ms", INT, "5000"),
        _broker("group.streams.max.heartbeat.interval.ms", INT, "15000"),
        _broker("group.streams.assignment.interval.ms", INT, "1000"),
        _broker("group.streams.min.assignment.interval.ms", INT, "0"),
        _broker("group.streams.max.assignment.interval.ms", INT, "15000"),
        _broker("group.streams.num.standby.replicas", INT, "0"),
        _broker("group.streams.max.standby.replicas", INT, "2"),
        _broker("group.streams.initial.rebalance.delay.ms", INT, "3000"),
        _broker("group.streams.max.size", INT, "2147483647"),
        _broker("offsets.topic.num.partitions", INT, "50"),
        _broker("offsets.topic.segment.bytes", INT, "104857600"),
        _broker("offsets.retention.minutes", INT, "10080"),
        _broker("offsets.retention.check.interval.ms", L, "600000"),
        _broker("offsets.commit.timeout.ms", INT, "5000"),
        _broker("request.timeout.ms", INT, "30000"),
        _broker("offset.metadata.max.bytes", INT, "4096"),
        _broker(
            "telemetry.max.bytes",
            INT,
            "1048576",
            "The largest metrics payload a client may push (KIP-714).",
        ),
        _broker(
            "max.request.partition.size.limit",
            INT,
            "2000",
            "Most partitions one DescribeTopicPartitions response carries.",
        ),
        _broker(
            "max.incremental.fetch.session.cache.slots",
            INT,
            "1000",
            "Fetch sessions (KIP-227) each broker keeps.",
        ),
        _broker("ssl.keystore.type", S, "JKS", "minibroker reads PEM keystores only."),
        _broker("ssl.keystore.location", S, None),
        _secret("ssl.keystore.password"),
        _secret("ssl.keystore.certificate.chain"),
        _secret("ssl.keystore.key"),
        _secret("ssl.key.password"),
        _broker("ssl.truststore.type", S, "JKS", "minibroker reads PEM truststores only."),
        _broker("ssl.truststore.location", S, None),
        _secret("ssl.truststore.password"),
        _secret("ssl.truststore.certificates"),
        _broker("ssl.client.auth", S, "none"),
        _broker("ssl.enabled.protocols", LI, "TLSv1.2,TLSv1.3"),
        _broker("connection.failed.authentication.delay.ms", INT, "100"),
        _broker(
            "sasl.server.max.receive.size",
            INT,
            "524288",
            "The largest frame a SASL listener reads before its client has authenticated.",
        ),
        _broker(
            "ssl.principal.mapping.rules",
            S,
            "DEFAULT",
            "Rules mapping a TLS client certificate's distinguished name to a principal name.",
        ),
        _broker(
            "authorizer.class.name",
            S,
            "",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer enables ACLs; empty: none.",
        ),
        _broker("super.users", S, "", "Principals allowed everything: User:admin;User:ops."),
        _broker("allow.everyone.if.no.acl.found", B, "false"),
        _broker("quota.window.num", INT, "11", "Samples kept for client byte-rate quotas."),
        _broker("quota.window.size.seconds", INT, "1", "Length of each quota sample."),
        _broker("controller.quota.window.num", INT, "11"),
        _broker("controller.quota.window.size.seconds", INT, "1"),
        _broker(
            "sasl.enabled.mechanisms",
            LI,
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "minibroker's default (Kafka's is GSSAPI, which minibroker does not serve).",
        ),
        _secret(
            "minibroker.scram.credentials",
            "SCRAM users created at start: SCRAM-SHA-256=[name=alice,password=alice-secret],...",
        ),
        _secret(
            "delegation.token.secret.key",
            "Secret key of delegation tokens' HMACs; unset or empty: delegation tokens disabled.",
        ),
        _broker("delegation.token.max.lifetime.ms", L, "604800000"),
        _broker("delegation.token.expiry.time.ms", L, "86400000"),
        _broker("delegation.token.expiry.check.interval.ms", L, "3600000"),
        _broker(
            "minibroker.fsync.on.ack",
            B,
            "false",
            "fsync a partition before acknowledging a produce (power-loss safety).",
        ),
        _broker(
            "minibroker.transaction.version",
            INT,
            "2",
            "transaction.version finalized in a new data directory (KIP-890; 2 = TV2, as a new "
            "Kafka 4.3 cluster; 1 or 0 = TV1). UpdateFeatures changes it.",
        ),
        _broker(
            "minibroker.emulate.kafka.version",
            S,
            "4.3",
            "The Kafka release to answer as (2.8, 3.0-3.9, 4.0-4.3): ApiVersions advertises "
            "the API versions and feature flags that release's broker did, and requests it "
            "would not have served are refused as it refused them.",
        ),
        _broker(
            "minibroker.max.decompressed.batch.bytes",
            INT,
            "67108864",
            "Upper bound on a compressed batch's decompressed size when validating it.",
        ),
        _broker(
            "minibroker.console.allowed.hosts",
            LI,
            "",
            "Host names the web console answers under besides localhost and IP addresses "
            "(browsers naming any other are refused: DNS rebinding).",
        ),
    ]
}


# Kafka's `DynamicBrokerConfig`: the broker settings AlterConfigs may change at run time. The
# log ones are the first broker synonym of each topic config (`log.retention.ms`, not
# `log.retention.hours`); PER_BROKER ones only for a named broker, never the cluster default.
DYNAMIC_LOG_CONFIGS = frozenset(
    {
        "log.segment.bytes",
        "log.roll.ms",
        "log.roll.jitter.ms",
        "log.index.size.max.bytes",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.retention.bytes",
        "log.retention.ms",
        "message.max.bytes",
        "log.index.interval.bytes",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.segment.delete.delay.ms",
        "log.cleaner.min.cleanable.ratio",
        "log.cleanup.policy",
        "unclean.leader.election.enable",
        "min.insync.replicas",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "log.preallocate",
        "log.message.timestamp.type",
        "log.message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms",
        "log.local.retention.ms",
        "log.local.retention.bytes",
    }
)
DYNAMIC_SECURITY_CONFIGS = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
_DYNAMIC_LISTENER_CONFIGS = frozenset(
    {
        "listeners",
        "listener.security.protocol.map",
        "principal.builder.class",
        "ssl.protocol",
        "ssl.provider",
        "ssl.cipher.suites",
        "ssl.enabled.protocols",
        *DYNAMIC_SECURITY_CONFIGS,
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.endpoint.identification.algorithm",
        "ssl.secure.random.implementation",
        "ssl.client.auth",
        "ssl.engine.factory.class",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.jaas.config",
        "sasl.enabled.mechanisms",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        *_CLUSTER_LEVEL_LISTENER_CONFIGS,
    }
)
PER_BROKER_CONFIGS = _DYNAMIC_LISTENER_CONFIGS - _CLUSTER_LEVEL_LISTENER_CONFIGS
DYNAMIC_BROKER_CONFIGS = frozenset(
    {
        *DYNAMIC_LOG_CONFIGS,
        *_DYNAMIC_LISTENER_CONFIGS,
        # LogCleaner
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
        # thread pools, metrics, sockets, producer state, config providers
        "num.io.threads",
        "num.replica.fetchers",
        "num.recovery.threads.per.data.dir",
        "background.threads",
        "metric.reporters",
        "max.connections.per.ip",
        "max.connections.per.ip.overrides",
        "producer.id.expiration.ms",
        "transaction.partition.verification.enable",
        "config.providers",
        "follower.fetch.last.tiered.offset.enable",
    }
)
# Kafka settings minibroker has no definition for that Kafka refuses to change dynamically.
KAFKA_STATIC_BROKER_CONFIGS = frozenset(
    {
        "process.roles",
        "controller.listener.names",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "inter.broker.listener.name",
        "broker.rack",
        "metadata.log.dir",
        "num.replica.alter.log.dirs.threads",
        "group.coordinator.rebalance.protocols",
        "auto.leader.rebalance.enable",
        "queued.max.requests",
        "socket.send.buffer.bytes",
        "socket.receive.buffer.bytes",
    }
)
# Kafka's `DynamicBrokerConfig.brokerConfigSynonyms`: the broker names one setting may be given
# by, most specific first. Names not listed are their own only synonym.
BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_synonyms(name: str) -> tuple[str, ...]:
    if name == "log.flush.interval.ms":
        return ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    return next((group for group in BROKER_SYNONYM_GROUPS if name in group), (name,))


class TopicConfigDef(NamedTuple):
    name: str
    type: ConfigType
    default: str
    broker_synonyms: tuple[str, ...]


def _topic(name: str, type_: ConfigType, default: str, *synonyms: str) -> TopicConfigDef:
    return TopicConfigDef(name, type_, default, synonyms)


TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in [
        _topic("cleanup.policy", LI, "delete", "log.cleanup.policy"),
        _topic("compression.type", S, "producer", "compression.type"),
        _topic("delete.retention.ms", L, "86400000", "log.cleaner.delete.retention.ms"),
        _topic("file.delete.delay.ms", L, "60000", "log.segment.delete.delay.ms"),
        _topic("flush.messages", L, str(LONG_MAX), "log.flush.interval.messages"),
        _topic("flush.ms", L, str(LONG_MAX), "log.flush.interval.ms"),
        _topic("index.interval.bytes", INT, "4096", "log.index.interval.bytes"),
        _topic("max.compaction.lag.ms", L, str(LONG_MAX), "log.cleaner.max.compaction.lag.ms"),
        _topic("max.message.bytes", INT, "1048588", "message.max.bytes"),
        _topic("message.downconversion.enable", B, "true", "log.message.downconversion.enable"),
        _topic("message.timestamp.type", S, "CreateTime", "log.message.timestamp.type"),
        _topic(
            "message.timestamp.before.max.ms",
            L,
            str(LONG_MAX),
            "log.message.timestamp.before.max.ms",
        ),
        _topic(
            "message.timestamp.after.max.ms", L, "3600000", "log.message.timestamp.after.max.ms"
        ),
        _topic(
            "min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio"
        ),
        _topic("min.compaction.lag.ms", L, "0", "log.cleaner.min.compaction.lag.ms"),
        _topic("min.insync.replicas", INT, "1", "min.insync.replicas"),
        _topic("preallocate", B, "false", "log.preallocate"),
        _topic(
            "retention.bytes",
            L,
            "-1",
            "log.retention.bytes",
        ),
        _topic(
            "retention.ms",
            L,
            "604800000",
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ),
        _topic("segment.bytes", INT, "1073741824", "log.segment.bytes"),
        _topic("segment.index.bytes", INT, "10485760", "log.index.size.max.bytes"),
        _topic("segment.jitter.ms", L, "0", "log.roll.jitter.ms"),
        _topic("segment.ms", L, "604800000", "log.roll.ms", "log.roll.hours"),
        _topic("unclean.leader.election.enable", B, "false", "unclean.leader.election.enable"),
    ]
}

_SYNONYM_SCALE_TO_MS = {
    "log.retention.minutes": 60_000,
    "log.retention.hours": 3_600_000,
    "log.roll.hours": 3_600_000,
}


def validate_value(type_: ConfigType, name: str, value: str) -> None:
    """Raise ConfigError when `value` cannot be parsed as `type_`."""
    try:
        if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            int(value)
        elif type_ == ConfigType.DOUBLE:
            float(value)
        elif type_ == ConfigType.BOOLEAN and value.lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError as exc:
        raise ConfigError(f"Invalid value {value} for configuration {name}") from exc


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if value is not None:
            validate_value(definition.type, name, value)
        if name == "message.timestamp.type" and value not in (None, "CreateTime", "LogAppendTime"):
            raise ConfigError(f"Invalid value {value} for configuration {name}")
        if name == "compression.type" and value not in (
            None,
            "producer",
            "uncompressed",
            "gzip",
            "snappy",
            "lz4",
            "zstd",
        ):
            raise ConfigError(f"Invalid value {value} for configuration {name}")
        if name == "cleanup.policy" and value is not None:
            _check_cleanup_policy(value)


def _check_cleanup_policy(value: str) -> None:
    """Kafka's ValidList of compact and delete."""
    for item in (part.strip() for part in value.split(",")):
        if item and item not in ("compact", "delete"):
            raise ConfigError(
                f"Invalid value {item} for configuration cleanup.policy: String must be one "
                "of: compact, delete"
            )


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MAX_PORT = 65535


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listener:
        name, sep, address = text.strip().partition("://")
        if not sep:
            raise ConfigError(f"listener {text!r} is not NAME://HOST:PORT")
        host, colon, port = address.rpartition(":")
        if not colon:
            raise ConfigError(f"listener {text!r} has no port")
        if not port.isdigit() or int(port) > MAX_PORT:
            raise ConfigError(f"listener {text!r} needs a port from 0 to {MAX_PORT}")
        host = host.strip("[]") or "0.0.0.0"
        return cls(name.upper(), host, int(port))


@dataclass(frozen=True)
class BrokerConfig:
    """Explicitly set broker properties (name -> string) and where each came from.

    `values` are the effective ones: the static settings (`static`, or `values` themselves
    when no dynamic config applies) overridden by the cluster-wide dynamic defaults, then by
    this node's dynamic configs, as Kafka's `DynamicBrokerConfig` layers them."""

    values: Mapping[str, str] = field(default_factory=dict)
    dynamic_node: Mapping[str, str] = field(default_factory=dict)
    dynamic_default: Mapping[str, str] = field(default_factory=dict)
    static: Mapping[str, str] | None = None

    @property
    def static_values(self) -> Mapping[str, str]:
        return self.values if self.static is None else self.static

    def with_dynamic(
        self, dynamic_default: Mapping[str, str], dynamic_node: Mapping[str, str]
    ) -> BrokerConfig:
        """This node's config under these dynamic layers (replacing any applied before); a
        dynamic value removes the static synonyms of its name, as Kafka's `overrideProps`."""
        values = dict(self.static_values)
        for layer in (dynamic_default, dynamic_node):
            for name, value in layer.items():
                for synonym in broker_synonyms(name):
                    values.pop(synonym, None)
                values[name] = value
        return BrokerConfig(values, dict(dynamic_node), dict(dynamic_default), self.static_values)

    def raw(self, name: str) -> str | None:
        if name in self.values:
            return self.values[name]
        definition = BROKER_CONFIGS.get(name)
        return definition.default if definition else None

    def get_int(self, name: str) -> int:
        value = self.raw(name)
        if value is None:
            raise ConfigError(f"{name} has no value")
        return int(value)

    def get_bool(self, name: str) -> bool:
        return (self.raw(name) or "false").lower() == "true"

    def get_str(self, name: str) -> str:
        return self.raw(name) or ""

    def source(self, name: str) -> ConfigSource:
        if name in self.dynamic_node:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self.dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self.static_values:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def with_values(self, **overrides: str) -> BrokerConfig:
        return BrokerConfig({**self.static_values, **overrides}).with_dynamic(
            self.dynamic_default, self.dynamic_node
        )

    @property
    def node_id(self) -> int:
        return int(self.values.get("node.id") or self.values.get("broker.id") or "1")

    @property
    def listeners(self) -> list[Listener]:
        """The client listeners: those of `listeners` not named in `controller.listener.names`
        (a KRaft controller's, which minibroker does not serve)."""
        controllers = _names(self.get_str("controller.listener.names"))
        parsed = [Listener.parse(item) for item in self.get_str("listeners").split(",") if item]
        return [item for item in parsed if item.name not in controllers]

    @property
    def advertised_listeners(self) -> list[Listener]:
        text = self.raw("advertised.listeners")
        if not text:
            return self.listeners
        return [Listener.parse(item) for item in text.split(",") if item]

    def listener_value(self, listener_name: str, name: str) -> str | None:
        """`listener.name.<listener>.<name>` if set, else `<name>` (Kafka's per-listener form)."""
        prefixed = f"listener.name.{listener_name.lower()}.{name}"
        if prefixed in self.values:
            return self.values[prefixed]
        return self.raw(name)

    def security_protocol(self, listener_name: str) -> str:
        """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, from `listener.security.protocol.map`."""
        for item in self.get_str("listener.security.protocol.map").split(","):
            name, _, protocol = item.strip().partition(":")
            if name.strip().upper() == listener_name.upper():
                protocol = protocol.strip().upper()
                if protocol not in SECURITY_PROTOCOLS:
                    raise ConfigError(f"Invalid security protocol {protocol} for {name}")
                return protocol
        raise ConfigError(
            f"No security protocol defined for listener {listener_name} "
            "(listener.security.protocol.map)"
        )

    @property
    def data_dir(self) -> Path | None:
        """The first log directory: it also keeps the broker's own files."""
        dirs = self.log_dirs
        return dirs[0] if dirs else None

    @property
    def log_dirs(self) -> list[Path]:
        text = self.raw("log.dirs") or self.raw("log.dir")
        return [Path(part.strip()) for part in (text or "").split(",") if part.strip()]

    def topic_default(self, name: str) -> tuple[str, ConfigSource, str | None]:
        """The value a topic without an override gets: (value, source, synonym name)."""
        definition = TOPIC_CONFIGS[name]
        for synonym in definition.broker_synonyms:
            if synonym in self.values:
                value = self.values[synonym]
                scale = _SYNONYM_SCALE_TO_MS.get(synonym)
                if scale is not None:
                    value = str(int(value) * scale)
                return value, self.source(synonym), synonym
        return definition.default, ConfigSource.DEFAULT_CONFIG, None

    def topic_value(self, overrides: Mapping[str, str], name: str) -> str:
        if name in overrides:
            return overrides[name]
        return self.topic_default(name)[0]


def _names(text: str) -> set[str]:
    return {item.strip().upper() for item in text.split(",") if item.strip()}


def _logical_lines(text: str) -> Iterable[str]:
    """Physical lines joined where one ends in an odd number of backslashes, as Java does."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield (pending + line).strip()
        pending = ""
    if pending:
        yield pending.strip()


def parse_properties(text: str) -> dict[str, str]:
    """Java .properties essentials: `key=value` or `key: value`, `#`/`!` comments, `\\`
    line continuations (inline PEM values span lines that way)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        if not line:
            continue
        for index, char in enumerate(line):
            if char in "=:":
                result[line[:index].strip()] = line[index + 1 :].strip()
                break
        else:
            result[line] = ""
    return result


def from_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`MINIBROKER_LOG_RETENTION_MS=1` -> `log.retention.ms=1`, for known names only."""
    names = (*BROKER_CONFIGS, *KAFKA_SETTINGS_READ)
    known = {name.replace(".", "_").upper(): name for name in names}
    result: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith("MINIBROKER_"):
            name = known.get(key[len("MINIBROKER_") :])
            if name is not None:
                result[name] = value
    return result


# Kafka settings minibroker reads (to leave a KRaft controller's listener unserved) without
# having them as settings of its own.
KAFKA_SETTINGS_READ = frozenset({"controller.listener.names"})
_APACHE_UNDERSCORES = {"_": ".", "__": "_", "___": "-"}
# Bitnami turns every `_` into `.`, then restores these listener names (`listener.name.sasl_ssl.…`).
_BITNAMI_LISTENER_NAMES = {"sasl.ssl": "sasl_ssl", "sasl.plaintext": "sasl_plaintext"}
_WILDCARD_HOSTS = frozenset({"0.0.0.0", "::"})


def apache_kafka_setting(variable: str) -> str | None:
    """The setting an apache/kafka image variable names, as its KafkaDockerWrapper writes them
    into server.properties: `CLUSTER_ID` -> `cluster.id`; `KAFKA_<NAME>` lower-cased with
    `_` -> `.`, `__` -> `_`, `___` -> `-`. None for other variables and Bitnami's."""
    if variable == "CLUSTER_ID":
        return "cluster.id"
    if not variable.startswith("KAFKA_") or bitnami_kafka_setting(variable) is not None:
        return None
    name = variable[len("KAFKA_") :].lower()
    return re.sub("_{1,3}", lambda match: _APACHE_UNDERSCORES[match.group()], name)


def bitnami_kafka_setting(variable: str) -> str | None:
    """The setting a Bitnami image variable names: `KAFKA_CFG_<NAME>` lower-cased with every
    `_` -> `.` (listener names `sasl_ssl`/`sasl_plaintext` kept); `KAFKA_KRAFT_CLUSTER_ID` ->
    `cluster.id`. None for other variables."""
    if variable == "KAFKA_KRAFT_CLUSTER_ID":
        return "cluster.id"
    if not variable.startswith("KAFKA_CFG_"):
        return None
    name = variable[len("KAFKA_CFG_") :].lower().replace("_", ".")
    for dotted, listener in _BITNAMI_LISTENER_NAMES.items():
        name = name.replace(dotted, listener)
    return name


def is_known_broker_setting(name: str) -> bool:
    """A name Kafka's broker knows: minibroker's settings, the Kafka ones it accepts without
    acting on them, and per-listener ones (`listener.name.<listener>.<name>`)."""
    return (
        name in BROKER_CONFIGS
        or name in DYNAMIC_BROKER_CONFIGS
        or name in KAFKA_STATIC_BROKER_CONFIGS
        or name in KAFKA_SETTINGS_READ
        or name.startswith("listener.name.")
    )


def _read_by_minibroker(name: str) -> bool:
    return (
        name in BROKER_CONFIGS or name in KAFKA_SETTINGS_READ or name.startswith("listener.name.")
    )


def from_kafka_image_environment(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The broker settings that the Kafka images' variables set (Bitnami's over apache/kafka's;
    empty values are unset), and the variables that name nothing minibroker has (KRaft quorum
    settings, KAFKA_HEAP_OPTS and other JVM options, the images' own switches ...)."""
    settings: dict[str, str] = {}
    ignored: list[str] = []
    for setting_name in (apache_kafka_setting, bitnami_kafka_setting):
        for variable in sorted(environ):
            name = setting_name(variable)
            if name is None or not environ[variable]:
                continue
            if _read_by_minibroker(name):
                settings[name] = environ[variable]
            else:
                ignored.append(variable)
    return _with_listener_defaults(settings), sorted(ignored)


def _with_listener_defaults(settings: dict[str, str]) -> dict[str, str]:
    """Given only advertised listeners, apache/kafka's image listens on their ports on every
    address; given only listeners, Kafka advertises them (a wildcard as this host's name)."""
    listeners, advertised = settings.get("listeners"), settings.get("advertised.listeners")
    if advertised and not listeners:
        parsed = [Listener.parse(item) for item in advertised.split(",") if item]
        listeners = ",".join(f"{item.name}://0.0.0.0:{item.port}" for item in parsed)
        return {**settings, "listeners": listeners}
    if listeners and not advertised:
        controllers = _names(settings.get("controller.listener.names", ""))
        parsed = [Listener.parse(item) for item in listeners.split(",") if item]
        advertised = ",".join(
            f"{item.name}://{_routable(item.host)}:{item.port}"
            for item in parsed
            if item.name not in controllers
        )
        return {**settings, "advertised.listeners": advertised}
    return settings


def _routable(host: str) -> str:
    return socket.getfqdn() if host in _WILDCARD_HOSTS else host


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"override {item!r} is not key=value")
        result[name.strip()] = value.strip()
    return result


def load_config(
    properties_file: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> BrokerConfig:
    values: dict[str, str] = {}
    if properties_file is not None:
        values.update(parse_properties(properties_file.read_text()))
    environ = os.environ if environ is None else environ
    image_settings, ignored = from_kafka_image_environment(environ)
    if ignored:
        log.info("ignored environment variables (no minibroker setting): %s", ", ".join(ignored))
    values.update(image_settings)
    values.update(from_environment(environ))
    values.update(overrides or {})
    for name, value in values.items():
        definition = BROKER_CONFIGS.get(name)
        if definition is not None:
            validate_value(definition.type, name, value)
        elif not is_known_broker_setting(name):
            log.warning("The configuration '%s' was supplied but isn't a known config.", name)
    return BrokerConfig(values)


def new_cluster_id() -> str:
    """Kafka's format: a random UUID in URL-safe base64 without padding (22 characters)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
