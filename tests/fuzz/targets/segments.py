"""Fuzz target: a partition's segment files after a crash, as the broker opens them
(`LogManager.load` without a clean-shutdown marker: segment recovery, index rebuild).

A template partition (three segments of small batches, one transactional and aborted) is
written once; each input replaces one file of its first segment: the first byte picks
`.log`, `.index`, `.timeindex` or `.txnindex` (modulo 4), the rest is its content.
Outcomes allowed: the partition opens (torn or garbage tails truncated, indexes rebuilt) and
reads back as whole batches of strictly increasing offsets up to its end offset, or it comes up
offline; never another exception or a read that does not advance."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from pathlib import Path

from minibroker.log import LogConfig, LogManager
from minibroker.log.offline import OfflinePartitionLog
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import RecordInput, build_batch, build_control_batch

TOPIC = "fuzz"
CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=100)
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
FIRST_SEGMENT = "00000000000000000000"

_ROOT = Path(tempfile.mkdtemp(prefix="minibroker-fuzz-segments-"))
atexit.register(shutil.rmtree, _ROOT, True)
_TEMPLATE = _ROOT / "template"
_PARTITION = f"{TOPIC}-0"


def _manager(data_dir: Path) -> LogManager:
    return LogManager(data_dir, node_id=0, cluster_id="c", default_config=CONFIG)


def _write_template() -> None:
    manager = _manager(_TEMPLATE)
    log = manager.create(TOPIC, 0, uuid.UUID(int=1), CONFIG)
    for i in range(12):
        records: list[RecordInput] = [(b"k%d" % i, b"v" * (i % 7), [], 1_700_000_000_000 + i)]
        log.append(bytearray(build_batch(records)), 1, now_ms=0)
        if i == 5:
            batch = build_batch(records, producer_id=9, producer_epoch=0, is_transactional=True)
            log.append(bytearray(batch), 1, now_ms=0)
            marker = build_control_batch(
                False, producer_id=9, producer_epoch=0, coordinator_epoch=0, timestamp=1
            )
            log.append(bytearray(marker), 1, now_ms=0)
    manager.pool.close_all()  # a crash: no checkpoints, no clean-shutdown marker


_write_template()


def seeds() -> list[bytes]:
    directory = _TEMPLATE / _PARTITION
    return [
        bytes([kind]) + (directory / (FIRST_SEGMENT + suffix)).read_bytes()
        for kind, suffix in enumerate(SUFFIXES)
        if (directory / (FIRST_SEGMENT + suffix)).exists()
    ]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    data_dir = Path(tempfile.mkdtemp(dir=_ROOT))
    try:
        shutil.copytree(_TEMPLATE, data_dir, dirs_exist_ok=True)
        suffix = SUFFIXES[data[0] % len(SUFFIXES)]
        (data_dir / _PARTITION / (FIRST_SEGMENT + suffix)).write_bytes(data[1:])
        _open_and_read(data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _open_and_read(data_dir: Path) -> None:
    manager = _manager(data_dir)
    try:
        [log] = manager.load()
        if isinstance(log, OfflinePartitionLog):
            return
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            batches = split_batches(log.read(offset, 1 << 16))
            if not batches:
                raise AssertionError(f"reading at {offset} below {log.log_end_offset} gave none")
            for batch in batches:
                last = BatchHeader.parse(batch).last_offset
                if last < offset:
                    raise AssertionError(f"batch ending at {last} read at {offset}")
                offset = last + 1
    finally:
        manager.pool.close_all()  # no clean close: it would only add fsyncs
