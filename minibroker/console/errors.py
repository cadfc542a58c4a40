"""The one error the console's reads and writes raise: an HTTP status and a message for the
page (and for the API's `{"error": ...}`)."""

from __future__ import annotations

from minibroker.protocol.errors import ErrorCode

BAD_REQUEST = 400
FORBIDDEN = 403
NOT_FOUND = 404
CONFLICT = 409
PAYLOAD_TOO_LARGE = 413
UNSUPPORTED_MEDIA_TYPE = 415


class ConsoleError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def kafka_error(error: ErrorCode, message: str | None = None) -> ConsoleError:
    """A Kafka error code as the console reports it: its name and Kafka's message; unknown
    topics and groups are 404, a group in the wrong state 409, the rest 400."""
    status = BAD_REQUEST
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.GROUP_ID_NOT_FOUND,
    ):
        status = NOT_FOUND
    elif error in (ErrorCode.NON_EMPTY_GROUP, ErrorCode.TOPIC_ALREADY_EXISTS):
        status = CONFLICT
    elif error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        status = PAYLOAD_TOO_LARGE
    text = f"{error.name}: {message}" if message else error.name
    return ConsoleError(status, text)
