"""Wire helpers for the transaction data-path tests: transactional batches by hand, markers
written in-process, Fetch and ListOffsets at either isolation level."""

from __future__ import annotations

import time
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import request_class
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from minibroker.txn.markers import write_end_txn_marker
from tests.wire import WireClient

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
FETCH_VERSION = 11
LIST_OFFSETS_VERSION = 7
_ProduceTopic = request_class(ApiKey.Produce).TopicProduceData
_FetchTopic = request_class(ApiKey.Fetch).FetchTopic
_ListOffsetsTopic = request_class(ApiKey.ListOffsets).ListOffsetsTopic


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.CreateTopics,
            4,
            topics=[
                {
                    "name": topic,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [
                        {"name": name, "value": value} for name, value in (configs or {}).items()
                    ],
                }
            ],
            timeout_ms=5000,
            validate_only=False,
        )
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def txn_batch(
    producer_id: int,
    epoch: int,
    sequence: int,
    count: int,
    *,
    transactional: bool = True,
    timestamp: int | None = None,
) -> bytes:
    now_ms = int(time.time() * 1000) if timestamp is None else timestamp
    records = [(None, f"value-{sequence + i}".encode(), [], now_ms) for i in range(count)]
    return build_batch(
        records,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )


def produce(bootstrap: str, topic: str, batch: bytes, partition: int = 0) -> Any:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Produce,
            8,
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                _ProduceTopic(
                    name=topic,
                    partition_data=[
                        _ProduceTopic.PartitionProduceData(index=partition, records=batch)
                    ],
                )
            ],
        )
    return response.responses[0].partition_responses[0]


def marker(
    broker: ThreadedBroker,
    topic: str,
    producer_id: int,
    epoch: int,
    *,
    commit: bool,
    coordinator_epoch: int = 0,
    partition: int = 0,
) -> ErrorCode:
    async def write() -> ErrorCode:
        assert broker.broker is not None
        return write_end_txn_marker(
            broker.broker, topic, partition, producer_id, epoch, coordinator_epoch, commit
        )

    result = broker.call(write())
    assert isinstance(result, ErrorCode)
    return result


def fetch_request(topic: str, offset: int, isolation: int, max_wait_ms: int = 0) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 24,
        "isolation_level": isolation,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            _FetchTopic(
                topic=topic,
                partitions=[
                    _FetchTopic.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 24
                    )
                ],
            )
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def fetch(bootstrap: str, topic: str, offset: int, isolation: int) -> Any:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Fetch, FETCH_VERSION, **fetch_request(topic, offset, isolation)
        )
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR
    return partition


def headers(records: bytes | None) -> list[BatchHeader]:
    return [BatchHeader.parse(batch) for batch in split_batches(records or b"")]


def aborted(partition: Any) -> list[tuple[int, int]] | None:
    if partition.aborted_transactions is None:
        return None
    return [(txn.producer_id, txn.first_offset) for txn in partition.aborted_transactions]


def list_offset(bootstrap: str, topic: str, timestamp: int, isolation: int) -> tuple[int, int]:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.ListOffsets,
            LIST_OFFSETS_VERSION,
            replica_id=-1,
            isolation_level=isolation,
            topics=[
                _ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        _ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=0, timestamp=timestamp, current_leader_epoch=-1
                        )
                    ],
                )
            ],
        )
    partition = response.topics[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR
    return partition.offset, partition.timestamp
