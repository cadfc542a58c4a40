"""Produce (key 0), versions 0-13.

Behaviour: each partition's records are validated as Kafka's LogValidator does (see
`records/validate.py`), checked against the producer's sequence state (idempotence), then
appended with the base offset and leader epoch stamped (a batch larger than
`segment.bytes` gets RECORD_LIST_TOO_LARGE, as in Kafka); duplicates of one of a producer's
last five batches are answered with the original offsets and not written again. Topics are
never auto-created here (Metadata does that); unknown ones get UNKNOWN_TOPIC_OR_PARTITION.
acks=0 gets no response at all; acks other than 0, 1 and -1 get INVALID_REQUIRED_ACKS.
A disk error on append answers KAFKA_STORAGE_ERROR for that partition only, and takes it
offline (KAFKA_STORAGE_ERROR for every later read or write) until the broker restarts.

Transactional batches (of a request with a transactional id) are checked with the transaction
coordinator before they are appended, as Kafka's AddPartitionsToTxnManager does:
- Produce v12+ while `transaction.version` 2 is finalized (transactions V2, KIP-890 part 2):
  the partition joins the producer's transaction implicitly (there is no AddPartitionsToTxn).
- Otherwise (TV1) the partition must already be in the producer's ongoing transaction
  (verification), so a produce cannot leave a hanging transaction: TRANSACTION_ABORTABLE from
  v11, INVALID_TXN_STATE ("Partition was not added to the transaction") before.
Coordinator errors are answered as Kafka answers them on the produce path: PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH; CONCURRENT_TRANSACTIONS (the previous transaction's markers are being
written) and coordinator errors as the retriable NOT_ENOUGH_REPLICAS ("Unable to verify the
partition has been added to the transaction. Underlying error: ...").

The common request (v9-13, one partition, one uncompressed CreateTime batch, no transactional
id) is answered before it is decoded by the native fast path, `produce_native.py`, when no
test faults, quotas or authorizer are active; this handler is its reference, and answers
everything that path hands back (errors, duplicates, acks=all waits included).

Authorization (Kafka's order): a request whose first batch of some partition is transactional
needs a transactional id with WRITE on it, else every partition gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (a null id too; Kafka refuses that even without an
authorizer, minibroker only with one); then each topic needs WRITE, else
TOPIC_AUTHORIZATION_FAILED for its partitions — a topic not known included (v13: an unknown
topic id is UNKNOWN_TOPIC_ID first) — before INVALID_REQUIRED_ACKS and the existence check.
Without an authorizer none of this costs anything on the produce path.

In a cluster a partition this node does not lead gets NOT_LEADER_OR_FOLLOWER; from v10 the
answer carries the partition's CurrentLeader (id, epoch) and the leaders' NodeEndpoints
(KIP-951), so clients go to the new leader without a Metadata round trip.

Version notes: v0-2 (Kafka before 4.0) carry message sets of format v0/v1 (magic 0/1), checked
and converted to one v2 batch as Kafka 3.x did (`records/legacy_validate.py`; a v2 batch is
taken as in v3+); they have no transactional id. Emulating Kafka 4.x they are advertised only
because librdkafka before 2.11.1 checks for Produce v0 before it compresses (KAFKA-18659), and
requests at those versions get UNSUPPORTED_VERSION, as Kafka 4 answers. v2+ carries
log_append_time_ms, v5+ log_start_offset, v8+ record errors and an error message, v10+ the
leader discovery tagged fields. v12 is v11 for a transactions V2 producer. v13 names topics by
topic id (a topic id not known: UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.log import RecordBatchTooLarge
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame, new_response, response_frame, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.produce_response import encode_produce_answers
from minibroker.records.batch import ATTR_TRANSACTIONAL, ATTRIBUTES_OFFSET, MAGIC_OFFSET, MAGIC_V2
from minibroker.records.legacy_validate import validate_old_produce_records
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
_Leader = struct_type(
    ApiKey.Produce,
    "response",
    "TopicProduceResponse",
    "PartitionProduceResponse",
    "LeaderIdAndEpoch",
)
_NodeEndpoint = struct_type(ApiKey.Produce, "response", "NodeEndpoint")
FIRST_SERVED_VERSION = 0
FIRST_V2_ONLY_VERSION = 3
LAST_VERSION = 13
FIRST_LEADER_DISCOVERY_VERSION = 10
FIRST_GENERIC_TXN_ERROR_VERSION = 11
FIRST_IMPLICIT_ADD_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
VALID_ACKS = (0, 1, -1)
_NO_TOPIC_ID = uuid.UUID(int=0)
_ATTRIBUTES_LOW_BYTE = ATTRIBUTES_OFFSET + 1
# Coordinator answers a producer retries (Kafka: NOT_ENOUGH_REPLICAS on the produce path).
_RETRIABLE_TXN_ERRORS = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
    }
)


@dataclass(slots=True)
class PartitionResult:
    error: ErrorCode = ErrorCode.NO_ERROR
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: Sequence[tuple[int, str]] = ()
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch), v10+
    # A replicated partition's append an acks=all answer waits for: (partition, end offset).
    awaiting: tuple[Partition, int] | None = None

    def entry(self, index: int) -> Any:
        partition = _Partition(
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
        if self.current_leader is not None:
            leader_id, leader_epoch = self.current_leader
            partition.current_leader = _Leader(leader_id=leader_id, leader_epoch=leader_epoch)
        return partition


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
            end_offset = base_offset + batch.record_count
        else:
            base_offset = partition.log.append(batch.data, partition.leader_epoch, now_ms)
            last_offset = base_offset + batch.record_count - 1
            producers.record_append(partition, batch, base_offset, last_offset, batch.max_timestamp)
            log_append_time = batch.log_append_time_ms
            appended = True
            end_offset = last_offset + 1
        if result.base_offset < 0:
            result.base_offset = base_offset
            result.log_append_time_ms = log_append_time
    if appended:
        partition.notify_appended()
    result.log_start_offset = partition.log.log_start_offset
    if partition.replication is not None and batches:
        result.awaiting = (partition, end_offset)
    return result


def _transaction_error(
    ctx: RequestContext,
    transactional_id: str | None,
    partition: Partition,
    batches: list[ValidatedBatch],
) -> PartitionResult | None:
    """The coordinator's answer for transactional batches: implicit add (TV2) or verification."""
    if transactional_id is None:
        return None
    batch = next((b for b in batches if b.is_transactional), None)
    if batch is None:
        return None
    coordinator = ctx.broker.transactions
    tp = (partition.topic, partition.index)
    ids = (transactional_id, batch.producer_id, batch.producer_epoch)
    if ctx.api_version >= FIRST_IMPLICIT_ADD_VERSION and coordinator.transaction_version >= 2:
        error = coordinator.add_partitions(*ids, [tp], client_transaction_version=2)
    else:
        error = coordinator.verify_partitions(*ids, [tp])[tp]
    if error == ErrorCode.NO_ERROR:
        return None
    return _produce_path_error(ctx.api_version, error)


