"""Produce (key 0), advertised 0-11, served 3-11.

Behaviour: each partition's records are validated as Kafka's LogValidator does (see
`records/validate.py`), checked against the producer's sequence state (idempotence), then
appended with the base offset and leader epoch stamped (a batch larger than
`segment.bytes` gets RECORD_LIST_TOO_LARGE, as in Kafka); duplicates of one of a producer's
last five batches are answered with the original offsets and not written again. Topics are
never auto-created here (Metadata does that); unknown ones get UNKNOWN_TOPIC_OR_PARTITION.
acks=0 gets no response at all; acks other than 0, 1 and -1 get INVALID_REQUIRED_ACKS.
A disk error on append answers KAFKA_STORAGE_ERROR for that partition only, and takes it
offline (KAFKA_STORAGE_ERROR for every later read or write) until the broker restarts.

Version notes: v0-2 are advertised only because librdkafka before 2.11.1 checks for
Produce v0 before it compresses (KAFKA-18659); like Kafka 4, requests at those versions get
UNSUPPORTED_VERSION. v2+ carries log_append_time_ms, v5+ log_start_offset, v8+ record
errors and an error message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.log import RecordBatchTooLarge
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.validate import InvalidRecords, ValidatedBatch, validate_produce_records
from minibroker.server.context import RequestContext

log = logging.getLogger(__name__)

_Topic = struct_type(ApiKey.Produce, "response", "TopicProduceResponse")
_Partition = struct_type(
    ApiKey.Produce, "response", "TopicProduceResponse", "PartitionProduceResponse"
)
_RecordError = struct_type(
    ApiKey.Produce,
    "response",
    "TopicProduceResponse",
    "PartitionProduceResponse",
    "BatchIndexAndErrorMessage",
)
FIRST_SERVED_VERSION = 3
VALID_ACKS = (0, 1, -1)


@dataclass
class PartitionResult:
    error: ErrorCode = ErrorCode.NO_ERROR
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str]] = field(default_factory=list)

    def entry(self, index: int) -> Any:
        return _Partition(
            index=index,
            error_code=self.error,
            base_offset=self.base_offset,
            log_append_time_ms=self.log_append_time_ms,
            log_start_offset=self.log_start_offset,
            record_errors=[
                _RecordError(batch_index=i, batch_index_error_message=m)
                for i, m in self.record_errors
            ],
            error_message=self.error_message,
        )


def _rejected(error: ErrorCode, message: str | None = None) -> PartitionResult:
    return PartitionResult(error=error, error_message=message)


def _append_batches(
    ctx: RequestContext, partition: Partition, batches: list[ValidatedBatch], now_ms: int
) -> PartitionResult:
    producers = ctx.broker.producers
    result = PartitionResult()
    appended = False
    for batch in batches:
        check = producers.check_append(partition, batch)
        if check.error != ErrorCode.NO_ERROR:
            return _rejected(check.error, check.message)
        if check.duplicate_base_offset is not None:
            base_offset = check.duplicate_base_offset
            log_append_time = check.duplicate_log_append_time_ms
        else:
            base_offset = partition.log.append(batch.data, partition.leader_epoch, now_ms)
            last_offset = base_offset + batch.record_count - 1
            producers.record_append(partition, batch, base_offset, last_offset, batch.max_timestamp)
            log_append_time = batch.log_append_time_ms
            appended = True
        if result.base_offset < 0:
            result.base_offset = base_offset
            result.log_append_time_ms = log_append_time
    if appended:
        partition.notify_appended()
    result.log_start_offset = partition.log.log_start_offset
    return result


def produce_to_partition(
    ctx: RequestContext, topic_name: str, index: int, records: bytes | memoryview | None
) -> PartitionResult:
    """Validate and append one partition's records; writable records are stamped in place."""
    cluster = ctx.broker.cluster
    topic = cluster.topics.get(topic_name)
    partition = cluster.partition(topic_name, index)
    if topic is None or partition is None:
        return _rejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if (not_leader := ctx.leader_error(partition)) is not None:
        return _rejected(not_leader)
    now_ms = ctx.now_ms()
    try:
        batches = validate_produce_records(
            records or b"", cluster.validation_config(topic), now_ms, in_place=True
        )
    except InvalidRecords as exc:
        result = _rejected(exc.error_code, exc.message)
        result.record_errors = exc.record_errors
        return result
    try:
        return _append_batches(ctx, partition, batches, now_ms)
    except RecordBatchTooLarge as exc:
        return _rejected(ErrorCode.RECORD_LIST_TOO_LARGE, str(exc))
    except OSError as exc:
        log.error("append to %s-%d failed: %s", topic_name, index, exc)
        return _rejected(ErrorCode.KAFKA_STORAGE_ERROR, str(exc))


def _early_error(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if ctx.api_version < FIRST_SERVED_VERSION:
        return ErrorCode.UNSUPPORTED_VERSION
    if request.acks not in VALID_ACKS:
        return ErrorCode.INVALID_REQUIRED_ACKS
    return None


@handles(ApiKey.Produce, FIRST_SERVED_VERSION, 11, advertise_from=0)
async def handle_produce(ctx: RequestContext, request: Any) -> Any:
    early = _early_error(ctx, request)
    responses = []
    for topic_data in request.topic_data:
        partitions = []
        for data in topic_data.partition_data:
            if early is not None:
                result = _rejected(early)
            else:
                result = produce_to_partition(ctx, topic_data.name, data.index, data.records)
            partitions.append(result.entry(data.index))
        responses.append(_Topic(name=topic_data.name, partition_responses=partitions))
    if request.acks == 0:
        return None
    return new_response(ApiKey.Produce, ctx.api_version, responses=responses, throttle_time_ms=0)
