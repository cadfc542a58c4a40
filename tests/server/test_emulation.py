"""A broker emulating a Kafka release (`minibroker.emulate.kafka.version`, `kafka_version=`):
ApiVersions over the wire per release, requests outside the release refused as Kafka refused
them, the release's feature flags, and real clients meeting a 4.x-only feature under 3.9."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from minibroker.config import ConfigError
from minibroker.handlers.registry import api_gates
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.releases import EMULATE_SETTING, RELEASES
from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_client, run_ok
from tests.security.conftest import USERS, sasl_listener_settings
from tests.wire import WireClient


@pytest.fixture
def broker_3_9() -> Iterator[KafkaBroker]:
    with KafkaBroker(kafka_version="3.9") as broker:
        yield broker


def _advertised(bootstrap: str, api_version: int = 3) -> dict[int, tuple[int, int]]:
    with WireClient(bootstrap) as client:
        response = client.call(ApiKey.ApiVersions, api_version)
    assert response.error_code == ErrorCode.NO_ERROR
    return {item.api_key: (item.min_version, item.max_version) for item in response.api_keys}


@pytest.mark.parametrize("name", list(RELEASES))
def test_api_versions_is_the_release_intersected_with_what_is_served(name: str) -> None:
    release = RELEASES[name]
    with KafkaBroker(kafka_version=name) as broker:
        advertised = _advertised(broker.bootstrap_servers)
    expected = {key: (g.advertised_min, g.max_version) for key, g in api_gates(release).items()}
    assert advertised == expected
    for key, (low, high) in advertised.items():
        released_low, released_high = release.api_ranges[key]
        assert released_low <= low <= high <= released_high


def test_3_9_advertises_what_a_3_9_broker_did(broker_3_9: KafkaBroker) -> None:
    advertised = _advertised(broker_3_9.bootstrap_servers)
    assert advertised[ApiKey.Produce] == (0, 11)
    assert advertised[ApiKey.Metadata][1] == 12
    assert advertised[ApiKey.ConsumerGroupHeartbeat] == (0, 0)
    assert advertised[ApiKey.ApiVersions] == (0, 4)
    for absent in (ApiKey.ShareFetch, ApiKey.ShareGroupHeartbeat, ApiKey.DescribeShareGroupOffsets):
        assert absent not in advertised


def test_the_default_is_4_3() -> None:
    with KafkaBroker() as default, KafkaBroker(kafka_version="4.3") as explicit:
        assert _advertised(default.bootstrap_servers) == _advertised(explicit.bootstrap_servers)


def test_an_unknown_release_is_refused() -> None:
    with pytest.raises(ValueError, match="kafka_version"):
        KafkaBroker(kafka_version="2.7")
    broker = KafkaBroker(config={"minibroker.emulate.kafka.version": "5.0"})
    with pytest.raises(ConfigError, match=r"minibroker\.emulate\.kafka\.version"):
        broker.start()


def test_api_versions_above_2_8s_v3_gets_unsupported_version_with_its_range() -> None:
    with KafkaBroker(kafka_version="2.8") as broker, WireClient(broker.bootstrap_servers) as c:
        response = c.call(ApiKey.ApiVersions, 4)
        assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
            (ApiKey.ApiVersions, 0, 3)
        ]


def test_a_version_above_the_release_closes_the_connection(broker_3_9: KafkaBroker) -> None:
    with WireClient(broker_3_9.bootstrap_servers) as client:
        client.send(ApiKey.Metadata, 13, topics=None, allow_auto_topic_creation=False)
        assert client.is_closed_by_peer()
    with WireClient(broker_3_9.bootstrap_servers) as client:
        assert client.call(ApiKey.Metadata, 12, topics=None).brokers


def test_a_key_the_release_lacked_closes_the_connection(broker_3_9: KafkaBroker) -> None:
    with WireClient(broker_3_9.bootstrap_servers) as client:
        client.send(ApiKey.ShareGroupDescribe, 1, group_ids=["g"])
        assert client.is_closed_by_peer()


def test_describe_topic_partitions_came_in_3_8() -> None:
    with KafkaBroker(kafka_version="3.7") as broker, WireClient(broker.bootstrap_servers) as c:
        c.send(ApiKey.DescribeTopicPartitions, 0, topics=[], response_partition_limit=10)
        assert c.is_closed_by_peer()
    with KafkaBroker(kafka_version="3.8") as broker, WireClient(broker.bootstrap_servers) as c:
        response = c.call(ApiKey.DescribeTopicPartitions, 0, topics=[], response_partition_limit=10)
        assert response.topics == []


def test_kafka_4_refuses_produce_v2_that_it_advertises() -> None:
    with KafkaBroker() as broker, WireClient(broker.bootstrap_servers) as client:
        response = client.call(
            ApiKey.Produce,
            2,
            acks=1,
            timeout_ms=1000,
            topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": b""}]}],
        )
    errors = [p.error_code for topic in response.responses for p in topic.partition_responses]
    assert errors == [ErrorCode.UNSUPPORTED_VERSION]


SERVE = [sys.executable, "-m", "minibroker", "serve", "--in-memory", "--listen", "127.0.0.1:0"]


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*SERVE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_kafka_version() -> None:
    process = _serve("--kafka-version", "2.8")
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "ready" in line
        advertised = _advertised(line.split()[-1])
        assert advertised == {
            key: (gate.advertised_min, gate.max_version)
            for key, gate in api_gates(RELEASES["2.8"]).items()
        }
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_serve_refuses_an_unknown_kafka_version() -> None:
    _, stderr = _serve("--kafka-version", "9.9").communicate(timeout=30)
    assert "minibroker.emulate.kafka.version" in stderr
    assert "2.8, 3.0, 3.1" in stderr


# ---- feature flags -------------------------------------------------------------------------


def _features(bootstrap: str) -> tuple[dict[str, tuple[int, int]], dict[str, int], int]:
    with WireClient(bootstrap) as client:
        response = client.call(ApiKey.ApiVersions, 4)
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    finalized = {f.name: f.max_version_level for f in response.finalized_features}
    return supported, finalized, response.finalized_features_epoch


def test_3_9_reports_its_features_without_transaction_or_group_version(
    broker_3_9: KafkaBroker,
) -> None:
    supported, finalized, _ = _features(broker_3_9.bootstrap_servers)
    assert supported == {"metadata.version": (1, 21), "kraft.version": (0, 1)}  # as Kafka 3.9
    assert finalized == {"metadata.version": 21}


def test_a_zookeeper_mode_release_reports_no_features() -> None:
    with KafkaBroker(kafka_version="2.8") as broker:
        supported, finalized, epoch = _features(broker.bootstrap_servers)
    assert (supported, finalized, epoch) == ({}, {}, -1)


def test_4_0_finalizes_transactions_v2_and_consumer_groups() -> None:
    with KafkaBroker(kafka_version="4.0") as broker:
        supported, finalized, _ = _features(broker.bootstrap_servers)
    assert finalized == {"metadata.version": 25, "transaction.version": 2, "group.version": 1}
    assert "share.version" not in supported


def test_the_default_features_are_4_3s() -> None:
    with KafkaBroker() as broker:
        supported, finalized, epoch = _features(broker.bootstrap_servers)
    assert finalized == {
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "metadata.version": 30,
        "share.version": 1,
        "streams.version": 1,
        "transaction.version": 2,
    }
    assert supported["transaction.version"] == (0, 2)
    assert epoch == 1


def test_transactions_v2_cannot_be_finalized_under_3_9(broker_3_9: KafkaBroker) -> None:
    with WireClient(broker_3_9.bootstrap_servers) as client:
        response = client.call(
            ApiKey.UpdateFeatures,
            1,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}
            ],
            validate_only=False,
        )
    assert response.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert response.error_message.endswith("does not support this feature.")


# ---- real clients --------------------------------------------------------------------------


def _kip_848_consumer(bootstrap: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "g848",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["t"])
    return consumer


def _produce_one(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("t", b"v")
    assert producer.flush(10) == 0


def _first_value(consumer: Consumer, seconds: float) -> bytes | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            value: bytes | None = message.value()
            return value
    return None


def test_librdkafka_kip_848_consumer_gets_nothing_from_3_9(broker_3_9: KafkaBroker) -> None:
    """librdkafka's consumer protocol needs ConsumerGroupHeartbeat v1; 3.9 advertised v0 only,
    so it never sends one ("ConsumerGroupHeartbeatRequest not supported by broker") and the
    group never forms, as against a real 3.9 broker."""
    _produce_one(broker_3_9.bootstrap_servers)
    consumer = _kip_848_consumer(broker_3_9.bootstrap_servers)
    try:
        assert _first_value(consumer, 5) is None
    finally:
        consumer.close()
    sent = {r.api_key for r in broker_3_9.requests()}
    assert ApiKey.ConsumerGroupHeartbeat not in sent
    assert ApiKey.FindCoordinator in sent


def test_librdkafka_kip_848_consumer_reads_from_4_0() -> None:
    with KafkaBroker(kafka_version="4.0") as broker:
        _produce_one(broker.bootstrap_servers)
        consumer = _kip_848_consumer(broker.bootstrap_servers)
        try:
            assert _first_value(consumer, 20) == b"v"
        finally:
            consumer.close()


def test_java_4_3_kip_848_consumer_is_refused_by_3_9(broker_3_9: KafkaBroker) -> None:
    broker_3_9.create_topic("t")
    result = run_client(
        "java-4.3",
        {
            "op": "consume",
            "bootstrap": broker_3_9.bootstrap_servers,
            "topic": "t",
            "count": 1,
            "group": "g848",
            "timeout_ms": 8000,
            "config": {"group.protocol": "consumer"},
        },
    )
    assert not result["ok"]
    assert "UNSUPPORTED_VERSION" in str(result) or "not support" in str(result)
    answered = [r for r in broker_3_9.requests() if r.api_key == ApiKey.ConsumerGroupHeartbeat]
    assert answered and all(r.api_version == 0 for r in answered)


def _transactional_produce(bootstrap: str) -> None:
    run_ok(
        "java-4.3",
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": "t",
            "records": [{"key": None, "value": "aGk=", "headers": [], "partition": 0}],
            "transactional_id": "tid",
        },
    )


def test_java_4_3_transactions_are_v1_under_3_9(broker_3_9: KafkaBroker) -> None:
    broker_3_9.create_topic("t")
    _transactional_produce(broker_3_9.bootstrap_servers)
    versions = {(r.api_key, r.api_version) for r in broker_3_9.requests()}
    assert (ApiKey.AddPartitionsToTxn, 3) in versions
    assert {v for k, v in versions if k == ApiKey.EndTxn} == {4}
    assert max(v for k, v in versions if k == ApiKey.Produce) == 11


def test_java_4_3_transactions_are_v2_by_default() -> None:
    with KafkaBroker() as broker:
        broker.create_topic("t")
        _transactional_produce(broker.bootstrap_servers)
        versions = {(r.api_key, r.api_version) for r in broker.requests()}
    assert ApiKey.AddPartitionsToTxn not in {k for k, _ in versions}
    assert {v for k, v in versions if k == ApiKey.EndTxn} == {5}


def test_java_4_3_share_consumer_is_refused_by_3_9(broker_3_9: KafkaBroker) -> None:
    broker_3_9.create_topic("t")
    result = run_client(
        "java-4.3",
        {
            "op": "share_consume",
            "bootstrap": broker_3_9.bootstrap_servers,
            "topic": "t",
            "group": "sg",
            "mode": "implicit",
            "count": 1,
            "idle_ms": 3000,
            "timeout_ms": 8000,
        },
    )
    assert not result["ok"]
    assert result["error_name"] == "UNSUPPORTED_VERSION"
    assert "ShareGroupHeartbeat" in result["error"]
    assert ApiKey.ShareGroupHeartbeat not in {r.api_key for r in broker_3_9.requests()}


@pytest.mark.minibroker(kafka_version="3.9")
def test_the_fixture_marker_takes_kafka_version(kafka_broker: KafkaBroker) -> None:
    assert _advertised(kafka_broker.bootstrap_servers)[ApiKey.Produce] == (0, 11)


def test_a_sasl_client_steps_down_to_2_8s_api_versions() -> None:
    settings = {**sasl_listener_settings(), EMULATE_SETTING: "2.8"}
    with ThreadedBroker(settings=settings) as running, WireClient(running.bootstrap_servers) as c:
        assert c.call(ApiKey.ApiVersions, 4).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert c.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR
        response = c.call(ApiKey.SaslHandshake, 1, mechanism="PLAIN")
        assert response.error_code == ErrorCode.NO_ERROR
        token = f"\0alice\0{USERS['alice']}".encode()
        assert c.call(ApiKey.SaslAuthenticate, 2, auth_bytes=token).error_code == 0
        assert c.call(ApiKey.Metadata, 11, topics=None).brokers


@pytest.mark.parametrize("name", list(RELEASES))
def test_kafka_python_3_takes_the_broker_for_the_release(name: str) -> None:
    """kafka-python 3 infers a broker's release from its ApiVersions answer (its own table):
    an independent check of the fact table. 3.4 changed nothing clients see, so it reads 3.3."""
    from kafka import KafkaAdminClient

    expected = (3, 3) if name == "3.4" else tuple(int(part) for part in name.split("."))
    with KafkaBroker(kafka_version=name, storage="memory") as broker:
        admin = KafkaAdminClient(
            bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10000
        )
        try:
            assert admin._client.check_version() == expected
        finally:
            admin.close()


def test_java_3_9_produces_and_consumes_within_2_8s_versions() -> None:
    with KafkaBroker(kafka_version="2.8") as broker:
        broker.create_topic("t")
        records = [{"key": None, "value": "aGk=", "headers": [], "partition": 0}]
        job = {"bootstrap": broker.bootstrap_servers, "topic": "t"}
        run_ok("java-3.9", {**job, "op": "produce", "records": records, "compression": "lz4"})
        result = run_ok("java-3.9", {**job, "op": "consume", "count": 1, "group": "g28"})
        assert [r["value"] for r in result["records"]] == ["aGk="]
        used = {(r.api_key, r.api_version) for r in broker.requests()}
    ranges = RELEASES["2.8"].api_ranges
    assert all(ranges[key][0] <= version <= ranges[key][1] for key, version in used)
    assert (ApiKey.Produce, 9) in used
    assert (ApiKey.Fetch, 12) in used


def test_levels_stored_by_a_newer_run_are_capped_at_the_release(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path) as newest:
        assert _features(newest.bootstrap_servers)[1]["transaction.version"] == 2
    with KafkaBroker(data_dir=tmp_path, kafka_version="3.9") as older:
        assert _features(older.bootstrap_servers)[1] == {"metadata.version": 21}
