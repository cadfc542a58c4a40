"""Answer parts the KIP-848 and KIP-932 group APIs share: ConsumerGroupHeartbeat and
ShareGroupHeartbeat have the same response layout, as have the member assignments of
ConsumerGroupDescribe and ShareGroupDescribe, whose groups are also authorized alike.
`key` names which API's structs to build."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any

from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode

Assignment = Mapping[uuid.UUID, Set[int]]
HIDDEN_TOPICS_MESSAGE = (
    "The group has described topic(s) that the client is not authorized to describe."
)
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


def authorized_described_groups(
    group_ids: Sequence[str],
    describable_groups: Set[str],
    describe: Callable[[str], Any],
    failed: Callable[[str, ErrorCode, str | None], Any],
    describable_topics: Callable[[set[str]], Set[str]],
) -> list[Any]:
    """A describe answer's groups in Kafka's order: those the principal may not DESCRIBE
    (GROUP_AUTHORIZATION_FAILED), then the described ones; a group whose member assignments
    name a topic the principal may not DESCRIBE fails with TOPIC_AUTHORIZATION_FAILED."""
    refused = [
        failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        for group_id in group_ids
        if group_id not in describable_groups
    ]
    described = [describe(group_id) for group_id in group_ids if group_id in describable_groups]
    groups = refused + described
    allowed = describable_topics(set().union(*(_topic_names(group) for group in groups)))
    return [
        group
        if _topic_names(group) <= allowed
        else failed(group.group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPICS_MESSAGE)
        for group in groups
    ]


def _topic_names(group: Any) -> set[str]:
    """The topics a described group's member assignments (and target assignments) name."""
    assignments: Iterable[Any] = (
        assignment
        for member in group.members
        for assignment in (member.assignment, getattr(member, "target_assignment", None))
        if assignment is not None
    )
    return {topic.topic_name for assignment in assignments for topic in assignment.topic_partitions}
