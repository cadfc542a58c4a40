"""A node's replica fetcher: its follower replicas copy their leaders' logs with Fetch.

Kafka's follower fetch, in process: for every leader it follows, a node sends Fetch v17
requests with its replica id (sessionless, `replica.fetch.wait.max.ms`,
`replica.fetch.max.bytes` per partition, `replica.fetch.response.max.bytes`) to the leader
node's own Fetch handler, which reads up to the log end offset and learns the follower's log
end offset from the fetch offset (ISR and high watermark, cluster/replicas.py). Fetched
batches are appended as they are: same offsets, same leader epochs. Before it fetches for a
new leader epoch, a follower truncates its log where it diverges from the leader's (Kafka's
truncation by leader epoch). A leader's log start offset (DeleteRecords, retention) is
followed. Stopped, fenced (isolated) or paused replicas do not fetch, nor do followers whose
link to their leader is cut (a partial partition: an answer that was in flight when the link
was cut is dropped); errors back off for `replica.fetch.backoff.ms`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from minibroker.cluster.replicas import NO_LEADER, Replica, truncation_offset
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import REGISTRY
from minibroker.log import OffsetOutOfRange
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame, RequestHeader, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.server.context import RequestContext, Session

if TYPE_CHECKING:
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

FETCH_VERSION = 17
IDLE_SECONDS = 0.1
_Request = struct_type(ApiKey.Fetch, "request")
_Topic = struct_type(ApiKey.Fetch, "request", "FetchTopic")
_Partition = struct_type(ApiKey.Fetch, "request", "FetchTopic", "FetchPartition")
_ReplicaState = struct_type(ApiKey.Fetch, "request", "ReplicaState")

Followed = list[tuple[Partition, Replica]]


class ReplicaFetcher:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._task: asyncio.Task[None] | None = None
        self._per_leader: dict[int, asyncio.Task[None]] = {}
        self._correlation_id = 0

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        """Cancel the fetch loops (a fetch in flight ends with them, appending nothing more)."""
        for task in (self._task, *self._per_leader.values()):
            if task is not None:
                task.cancel()

    async def join(self) -> None:
        """Until stopped loops have ended."""
        self.stop()
        tasks = [task for task in (self._task, *self._per_leader.values()) if task is not None]
        self._task, self._per_leader = None, {}
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        """One fetch loop per leader followed, as Kafka's fetcher threads per source broker
        (a long poll on an idle leader does not hold up the others)."""
        loop = asyncio.get_running_loop()
        while True:
            for leader in self._followed_by_leader():
                task = self._per_leader.get(leader)
                if task is None or task.done():
                    self._per_leader[leader] = loop.create_task(self._follow(leader))
            await asyncio.sleep(IDLE_SECONDS)

    async def _follow(self, leader_id: int) -> None:
        """Fetch from `leader_id` while this node follows it for some partition."""
        while followed := self._followed_by_leader().get(leader_id):
            try:
                clean = await self._fetch_from(leader_id, followed)
            except Exception as exc:  # a fetch must not end the loop: logged, then backed off
                log.error("replica fetch on node %d failed: %r", self.broker.node_id, exc)
                clean = False
            if not clean:
                await asyncio.sleep(self._config_seconds("replica.fetch.backoff.ms"))

    def _config_seconds(self, name: str) -> float:
        return self.broker.config.get_int(name) / 1000

    def _followed_by_leader(self) -> dict[int, Followed]:
        nodes, me = self.broker.nodes, self.broker.node_id
        reachable = nodes.reachable()
        if me not in reachable:
            return {}
        work: dict[int, Followed] = {}
        for partition in self.broker.cluster.replicated_partitions():
            replica_set = partition.replication
            assert replica_set is not None
            replica = replica_set.replicas.get(me)
            leader = replica_set.leader
            if replica is None or replica.paused or leader in (me, NO_LEADER):
                continue
            if leader in reachable and nodes.linked(me, leader):
                work.setdefault(leader, []).append((partition, replica))
        return work

    async def _fetch_from(self, leader_id: int, followed: Followed) -> bool:
        """One fetch from `leader_id`; False when a partition was answered with an error."""
        leader = self.broker.nodes.broker(leader_id)
        for partition, replica in followed:
            self._truncate_if_new_epoch(partition, replica)
        request = self._request(followed)
        response = await REGISTRY[ApiKey.Fetch].handler(self._context(leader), request)
        if isinstance(response, EncodedFrame):
            response = response.message()
        by_key = {(p.topic, p.index): (p, r, p.leader_epoch) for p, r in followed}
        topics_by_id = self.broker.cluster.topics_by_id
        now_ms = time.time_ns() // 1_000_000
        clean = True
        for topic in response.responses:
            known = topics_by_id.get(topic.topic_id)
            for answer in topic.partitions:
                found = None if known is None else by_key.get((known.name, answer.partition_index))
                if found is None:
                    continue
                partition, replica, epoch = found
                clean = clean and answer.error_code == ErrorCode.NO_ERROR
                if self._still_following(partition, replica, epoch, leader_id):
                    self._apply(replica, answer, now_ms)
        return clean

    def _still_following(
        self, partition: Partition, replica: Replica, epoch: int, leader_id: int
    ) -> bool:
        """Whether a fetch's answer may still be applied: same leader epoch, the link to the
        leader not cut, and neither the topic deleted nor the replica reassigned away while
        the fetch waited."""
        current = self.broker.cluster.partition(partition.topic, partition.index)
        replica_set = partition.replication
        return (
            current is partition
            and self.broker.nodes.linked(self.broker.node_id, leader_id)
            and partition.leader_epoch == epoch
            and replica_set is not None
            and replica_set.replicas.get(replica.node_id) is replica
        )

    @staticmethod
    def _truncate_if_new_epoch(partition: Partition, replica: Replica) -> None:
        replica_set = partition.replication
        assert replica_set is not None
        leader = replica_set.leader_replica()
        if leader is None or replica.following_epoch == partition.leader_epoch:
            return
        replica.truncate_to(truncation_offset(replica, leader, replica_set.high_watermark))
        replica.following_epoch = partition.leader_epoch

    def _request(self, followed: Followed) -> Any:
        config = self.broker.config
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for partition, replica in followed:
            topic = self.broker.cluster.topics[partition.topic]
            by_topic.setdefault(topic.topic_id, []).append(
                _Partition(
                    partition=partition.index,
                    current_leader_epoch=partition.leader_epoch,
                    fetch_offset=replica.log_end_offset,
                    last_fetched_epoch=replica.epochs.latest_epoch,
                    log_start_offset=replica.log.log_start_offset,
                    partition_max_bytes=config.get_int("replica.fetch.max.bytes"),
                )
            )
        return _Request(
            version=FETCH_VERSION,
            replica_state=_ReplicaState(replica_id=self.broker.node_id, replica_epoch=-1),
            max_wait_ms=config.get_int("replica.fetch.wait.max.ms"),
            min_bytes=config.get_int("replica.fetch.min.bytes"),
            max_bytes=config.get_int("replica.fetch.response.max.bytes"),
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[_Topic(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()],
            forgotten_topics_data=[],
            rack_id="",
        )

    def _context(self, leader: Broker) -> RequestContext:
        self._correlation_id += 1
        header = RequestHeader(
            ApiKey.Fetch,
            FETCH_VERSION,
            self._correlation_id,
            f"broker-{self.broker.node_id}-fetcher-0",
        )
        session = Session(client_host="/127.0.0.1", inter_broker=True)
        return RequestContext(leader, header, leader.config.listeners[0], session)

    @staticmethod
    def _apply(replica: Replica, answer: Any, now_ms: int) -> None:
        if answer.error_code != ErrorCode.NO_ERROR or replica.paused:
            return  # a new leader or epoch: the next round follows the shared metadata
        if answer.records:
            append_as_follower(replica, answer.records, now_ms)
        leader_start = answer.log_start_offset
        if replica.log.log_start_offset < leader_start <= replica.log_end_offset:
            with contextlib.suppress(OffsetOutOfRange):
                replica.log.delete_records_before(leader_start)


def append_as_follower(replica: Replica, records: bytes, now_ms: int) -> None:
    """Append fetched batches with the offsets and leader epochs they have."""
    for batch in split_batches(records):
        header = BatchHeader.parse(batch)
        if header.base_offset != replica.log_end_offset:
            return  # not contiguous (the leader truncated meanwhile): the next fetch resumes
        replica.log.append(bytearray(batch), header.partition_leader_epoch, now_ms)
        replica.epochs.assign(header.partition_leader_epoch, header.base_offset)
