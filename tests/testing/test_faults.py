"""Fault and latency injection, hooks and recording, seen through real clients and raw frames."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from minibroker.protocol.codec import struct_type
from minibroker.testing import CLOSE, ApiKey, Call, ErrorCode, KafkaBroker, KafkaCluster
from tests.wire import WireClient

pytestmark = pytest.mark.clients

DEADLINE_S = 30.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        running.create_topic("t", partitions=2)
        yield running


def _fetch_body(topic: str, partitions: list[int]) -> dict[str, Any]:
    return {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    for p in partitions
                ],
            }
        ],
    }


def test_pushed_errors_answer_the_next_matching_requests_in_order(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.Fetch, ErrorCode.NOT_LEADER_OR_FOLLOWER, partition=1)
    kafka.push_errors(ApiKey.Heartbeat, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)
    with WireClient(kafka.bootstrap_servers) as client:
        untouched = client.call(ApiKey.Fetch, 11, **_fetch_body("t", [0]))
        failed = client.call(ApiKey.Fetch, 11, **_fetch_body("t", [0, 1]))
        again = client.call(ApiKey.Fetch, 11, **_fetch_body("t", [1]))
        beats = [
            client.call(ApiKey.Heartbeat, 4, group_id="g", generation_id=1, member_id="m")
            for _ in range(3)
        ]
    assert untouched.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
    assert [p.error_code for p in failed.responses[0].partitions] == [
        ErrorCode.NO_ERROR,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ]
    assert again.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
    assert [b.error_code for b in beats] == [
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]


def test_errors_cannot_be_pushed_where_a_response_has_no_error_code(kafka: KafkaBroker) -> None:
    with pytest.raises(ValueError):
        kafka.push_errors(ApiKey.Metadata, ErrorCode.UNKNOWN_SERVER_ERROR, topic="t")


def test_confluent_producer_retries_pushed_errors_and_writes_once(kafka: KafkaBroker) -> None:
    kafka.push_errors(
        ApiKey.Produce,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        topic="t",
    )
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "retry.backoff.ms": 10})
    delivered: list[Any] = []
    producer.produce("t", b"v", partition=0, on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(DEADLINE_S) == 0
    assert delivered == [None]
    assert kafka.values("t") == [b"v"]
    assert len(kafka.requests(ApiKey.Produce)) == 3


def test_kafka_python_retries_only_the_partition_given_a_pushed_error(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.Produce, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="t", partition=1)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=60_000, retries=5)
    futures = [producer.send("t", value, partition=p) for p, value in enumerate([b"a", b"b"])]
    producer.flush(DEADLINE_S)  # both partitions ready at once: one request
    assert [future.get(timeout=DEADLINE_S).offset for future in futures] == [0, 0]
    producer.close()
    produced = [request.partitions() for request in kafka.requests(ApiKey.Produce)]
    assert produced == [{("t", 0), ("t", 1)}, {("t", 1)}]
    assert kafka.values("t", partition=0) == [b"a"]
    assert kafka.values("t", partition=1) == [b"b"]


def test_latency_shows_in_the_clients_measured_round_trip() -> None:
    delay_s = 0.25
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.create_topic("slow", partitions=2)  # partition 1 is led by node 2
        cluster.set_latency(delay_s, node=2, api_key=ApiKey.Produce)
        stats: list[dict[str, Any]] = []
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "statistics.interval.ms": 100,
                "stats_cb": lambda text: stats.append(json.loads(text)),
                "linger.ms": 0,
            }
        )
        for _ in range(3):
            producer.produce("slow", b"v", partition=1)
            assert producer.flush(DEADLINE_S) == 0
        wait_for(lambda: _max_rtt_us(stats, 2) > 0, "statistics with node 2's round trip")
        producer.flush(DEADLINE_S)
        # librdkafka measures each request's round trip; node 2's include the delay.
        assert _max_rtt_us(stats, 2) >= delay_s * 1_000_000
        assert _max_rtt_us(stats, 1) < delay_s * 1_000_000
        assert cluster.values("slow", partition=1) == [b"v"] * 3


def _max_rtt_us(stats: list[dict[str, Any]], node: int) -> int:
    values = [
        broker["rtt"]["max"]
        for snapshot in stats
        for broker in snapshot["brokers"].values()
        if broker["nodeid"] == node
    ]
    return max(values, default=0)


def test_latency_is_a_lower_bound_on_kafka_python_send(kafka: KafkaBroker) -> None:
    delay_s = 0.3
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    producer.send("t", b"warm", partition=0).get(timeout=DEADLINE_S)
    kafka.set_latency(delay_s, api_key=ApiKey.Produce)
    started = time.monotonic()
    producer.send("t", b"slow", partition=0).get(timeout=DEADLINE_S)
    assert time.monotonic() - started >= delay_s
    producer.close()


def test_held_requests_wait_for_release(kafka: KafkaBroker) -> None:
    hold = kafka.hold(ApiKey.Produce)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    future = producer.send("t", b"held", partition=0)
    wait_for(lambda: hold.held == 1, "the produce to be held")
    assert kafka.values("t") == []
    hold.release()
    future.get(timeout=DEADLINE_S)
    assert kafka.values("t", partition=0) == [b"held"]
    producer.close()


def test_hold_until_a_condition_holds(kafka: KafkaBroker) -> None:
    released = threading.Event()
    hold = kafka.hold(ApiKey.Produce, until=released.is_set)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    future = producer.send("t", b"later", partition=0)
    wait_for(lambda: hold.held == 1, "the produce to be held")
    released.set()
    hold.recheck()
    future.get(timeout=DEADLINE_S)
    assert kafka.values("t", partition=0) == [b"later"]
    producer.close()


def test_hook_answers_a_custom_metadata_response_the_client_sees(kafka: KafkaBroker) -> None:
    broker_type = struct_type(ApiKey.Metadata, "response", "MetadataResponseBroker")
    topic_type = struct_type(ApiKey.Metadata, "response", "MetadataResponseTopic")
    partition_type = struct_type(
        ApiKey.Metadata, "response", "MetadataResponseTopic", "MetadataResponsePartition"
    )
    host, _, port = kafka.bootstrap_servers.partition(":")

    def ghost_topic(call: Call) -> Any:
        return call.respond(
            brokers=[broker_type(node_id=1, host=host, port=int(port), rack="rack-z")],
            cluster_id="custom-cluster",
            controller_id=1,
            topics=[
                topic_type(
                    error_code=0,
                    name="ghost",
                    is_internal=False,
                    partitions=[
                        partition_type(
                            error_code=0,
                            partition_index=index,
                            leader_id=1,
                            leader_epoch=0,
                            replica_nodes=[1],
                            isr_nodes=[1],
                            offline_replicas=[],
                        )
                        for index in range(5)
                    ],
                )
            ],
        )

    kafka.control(ApiKey.Metadata, ghost_topic, keep=True)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    metadata = admin.list_topics(timeout=DEADLINE_S)
    assert metadata.cluster_id == "custom-cluster"
    assert sorted(metadata.topics) == ["ghost"]
    assert sorted(metadata.topics["ghost"].partitions) == [0, 1, 2, 3, 4]


def test_hooks_pass_answer_once_or_close(kafka: KafkaBroker) -> None:
    seen: list[str] = []

    def watch(call: Call) -> None:
        seen.append(call.body.member_id)

    beat = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    kafka.control(ApiKey.Heartbeat, watch)
    kafka.control(ApiKey.Heartbeat, lambda call: call.error(ErrorCode.ILLEGAL_GENERATION))
    kafka.control(ApiKey.Metadata, lambda call: CLOSE)
    with WireClient(kafka.bootstrap_servers) as client:
        first = client.call(ApiKey.Heartbeat, 4, **beat)
        second = client.call(ApiKey.Heartbeat, 4, **beat)
        client.send(ApiKey.Metadata, 9, topics=None)
        assert client.is_closed_by_peer()
    assert first.error_code == ErrorCode.ILLEGAL_GENERATION
    assert second.error_code == ErrorCode.UNKNOWN_MEMBER_ID  # handled by the broker
    assert seen == ["m", "m"]
    with WireClient(kafka.bootstrap_servers) as client:
        assert client.call(ApiKey.Metadata, 9, topics=None).topics


def test_disconnect_after_n_requests(kafka: KafkaBroker) -> None:
    kafka.disconnect_after(2, api_key=ApiKey.ApiVersions)
    with WireClient(kafka.bootstrap_servers) as client:
        client.call(ApiKey.ApiVersions, 3)
        client.call(ApiKey.Metadata, 9, topics=None)
        client.call(ApiKey.ApiVersions, 3)
        client.send(ApiKey.ApiVersions, 3)
        assert client.is_closed_by_peer()
    with WireClient(kafka.bootstrap_servers) as client:
        assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR


def test_drop_connections_closes_open_ones(kafka: KafkaBroker) -> None:
    with WireClient(kafka.bootstrap_servers) as client:
        client.call(ApiKey.ApiVersions, 3)
        kafka.drop_connections()
        assert client.is_closed_by_peer()


def test_requests_are_recorded_and_filterable() -> None:
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.create_topic("t", partitions=2)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, client_id="rec")
        producer.send("t", b"a", partition=0).get(timeout=DEADLINE_S)
        producer.send("t", b"b", partition=1).get(timeout=DEADLINE_S)
        producer.close()
        produced = cluster.requests(ApiKey.Produce, client_id="rec")
        assert [r.node_id for r in produced] == [1, 2]
        assert all(r.api_name == "Produce" and r.api_version >= 3 for r in produced)
        assert produced[0].time <= produced[1].time
        assert produced[0].partitions() == {("t", 0)}
        assert produced[0].body.topic_data[0].name == "t"
        assert cluster.requests(ApiKey.Produce, node=2) == produced[1:]
        assert cluster.requests(topic="t") == produced
        assert cluster.requests(client_id="nobody") == []
        cluster.clear_requests()
        assert cluster.requests() == []


def test_recording_can_be_turned_off() -> None:
    with KafkaBroker(storage="memory", record_requests=False) as kafka:
        with WireClient(kafka.bootstrap_servers) as client:
            client.call(ApiKey.ApiVersions, 3)
        assert kafka.requests() == []


def test_only_the_last_max_recorded_requests_are_kept() -> None:
    with KafkaBroker(storage="memory", max_recorded_requests=3) as kafka:
        with WireClient(kafka.bootstrap_servers) as client:
            for _ in range(5):
                client.call(ApiKey.ApiVersions, 3)
        assert [r.correlation_id for r in kafka.requests()] == [3, 4, 5]
    with KafkaBroker(storage="memory") as kafka:
        assert kafka.faults.max_recorded_requests == 10_000
    with pytest.raises(ValueError):
        KafkaBroker(max_recorded_requests=0)


def test_errors_and_latency_can_target_one_node() -> None:
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.set_coordinator(1)  # every group's coordinator: node 1
        cluster.push_errors(ApiKey.Heartbeat, ErrorCode.NOT_COORDINATOR, node=2)
        beat = {"group_id": "g", "generation_id": 1, "member_id": "m"}
        with WireClient(cluster.address(1)) as client:
            assert client.call(ApiKey.Heartbeat, 4, **beat).error_code != ErrorCode.NOT_COORDINATOR
        with WireClient(cluster.address(2)) as client:
            assert client.call(ApiKey.Heartbeat, 4, **beat).error_code == ErrorCode.NOT_COORDINATOR


def test_a_failing_hook_closes_the_connection_only(kafka: KafkaBroker) -> None:
    def broken(call: Call) -> None:
        raise RuntimeError("bug in a test hook")

    kafka.control(ApiKey.ApiVersions, broken)
    with WireClient(kafka.bootstrap_servers) as client:
        client.send(ApiKey.ApiVersions, 3)
        assert client.is_closed_by_peer()
    with WireClient(kafka.bootstrap_servers) as client:
        client.send(ApiKey.ApiVersions, 3)
        assert client.is_closed_by_peer()  # the hook stays until it answers
    kafka.clear_faults()
    with WireClient(kafka.bootstrap_servers) as client:
        assert client.call(ApiKey.ApiVersions, 3).error_code == ErrorCode.NO_ERROR