def _produce_path_error(api_version: int, error: ErrorCode) -> PartitionResult:
    """A coordinator answer as Kafka's AddPartitionsToTxnManager and ReplicaManager give it."""
    if error == ErrorCode.PRODUCER_FENCED:
        return _rejected(ErrorCode.INVALID_PRODUCER_EPOCH)
    if error == ErrorCode.TRANSACTION_ABORTABLE and api_version < FIRST_GENERIC_TXN_ERROR_VERSION:
        error = ErrorCode.INVALID_TXN_STATE
    if error == ErrorCode.INVALID_TXN_STATE:
        return _rejected(error, "Partition was not added to the transaction")
    if error in _RETRIABLE_TXN_ERRORS:
        return _rejected(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {error.name}",
        )
    return _rejected(error)


def _not_leader(ctx: RequestContext, partition: Partition, error: ErrorCode) -> PartitionResult:
    result = _rejected(error)
    if ctx.api_version >= FIRST_LEADER_DISCOVERY_VERSION:
        leader = ctx.broker.nodes.leader_of(partition)
        result.current_leader = (leader, partition.leader_epoch)
    return result


def produce_to_partition(
    ctx: RequestContext,
    topic_name: str,
    index: int,
    records: bytes | memoryview | None,
    transactional_id: str | None = None,
    acks: int = 1,
) -> PartitionResult:
    """Validate and append one partition's records; writable records are stamped in place."""
    cluster = ctx.broker.cluster
    topic = cluster.topics.get(topic_name)
    partition = cluster.partition(topic_name, index)
    if topic is None or partition is None:
        return _rejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if (not_leader := ctx.leader_error(partition)) is not None:
        return _not_leader(ctx, partition, not_leader)
    if acks == -1 and (refused := cluster.not_enough_replicas(partition)) is not None:
        return _rejected(ErrorCode.NOT_ENOUGH_REPLICAS, refused)
    now_ms = ctx.now_ms()
    validate = (
        validate_produce_records
        if ctx.api_version >= FIRST_V2_ONLY_VERSION
        else validate_old_produce_records
    )
    try:
        batches = validate(records or b"", cluster.validation_config(topic), now_ms, in_place=True)
    except InvalidRecords as exc:
        result = _rejected(exc.error_code, exc.message)
        result.record_errors = exc.record_errors
        return result
    txn_error = _transaction_error(ctx, transactional_id, partition, batches)
    if txn_error is not None:
        return txn_error
    try:
        return _append_batches(ctx, partition, batches, now_ms)
    except RecordBatchTooLarge as exc:
        return _rejected(ErrorCode.RECORD_LIST_TOO_LARGE, str(exc))
    except OSError as exc:
        log.error("append to %s-%d failed: %s", topic_name, index, exc)
        return _rejected(ErrorCode.KAFKA_STORAGE_ERROR, str(exc))


