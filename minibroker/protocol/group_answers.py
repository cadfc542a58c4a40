"""Answer parts the KIP-848 and KIP-932 group APIs share: ConsumerGroupHeartbeat and
ShareGroupHeartbeat have the same response layout, as have the member assignments of
ConsumerGroupDescribe and ShareGroupDescribe. `key` names which API's structs to build."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Set
from typing import Any

from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode

Assignment = Mapping[uuid.UUID, Set[int]]
_DESCRIBED_ASSIGNMENT = ("response", "DescribedGroup", "Member", "Assignment")


def heartbeat_error(key: int, version: int, error: ErrorCode, message: str | None) -> Any:
    """A heartbeat answer carrying only an error."""
    return new_response(
        key,
        version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        member_id=None,
        member_epoch=-1,
        heartbeat_interval_ms=0,
        assignment=None,
    )


def heartbeat_assignment(key: int, assignment: Assignment | None) -> Any:
    """A heartbeat answer's assignment (None: unchanged, left out), topics by id."""
    if assignment is None:
        return None
    topic_partitions = struct_type(key, "response", "Assignment", "TopicPartitions")
    return struct_type(key, "response", "Assignment")(
        topic_partitions=[
            topic_partitions(topic_id=topic_id, partitions=sorted(partitions))
            for topic_id, partitions in sorted(assignment.items(), key=lambda item: str(item[0]))
        ]
    )


def described_assignment(
    key: int, assignment: Assignment, topic_name: Callable[[uuid.UUID], str | None]
) -> Any:
    """A described member's assignment: topics that still exist, by name, sorted."""
    topic_partitions = struct_type(key, *_DESCRIBED_ASSIGNMENT, "TopicPartitions")
    topics = [
        topic_partitions(topic_id=topic_id, topic_name=name, partitions=sorted(partitions))
        for topic_id, partitions in assignment.items()
        if partitions and (name := topic_name(topic_id)) is not None
    ]
    topics.sort(key=lambda item: item.topic_name)
    return struct_type(key, *_DESCRIBED_ASSIGNMENT)(topic_partitions=topics)
