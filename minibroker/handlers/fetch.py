"""Fetch (key 1), versions 0-18.

Behaviour: stored batches go into the response exactly as they are on disk. Every requested
partition is in a full answer, with its high watermark, last stable offset and log start
offset; the first partition with data gets at least one whole batch even past the size
limits (KIP-74), later ones only whole batches within `max_bytes` and their own
`partition_max_bytes`. When fewer than `min_bytes` are available the request waits up to
`max_wait_ms`, woken by appends to its partitions (never by polling). read_committed reads
(isolation level 1) stop at the last stable offset (a batch boundary, so the stored bytes are
still served whole) and list the aborted transactions overlapping the returned range, from the
segments' `.txnindex` (Kafka's `LocalLog.collectAbortedTransactions`): an empty list when there
are none, null for read_uncommitted. Control batches are served like data; clients skip
them. Offsets outside [log start, log end] get OFFSET_OUT_OF_RANGE; one past the high
watermark (or last stable offset) but not past the log end is answered empty, as Kafka's
`LocalLog.read` answers it (a new leader's high watermark may be behind what consumers read
from the old one); a leader epoch newer than ours gets UNKNOWN_LEADER_EPOCH, an older one
FENCED_LEADER_EPOCH. A partition whose storage failed (offline log) gets KAFKA_STORAGE_ERROR
(NOT_LEADER_OR_FOLLOWER at v4-5, as Kafka down-converts it for clients that may not know it).
In an in-process cluster a partition this node does not lead gets NOT_LEADER_OR_FOLLOWER.

Fetch sessions (KIP-227, v7+), per node, as Kafka's FetchManager (cluster/fetch_sessions.py):
a full fetch with epoch 0 creates a session when `max.incremental.fetch.session.cache.slots`
(default 1000) allow and answers its id; incremental fetches (that id, the next epoch) add or
change the partitions they name, drop `ForgottenTopicsData`, read the session's partitions
that may have changed since they last had nothing to say (every one for a follower, under a
test's pushed errors, and under an authorizer after an ACL change or from another principal)
and answer only those with records, a new high watermark or log start offset, or an error;
a long poll waits on the session, woken by any change to its partitions. Epoch -1 is a
sessionless full fetch (closing the session it names). Unknown session:
FETCH_SESSION_ID_NOT_FOUND; wrong epoch (or a second fetch of the session overtaking a
waiting one): INVALID_FETCH_SESSION_EPOCH; a session made with topic ids used below v13 or
the other way round: FETCH_SESSION_TOPIC_ID_ERROR. These top-level errors come with no
partitions and session id 0 (the overtaken fetch keeps its session's id).

Authorization (Kafka's order, after the session is resolved): a follower fetch (replica id
>= 0) needs CLUSTER_ACTION on the cluster, else every partition gets TOPIC_AUTHORIZATION_FAILED;
a consumer's fetch needs READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions
(ahead of UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id stays UNKNOWN_TOPIC_ID). Refused
partitions stay in the session and are answered with their error on every fetch; they are
not read and do not end a long poll early.

Version notes: below v10 (KIP-110) a partition of a topic with `compression.type` zstd gets
UNSUPPORTED_COMPRESSION_TYPE with no offsets, as Kafka answers. v0-3 (Kafka before 4.0) read
uncommitted and get the stored v2 batches down-converted (`records/downconvert.py`) to message
format v0 (Fetch v0-1) or v1 (v2-3), as Kafka 3.x did after reading within the size limits: a
partition of a topic with `message.downconversion.enable` false (broker:
`log.message.downconversion.enable`) gets UNSUPPORTED_VERSION, one whose first batch to convert
is zstd UNSUPPORTED_COMPRESSION_TYPE (no offsets either). v3 adds MaxBytes.
v13+ name topics by id in request, forgotten topics and response: an unknown
id gets UNKNOWN_TOPIC_ID for each of its partitions, and a session partition whose topic was
deleted and re-created under its name INCONSISTENT_TOPIC_ID (its old id no longer matches).
Preferred read replica (v11+) is always -1. v12+ LastFetchedEpoch is not checked and no
DivergingEpoch is answered: the in-process followers (server/replica_fetcher.py) truncate to
the leader's log themselves when the leader epoch changes, before they fetch again. v15
moves the replica id into ReplicaState; a fetch from a replica id >= 0 makes a privileged
session (as Kafka's followers), and is otherwise
served as a consumer's. v16+ (KIP-951): a partition answered NOT_LEADER_OR_FOLLOWER or
FENCED_LEADER_EPOCH carries CurrentLeader (the leader's id and epoch), and the response the
leaders' NodeEndpoints (their advertised address on the request's listener). v17's
ReplicaDirectoryId and v18's HighWatermark (follower fields) are accepted and ignored.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.auth.throttle import consumer_max_bytes, consumer_throttle, is_follower_fetch
from minibroker.cluster.fetch_sessions import (
    Answer,
    FetchContext,
    IncrementalContext,
    PartitionKey,
    Requested,
    Wanted,
)
from minibroker.cluster.reassignment import complete_reassignment
from minibroker.cluster.state import Cluster, Listened, Partition, wait_for_append
from minibroker.handlers.registry import handles
from minibroker.log import OffsetOutOfRange
from minibroker.log.blob import FileRegion
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import (
    FetchedPartition,
    FetchedTopic,
    NodeEndpoint,
    encode_fetch_response,
    fetch_response_message,
)
from minibroker.records.downconvert import UnsupportedDownConversion, down_convert
from minibroker.server.context import RequestContext

READ_COMMITTED = 1
FIRST_MAGIC_V1_VERSION = 2
LAST_DOWN_CONVERTED_VERSION = 3
FIRST_ZSTD_VERSION = 10
FIRST_STORAGE_ERROR_VERSION = 6
FIRST_TOPIC_ID_VERSION = 13
FIRST_REPLICA_STATE_VERSION = 15
FIRST_LEADER_DISCOVERY_VERSION = 16
_ZERO_ID = uuid.UUID(int=0)
_LEADER_CHANGED = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
_NO_RECORDS = b""
# An enum member read from its class goes through the enum's metaclass (~0.3 µs): the per-fetch
# comparisons read it from the module.
_NO_ERROR = ErrorCode.NO_ERROR


class PartitionRead:
    """What a fetch read of one partition (a class with slots: one is made per partition and
    pass, and a dataclass with defaults costs more to build)."""

    __slots__ = (
        "aborted_transactions",
        "error",
        "high_watermark",
        "key",
        "last_stable_offset",
        "log_start_offset",
        "next_offset",
        "partition",
        "records",
        "requested",
        "settled",
    )

    def __init__(self, requested: Requested, error: ErrorCode = ErrorCode.NO_ERROR) -> None:
        self.requested = requested
        self.key: PartitionKey = requested.key
        self.partition: Partition | None = None
        self.error = error
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.records: bytes | FileRegion = _NO_RECORDS
        self.next_offset = -1  # the offset after the last batch in `records`
        self.aborted_transactions: list[tuple[int, int]] | None = None
        self.settled = False  # nothing to read: the fetch offset at the readable end

    def drop_records(self) -> None:
        if isinstance(self.records, FileRegion):
            self.records.close()
        self.records = _NO_RECORDS

    def collect_aborted_transactions(self, fetch_offset: int) -> None:
        """The aborted transactions overlapping the records read (read_committed only)."""
        self.aborted_transactions = []
        if not self.records or self.partition is None:
            return
        try:
            aborted = self.partition.log.collect_aborted_txns(fetch_offset, self.next_offset)
        except OSError:  # the log went offline reading its transaction index
            self.error = ErrorCode.KAFKA_STORAGE_ERROR
            self.drop_records()
            self.aborted_transactions = None
            return
        self.aborted_transactions = [(txn.producer_id, txn.first_offset) for txn in aborted]

    def answer(self) -> Answer:
        return Answer(
            self.error,
            self.high_watermark,
            self.log_start_offset,
            bool(self.records),
            self.partition,
            self.settled and self.error == _NO_ERROR,
        )

    def fetched(self, version: int, current_leader: tuple[int, int] | None) -> FetchedPartition:
        error = self.error
        if error == ErrorCode.KAFKA_STORAGE_ERROR and version < FIRST_STORAGE_ERROR_VERSION:
            error = ErrorCode.NOT_LEADER_OR_FOLLOWER  # v4-5 clients may not know the code
        return FetchedPartition(
            self.key[1],
            error,
            self.high_watermark,
            self.last_stable_offset,
            self.log_start_offset,
            self.aborted_transactions,
            self.records,
            current_leader,
        )


def _locate(cluster: Cluster, item: Requested) -> Partition | ErrorCode:
    """The partition a fetch names, or Kafka's error for it."""
    if item.topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    topic_key, index = item.key
    topic = cluster.topics.get(item.topic)
    if topic is None or not 0 <= index < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # (`is` first: UUID equality is a Python method, and the fast path keys by the topic's id)
    topic_id = topic.topic_id
    if topic_key is not topic_id and isinstance(topic_key, uuid.UUID) and topic_key != topic_id:
        return ErrorCode.INCONSISTENT_TOPIC_ID
    return topic.partitions[index]


