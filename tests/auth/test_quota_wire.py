"""Client quotas over TCP: DescribeClientQuotas and AlterClientQuotas (v0 and v1) as Kafka
answers them, their authorization, and enforcement seen by a raw client: a produce over
`producer_byte_rate` and a fetch over `consumer_byte_rate` answered with Kafka's throttle time
and the connection muted for it, CreateTopics over `controller_mutation_rate` refused
THROTTLING_QUOTA_EXCEEDED (v6+) or only throttled (v5)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from minibroker.testing.security import DEFAULT
from tests.wire import WireClient, encode_request, request_frame

TOPIC = "t"
# Two samples of one second: a fresh rate is measured over one second, so throttles stay short.
SHORT_WINDOWS = {"quota.window.num": "2", "controller.quota.window.num": "2"}


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory", config=SHORT_WINDOWS) as running:
        running.create_topic(TOPIC, partitions=1)
        yield running


def entity(**names: str | None) -> list[dict[str, Any]]:
    return [
        {"entity_type": kind.replace("_", "-"), "entity_name": name} for kind, name in names.items()
    ]


def alter(
    client: WireClient, version: int, entries: list[dict[str, Any]], validate_only: bool = False
) -> Any:
    return client.call(
        ApiKey.AlterClientQuotas, version, entries=entries, validate_only=validate_only
    )


def describe(
    client: WireClient,
    version: int,
    components: list[tuple[str, int, str | None]],
    strict: bool = False,
) -> Any:
    return client.call(
        ApiKey.DescribeClientQuotas,
        version,
        components=[{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
        strict=strict,
    )


def described(response: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert response.error_code == ErrorCode.NO_ERROR
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe(kafka: KafkaBroker, version: int) -> None:
    with WireClient(kafka.bootstrap_servers) as client:
        response = alter(
            client,
            version,
            [
                {
                    "entity": entity(user="alice", client_id=None),
                    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                },
                {
                    "entity": entity(client_id="app"),
                    "ops": [{"key": "consumer_byte_rate", "value": 2048.0, "remove": False}],
                },
            ],
        )
        assert [(e.error_code, e.error_message) for e in response.entries] == [(0, None), (0, None)]
        alice = (("client-id", None), ("user", "alice"))
        app = (("client-id", "app"),)
        assert described(describe(client, version, [("user", 0, "alice")])) == {
            alice: {"producer_byte_rate": 1024.0}
        }
        assert described(describe(client, version, [("client-id", 2, None)])).keys() == {alice, app}
        assert described(
            describe(client, version, [("client-id", 2, None)], strict=True)
        ).keys() == {app}
        assert described(describe(client, version, [("client-id", 1, None)])).keys() == {alice}
        assert described(describe(client, version, [])).keys() == {alice, app}
        removed = alter(
            client,
            version,
            [
                {
                    "entity": entity(client_id="app"),
                    "ops": [{"key": "consumer_byte_rate", "value": 0.0, "remove": True}],
                }
            ],
        )
        assert removed.entries[0].error_code == ErrorCode.NO_ERROR
        assert described(describe(client, version, [])).keys() == {alice}


@pytest.mark.parametrize("version", [0, 1])
def test_errors_as_kafka_answers_them(kafka: KafkaBroker, version: int) -> None:
    with WireClient(kafka.bootstrap_servers) as client:
        response = alter(
            client,
            version,
            [
                {
                    "entity": entity(user="bob"),
                    "ops": [{"key": "nope", "value": 1.0, "remove": False}],
                },
                {"entity": entity(ip="1.2.3.4", user="x"), "ops": []},
                {
                    "entity": entity(user="carol"),
                    "ops": [{"key": "request_percentage", "value": 50.0, "remove": False}],
                },
            ],
            validate_only=True,
        )
        assert [(e.error_code, e.error_message) for e in response.entries] == [
            (ErrorCode.INVALID_REQUEST, "Invalid configuration key nope"),
            (
                ErrorCode.INVALID_REQUEST,
                "Invalid quota entity combination, IP entity shouldnot be combined with User or "
                "ClientId",
            ),
            (ErrorCode.NO_ERROR, None),
        ]
        assert kafka.quotas() == {}  # validate_only
        unknown = describe(client, version, [("group", 2, None)])
        assert (unknown.error_code, unknown.error_message, unknown.entries) == (
            ErrorCode.UNSUPPORTED_VERSION,
            "Unsupported entity type group",
            None,
        )
        null_exact = describe(client, version, [("user", 0, None)])
        assert (null_exact.error_code, null_exact.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        )


def test_cluster_authorization() -> None:
    with (
        KafkaBroker(storage="memory", config=AUTHORIZER_CONFIG) as kafka,
        WireClient(kafka.bootstrap_servers) as client,
    ):
        refused = describe(client, 1, [])
        assert (refused.error_code, refused.error_message, refused.entries) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
            None,
        )
        ops = [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]
        response = alter(client, 1, [{"entity": entity(user="a"), "ops": ops}])
        assert [(e.error_code, e.error_message) for e in response.entries] == [
            (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        ]
        kafka.add_acl("User:ANONYMOUS", "DESCRIBE_CONFIGS", cluster=True)
        kafka.add_acl("User:ANONYMOUS", "ALTER_CONFIGS", cluster=True)
        assert (
            alter(client, 1, [{"entity": entity(user="a"), "ops": ops}]).entries[0].error_code == 0
        )
        assert described(describe(client, 1, [])) == {(("user", "a"),): {"producer_byte_rate": 1.0}}


def answered_after_mute(client: WireClient, throttle_ms: int) -> float:
    """Send a Metadata request right away; the seconds until it is answered."""
    sent = time.monotonic()
    client.call(
        ApiKey.Metadata,
        12,
        topics=[],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return time.monotonic() - sent


def test_produce_over_producer_byte_rate_is_throttled(kafka: KafkaBroker) -> None:
    quota = 1000
    kafka.set_quota(user="ANONYMOUS", producer_byte_rate=quota)
    batch = build_batch([(None, b"x" * 1500, [], int(time.time() * 1000))])
    fields = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    size = len(request_frame(ApiKey.Produce, 9, 1, encode_request(ApiKey.Produce, 9, **fields))) - 4
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Produce, 9, **fields)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
        # Kafka: (rate - quota) / quota * window, the fresh rate over (samples - 1) windows.
        expected = int((size - quota) / quota * 1000 + 0.5)
        assert response.throttle_time_ms == expected > 0
        waited = answered_after_mute(client, response.throttle_time_ms)
    assert waited >= response.throttle_time_ms / 1000 * 0.8


def test_acks_0_produce_over_producer_byte_rate_mutes_the_connection(kafka: KafkaBroker) -> None:
    quota = 1000
    kafka.set_quota(user="ANONYMOUS", producer_byte_rate=quota)
    batch = build_batch([(None, b"x" * 1500, [], int(time.time() * 1000))])
    fields = {
        "transactional_id": None,
        "acks": 0,
        "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    }
    size = len(request_frame(ApiKey.Produce, 9, 1, encode_request(ApiKey.Produce, 9, **fields))) - 4
    expected_ms = int((size - quota) / quota * 1000 + 0.5)
    with WireClient(kafka.bootstrap_servers) as client:
        client.send(ApiKey.Produce, 9, **fields)  # no answer: acks=0
        waited = answered_after_mute(client, expected_ms)
    assert kafka.values(TOPIC) == [b"x" * 1500]
    assert waited >= expected_ms / 1000 * 0.8


def fetch_fields(offset: int = 0) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def test_fetch_over_consumer_byte_rate_is_throttled_and_empty(kafka: KafkaBroker) -> None:
    kafka.produce(TOPIC, b"y" * 2000)
    with WireClient(kafka.bootstrap_servers) as client:
        unthrottled = client.call(ApiKey.Fetch, 12, **fetch_fields())
        assert unthrottled.throttle_time_ms == 0 and unthrottled.responses[0].partitions[0].records
        kafka.set_quota(client_id="wire", consumer_byte_rate=500)
        response = client.call(ApiKey.Fetch, 12, **fetch_fields())
        # Kafka answers a throttled fetch empty, without a session.
        assert response.throttle_time_ms > 0
        assert (response.error_code, response.session_id, response.responses) == (0, 0, [])
        waited = answered_after_mute(client, response.throttle_time_ms)
    assert waited >= response.throttle_time_ms / 1000 * 0.8


def create_topics(client: WireClient, version: int, topics: dict[str, int]) -> Any:
    return client.call(
        ApiKey.CreateTopics,
        version,
        topics=[
            {
                "name": name,
                "num_partitions": count,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name, count in topics.items()
        ],
        timeout_ms=5000,
        validate_only=False,
    )


def test_create_topics_over_controller_mutation_rate(kafka: KafkaBroker) -> None:
    kafka.set_quota(user=DEFAULT, controller_mutation_rate=1)  # a burst of 2 partitions
    with WireClient(kafka.bootstrap_servers) as client:
        response = create_topics(client, 7, {"a": 3, "b": 1})
    results = {topic.name: (topic.error_code, topic.error_message) for topic in response.topics}
    assert results == {
        "a": (ErrorCode.NO_ERROR, None),  # strict: accepted while the bucket was not empty
        "b": (ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded."),
    }
    assert 0 < response.throttle_time_ms <= 1000  # 1 partition short at 1 per second
    assert "a" in kafka.topics() and "b" not in kafka.topics()


def test_older_create_topics_versions_are_only_throttled(kafka: KafkaBroker) -> None:
    kafka.set_quota(user="ANONYMOUS", controller_mutation_rate=1)
    with WireClient(kafka.bootstrap_servers) as client:
        response = create_topics(client, 5, {"c": 3, "d": 2})
    assert [(t.name, t.error_code) for t in response.topics] == [("c", 0), ("d", 0)]
    assert 2000 < response.throttle_time_ms <= 3000  # the bucket at -3
