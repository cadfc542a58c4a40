"""Produce's native fast path: the common single-partition request answered from one C call.

`plain_produce` (minibroker/protocol/_accel.c) reads the whole request frame, from the request
header to the last record, and answers only for the common shape: Produce v9-13 (what
librdkafka and the Java client send), no transactional id, one topic, one partition, one
uncompressed, non-transactional CreateTime batch that `validate_produce_records` accepts.
This module then does what the handler does for such a batch (topic and leader lookup, the
topic's limits, the producer's sequence check, the append) and frames the answer from a
template per (version, topic, partition) with the correlation id and offsets patched in
(in one C call, `produce_answer`). The topic and partition are remembered per request key
(`_route`); the append is the log's `append_plain` (the common append without a header
parse or the storage guard's wrapper); a plain producer's batch (producer id -1) skips the
producer state, which only expires producers for it; an idempotent producer's next batch in
sequence (known producer, same epoch, no open transaction, not a duplicate) is checked and
recorded by the producer state's `next_in_sequence` and `record_next_in_sequence`, any other
idempotent batch by `check_append` and `record_append`.

The handler (`produce.py`) is the reference: everything this path does not answer exactly
as the handler would returns UNHANDLED, and the request is decoded and handled as always:
an unknown topic, a partition led elsewhere, invalid acks, acks=-1 on a replicated
partition, a LogAppendTime or recompressing or compacted-without-key topic, a batch over
max.message.bytes or out of the timestamp bounds, a duplicate or rejected sequence, and
every request `plain_produce` does not take. Only the append's own errors (a batch over
segment.bytes, a storage error) are answered here, as the handler answers them, because the
append cannot be tried twice.

`dispatch` calls `answer` only where nothing else must see the request: no test faults,
hooks or recording, no client quotas, no authorizer. MINIBROKER_PURE_PYTHON=1 (or no built
accelerator) turns the path off.
"""

from __future__ import annotations

import enum
import logging
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from minibroker.log import RecordBatchTooLarge
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import response_frame
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.produce_response import encode_produce_answers
from minibroker.records.accel import pure_python_forced
from minibroker.records.batch import NO_TIMESTAMP, TIMESTAMP_CREATE_TIME, set_max_timestamp
from minibroker.records.validate import CREATE_TIME, ValidatedBatch
from minibroker.txn.producers import NO_PRODUCER_ID

if TYPE_CHECKING:
    from minibroker.cluster.state import Cluster, Partition, Topic
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

_FIRST_TOPIC_ID_VERSION = 13
_VALID_ACKS = (0, 1, -1)
_SAME_CODEC = ("producer", "uncompressed")  # compression.type values that keep the batch

Plain: TypeAlias = tuple[
    int, int, int, "str | bytes", int, int, int, int, int, int, int, int, int, int, int, int
]
"""What `plain_produce` answers: (version, correlation id, acks, topic name or id bytes
(v13), partition, start and stop of the batch in the frame, base timestamp, max timestamp,
producer id, producer epoch, base sequence, record count, min and max timestamp delta,
records with a null key)."""


class Unhandled(enum.Enum):
    UNHANDLED = 0


UNHANDLED = Unhandled.UNHANDLED


Builder: TypeAlias = Callable[..., bytearray]


def _load() -> tuple[Callable[[memoryview], Plain | None] | None, Builder | None]:
    """The request walk (None when the pure path is forced or the accelerator not built) and
    the answer builder, the answer from its template in one call (only ever called once the
    walk took a request; the encoder is its reference)."""
    try:
        from minibroker.protocol._accel import plain_produce, produce_answer
    except ImportError:
        return None, None
    return (None if pure_python_forced() else plain_produce), produce_answer


native_plain_produce, _produce_answer = _load()


