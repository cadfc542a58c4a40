"""Fetch (key 1), versions 4-12.

Behaviour: stored batches go into the response exactly as they are on disk. Every requested
partition is in the answer, with its high watermark, last stable offset and log start
offset; the first partition with data gets at least one whole batch even past the size
limits (KIP-74), later ones only whole batches within `max_bytes` and their own
`partition_max_bytes`. When fewer than `min_bytes` are available the request waits up to
`max_wait_ms`, woken by appends to its partitions (never by polling). read_committed reads
(isolation level 1) stop at the last stable offset (a batch boundary, so the stored bytes are
still served whole) and list the aborted transactions overlapping the returned range, from the
segments' `.txnindex` (Kafka's `LocalLog.collectAbortedTransactions`): an empty list when there
are none, null for read_uncommitted. Control batches are served like data; clients skip
them. Offsets outside [log start, high watermark] get
OFFSET_OUT_OF_RANGE; a leader epoch newer than ours gets UNKNOWN_LEADER_EPOCH, an older one
FENCED_LEADER_EPOCH. A partition whose storage failed (offline log) gets KAFKA_STORAGE_ERROR.

Version notes: fetch sessions (v7+) are refused the way Kafka refuses them: every full fetch
(epoch 0 or -1) is answered with session id 0, so clients keep sending full fetches, and an
incremental fetch (session id != 0) gets FETCH_SESSION_ID_NOT_FOUND. Preferred read replica
(v11+) is always -1. Capped at v12 so that clients keep using topic names, not ids.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.log import OffsetOutOfRange
from minibroker.log.blob import FileRegion
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import (
    FetchedPartition,
    encode_fetch_response,
    fetch_response_message,
)
from minibroker.server.context import RequestContext

READ_COMMITTED = 1
FINAL_EPOCH = -1
INITIAL_EPOCH = 0
_NO_RECORDS = b""


@dataclass
class PartitionRead:
    topic: str
    index: int
    error: ErrorCode = ErrorCode.NO_ERROR
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | FileRegion = _NO_RECORDS
    next_offset: int = -1  # the offset after the last batch in `records`
    aborted_transactions: list[tuple[int, int]] | None = None

    def drop_records(self) -> None:
        if isinstance(self.records, FileRegion):
            self.records.close()
        self.records = _NO_RECORDS

    def collect_aborted_transactions(self, partition: Partition, fetch_offset: int) -> None:
        """The aborted transactions overlapping the records read (read_committed only)."""
        self.aborted_transactions = []
        if not self.records:
            return
        try:
            aborted = partition.log.collect_aborted_txns(fetch_offset, self.next_offset)
        except OSError:  # the log went offline reading its transaction index
            self.error = ErrorCode.KAFKA_STORAGE_ERROR
            self.drop_records()
            self.aborted_transactions = None
            return
        self.aborted_transactions = [(txn.producer_id, txn.first_offset) for txn in aborted]

    def fetched(self) -> FetchedPartition:
        return FetchedPartition(
            self.index,
            self.error,
            self.high_watermark,
            self.last_stable_offset,
            self.log_start_offset,
            self.aborted_transactions,
            self.records,
        )


def _read_partition(
    ctx: RequestContext, topic: str, wanted: Any, budget: int, read_committed: bool
) -> PartitionRead:
    result = PartitionRead(topic, wanted.partition)
    partition = ctx.broker.cluster.partition(topic, wanted.partition)
    if partition is None:
        result.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return result
    if (not_leader := ctx.leader_error(partition)) is not None:
        result.error = not_leader
        return result
    log = partition.log
    if log.storage_error is not None:
        result.error = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    result.high_watermark = partition.high_watermark
    result.last_stable_offset = last_stable_offset = partition.last_stable_offset
    result.log_start_offset = log.log_start_offset
    epoch_error = partition.leader_epoch_error(wanted.current_leader_epoch)
    if epoch_error is not None:
        result.error = epoch_error
        return result
    upper = last_stable_offset if read_committed else partition.high_watermark
    if wanted.fetch_offset > partition.high_watermark:
        result.error = ErrorCode.OFFSET_OUT_OF_RANGE
        return result
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


def _collect(ctx: RequestContext, request: Any) -> tuple[list[PartitionRead], int]:
    read_committed = request.isolation_level == READ_COMMITTED
    remaining = request.max_bytes
    total = 0
    reads = []
    for topic in request.topics:
        for wanted in topic.partitions:
            read = _read_partition(ctx, topic.topic, wanted, remaining, read_committed)
            if total > 0 and len(read.records) > remaining:
                # Only a first batch larger than the budget (KIP-74) goes past it, and only the
                # first partition with data may have one.
                read.drop_records()
            partition = ctx.broker.cluster.partition(topic.topic, wanted.partition)
            if read_committed and read.error == ErrorCode.NO_ERROR and partition is not None:
                read.collect_aborted_transactions(partition, wanted.fetch_offset)
            total += len(read.records)
            remaining -= len(read.records)
            reads.append(read)
    return reads, total


def _requested_partitions(ctx: RequestContext, request: Any) -> list[Partition]:
    cluster = ctx.broker.cluster
    found = (
        cluster.partition(topic.topic, wanted.partition)
        for topic in request.topics
        for wanted in topic.partitions
    )
    return [partition for partition in found if partition is not None]


async def _wait_for_append(partitions: list[Partition], timeout_s: float) -> None:
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_append(_: Partition) -> None:
        if not woken.done():
            woken.set_result(None)

    for partition in partitions:
        partition.append_listeners.add(on_append)
    try:
        await asyncio.wait_for(woken, timeout_s)
    except TimeoutError:
        pass
    finally:
        for partition in partitions:
            partition.append_listeners.discard(on_append)


async def _long_poll(ctx: RequestContext, request: Any) -> list[PartitionRead]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    partitions = _requested_partitions(ctx, request)
    while True:
        reads, total = _collect(ctx, request)
        has_error = any(read.error != ErrorCode.NO_ERROR for read in reads)
        remaining = deadline - loop.time()
        if total >= request.min_bytes or has_error or remaining <= 0 or not partitions:
            return reads
        for read in reads:
            read.drop_records()
        await _wait_for_append(partitions, remaining)


def _response(ctx: RequestContext, error: ErrorCode, reads: list[PartitionRead]) -> EncodedFrame:
    topics: dict[str, list[FetchedPartition]] = {}
    for read in reads:
        topics.setdefault(read.topic, []).append(read.fetched())
    fetched = list(topics.items())

    def message() -> Any:
        with_bytes = [
            (name, [replace(p, records=_bytes_of(p.records)) for p in partitions])
            for name, partitions in fetched
        ]
        return fetch_response_message(ctx.api_version, error, with_bytes)

    parts = encode_fetch_response(ctx.api_version, ctx.header.correlation_id, error, fetched)
    return EncodedFrame(parts, message)


def _bytes_of(records: object) -> bytes:
    if isinstance(records, FileRegion):
        try:
            return records.read()
        finally:
            records.close()
    assert isinstance(records, bytes)
    return records


def _session_error(request: Any) -> ErrorCode | None:
    if request.session_id != 0:
        return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    if request.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        return ErrorCode.INVALID_FETCH_SESSION_EPOCH
    return None


@handles(ApiKey.Fetch, 4, 12)
async def handle_fetch(ctx: RequestContext, request: Any) -> EncodedFrame:
    session_error = _session_error(request)
    if session_error is not None:
        return _response(ctx, session_error, [])
    reads = await _long_poll(ctx, request)
    return _response(ctx, ErrorCode.NO_ERROR, reads)