def _follower_fetched(
    ctx: RequestContext, partition: Partition, replica_id: int, offset: int
) -> None:
    """A follower's fetch offset is its log end: the ISR and high watermark may move."""
    replica_set = partition.replication
    assert replica_set is not None
    # (a high watermark it advances notifies the partition's listeners: `Cluster._attach`)
    joined, _advanced = replica_set.follower_fetched(
        replica_id, offset, partition.leader_epoch, ctx.now_ms()
    )
    if joined:
        ctx.broker.cluster.write_replication_state()
        if replica_set.reassignment is not None:
            # Not before this fetch has read: completing may delete the log it reads from.
            asyncio.get_running_loop().call_soon(complete_reassignment, ctx.broker, partition)


def _read_partition(
    ctx: RequestContext, item: Requested, budget: int, read_committed: bool, replica_id: int
) -> PartitionRead:
    result = PartitionRead(item)
    located = _locate(ctx.broker.cluster, item)
    entry_errors = ctx.entry_errors
    pushed = entry_errors.get((item.topic or "", item.key[1])) if entry_errors else None
    if isinstance(located, ErrorCode):
        result.error = pushed or located
        return result
    result.partition = partition = located
    if pushed is not None:  # a test's pushed error (minibroker.testing)
        result.error = pushed
        return result
    broker = ctx.broker
    if (not_leader := broker.nodes.leader_error(partition, broker.node_id)) is not None:
        result.error = not_leader
        return result
    log = partition.log
    if log.storage_error is not None:
        result.error = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    # `partition.last_stable_offset` from the offsets already read (its properties read them
    # again, and this runs for every partition of every fetch)
    result.high_watermark = high_watermark = partition.high_watermark
    result.log_start_offset = log_start_offset = log.log_start_offset
    result.last_stable_offset = last_stable_offset = partition.ongoing_txns.last_stable_offset(
        high_watermark, log_start_offset
    )
    wanted = item.wanted
    if wanted.current_leader_epoch >= 0:  # -1: unchecked
        epoch_error = partition.leader_epoch_error(wanted.current_leader_epoch)
        if epoch_error is not None:
            result.error = epoch_error
            return result
    upper = last_stable_offset if read_committed else high_watermark
    if replica_id >= 0 and partition.replication is not None:
        _follower_fetched(ctx, partition, replica_id, wanted.fetch_offset)
        upper = log.log_end_offset
        result.high_watermark = partition.high_watermark
    if wanted.fetch_offset > log.log_end_offset:
        result.error = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
    if result.log_start_offset <= wanted.fetch_offset >= upper:
        result.settled = True
        return result  # nothing to read: what the log would answer, without asking it
    limit = min(wanted.partition_max_bytes, budget) if budget > 0 else 0
    try:
        found = log.read_batches(wanted.fetch_offset, max(limit, 1), upper)
    except OffsetOutOfRange:
        result.error = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
    except OSError:  # the log went offline reading it
        result.error = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    if found is not None:
        result.records, result.next_offset = found.records, found.next_offset
    return result


