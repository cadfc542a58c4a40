"""Compatibility levels, as Confluent's registry applies them.

BACKWARD: the new schema reads data written with the previous one; FORWARD: the previous one
reads data written with the new; FULL: both. The `_TRANSITIVE` levels check every earlier
live version instead of the latest only; NONE checks nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.registry.formats.base import ParsedSchema

DEFAULT_LEVEL = "BACKWARD"
LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


def is_transitive(level: str) -> bool:
    return level.endswith("_TRANSITIVE")


def pair_errors(level: str, new: ParsedSchema, old: ParsedSchema) -> list[str]:
    """What stops `new` following `old` under the level (not transitive: one pair)."""
    if level == "NONE":
        return []
    if new.schema_type != old.schema_type:
        return [
            f"{{errorType:'SCHEMA_TYPE_CHANGED', description:'The schema type changed from "
            f"{old.schema_type} to {new.schema_type}'}}"
        ]
    errors: list[str] = []
    if level.startswith(("BACKWARD", "FULL")):
        errors += _with_roles(new.reading_errors(old), "new", "old")
    if level.startswith(("FORWARD", "FULL")):
        errors += _with_roles(old.reading_errors(new), "old", "new")
    return errors


def _with_roles(messages: list[str], reader: str, writer: str) -> list[str]:
    """Confluent's messages name the reader's and the writer's role in two `%s` (in that
    order), filled once the direction is known; a path may hold a `%` of its own."""
    return [message.replace("%s", reader, 1).replace("%s", writer, 1) for message in messages]


def checked_versions(level: str, previous: Sequence[int]) -> list[int]:
    """Which earlier versions (in order) the level compares a new schema with."""
    if level == "NONE" or not previous:
        return []
    return list(previous) if is_transitive(level) else [previous[-1]]
