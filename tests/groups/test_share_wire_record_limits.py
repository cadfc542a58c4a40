"""The in-flight record cap (`share.partition.max.record.locks`) and MaxRecords inside one
stored batch, over raw ShareFetch requests, as Kafka 4.3's SharePartition acquires: in
record-limit mode (ShareFetch v2 ShareAcquireMode 1) exactly
`min(MaxRecords, locks - in flight)` records, the rest of the batch in flight AVAILABLE for the
next fetch; in batch-optimized mode the batch holding the last record allowed is acquired
whole (Kafka's soft limit)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaBroker
from tests.groups.test_share_wire_fetch import acquired, batch_offsets, new_topic
from tests.wire import WireClient

ACCEPT = 1
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
LOCKS = 100  # share.partition.max.record.locks, Kafka's smallest allowed


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        yield running


@pytest.fixture
def client(broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


_groups = iter(range(1_000_000))


def capped_group(client: WireClient) -> str:
    """A new share group reading from the earliest offset, at most LOCKS records in flight."""
    group = f"capped-{next(_groups)}"
    configs = {"share.auto.offset.reset": "earliest", "share.partition.max.record.locks": LOCKS}
    answer = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            {
                "resource_type": 32,
                "resource_name": group,
                "configs": [
                    {"name": name, "config_operation": 0, "value": str(value)}
                    for name, value in configs.items()
                ],
            }
        ],
        validate_only=False,
    )
    assert answer.responses[0].error_code == ErrorCode.NO_ERROR
    return group


def produce_one_batch(client: WireClient, topic: str, count: int) -> None:
    now = int(time.time() * 1000)
    batch = build_batch([(None, f"v{n}".encode(), (), now) for n in range(count)])
    answer = client.call(
        ApiKey.Produce,
        9,
        transactional_id=None,
        acks=1,
        timeout_ms=5000,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    )
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR


def share_fetch_v2(
    client: WireClient,
    group: str,
    epoch: int,
    topic_id: uuid.UUID,
    mode: int,
    max_records: int = 500,
    acks: list[tuple[int, int, list[int]]] | None = None,
) -> Any:
    batches = [
        {"first_offset": f, "last_offset": last, "acknowledge_types": t}
        for f, last, t in acks or []
    ]
    answer = client.call(
        ApiKey.ShareFetch,
        2,
        group_id=group,
        member_id="m1",
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=max_records,
        batch_size=max_records,
        share_acquire_mode=mode,
        is_renew_ack=False,
        topics=[
            {
                "topic_id": topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ],
        forgotten_topics_data=[],
    )
    assert answer.error_code == ErrorCode.NO_ERROR
    return answer


def states(broker: KafkaBroker, group: str, topic: str) -> dict[str, list[int]]:
    """Each state's offsets of the share partition, first and last."""
    view = broker.share_partition(group, topic)
    assert view is not None
    found: dict[str, list[int]] = {}
    for offset, record in view.records.items():
        found.setdefault(f"{record.state}/{record.delivery_count}", []).append(offset)
    return {state: [offsets[0], offsets[-1]] for state, offsets in found.items()}


def test_record_limit_mode_acquires_only_the_room_left_splitting_the_batch(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic, topic_id = new_topic(broker, client)
    group = capped_group(client)
    produce_one_batch(client, topic, 200)
    first = share_fetch_v2(client, group, 0, topic_id, RECORD_LIMIT)
    assert acquired(first) == [(0, 99, 1)]
    assert batch_offsets(first) == [(0, 199)]  # the stored batch, whole, as Kafka sends it
    # The rest of the batch is in flight, available, never delivered yet.
    assert states(broker, group, topic) == {"ACQUIRED/1": [0, 99], "AVAILABLE/0": [100, 199]}
    rest = share_fetch_v2(client, group, 1, topic_id, RECORD_LIMIT, acks=[(0, 99, [ACCEPT])])
    assert acquired(rest) == [(100, 199, 1)]
    assert states(broker, group, topic) == {"ACQUIRED/1": [100, 199]}


def test_record_limit_mode_max_records_splits_a_batch(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic, topic_id = new_topic(broker, client)
    group = capped_group(client)
    produce_one_batch(client, topic, 50)
    assert acquired(share_fetch_v2(client, group, 0, topic_id, RECORD_LIMIT, 30)) == [(0, 29, 1)]
    assert acquired(share_fetch_v2(client, group, 1, topic_id, RECORD_LIMIT, 30)) == [(30, 49, 1)]


def test_batch_optimized_mode_keeps_the_batch_whole_then_stops_at_the_cap(
    broker: KafkaBroker, client: WireClient
) -> None:
    """Kafka's default mode: the limit is soft (`lastOffsetFromBatchWithRequestOffset`), the
    batch holding the 100th record is acquired whole; with 200 in flight nothing new is."""
    topic, topic_id = new_topic(broker, client)
    group = capped_group(client)
    produce_one_batch(client, topic, 200)
    assert acquired(share_fetch_v2(client, group, 0, topic_id, BATCH_OPTIMIZED)) == [(0, 199, 1)]
    produce_one_batch(client, topic, 10)
    assert acquired(share_fetch_v2(client, group, 1, topic_id, BATCH_OPTIMIZED)) == []
    settled = share_fetch_v2(client, group, 2, topic_id, BATCH_OPTIMIZED, acks=[(0, 199, [ACCEPT])])
    assert acquired(settled) == [(200, 209, 1)]
