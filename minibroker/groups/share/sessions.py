"""Share sessions (KIP-932), as Kafka 4.3's `ShareSessionCache`: one per share-group member
and broker, holding the partitions the member fetches from this broker.

ShareSessionEpoch 0 opens a session (replacing the member's previous one), naming the
partitions; each later request carries the next epoch (1, 2, ..., wrapping to 1) and names
only partitions to add, with `ForgottenTopicsData` removing some; -1 is the member's last
request: its acknowledgements are applied and the session closes. A request for a member
without a session is SHARE_SESSION_NOT_FOUND, one with another epoch
INVALID_SHARE_SESSION_EPOCH; beyond `group.share.max.share.sessions` sessions a new one is
SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from minibroker.protocol.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

SessionKey = tuple[str, str]  # group id, member id
SharePartitionKey = tuple[uuid.UUID, int]  # topic id, partition


class ShareSessionError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    partitions: dict[SharePartitionKey, None] = field(default_factory=dict)  # ordered set

    def update(self, added: list[SharePartitionKey], forgotten: list[SharePartitionKey]) -> None:
        for key in added:
            self.partitions.setdefault(key, None)
        for key in forgotten:
            self.partitions.pop(key, None)

    def advance(self) -> None:
        self.next_epoch = 1 if self.next_epoch == MAX_EPOCH else self.next_epoch + 1


class ShareSessionCache:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[SessionKey, ShareSession] = {}

    def open(self, group_id: str, member_id: str) -> tuple[ShareSession, ShareSession | None]:
        """A new session for the member (epoch 0), and the one it replaces, if any."""
        key = (group_id, member_id)
        replaced = self._sessions.pop(key, None)
        if len(self._sessions) >= self.max_sessions:
            if replaced is not None:
                self._sessions[key] = replaced
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                "Share session limit reached: no new share session can be created.",
            )
        session = ShareSession(group_id, member_id)
        self._sessions[key] = session
        return session, replaced

    def existing(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's session for a request at `epoch` (> 0, or -1 for the last one)."""
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND,
                f"Share session not found for member {member_id} of group {group_id}.",
            )
        if epoch != FINAL_EPOCH and epoch != session.next_epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"The share session epoch {epoch} is not the expected {session.next_epoch}.",
            )
        return session

    def close(self, session: ShareSession) -> None:
        self._sessions.pop((session.group_id, session.member_id), None)

    def sessions_of_group(self, group_id: str) -> list[ShareSession]:
        return [s for s in self._sessions.values() if s.group_id == group_id]

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)
