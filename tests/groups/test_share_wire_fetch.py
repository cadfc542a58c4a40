"""ShareFetch and ShareAcknowledge over raw requests: acquiring, acknowledging each type,
redelivery to another member, the long poll, share sessions (open, next epoch, forget,
close), and Kafka's error codes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.log.batch import offset_and_size, parse_header
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.wire import WireClient

ACCEPT, RELEASE, REJECT = 1, 2, 3


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as running:
        yield running


@pytest.fixture
def client(broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


_topic_numbers = iter(range(1_000_000))


def new_topic(broker: KafkaBroker, client: WireClient) -> tuple[str, uuid.UUID]:
    name = f"share-{next(_topic_numbers)}"
    broker.create_topic(name)
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": name, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return name, uuid.UUID(str(metadata.topics[0].topic_id))


def produce(broker: KafkaBroker, topic: str, count: int) -> None:
    for value in range(count):
        broker.produce(topic, str(value))


def opened(broker: KafkaBroker, client: WireClient, records: int, *members: str) -> uuid.UUID:
    """A new topic, a share session per member on it (the share partition starts at the log
    end, `share.auto.offset.reset=latest`), then `records` records, one batch each."""
    name, topic_id = new_topic(broker, client)
    for member in members:
        answer = share_fetch(client, member, 0, topic_id)
        assert (answer.error_code, acquired(answer)) == (ErrorCode.NO_ERROR, [])
    produce(broker, name, records)
    return topic_id


def share_fetch(
    client: WireClient,
    member: str,
    epoch: int,
    topic_id: uuid.UUID | None = None,
    *,
    group: str = "g",
    acks: list[tuple[int, int, list[int]]] | None = None,
    forget: bool = False,
    max_records: int = 500,
    max_wait_ms: int = 0,
) -> Any:
    topics = []
    if topic_id is not None and (acks or not forget):
        batches = [
            {"first_offset": f, "last_offset": last, "acknowledge_types": t}
            for f, last, t in acks or []
        ]
        topics = [
            {
                "topic_id": topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ]
    forgotten = [{"topic_id": topic_id, "partitions": [0]}] if forget else []
    return client.call(
        ApiKey.ShareFetch,
        1,
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=max_records,
        batch_size=max_records,
        topics=topics,
        forgotten_topics_data=forgotten,
    )


def share_acknowledge(
    client: WireClient,
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: list[tuple[int, int, list[int]]],
    group: str = "g",
) -> Any:
    batches = [
        {"first_offset": f, "last_offset": last, "acknowledge_types": t} for f, last, t in acks
    ]
    return client.call(
        ApiKey.ShareAcknowledge,
        1,
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ],
    )


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [
        (r.first_offset, r.last_offset, r.delivery_count)
        for topic in response.responses
        for partition in topic.partitions
        for r in partition.acquired_records
    ]


def batch_offsets(response: Any) -> list[tuple[int, int]]:
    """(base, last) offset of every stored batch in the response's records."""
    found = []
    for topic in response.responses:
        for partition in topic.partitions:
            data = bytes(partition.records or b"")
            position = 0
            while position < len(data):
                header = parse_header(data, position)
                found.append((header.base_offset, header.last_offset))
                position += offset_and_size(data, position)[1]
    return found


def partition_errors(response: Any) -> list[tuple[int, int]]:
    return [
        (p.error_code, p.acknowledge_error_code) for t in response.responses for p in t.partitions
    ]