def collect(
    ctx: RequestContext, request: Any, items: list[Requested], replica_id: int
) -> tuple[list[PartitionRead], int, bool]:
    """The partitions read, the bytes read, and whether any partition has an error."""
    read_committed = request.isolation_level == READ_COMMITTED
    remaining = _max_bytes(ctx, request)
    total = 0
    reads = []
    has_error = False
    for item in items:
        read = _read_partition(ctx, item, remaining, read_committed, replica_id)
        if read.records:
            if total > 0 and len(read.records) > remaining:
                # Only a first batch larger than the budget (KIP-74) goes past it, and only the
                # first partition with data may have one.
                read.drop_records()
            total += len(read.records)
            remaining -= len(read.records)
        if read_committed and read.error == _NO_ERROR:
            read.collect_aborted_transactions(item.wanted.fetch_offset)
        has_error = has_error or read.error != _NO_ERROR
        reads.append(read)
    return reads, total, has_error


def poll_min_bytes(ctx: RequestContext, request: Any) -> int:
    """The bytes that end a long poll: `min_bytes`, at most `max_bytes`."""
    min_bytes, max_bytes = int(request.min_bytes), _max_bytes(ctx, request)
    return min_bytes if min_bytes < max_bytes else max_bytes  # (no `min`: once per long poll)


