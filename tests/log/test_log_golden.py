"""Golden bytes: what append writes to .log/.index/.timeindex, worked out by hand.

Every batch below has records of a 10-byte value, no key, no headers: 17 bytes per record
(length 1, attributes 1, timestamp delta 1, offset delta 1, key length 1, value length 1,
value 10, header count 1), so a batch of n records is 61 + 17n bytes.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import crc32c

from minibroker.log import LogConfig, LogManager

from .log_testing import make_batch, stamped

TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
VALUE = b"0123456789"

# (record count, first timestamp): offsets 0-2, 3-4, 5, 6-9, 10, 11
BATCHES = [(3, 1000), (2, 990), (1, 2000), (4, 1500), (1, 3000), (1, 4000)]
SIZES = [112, 95, 78, 129, 78, 78]
POSITIONS = [0, 112, 207, 285, 414, 492]
BASE_OFFSETS = [0, 3, 5, 6, 10, 11]
LEADER_EPOCH = 7


def build(count: int, timestamp: int) -> bytearray:
    return make_batch([VALUE] * count, timestamp=timestamp)


def open_manager(data_dir: Path) -> LogManager:
    return LogManager(data_dir, node_id=1, cluster_id="golden-cluster", default_config=LogConfig())


def offset_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", relative, position) for relative, position in entries)


def time_index(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, relative) for ts, relative in entries)


def test_batch_sizes_are_the_hand_computed_ones() -> None:
    assert [len(build(n, ts)) for n, ts in BATCHES] == SIZES


def test_single_segment_log_and_index_bytes(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    log = manager.create("golden", 0, TOPIC_ID, LogConfig(index_interval_bytes=100))
    originals = [build(n, ts) for n, ts in BATCHES]
    bases = [log.append(bytearray(batch), LEADER_EPOCH, now_ms=5000) for batch in originals]
    assert bases == BASE_OFFSETS
    assert log.log_end_offset == 12

    directory = tmp_path / "golden-0"
    expected_log = b"".join(
        stamped(batch, base, LEADER_EPOCH) for batch, base in zip(originals, bases, strict=True)
    )
    assert (directory / "00000000000000000000.log").read_bytes() == expected_log
    assert len(expected_log) == 570

    # The active segment's index entries are written behind; a flush writes them out.
    assert (directory / "00000000000000000000.index").read_bytes() == b""
    log.flush()
    # Index entry before a batch once more than 100 bytes were appended since the last one:
    # batch 1 (112 before it), batch 3 (95 + 78 = 173), batch 4 (129). The entry holds the
    # batch's *last* offset. The time index takes the largest timestamp so far, if it grew.
    assert (directory / "00000000000000000000.index").read_bytes() == offset_index(
        (4, 112), (9, 285), (10, 414)
    )
    assert (directory / "00000000000000000000.timeindex").read_bytes() == time_index(
        (1002, 2), (2000, 5), (3000, 10)
    )

    manager.close()
    # Closing indexes the segment's largest timestamp (4000, batch 5), as Kafka does.
    assert (directory / "00000000000000000000.timeindex").read_bytes() == time_index(
        (1002, 2), (2000, 5), (3000, 10), (4000, 11)
    )
    assert (directory / "00000000000000000000.index").read_bytes() == offset_index(
        (4, 112), (9, 285), (10, 414)
    )


def test_stamping_leaves_the_crc_valid() -> None:
    batch = stamped(build(3, 1000), 123456789, LEADER_EPOCH)
    assert struct.unpack_from(">q", batch, 0)[0] == 123456789
    assert struct.unpack_from(">i", batch, 12)[0] == LEADER_EPOCH
    assert struct.unpack_from(">I", batch, 17)[0] == crc32c.crc32c(batch[21:])


def test_roll_on_segment_bytes_names_files_and_relative_offsets(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    config = LogConfig(index_interval_bytes=100, segment_bytes=300)
    log = manager.create("golden", 3, TOPIC_ID, config)
    originals = [build(n, ts) for n, ts in BATCHES]
    for batch in originals:
        log.append(bytearray(batch), LEADER_EPOCH, now_ms=5000)

    # 112 + 95 + 78 = 285 fits in 300; adding batch 3 (129) would not: roll at offset 6.
    assert log.segments() == [(0, 285), (6, 285)]
    directory = tmp_path / "golden-3"
    assert sorted(path.name for path in directory.iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000006.index",
        "00000000000000000006.log",
        "00000000000000000006.timeindex",
        "partition.metadata",
    ]
    stored = [stamped(b, o, LEADER_EPOCH) for b, o in zip(originals, BASE_OFFSETS, strict=True)]
    first, second = b"".join(stored[:3]), b"".join(stored[3:])
    assert (directory / "00000000000000000000.log").read_bytes() == first
    assert (directory / "00000000000000000006.log").read_bytes() == second

    log.flush()
    assert (directory / "00000000000000000000.index").read_bytes() == offset_index((4, 112))
    # Rolled: its largest timestamp (2000 at offset 5) is indexed.
    assert (directory / "00000000000000000000.timeindex").read_bytes() == time_index(
        (1002, 2), (2000, 5)
    )
    # Second segment, relative to base 6: batch 4 (offset 10) at 129 after 129 bytes.
    assert (directory / "00000000000000000006.index").read_bytes() == offset_index((4, 129))
    assert (directory / "00000000000000000006.timeindex").read_bytes() == time_index((3000, 4))
    manager.close()
    assert (directory / "00000000000000000006.timeindex").read_bytes() == time_index(
        (3000, 4), (4000, 5)
    )


def test_roll_on_full_index(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    # 16 bytes: two offset-index entries, one time-index entry.
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=16)
    log = manager.create("golden", 1, TOPIC_ID, config)
    for timestamp in (100, 200, 300, 400, 500):
        log.append(build(1, timestamp), 0, now_ms=0)
    # Batch 0 is never indexed; batch 1 adds a time entry (time index full), so batch 2 rolls.
    assert [base for base, _size in log.segments()] == [0, 2, 4]
    manager.close()


def test_roll_on_segment_ms_uses_the_first_batch_timestamp(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    log = manager.create("golden", 2, TOPIC_ID, LogConfig(segment_ms=1000))
    log.append(build(1, 10_000), 0, now_ms=0)
    log.append(build(1, 11_000), 0, now_ms=0)  # waited exactly segment.ms: no roll
    log.append(build(1, 11_001), 0, now_ms=0)  # waited 1001 ms > segment.ms: roll
    assert [base for base, _size in log.segments()] == [0, 2]
    manager.close()


def test_metadata_and_checkpoint_files(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    log = manager.create("golden", 0, TOPIC_ID, LogConfig(segment_bytes=300))
    for n, ts in BATCHES:
        log.append(build(n, ts), 0, now_ms=0)
    log.delete_records_before(7)
    manager.close()

    assert (tmp_path / "golden-0" / "partition.metadata").read_text() == (
        "version: 0\ntopic_id: ASNFZ4mrze8BI0VniavN7w\n"
    )
    properties = (tmp_path / "meta.properties").read_text().splitlines()
    assert properties[0] == "#" and properties[1].startswith("#")
    assert properties[2:] == [
        "cluster.id=golden-cluster",
        f"directory.id={properties[3].split('=', 1)[1]}",
        "node.id=1",
        "version=1",
    ]
    assert len(properties[3].split("=", 1)[1]) == 22
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\ngolden 0 12\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\ngolden 0 7\n"
    assert (tmp_path / ".kafka_cleanshutdown").exists()

    reopened = open_manager(tmp_path)
    [log] = reopened.load()
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert (log.log_start_offset, log.log_end_offset) == (7, 12)
    assert log.topic_id == TOPIC_ID
    reopened.close()
