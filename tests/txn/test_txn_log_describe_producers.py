"""DescribeProducers over TCP: the active producers of a partition, as Kafka answers them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.txn.txn_wire import create_topic, marker, produce, txn_batch
from tests.wire import WireClient

TOPIC = "described"
PID_IDEMPOTENT, PID_TXN = 5000, 6000


def describe(bootstrap: str, topics: dict[str, list[int]]) -> list[tuple[str, Any]]:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.DescribeProducers,
            0,
            topics=[
                {"name": name, "partition_indexes": indexes} for name, indexes in topics.items()
            ],
        )
    return [(topic.name, topic.partitions) for topic in response.topics]


def producer_states(partition: Any) -> list[tuple[int, int, int, int, int, int]]:
    return [
        (
            p.producer_id,
            p.producer_epoch,
            p.last_sequence,
            p.last_timestamp,
            p.coordinator_epoch,
            p.current_txn_start_offset,
        )
        for p in partition.active_producers
    ]


def test_active_producers_with_their_transactions(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data") as broker:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, TOPIC, partitions=2)
        idempotent = txn_batch(PID_IDEMPOTENT, 2, 0, 3, transactional=False, timestamp=1_000)
        assert produce(bootstrap, TOPIC, idempotent).error_code == ErrorCode.NO_ERROR  # 0-2
        transactional = txn_batch(PID_TXN, 4, 0, 2, timestamp=2_000)
        assert produce(bootstrap, TOPIC, transactional).error_code == ErrorCode.NO_ERROR  # 3-4

        [(name, [partition_0, partition_1])] = describe(bootstrap, {TOPIC: [0, 1]})
        assert name == TOPIC
        assert (partition_0.partition_index, partition_0.error_code) == (0, ErrorCode.NO_ERROR)
        assert producer_states(partition_0) == [
            (PID_IDEMPOTENT, 2, 2, 1_000, -1, -1),
            (PID_TXN, 4, 1, 2_000, -1, 3),
        ]
        assert producer_states(partition_1) == []

        assert marker(broker, TOPIC, PID_TXN, 4, commit=True, coordinator_epoch=7) == (
            ErrorCode.NO_ERROR
        )
        [(_, [partition_0])] = describe(bootstrap, {TOPIC: [0]})
        [_, txn_producer] = producer_states(partition_0)
        assert txn_producer[:3] == (PID_TXN, 4, 1)
        assert txn_producer[4:] == (7, -1)

        [(_, [missing_partition]), (_, [missing_topic])] = describe(
            bootstrap, {TOPIC: [2], "no-such-topic": [0]}
        )
        assert missing_partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert missing_topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