async def _long_poll(
    ctx: RequestContext,
    request: Any,
    items: list[Requested],
    replica_id: int,
    session: IncrementalContext | None,
    denied: set[PartitionKey],
) -> list[PartitionRead]:
    """Read; while fewer than `min_bytes` were read (and no partition has an error), wait for
    an append to the partitions until `max_wait_ms` after the first read, and read again. An
    incremental fetch that reads only its session's pending partitions waits on its session
    and reads the pending ones again (but the `denied` ones)."""
    min_bytes = poll_min_bytes(ctx, request)
    reads, total, has_error = collect(ctx, request, items, replica_id)
    if total >= min_bytes or has_error or request.max_wait_ms <= 0:
        return reads
    loop = asyncio.get_running_loop()  # only here: each call costs a getpid system call
    deadline = loop.time() + request.max_wait_ms / 1000
    cluster = ctx.broker.cluster
    waited: list[Listened]
    if session is not None:
        waited = [session.session]
    else:
        located = (_locate(cluster, item) for item in items)
        waited = [found for found in located if isinstance(found, Partition)]
    while waited:
        for read in reads:
            read.drop_records()
        await wait_for_append(waited, deadline - loop.time(), loop)
        if session is not None:
            pending = session.partitions(lambda topic_id: _topic_name(cluster, topic_id))
            items = [item for item in pending if item.key not in denied]
        reads, total, has_error = collect(ctx, request, items, replica_id)
        if total >= min_bytes or has_error or deadline - loop.time() <= 0:
            break
    return reads


# ---- the request's partitions ------------------------------------------------------------


def _requested(ctx: RequestContext, request: Any) -> list[Requested]:
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    topics_by_id = ctx.broker.cluster.topics_by_id
    items = []
    for topic in request.topics:
        if by_id:
            known = topics_by_id.get(topic.topic_id)
            topic_key: uuid.UUID | str = topic.topic_id
            name = None if known is None else known.name
        else:
            topic_key = name = topic.topic
        for wanted in topic.partitions:
            items.append(
                Requested(
                    (topic_key, wanted.partition),
                    name,
                    Wanted(
                        wanted.fetch_offset,
                        wanted.partition_max_bytes,
                        wanted.current_leader_epoch,
                        wanted.log_start_offset,
                        wanted.last_fetched_epoch,
                    ),
                )
            )
    return items


def _forgotten(ctx: RequestContext, request: Any) -> list[PartitionKey]:
    by_id = ctx.api_version >= FIRST_TOPIC_ID_VERSION
    return [
        (topic.topic_id if by_id else topic.topic, index)
        for topic in request.forgotten_topics_data or ()
        for index in topic.partitions
    ]


def _replica_id(ctx: RequestContext, request: Any) -> int:
    if ctx.api_version >= FIRST_REPLICA_STATE_VERSION:
        state = request.replica_state
        return -1 if state is None else int(state.replica_id)
    return int(request.replica_id)


def _topic_name(cluster: Cluster, topic_id: uuid.UUID) -> str | None:
    topic = cluster.topics_by_id.get(topic_id)
    return None if topic is None else topic.name


def _context(ctx: RequestContext, request: Any, replica_id: int) -> FetchContext:
    return ctx.broker.fetch_sessions.new_context(
        ctx.api_version,
        request.session_id,
        request.session_epoch,
        _requested(ctx, request),
        _forgotten(ctx, request),
        ctx.now_ms(),
        privileged=replica_id >= 0,
    )


def _denied(ctx: RequestContext, items: list[Requested], replica_id: int) -> set[PartitionKey]:
    """The partitions answered TOPIC_AUTHORIZATION_FAILED, as Kafka: a follower (replica id
    >= 0) without CLUSTER_ACTION is refused all of them; a consumer each topic it may not
    READ (a topic id not known stays UNKNOWN_TOPIC_ID)."""
    if ctx.broker.authorizer is None:
        return set()
    if replica_id >= 0:
        if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
            return set()
        return {item.key for item in items}
    named = [item for item in items if item.topic is not None]
    allowed = ctx.authorized_names(
        AclOperation.READ, ResourceType.TOPIC, (item.topic or "" for item in named)
    )
    return {item.key for item in named if item.topic not in allowed}