def _early_error(ctx: RequestContext, request: Any) -> ErrorCode | None:
    """An error for every partition of the request, found before any topic is looked at."""
    if not _transactional_id_authorized(ctx, request):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return None


def _transactional_id_authorized(ctx: RequestContext, request: Any) -> bool:
    """Kafka's check for a request carrying transactional batches: it needs a transactional
    id with WRITE on it."""
    if ctx.broker.authorizer is None:
        return True
    transactional_id = request.transactional_id
    if not _has_transactional_records(request):
        return True
    return transactional_id is not None and ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    )


def _has_transactional_records(request: Any) -> bool:
    """Whether the first batch of some partition is transactional (Kafka's
    `RequestUtils.hasTransactionalRecords` looks at first batches only)."""
    for topic_data in request.topic_data:
        for data in topic_data.partition_data:
            records = data.records
            if (
                records is not None
                and len(records) > _ATTRIBUTES_LOW_BYTE
                and records[MAGIC_OFFSET] == MAGIC_V2
                and records[_ATTRIBUTES_LOW_BYTE] & ATTR_TRANSACTIONAL
            ):
                return True
    return False


def _authorized_topics(ctx: RequestContext, names: list[str | None]) -> set[str] | None:
    """The topics the principal may WRITE to, or None when every topic is allowed."""
    if ctx.broker.authorizer is None:
        return None
    return ctx.authorized_names(
        AclOperation.WRITE, ResourceType.TOPIC, [name for name in names if name is not None]
    )


def _topic_name(ctx: RequestContext, topic_data: Any) -> str | None:
    """The topic's name (v13: by topic id; None for an id not known)."""
    if ctx.api_version < FIRST_TOPIC_ID_VERSION:
        return str(topic_data.name)
    topic = ctx.broker.cluster.topics_by_id.get(topic_data.topic_id)
    return None if topic is None else topic.name


def _node_endpoints(ctx: RequestContext, results: list[PartitionResult]) -> list[Any]:
    """NodeEndpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951)."""
    leaders = sorted({r.current_leader[0] for r in results if r.current_leader is not None})
    endpoints = []
    for node in ctx.broker.nodes.live_brokers():
        if node.node_id in leaders:
            host, port = node.advertised_endpoint(ctx.listener)
            endpoints.append(_NodeEndpoint(node_id=node.node_id, host=host, port=port, rack=None))
    return endpoints


def _topic_entry(topic_data: Any, partitions: list[Any]) -> Any:
    topic_id = topic_data.topic_id or _NO_TOPIC_ID
    return _Topic(name=topic_data.name, topic_id=topic_id, partition_responses=partitions)


