"""Kafka's producer state snapshot files: `<20-digit offset>.snapshot` in a partition directory.

The format is `ProducerStateManager.writeSnapshot` / `readSnapshot` (snapshot version 1):

    version  int16   1
    crc      uint32  CRC-32C of everything after this field
    entries  int32 count, then per producer:
        producer_id int64, epoch int16, last_sequence int32, last_offset int64,
        offset_delta int32, timestamp int64, coordinator_epoch int32,
        current_txn_first_offset int64 (-1: no open transaction)

The file name's offset is the log end offset the snapshot was taken at: the log is replayed from
there. Kafka writes only the newest batch per producer, so after a restart duplicates are
detected against that batch until the producer appends again.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from minibroker.log.checkpoints import write_atomically

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1

_VERSION = struct.Struct(">h")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(
    ">q"  # producer_id
    "h"  # epoch
    "i"  # last_sequence
    "q"  # last_offset
    "i"  # offset_delta
    "q"  # timestamp
    "i"  # coordinator_epoch
    "q"  # current_txn_first_offset
)
_CRC_AT = _VERSION.size
_ENTRIES_AT = _CRC_AT + _CRC.size


class CorruptSnapshotError(Exception):
    """The file is not a version-1 snapshot with a matching CRC (Kafka deletes such files)."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    items = list(entries)
    body = bytearray(_COUNT.pack(len(items)))
    for entry in items:
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            entry.last_sequence,
            entry.last_offset,
            entry.offset_delta,
            entry.timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        )
    return _VERSION.pack(SNAPSHOT_VERSION) + _CRC.pack(crc32c.crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _ENTRIES_AT + _COUNT.size:
        raise CorruptSnapshotError(f"snapshot is {len(data)} bytes, too short for its header")
    (version,) = _VERSION.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    (stored_crc,) = _CRC.unpack_from(data, _CRC_AT)
    computed_crc = crc32c.crc32c(data[_ENTRIES_AT:])
    if stored_crc != computed_crc:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. "
            f"Computed crc: {computed_crc}"
        )
    (count,) = _COUNT.unpack_from(data, _ENTRIES_AT)
    first = _ENTRIES_AT + _COUNT.size
    if count < 0 or len(data) != first + count * _ENTRY.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes cannot hold {count} entries")
    return [SnapshotEntry(*_ENTRY.unpack_from(data, first + i * _ENTRY.size)) for i in range(count)]


def list_snapshots(directory: Path) -> list[tuple[int, Path]]:
    """(offset, path) of every snapshot file in `directory`, oldest first (none if `directory`
    does not exist)."""
    found = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        stem = name[: -len(SNAPSHOT_SUFFIX)]
        if name.endswith(SNAPSHOT_SUFFIX) and len(stem) == 20 and stem.isdigit():
            found.append((int(stem), directory / name))
    return sorted(found)


def write_snapshot(directory: Path, offset: int, entries: Iterable[SnapshotEntry]) -> Path:
    """Write the snapshot durably (temporary file, fsync, rename, directory fsync) and return
    its path."""
    path = directory / snapshot_file_name(offset)
    write_atomically(path, encode_snapshot(entries))
    return path


def read_snapshot(path: Path) -> list[SnapshotEntry]:
    return decode_snapshot(path.read_bytes())
