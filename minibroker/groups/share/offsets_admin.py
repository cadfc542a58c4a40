"""What AlterShareGroupOffsets and DeleteShareGroupOffsets check first, as Kafka 4.3's group
coordinator: the share feature, the group id, and a share group without members."""

from __future__ import annotations

from minibroker.groups.coordinator import GroupCoordinator
from minibroker.groups.share.manager import ShareGroupError
from minibroker.protocol.errors import ErrorCode

UNSUPPORTED_VERSION_MESSAGE = "The version of API is not supported."
INVALID_GROUP_ID_MESSAGE = "The configured groupId is invalid."
NON_EMPTY_GROUP_MESSAGE = "The group is not empty."
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."

GroupCheck = tuple[ErrorCode, str | None]


def check_empty_share_group(
    groups: GroupCoordinator, group_id: str, enabled: bool, create: bool
) -> GroupCheck:
    """NO_ERROR when `group_id` is a share group without members (made when `create` and there
    is no group of that id), else the top-level error and its message."""
    if not enabled:
        return ErrorCode.UNSUPPORTED_VERSION, UNSUPPORTED_VERSION_MESSAGE
    if not group_id:
        return ErrorCode.INVALID_GROUP_ID, INVALID_GROUP_ID_MESSAGE
    try:
        group = groups.share_group(group_id, create)
    except ShareGroupError as exc:
        return exc.error, exc.message
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE
    return ErrorCode.NO_ERROR, None
