"""DescribeProducers (key 61), version 0.

Behaviour: for each requested partition, the producers with state on it, as Kafka's
`UnifiedLog.activeProducers` answers: producer id, epoch, last sequence, last batch timestamp,
coordinator epoch of the last transaction marker (-1 if none) and the first offset of its
open transaction (-1 if none). Producer ids expire after `producer.id.expiration.ms`, as in
Kafka. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a partition this node
does not lead (in-process clusters) NOT_LEADER_OR_FOLLOWER. Each topic needs READ, checked
first: else its partitions get TOPIC_AUTHORIZATION_FAILED ("Topic authorization failed.").

Version notes: v0 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.DescribeProducers, "response", "TopicResponse")
_Partition = struct_type(ApiKey.DescribeProducers, "response", "TopicResponse", "PartitionResponse")
_Producer = struct_type(
    ApiKey.DescribeProducers, "response", "TopicResponse", "PartitionResponse", "ProducerState"
)
NO_TXN_START_OFFSET = -1
_DENIED_MESSAGE = "Topic authorization failed."  # Kafka's ApiError carries the code's message


def _error_entry(index: int, error: ErrorCode | None, message: str | None = None) -> Any:
    return _Partition(
        partition_index=index, error_code=error, error_message=message, active_producers=[]
    )


def _partition_entry(ctx: RequestContext, topic: str, index: int) -> Any:
    partition = ctx.broker.cluster.partition(topic, index)
    error = (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if partition is None else ctx.leader_error(partition)
    )
    if error is not None or partition is None:
        return _error_entry(index, error)
    producers = ctx.broker.producers.active_producers(partition)
    return _Partition(
        partition_index=index,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        active_producers=[
            _Producer(
                producer_id=producer_id,
                producer_epoch=entry.producer_epoch,
                last_sequence=entry.last_seq,
                last_timestamp=entry.last_timestamp,
                coordinator_epoch=entry.coordinator_epoch,
                current_txn_start_offset=(
                    NO_TXN_START_OFFSET
                    if entry.current_txn_first_offset is None
                    else entry.current_txn_first_offset
                ),
            )
            for producer_id, entry in sorted(producers.items())
        ],
    )


@handles(ApiKey.DescribeProducers, 0, 0)
async def handle_describe_producers(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.authorized_names(
        AclOperation.READ, ResourceType.TOPIC, (topic.name for topic in request.topics)
    )
    topics = [
        _Topic(
            name=topic.name,
            partitions=[
                _partition_entry(ctx, topic.name, index)
                if topic.name in allowed
                else _error_entry(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED_MESSAGE)
                for index in topic.partition_indexes
            ],
        )
        for topic in request.topics
    ]
    return new_response(
        ApiKey.DescribeProducers, ctx.api_version, throttle_time_ms=0, topics=topics
    )
