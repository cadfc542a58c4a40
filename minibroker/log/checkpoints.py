"""Kafka's small text files in a log directory, in Kafka's formats.

- `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`: "0", the entry count,
  then "topic partition offset" lines; replaced atomically (write temp, fsync, rename).
- `<topic>-<partition>/partition.metadata`: "version: 0" and "topic_id: <base64 uuid>".
- `meta.properties`: Java properties with version, node.id, cluster.id, directory.id.
- `.kafka_cleanshutdown`: present only between a clean shutdown and the next start.
"""

from __future__ import annotations

import base64
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
_CHECKPOINT_VERSION = 0


class CorruptCheckpointError(Exception):
    pass


def kafka_uuid_string(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def write_atomically(path: Path, content: str | bytes) -> None:
    """Replace `path` durably: a synced temporary file renamed over it, then the directory
    synced (a power cut leaves the old file or the new one, never a torn or lost one)."""
    temporary = path.with_name(path.name + ".tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """fsync a directory (or a file: both are opened read-only)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    lines = [str(_CHECKPOINT_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in offsets.items()]
    write_atomically(path, "\n".join(lines) + "\n")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CorruptCheckpointError(f"{path}: {error}") from error


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Entries of a checkpoint file; {} if it does not exist."""
    try:
        lines = _read_text(path).splitlines()
    except FileNotFoundError:
        return {}
    try:
        if int(lines[0]) != _CHECKPOINT_VERSION:
            raise CorruptCheckpointError(f"{path}: unknown version {lines[0]}")
        expected = int(lines[1])
        offsets: dict[tuple[str, int], int] = {}
        for line in lines[2 : 2 + expected]:
            topic, partition, offset = line.split()
            offsets[(topic, int(partition))] = int(offset)
    except (IndexError, ValueError) as error:
        raise CorruptCheckpointError(f"{path}: {error}") from error
    if len(offsets) != expected:
        raise CorruptCheckpointError(f"{path}: expected {expected} entries, found {len(offsets)}")
    return offsets


def partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: 0\ntopic_id: {kafka_uuid_string(topic_id)}\n".encode()


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    write_atomically(directory / PARTITION_METADATA, partition_metadata(topic_id))


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    path = os.path.join(directory, PARTITION_METADATA)  # read at every start: no pathlib
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        data = b"".join(iter(lambda: os.read(fd, 4096), b""))
    finally:
        os.close(fd)
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise CorruptCheckpointError(f"{path}: {error}") from error
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    try:
        return parse_kafka_uuid(fields["topic_id"].strip())
    except (KeyError, ValueError) as error:
        raise CorruptCheckpointError(f"{directory / PARTITION_METADATA}: {error}") from error


def read_properties(path: Path) -> dict[str, str]:
    """The file's properties; CorruptCheckpointError if it is not UTF-8."""
    properties: dict[str, str] = {}
    for line in _read_text(path).splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "!")) and "=" in stripped:
            key, value = stripped.split("=", 1)
            properties[key.strip()] = value.strip()
    return properties


def write_properties(path: Path, properties: Mapping[str, str]) -> None:
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    lines = ["#", f"#{stamp}"] + [f"{key}={value}" for key, value in properties.items()]
    write_atomically(path, "\n".join(lines) + "\n")
