"""Raw group-protocol calls for wire tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from tests.wire import WireClient

CONSUMER = "consumer"
SESSION_MS = 6000


def join(
    client: WireClient,
    group: str,
    member_id: str = "",
    *,
    version: int = 5,
    session_ms: int = SESSION_MS,
    rebalance_ms: int = SESSION_MS,
    instance_id: str | None = None,
    protocols: list[tuple[str, bytes]] | None = None,
) -> Any:
    return client.call(
        ApiKey.JoinGroup,
        version,
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=CONSUMER,
        protocols=[
            {"name": name, "metadata": data}
            for name, data in (protocols if protocols is not None else [("range", b"m")])
        ],
    )


def join_two_step(client: WireClient, group: str, **kwargs: Any) -> Any:
    first = join(client, group, **kwargs)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    return join(client, group, first.member_id, **kwargs)


def sync(
    client: WireClient,
    group: str,
    member_id: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    *,
    version: int = 3,
    instance_id: str | None = None,
) -> Any:
    return client.call(
        ApiKey.SyncGroup,
        version,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance_id,
        assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
    )


def heartbeat(
    client: WireClient,
    group: str,
    member_id: str,
    generation: int,
    *,
    version: int = 3,
    instance_id: str | None = None,
) -> int:
    response = client.call(
        ApiKey.Heartbeat,
        version,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance_id,
    )
    return int(response.error_code)


def commit(
    client: WireClient,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    member_id: str = "",
    generation: int = -1,
    version: int = 8,
    metadata: str = "",
) -> dict[tuple[str, int], int]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": 3,
                "committed_metadata": metadata,
            }
        )
    response = client.call(
        ApiKey.OffsetCommit,
        version,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        topics=[{"name": name, "partitions": parts} for name, parts in topics.items()],
    )
    return {
        (topic.name, partition.partition_index): partition.error_code
        for topic in response.topics
        for partition in topic.partitions
    }


def fetch_offsets(
    client: WireClient, group: str, wanted: dict[str, list[int]] | None, *, version: int = 7
) -> dict[tuple[str, int], tuple[int, int, str]]:
    topics = None
    if wanted is not None:
        topics = [{"name": name, "partition_indexes": parts} for name, parts in wanted.items()]
    response = client.call(ApiKey.OffsetFetch, version, group_id=group, topics=topics)
    return {
        (topic.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata)
        for topic in response.topics
        for p in topic.partitions
    }


def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Re-check `condition` (each check is a request to the broker) until it holds."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")


def form_group(
    a: WireClient,
    b: WireClient,
    group: str,
    pool: ThreadPoolExecutor,
    *,
    b_session_ms: int = SESSION_MS,
    rebalance_ms: int = SESSION_MS,
) -> tuple[str, str, int]:
    """a joins alone (generation 1), then b joins and a rejoins: (a id, b id, generation 2).

    a is the leader; both have synced.
    """
    a_id = join_two_step(a, group, rebalance_ms=rebalance_ms).member_id
    sync(a, group, a_id, 1, {a_id: b""})
    b_id = join(b, group, session_ms=b_session_ms, rebalance_ms=rebalance_ms).member_id
    b_join = pool.submit(join, b, group, b_id, session_ms=b_session_ms, rebalance_ms=rebalance_ms)
    wait_until(lambda: heartbeat(a, group, a_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS)
    assert join(a, group, a_id, rebalance_ms=rebalance_ms).generation_id == 2
    assert b_join.result(10).generation_id == 2
    b_sync = pool.submit(sync, b, group, b_id, 2)
    sync(a, group, a_id, 2, {a_id: b"a", b_id: b"b"})
    assert b_sync.result(10).assignment == b"b"
    return a_id, b_id, 2