def _with_denied(items: list[Requested], reads: list[PartitionRead]) -> list[PartitionRead]:
    """`reads` with the denied partitions put back in the request's order (the session's, for
    an incremental fetch: its long poll may have read partitions that changed meanwhile)."""
    by_key: dict[PartitionKey, PartitionRead | None] = {read.key: read for read in reads}
    merged = [
        by_key.pop(item.key, None)
        or PartitionRead(item, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for item in items
    ]
    if by_key:
        merged += (read for read in by_key.values() if read is not None)
        merged.sort(key=_session_order)
    return merged


def _session_order(read: PartitionRead) -> int:
    cached = read.requested.cached
    return 0 if cached is None else cached.order


# ---- the response ------------------------------------------------------------------------


def _current_leader(
    ctx: RequestContext, read: PartitionRead, endpoints: dict[int, NodeEndpoint]
) -> tuple[int, int] | None:
    """KIP-951: the leader of a partition answered NOT_LEADER_OR_FOLLOWER or
    FENCED_LEADER_EPOCH (v16+), its endpoint added to `endpoints`."""
    partition = read.partition
    if (
        ctx.api_version < FIRST_LEADER_DISCOVERY_VERSION
        or read.error not in _LEADER_CHANGED
        or partition is None
    ):
        return None
    nodes = ctx.broker.nodes
    leader_id = nodes.leader_of(partition)
    if leader_id < 0:  # an offline replicated partition: no leader to point to
        return leader_id, partition.leader_epoch
    host, port = nodes.broker(leader_id).advertised_endpoint(ctx.listener)
    endpoints.setdefault(leader_id, NodeEndpoint(leader_id, host, port))
    return leader_id, partition.leader_epoch


def fetch_frame(
    ctx: RequestContext, error: ErrorCode, session_id: int, reads: list[PartitionRead]
) -> EncodedFrame:
    version = ctx.api_version
    discovers_leaders = version >= FIRST_LEADER_DISCOVERY_VERSION
    endpoints: dict[int, NodeEndpoint] = {}
    grouped: dict[uuid.UUID | str, tuple[str, uuid.UUID, list[FetchedPartition]]] = {}
    for read in reads:
        topic_key = read.key[0]
        group = grouped.get(topic_key)
        if group is None:
            topic_id = topic_key if isinstance(topic_key, uuid.UUID) else _ZERO_ID
            group = grouped[topic_key] = (read.requested.topic or "", topic_id, [])
        leader = _current_leader(ctx, read, endpoints) if discovers_leaders else None
        group[2].append(read.fetched(version, leader))
    topics = [FetchedTopic(name, topic_id, parts) for name, topic_id, parts in grouped.values()]
    node_endpoints = list(endpoints.values())

    def message() -> Any:
        with_bytes = [
            replace(
                topic,
                partitions=[replace(p, records=_bytes_of(p.records)) for p in topic.partitions],
            )
            for topic in topics
        ]
        return fetch_response_message(
            ctx.api_version, error, with_bytes, session_id, node_endpoints
        )

    parts = encode_fetch_response(
        ctx.api_version, ctx.header.correlation_id, error, topics, session_id, node_endpoints
    )
    return EncodedFrame(parts, message)


def _bytes_of(records: object) -> bytes:
    if isinstance(records, FileRegion):
        try:
            return records.read()
        finally:
            records.close()
    assert isinstance(records, bytes)
    return records


# ---- before v10: zstd topics refused; v0-3: down-conversion to message formats v0/v1 -------


def _for_old_fetchers(ctx: RequestContext, reads: list[PartitionRead]) -> None:
    """Kafka's `maybeConvertFetchedData` for each partition of a known topic."""
    down_converting = ctx.api_version <= LAST_DOWN_CONVERTED_VERSION
    to_magic = 1 if ctx.api_version >= FIRST_MAGIC_V1_VERSION else 0
    cluster = ctx.broker.cluster
    max_decompressed = ctx.broker.config.get_int("minibroker.max.decompressed.batch.bytes")
    for read in reads:
        topic = None if read.partition is None else cluster.topics.get(read.partition.topic)
        if topic is None:
            continue
        if cluster.topic_value(topic, "compression.type") == "zstd":
            _refuse(read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        elif not down_converting:
            continue
        elif cluster.topic_value(topic, "message.downconversion.enable").lower() != "true":
            _refuse(read, ErrorCode.UNSUPPORTED_VERSION)
        elif read.records:
            stored = _bytes_of(read.records)
            try:
                read.records = down_convert(
                    stored,
                    to_magic,
                    read.requested.wanted.fetch_offset,
                    max_decompressed_bytes=max_decompressed,
                )
            except UnsupportedDownConversion:
                _refuse(read, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)


def _refuse(read: PartitionRead, error: ErrorCode) -> None:
    """Kafka's `FetchResponse.partitionResponse(tp, error)`: the error and no offsets."""
    read.drop_records()
    read.error = error
    read.high_watermark = read.last_stable_offset = read.log_start_offset = -1


# ---- consumer_byte_rate (minibroker/auth/quotas.py) ---------------------------------------


def _max_bytes(ctx: RequestContext, request: Any) -> int:
    """`max_bytes`, capped for a consumer by its byte-rate quota."""
    if not ctx.broker.client_quotas.enabled or is_follower_fetch(ctx.api_version, request):
        return int(request.max_bytes)
    return consumer_max_bytes(ctx, int(request.max_bytes))


def _throttled(
    ctx: RequestContext, request: Any, context: FetchContext, reads: list[PartitionRead]
) -> Any:
    """When the response would exceed the consumer's byte rate: an empty response carrying the
    throttle time, the session left as it was (Kafka's getThrottledResponse); else None."""
    if is_follower_fetch(ctx.api_version, request):
        return None
    if isinstance(context, IncrementalContext):
        cached = context.session.partitions
        sent = [r for r in reads if (c := cached.get(r.key)) and c.must_respond(r.answer(), False)]
    else:
        sent = reads
    size = sum(len(part) for part in fetch_frame(ctx, ErrorCode.NO_ERROR, 0, sent).parts)
    throttle = consumer_throttle(ctx, size)
    if throttle <= 0:
        return None
    for read in reads:
        read.drop_records()
    error, session_id = ErrorCode.NO_ERROR, 0
    if isinstance(context, IncrementalContext):
        session_id = context.session.id
        if context.session.epoch != context.expected_epoch:
            error = ErrorCode.INVALID_FETCH_SESSION_EPOCH
    response = fetch_response_message(ctx.api_version, error, [], session_id)
    response.throttle_time_ms = throttle
    return response


@handles(ApiKey.Fetch, 0, 18)
async def handle_fetch(ctx: RequestContext, request: Any) -> Any:
    replica_id = _replica_id(ctx, request)
    context = _context(ctx, request, replica_id)
    if context.error is not None:
        return fetch_frame(ctx, context.error, 0, [])
    cluster = ctx.broker.cluster
    incremental = _pending_only(ctx, context, replica_id)
    items = context.partitions(lambda topic_id: _topic_name(cluster, topic_id))
    denied = _denied(ctx, items, replica_id)
    readable = [item for item in items if item.key not in denied] if denied else items
    reads = await _long_poll(ctx, request, readable, replica_id, incremental, denied)
    if ctx.api_version < FIRST_ZSTD_VERSION:
        _for_old_fetchers(ctx, reads)
    if denied:
        reads = _with_denied(items, reads)
    if ctx.broker.client_quotas.enabled and (throttled := _throttled(ctx, request, context, reads)):
        return throttled
    answer = context.respond([(read.key, read.answer()) for read in reads], ctx.now_ms())
    return fetch_frame(ctx, answer.error, answer.session_id, _included(reads, answer.included))


def _pending_only(
    ctx: RequestContext, context: FetchContext, replica_id: int
) -> IncrementalContext | None:
    """An incremental context that reads only its session's pending partitions (None: any
    other). A follower's reads every partition (its fetch moves the ISR and high watermark),
    as does one under a test's pushed errors, and under an authorizer one from another
    principal or host than the last, or after an ACL change (which notifies no partition)."""
    if not isinstance(context, IncrementalContext):
        return None
    authorizer = ctx.broker.authorizer
    if authorizer is not None:
        session = ctx.session
        context.authorized_as = (
            session.principal,
            session.host,
            session.inter_broker,
            authorizer.generation,
        )
    if (
        replica_id >= 0
        or ctx.entry_errors
        or context.authorized_as != context.session.authorized_as
    ):
        context.read_all = True
        return None
    return context


def _included(reads: list[PartitionRead], included: list[PartitionKey]) -> list[PartitionRead]:
    """The reads a session answer includes, in their order; the others' records dropped."""
    if len(included) == len(reads):  # all of them (every full fetch)
        return reads
    keys = set(included)
    for read in reads:
        if read.key not in keys:
            read.drop_records()
    return [read for read in reads if read.key in keys]
