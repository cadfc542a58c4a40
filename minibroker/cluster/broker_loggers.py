"""BROKER_LOGGER config resources (KIP-412): this process's loggers and their levels.

Kafka's `RuntimeLoggerManager` lets IncrementalAlterConfigs change log4j levels at run time
(never persisted) and DescribeConfigs list them. Here the loggers are Python's (`root` and
every logger created so far, e.g. `minibroker.server.broker`), with Kafka's level names:
FATAL, ERROR, WARN, INFO, DEBUG, TRACE. Checks in Kafka's order and with its messages: the
resource name must be this node's id (INVALID_REQUEST), the logger must exist
(INVALID_CONFIG "Logger x does not exist!"), the level must be valid (INVALID_CONFIG),
`root` cannot be deleted and APPEND/SUBTRACT are not allowed (INVALID_REQUEST). DELETE makes
a logger inherit its parent's level again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from minibroker.protocol.errors import ErrorCode

ROOT = "root"
TRACE = 5
_LEVELS = {
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": TRACE,
}
# Kafka lists the valid levels in its HashSet's iteration order.
_VALID_LEVELS_TEXT = "TRACE, ERROR, INFO, FATAL, DEBUG, WARN"
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


class LoggerError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class LoggerOp(Protocol):
    """One change (`alter_configs.ConfigOp`): logger name, operation, level."""

    @property
    def name(self) -> str: ...

    @property
    def op(self) -> int: ...

    @property
    def value(self) -> str | None: ...


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    found = logging.root.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def level_name(level: int) -> str:
    """Kafka's name for a Python level (the nearest one at or above it)."""
    for name, value in sorted(_LEVELS.items(), key=lambda item: item[1]):
        if level <= value:
            return name
    return "FATAL"


def loggers() -> dict[str, str]:
    """Every logger with its effective level, `root` first."""
    names = sorted(
        name
        for name, found in logging.root.manager.loggerDict.items()
        if isinstance(found, logging.Logger)
    )
    root = {ROOT: level_name(logging.getLogger().level)}
    return root | {name: level_name(logging.getLogger(name).getEffectiveLevel()) for name in names}


def check_node(name: str, node_id: int) -> None:
    """Kafka's `RuntimeLoggerManager.validateResourceNameIsNodeId` (its message repeats the
    expected id)."""
    try:
        requested = int(name)
    except ValueError:
        raise LoggerError(
            ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
        ) from None
    if requested != node_id:
        raise LoggerError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected node id. Expected {node_id}, but received {node_id}",
        )


def _check(op: LoggerOp) -> None:
    if op.op in (_APPEND, _SUBTRACT):
        verb = "APPEND" if op.op == _APPEND else "SUBTRACT"
        raise LoggerError(
            ErrorCode.INVALID_REQUEST,
            f"{verb} operation is not allowed for the BROKER_LOGGER resource",
        )
    if _logger(op.name) is None:
        raise LoggerError(ErrorCode.INVALID_CONFIG, f"Logger {op.name} does not exist!")
    if op.op == _SET and op.value not in _LEVELS:
        raise LoggerError(
            ErrorCode.INVALID_CONFIG,
            f"Cannot set the log level of {op.name} to {op.value} as it is not a supported log "
            f"level. Valid log levels are {_VALID_LEVELS_TEXT}",
        )
    if op.op == _DELETE and op.name == ROOT:
        raise LoggerError(
            ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
        )


def alter_loggers(node_id: int, name: str, ops: Sequence[LoggerOp], validate_only: bool) -> None:
    """Check every op, then (unless validate_only) apply them; raises LoggerError."""
    check_node(name, node_id)
    for op in ops:
        _check(op)
    if validate_only:
        return
    for op in ops:
        logger = _logger(op.name)
        assert logger is not None
        logger.setLevel(_LEVELS[op.value] if op.op == _SET and op.value else logging.NOTSET)
