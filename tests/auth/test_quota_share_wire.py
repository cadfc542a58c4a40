"""Client quotas on share groups over TCP, as Kafka throttles ShareFetch and ShareAcknowledge:
a ShareFetch over `consumer_byte_rate` is answered with no partitions and its throttle time and
the connection is muted for it (as Fetch); ShareAcknowledge counts against
`request_percentage`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.auth.test_quota_wire import SHORT_WINDOWS, answered_after_mute
from tests.wire import WireClient

TOPIC = "queue"
ACCEPT = 1


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory", config=SHORT_WINDOWS) as running:
        running.create_topic(TOPIC, partitions=1)
        yield running


def topic_id(client: WireClient) -> uuid.UUID:
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": TOPIC, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return uuid.UUID(str(metadata.topics[0].topic_id))


def share_fetch(
    client: WireClient, epoch: int, tid: uuid.UUID, acks: list[tuple[int, int]] | None = None
) -> Any:
    batches = [
        {"first_offset": f, "last_offset": last, "acknowledge_types": [ACCEPT]}
        for f, last in acks or []
    ]
    return client.call(
        ApiKey.ShareFetch,
        1,
        group_id="g",
        member_id="m1",
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=1,
        batch_size=1,
        topics=[
            {
                "topic_id": tid,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ],
        forgotten_topics_data=[],
    )


def acquired(response: Any) -> list[tuple[int, int]]:
    return [
        (r.first_offset, r.last_offset)
        for t in response.responses
        for p in t.partitions
        for r in p.acquired_records
    ]


def test_share_fetch_over_consumer_byte_rate_is_throttled_and_empty(kafka: KafkaBroker) -> None:
    with WireClient(kafka.bootstrap_servers) as client:
        tid = topic_id(client)
        assert share_fetch(client, 0, tid).error_code == ErrorCode.NO_ERROR  # the session
        for _ in range(3):
            kafka.produce(TOPIC, b"y" * 2000)
        unthrottled = share_fetch(client, 1, tid)
        assert (unthrottled.throttle_time_ms, acquired(unthrottled)) == (0, [(0, 0)])
        kafka.set_quota(client_id="wire", consumer_byte_rate=500)
        throttled = share_fetch(client, 2, tid, acks=[(0, 0)])
        # Kafka's throttled ShareFetch answer: no partitions, only the throttle time.
        assert throttled.error_code == ErrorCode.NO_ERROR
        assert throttled.throttle_time_ms > 0 and throttled.responses == []
        waited = answered_after_mute(client, throttled.throttle_time_ms)
    assert waited >= throttled.throttle_time_ms / 1000 * 0.8
    # As in Kafka, what the throttled fetch acquired stays locked to the member.
    view = kafka.share_partition("g", TOPIC)
    assert view is not None
    assert {o: r.state for o, r in view.records.items()} == {1: "ACQUIRED"}


def test_share_fetch_bytes_count_against_the_consumer_byte_rate(kafka: KafkaBroker) -> None:
    """The bytes of an unthrottled share fetch are recorded: the next one goes over the rate."""
    kafka.set_quota(client_id="wire", consumer_byte_rate=2500)
    with WireClient(kafka.bootstrap_servers) as client:
        tid = topic_id(client)
        share_fetch(client, 0, tid)
        for _ in range(2):
            kafka.produce(TOPIC, b"z" * 2000)
        first = share_fetch(client, 1, tid)
        assert (first.throttle_time_ms, acquired(first)) == (0, [(0, 0)])
        second = share_fetch(client, 2, tid, acks=[(0, 0)])
        assert second.throttle_time_ms > 0 and second.responses == []


def test_share_acknowledge_counts_against_request_percentage(kafka: KafkaBroker) -> None:
    kafka.set_quota(client_id="wire", request_percentage=0.01)  # 0.1 ms of handling a second
    with WireClient(kafka.bootstrap_servers) as client:
        tid = topic_id(client)
        share_fetch(client, 0, tid)
        throttles = []
        for epoch in range(1, 41):
            answer = client.call(
                ApiKey.ShareAcknowledge,
                1,
                group_id="g",
                member_id="m1",
                share_session_epoch=epoch,
                topics=[],
            )
            assert answer.error_code == ErrorCode.NO_ERROR
            throttles.append(answer.throttle_time_ms)
            if answer.throttle_time_ms > 0:
                break
    assert throttles[-1] > 0, throttles