TopicResults = list[tuple[Any, list[tuple[int, PartitionResult]]]]


@handles(ApiKey.Produce, FIRST_SERVED_VERSION, LAST_VERSION)
async def handle_produce(ctx: RequestContext, request: Any) -> Any:
    early = _early_error(ctx, request)
    names = [_topic_name(ctx, topic_data) for topic_data in request.topic_data]
    authorized = _authorized_topics(ctx, names)
    invalid_acks = request.acks not in VALID_ACKS
    topics: TopicResults = []
    for topic_data, name in zip(request.topic_data, names, strict=True):
        partitions = []
        for data in topic_data.partition_data:
            if early is not None:
                result = _rejected(early)
            elif name is None:
                result = _rejected(ErrorCode.UNKNOWN_TOPIC_ID)
            elif authorized is not None and name not in authorized:
                result = _rejected(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif invalid_acks:
                result = _rejected(ErrorCode.INVALID_REQUIRED_ACKS)
            else:
                result = produce_to_partition(
                    ctx, name, data.index, data.records, request.transactional_id, request.acks
                )
            partitions.append((data.index, result))
        topics.append((topic_data, partitions))
    if request.acks == 0:
        return None
    if request.acks == -1:
        await _replicated(ctx, topics, request.timeout_ms)
    return _response_frame(ctx, topics) or _response(ctx, topics)


async def _replicated(ctx: RequestContext, topics: TopicResults, timeout_ms: int) -> None:
    """acks=all: wait until the ISR has every replicated partition's append (Kafka's
    DelayedProduce), then answer each as Kafka does."""
    waiting = [
        (result, result.awaiting)
        for _topic_data, partitions in topics
        for _index, result in partitions
        if result.awaiting is not None and result.error == ErrorCode.NO_ERROR
    ]
    if not waiting:
        return
    timeout_s = max(timeout_ms, 0) / 1000
    waits = []
    for _result, (partition, end_offset) in waiting:
        assert partition.replication is not None
        partition.replication.advance_high_watermark()  # Kafka's maybeIncrementLeaderHW
        waits.append(partition.replication.wait_for_high_watermark(end_offset, timeout_s))
    await asyncio.gather(*waits)
    cluster = ctx.broker.cluster
    for result, (partition, end_offset) in waiting:
        result.error = cluster.acks_all_outcome(partition, end_offset, ctx.broker.node_id)
        if result.error != ErrorCode.NO_ERROR:
            result.base_offset = -1


def _response(ctx: RequestContext, topics: TopicResults) -> Any:
    responses = [
        _topic_entry(topic_data, [result.entry(index) for index, result in partitions])
        for topic_data, partitions in topics
    ]
    results = [result for _topic_data, partitions in topics for _index, result in partitions]
    fields: dict[str, Any] = {"responses": responses, "throttle_time_ms": 0}
    if endpoints := _node_endpoints(ctx, results):
        fields["node_endpoints"] = endpoints
    return new_response(ApiKey.Produce, ctx.api_version, **fields)


def _response_frame(ctx: RequestContext, topics: TopicResults) -> EncodedFrame | None:
    """The answer framed straight from the results, as the codec would frame `_response`'s
    message (byte for byte), without building that message: most of a small produce
    request's answer cost. None when a partition carries record errors or a current leader
    (rare answers, left to the codec)."""
    answers = []
    for topic_data, partitions in topics:
        entries = []
        for index, result in partitions:
            if result.record_errors or result.current_leader is not None:
                return None
            entries.append(
                (
                    index,
                    result.error,
                    result.base_offset,
                    result.log_append_time_ms,
                    result.log_start_offset,
                    result.error_message,
                )
            )
        answers.append((topic_data.name, topic_data.topic_id or _NO_TOPIC_ID, entries))
    body = encode_produce_answers(ctx.api_version, answers)
    if body is None:
        return None
    frame = response_frame(ApiKey.Produce, ctx.api_version, ctx.header.correlation_id, body)
    return EncodedFrame([frame], lambda: _response(ctx, topics))