def test_a_member_acquires_new_records_and_gets_their_stored_batches(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic_id = opened(broker, client, 3, "m1")
    fetched = share_fetch(client, "m1", 1)
    assert fetched.error_code == ErrorCode.NO_ERROR
    assert fetched.acquisition_lock_timeout_ms == 30_000
    assert acquired(fetched) == [(0, 2, 1)]
    assert batch_offsets(fetched) == [(0, 0), (1, 1), (2, 2)]
    assert [t.topic_id for t in fetched.responses] == [topic_id]


def test_max_records_keeps_batches_whole_and_the_next_fetch_goes_on(
    broker: KafkaBroker, client: WireClient
) -> None:
    opened(broker, client, 5, "m1")
    assert acquired(share_fetch(client, "m1", 1, max_records=2)) == [(0, 1, 1)]
    assert acquired(share_fetch(client, "m1", 2, max_records=2)) == [(2, 3, 1)]
    assert acquired(share_fetch(client, "m1", 3)) == [(4, 4, 1)]


def test_acknowledgement_types_and_redelivery_to_another_member(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic_id = opened(broker, client, 4, "m1", "m2")
    assert acquired(share_fetch(client, "m1", 1)) == [(0, 3, 1)]
    assert acquired(share_fetch(client, "m2", 1)) == []  # everything is locked to m1
    acked = share_acknowledge(
        client, "m1", 2, topic_id, [(0, 3, [ACCEPT, RELEASE, REJECT, RELEASE])]
    )
    assert acked.error_code == ErrorCode.NO_ERROR
    assert [(p.error_code) for t in acked.responses for p in t.partitions] == [0]
    redelivered = share_fetch(client, "m2", 2)
    assert acquired(redelivered) == [(1, 1, 2), (3, 3, 2)]
    assert batch_offsets(redelivered) == [(1, 1), (3, 3)]
    # m1 no longer holds them: INVALID_RECORD_STATE, and nothing changes
    refused = share_fetch(client, "m1", 3, topic_id, acks=[(1, 1, [ACCEPT])])
    assert partition_errors(refused) == [(0, ErrorCode.INVALID_RECORD_STATE)]
    done = share_fetch(client, "m2", 3, topic_id, acks=[(1, 1, [ACCEPT]), (3, 3, [ACCEPT])])
    assert partition_errors(done) == [(0, 0)]


def test_closing_a_session_releases_what_the_member_holds(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic_id = opened(broker, client, 2, "m1", "m2")
    assert acquired(share_fetch(client, "m1", 1)) == [(0, 1, 1)]
    closed = share_fetch(client, "m1", -1, topic_id, acks=[(0, 0, [ACCEPT])])
    assert partition_errors(closed) == [(0, 0)]
    # fetched but never delivered, as Kafka counts it: its delivery count went back down
    assert acquired(share_fetch(client, "m2", 1)) == [(1, 1, 1)]
    gone = share_fetch(client, "m1", 2)
    assert gone.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_a_waiting_fetch_is_woken_by_an_append(broker: KafkaBroker, client: WireClient) -> None:
    name, topic_id = new_topic(broker, client)
    share_fetch(client, "m1", 0, topic_id)
    client.send(
        ApiKey.ShareFetch,
        1,
        group_id="g",
        member_id="m1",
        share_session_epoch=1,
        max_wait_ms=10_000,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=10,
        batch_size=10,
        topics=[],
        forgotten_topics_data=[],
    )
    produce(broker, name, 1)
    assert acquired(client.recv(ApiKey.ShareFetch, 1)[1]) == [(0, 0, 1)]


def test_session_epochs(broker: KafkaBroker, client: WireClient) -> None:
    topic_id = opened(broker, client, 1, "m1")
    assert share_fetch(client, "m1", 5).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert share_fetch(client, "nobody", 1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    with_acks = share_fetch(client, "m1", 0, topic_id, acks=[(0, 0, [ACCEPT])])
    assert with_acks.error_code == ErrorCode.INVALID_REQUEST
    ack_at_zero = share_acknowledge(client, "m1", 0, topic_id, [(0, 0, [ACCEPT])])
    assert ack_at_zero.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert share_fetch(client, "m1", 1).error_code == ErrorCode.NO_ERROR  # still at epoch 1


def test_forgotten_partitions_leave_the_session(broker: KafkaBroker, client: WireClient) -> None:
    topic_id = opened(broker, client, 1, "m1")
    forgot = share_fetch(client, "m1", 1, topic_id, forget=True)
    assert (forgot.error_code, acquired(forgot)) == (ErrorCode.NO_ERROR, [])
    assert acquired(share_fetch(client, "m1", 2, topic_id)) == [(0, 0, 1)]


@pytest.mark.parametrize(
    ("acks", "error"),
    [
        ([(2, 1, [ACCEPT])], ErrorCode.INVALID_REQUEST),
        ([(0, 1, [ACCEPT]), (1, 1, [ACCEPT])], ErrorCode.INVALID_REQUEST),
        ([(0, 1, [ACCEPT, ACCEPT, ACCEPT])], ErrorCode.INVALID_REQUEST),
        ([(0, 0, [9])], ErrorCode.INVALID_REQUEST),
        ([(0, 0, [4])], ErrorCode.INVALID_REQUEST),  # RENEW without IsRenewAck
        ([(7, 8, [ACCEPT])], ErrorCode.INVALID_REQUEST),
    ],
)
def test_malformed_acknowledgements_get_invalid_request(
    broker: KafkaBroker, client: WireClient, acks: list[tuple[int, int, list[int]]], error: int
) -> None:
    topic_id = opened(broker, client, 2, "m1")
    assert acquired(share_fetch(client, "m1", 1)) == [(0, 1, 1)]
    refused = share_acknowledge(client, "m1", 2, topic_id, acks)
    assert [p.error_code for t in refused.responses for p in t.partitions] == [error]
    accepted = share_acknowledge(client, "m1", 3, topic_id, [(0, 1, [ACCEPT])])
    assert [p.error_code for t in accepted.responses for p in t.partitions] == [0]


def test_an_unknown_topic_id_is_answered_per_partition(client: WireClient) -> None:
    answer = share_fetch(client, "m9", 0, uuid.uuid4())
    assert partition_errors(answer) == [(ErrorCode.UNKNOWN_TOPIC_ID, 0)]


def test_share_state_survives_a_restart(tmp_path: Path) -> None:
    """Acknowledged records stay settled, acquired ones come back available with their
    delivery counts (stored in `__share_group_state`), and the next fetch goes on from there."""
    with KafkaBroker(data_dir=tmp_path / "data") as durable:
        with WireClient(durable.bootstrap_servers) as wire:
            topic_id = opened(durable, wire, 6, "m1")
            assert acquired(share_fetch(wire, "m1", 1)) == [(0, 5, 1)]
            acks = [(0, 3, [ACCEPT, REJECT, RELEASE, ACCEPT])]
            again = share_fetch(wire, "m1", 2, topic_id, acks=acks)
            assert partition_errors(again) == [(0, 0)]
            assert acquired(again) == [(2, 2, 2)]  # the released record, delivered again
        name = next(t for t in durable.topics() if t.startswith("share-"))
        before = durable.share_partition("g", name)
        durable.restart()
        after = durable.share_partition("g", name)
        assert before is not None and after is not None
        assert (after.start_offset, after.end_offset) == (2, 6)
        assert {o: (r.state, r.delivery_count) for o, r in after.records.items()} == {
            2: ("AVAILABLE", 2),
            3: ("ACKNOWLEDGED", 1),
            4: ("AVAILABLE", 1),
            5: ("AVAILABLE", 1),
        }
        with WireClient(durable.bootstrap_servers) as wire:
            assert acquired(share_fetch(wire, "m2", 0, topic_id)) == [(2, 2, 3), (4, 5, 2)]
        assert "__share_group_state" in durable.topics()
