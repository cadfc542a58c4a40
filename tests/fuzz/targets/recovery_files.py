"""Fuzz target: the small files a broker reads when it opens its data directory: offset
checkpoints (recovery-point / log-start), `partition.metadata`, producer-state snapshots and
`meta.properties` (minibroker/log/checkpoints.py, minibroker/txn/snapshot.py).

The first input byte picks the file (modulo 4); the rest is its content, written to a
temporary directory and read as the broker reads it. Outcomes allowed: the parsed content,
CorruptCheckpointError (the broker ignores the checkpoint or brings the partition up
offline) or CorruptSnapshotError (the broker rebuilds producer state from the log)."""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from minibroker.log.checkpoints import (
    PARTITION_METADATA,
    CorruptCheckpointError,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
    write_offset_checkpoint,
    write_partition_metadata,
    write_properties,
)
from minibroker.txn.snapshot import (
    CorruptSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
)

_DIR = Path(tempfile.mkdtemp(prefix="minibroker-fuzz-recovery-"))
atexit.register(shutil.rmtree, _DIR, True)
_CHECKPOINT = _DIR / "recovery-point-offset-checkpoint"
_META = _DIR / "meta.properties"


def _checkpoint(content: bytes) -> None:
    _CHECKPOINT.write_bytes(content)
    with contextlib.suppress(CorruptCheckpointError):
        read_offset_checkpoint(_CHECKPOINT)


def _partition_metadata(content: bytes) -> None:
    (_DIR / PARTITION_METADATA).write_bytes(content)
    with contextlib.suppress(CorruptCheckpointError):
        read_partition_metadata(_DIR)


def _snapshot(content: bytes) -> None:
    with contextlib.suppress(CorruptSnapshotError):
        decode_snapshot(content)


def _meta_properties(content: bytes) -> None:
    _META.write_bytes(content)
    with contextlib.suppress(CorruptCheckpointError):
        read_properties(_META)


_READERS: tuple[Callable[[bytes], None], ...] = (
    _checkpoint,
    _partition_metadata,
    _snapshot,
    _meta_properties,
)


def test_one_input(data: bytes) -> None:
    if data:
        _READERS[data[0] % len(_READERS)](data[1:])


def seeds() -> list[bytes]:
    write_offset_checkpoint(_CHECKPOINT, {("topic", 0): 42, ("other", 3): 7})
    write_partition_metadata(_DIR, uuid.UUID(int=12345))
    write_properties(_META, {"cluster.id": "abc", "node.id": "1", "version": "1"})
    entry = SnapshotEntry(7, 1, 4, 100, 4, 1_700_000_000_000, 3, -1)
    return [
        b"\x00" + _CHECKPOINT.read_bytes(),
        b"\x01" + (_DIR / PARTITION_METADATA).read_bytes(),
        b"\x02" + encode_snapshot([entry, entry]),
        b"\x03" + _META.read_bytes(),
    ]