def answer(broker: Broker, frame: memoryview) -> bytearray | Unhandled | None:
    """The response frame (None for acks=0) of a request this path takes, else UNHANDLED."""
    plain = None if native_plain_produce is None else native_plain_produce(frame)
    if plain is None:
        return UNHANDLED
    # (one unpacking: slices would each make a tuple)
    (
        version,
        correlation_id,
        acks,
        topic_key,
        index,
        start,
        stop,
        base_timestamp,
        header_max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
        min_delta,
        max_delta,
        null_keys,
    ) = plain
    cluster = broker.cluster
    route = _routes.get((topic_key, index))  # `_route`'s first tests inline
    if (
        route is None
        or route[0] is not cluster
        or cluster.topics.get(route[1].name) is not route[1]
    ):
        route = _route(cluster, version, topic_key, index)
        if route is None:
            return UNHANDLED
    topic, partition = route[1], route[2]
    if (
        acks not in _VALID_ACKS
        or (acks == -1 and partition.replication is not None)
        or broker.nodes.leader_error(partition, broker.node_id) is not None
    ):
        return UNHANDLED
    now_ms = time.time_ns() // 1_000_000
    config = cluster.validation_config(topic)
    # The validator's checks that depend on the topic's configs, and no rewrite but the max
    # timestamp: the topic stores the batch as it came.
    if not (
        config.timestamp_type == CREATE_TIME
        and config.compression_type in _SAME_CODEC
        and stop - start <= config.max_message_bytes
        and base_timestamp + min_delta >= now_ms - config.timestamp_before_max_ms
        and base_timestamp + max_delta <= now_ms + config.timestamp_after_max_ms
        and not (null_keys and config.compacted)
    ):
        return UNHANDLED
    # (no `max`: the builtin parses keywords, a measurable share of a small request)
    max_timestamp = base_timestamp + max_delta
    if max_timestamp < NO_TIMESTAMP:
        max_timestamp = NO_TIMESTAMP
    data = frame[start:stop] if not frame.readonly else bytearray(frame[start:stop])
    # (a plain producer's batch needs no ValidatedBatch: `check_append` lets it through at its
    # first test and `record_append` only expires producers for it; nor does an idempotent
    # producer's next batch in sequence, `next_in_sequence`'s few reads)
    batch = entry = None
    last_offset_delta = record_count - 1
    last_seq = base_sequence + last_offset_delta
    if producer_id > NO_PRODUCER_ID:
        producers = broker.producers
        entry = producers.next_in_sequence(
            partition, producer_id, producer_epoch, base_sequence, last_seq
        )
        if entry is None:
            batch = ValidatedBatch(
                data,
                producer_id,
                producer_epoch,
                base_sequence,
                record_count,
                is_transactional=False,
                max_timestamp=max_timestamp,
            )
            if not producers.check_append(partition, batch).should_append:
                return UNHANDLED
    if max_timestamp != header_max_timestamp:
        set_max_timestamp(data, TIMESTAMP_CREATE_TIME, max_timestamp)
    try:
        base_offset = partition.log.append_plain(
            data, partition.leader_epoch, now_ms, last_offset_delta, max_timestamp
        )
    except RecordBatchTooLarge as exc:
        return _error_frame(plain, ErrorCode.RECORD_LIST_TOO_LARGE, str(exc))
    except OSError as exc:
        log.error("append to %s-%d failed: %s", partition.topic, index, exc)
        return _error_frame(plain, ErrorCode.KAFKA_STORAGE_ERROR, str(exc))
    if entry is not None:
        broker.producers.record_next_in_sequence(
            entry,
            last_seq,
            base_offset + last_offset_delta,
            last_offset_delta,
            max_timestamp,
            now_ms,
        )
    elif batch is None:
        broker.producers.expire_if_due(now_ms)
    else:
        last_offset = base_offset + last_offset_delta
        broker.producers.record_append(partition, batch, base_offset, last_offset, max_timestamp)
    if partition.append_listeners:  # `notify_appended`'s loop, called only when it has work
        partition.notify_appended()
    if acks == 0:
        return None
    template = _templates.get((version, topic_key, index))  # `_template`'s first test inline
    if template is None:
        template = _template(version, topic_key, index)
    assert _produce_answer is not None  # (this path runs only with the accelerator)
    return _produce_answer(template, correlation_id, base_offset, partition.log.log_start_offset)


# (cluster, topic, partition) per (topic name or id bytes, partition index)
_Route: TypeAlias = tuple["Cluster", "Topic", "Partition"]
_routes: dict[tuple[str | bytes, int], _Route] = {}
_MAX_ROUTES = 4096


def _route(cluster: Cluster, version: int, topic_key: str | bytes, index: int) -> _Route | None:
    """The topic and partition a request names, when they exist, remembered by the request's
    key. A remembered one is reused while its topic is still the cluster's under its name
    (the answer `topics_by_id_bytes` or `topics` would give: a deleted or recreated topic is
    another Topic, and a topic's partitions are never replaced, only added)."""
    key = (topic_key, index)
    route = _routes.get(key)
    if route is not None and route[0] is cluster and cluster.topics.get(route[1].name) is route[1]:
        return route
    _routes.pop(key, None)
    if version >= _FIRST_TOPIC_ID_VERSION:
        assert isinstance(topic_key, bytes)
        topic = cluster.topics_by_id_bytes.get(topic_key)
    else:
        topic = cluster.topics.get(str(topic_key))
    if topic is None:
        return None
    partition = cluster.partition(topic.name, index)
    if partition is None:
        return None
    if len(_routes) >= _MAX_ROUTES:
        _routes.clear()
    route = _routes[key] = (cluster, topic, partition)
    return route


# The fields `produce_answer` patches into a template: the correlation id at 4 and, from the
# frame's end, base offset, log append time (-1: CreateTime) and log start offset, then 9
# bytes (no record errors, null error message, the partition's, the topic's and the
# response's empty tagged fields around throttle time 0).
_TemplateKey: TypeAlias = tuple[int, "str | bytes", int]
_templates: dict[_TemplateKey, bytes] = {}
_MAX_TEMPLATES = 4096


def _template(version: int, topic_key: str | bytes, index: int) -> bytes:
    """The handler's answer frame for one appended batch, with the fields `produce_answer`
    patches left zero, made once per (version, topic key, partition)."""
    key = (version, topic_key, index)
    template = _templates.get(key)
    if template is None:
        template = bytes(_encoded(version, 0, topic_key, index, ErrorCode.NO_ERROR, 0, -1, None))
        if len(_templates) >= _MAX_TEMPLATES:
            _templates.clear()
        _templates[key] = template
    return template


def _error_frame(plain: Plain, error: ErrorCode, message: str) -> bytearray | None:
    """The handler's answer to a partition rejected with `error` (None for acks=0)."""
    version, correlation_id, acks, topic_key, index = plain[:5]
    if acks == 0:
        return None
    return _encoded(version, correlation_id, topic_key, index, error, -1, -1, message)


def _encoded(
    version: int,
    correlation_id: int,
    topic_key: str | bytes,
    index: int,
    error: ErrorCode,
    base_offset: int,
    log_start_offset: int,
    message: str | None,
) -> bytearray:
    if isinstance(topic_key, bytes):
        name, topic_id = "", uuid.UUID(bytes=topic_key)
    else:
        name, topic_id = topic_key, uuid.UUID(int=0)
    partition = (index, error, base_offset, NO_TIMESTAMP, log_start_offset, message)
    body = encode_produce_answers(version, [(name, topic_id, [partition])])
    assert body is not None  # v9-13, no record errors
    return response_frame(ApiKey.Produce, version, correlation_id, body)
