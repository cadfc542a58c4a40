"""`minibroker dump-log`: Kafka's kafka-dump-log.sh lines for segments and indexes."""

from __future__ import annotations

import shutil
import struct
import uuid
from pathlib import Path

import pytest

from minibroker.log import LogConfig, LogManager
from minibroker.log.dump import dump_log_main

from .log_testing import make_batch

CONFIG = LogConfig(index_interval_bytes=0)
SEGMENT = "00000000000000000000"


def write_segment(data_dir: Path) -> tuple[Path, list[bytes]]:
    """Three batches: a plain one with keys and headers, a transactional LogAppendTime one and
    a COMMIT control batch. Returns the partition directory and the stored batches."""
    manager = LogManager(data_dir, node_id=0, cluster_id="d", default_config=CONFIG)
    log = manager.create("dump", 0, uuid.uuid4(), CONFIG)
    plain = make_batch(
        [b"hello", None],
        keys=[b"k1", None],
        headers=[("h1", b"x"), ("h2", None)],
        timestamp=1000,
        timestamp_step=5,
        producer_id=42,
        producer_epoch=1,
        base_sequence=7,
    )
    appended_time = make_batch([b"world"], timestamp=2000, attributes=0x08 | 0x10)
    commit = make_batch(
        [struct.pack(">hi", 0, 5)],
        keys=[struct.pack(">hh", 0, 1)],
        timestamp=3000,
        attributes=0x20 | 0x10,
        producer_id=42,
        producer_epoch=1,
    )
    for batch in (plain, appended_time, commit):
        log.append(batch, 3, now_ms=0)
    manager.close()
    directory = data_dir / "dump-0"
    data = (directory / f"{SEGMENT}.log").read_bytes()
    sizes = [len(plain), len(appended_time), len(commit)]
    stored = [data[sum(sizes[:i]) : sum(sizes[: i + 1])] for i in range(3)]
    return directory, stored


def crc(batch: bytes) -> int:
    return int(struct.unpack_from(">I", batch, 17)[0])


def batch_lines(stored: list[bytes]) -> list[str]:
    a, b, c = stored
    return [
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 7 lastSequence: 8 producerId: 42 "
        "producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1005 "
        f"size: {len(a)} magic: 2 compresscodec: none crc: {crc(a)} isvalid: true",
        "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: true isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: {len(a)} LogAppendTime: 2000 "
        f"size: {len(b)} magic: 2 compresscodec: none crc: {crc(b)} isvalid: true",
        "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 42 "
        "producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: true isControl: true "
        f"deleteHorizonMs: OptionalLong.empty position: {len(a) + len(b)} CreateTime: 3000 "
        f"size: {len(c)} magic: 2 compresscodec: none crc: {crc(c)} isvalid: true",
    ]


def test_log_file_batches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory, stored = write_segment(tmp_path)
    path = directory / f"{SEGMENT}.log"
    assert dump_log_main([str(path)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f"Dumping {path}",
        "Log starting offset: 0",
        *batch_lines(stored),
    ]
    assert out.err == ""


def test_log_file_with_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory, stored = write_segment(tmp_path)
    path = directory / f"{SEGMENT}.log"
    assert dump_log_main(["--files", str(path), "--print-data-log"]) == 0
    first, second, third = batch_lines(stored)
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {path}",
        "Log starting offset: 0",
        first,
        "| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 5 sequence: 7 "
        "headerKeys: [h1,h2] key: k1 payload: hello",
        "| offset: 1 CreateTime: 1005 keySize: -1 valueSize: -1 sequence: 8 headerKeys: [h1,h2]",
        second,
        "| offset: 2 LogAppendTime: 2000 keySize: -1 valueSize: 5 sequence: -1 "
        "headerKeys: [] payload: world",
        third,
        "| offset: 3 CreateTime: 3000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5",
    ]


def test_invalid_crc_and_trailing_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory, stored = write_segment(tmp_path)
    path = tmp_path / f"{SEGMENT}.log"
    data = bytearray((directory / f"{SEGMENT}.log").read_bytes())
    data[len(stored[0]) - 1] ^= 0xFF  # last byte of the first batch's records
    path.write_bytes(bytes(data) + b"\x00" * 10)
    assert dump_log_main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == batch_lines(stored)[0].replace("isvalid: true", "isvalid: false")
    assert lines[3:5] == batch_lines(stored)[1:]
    assert lines[5] == f"Found 10 invalid bytes at the end of {SEGMENT}.log"


def test_index_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory, stored = write_segment(tmp_path)
    index, time_index = directory / f"{SEGMENT}.index", directory / f"{SEGMENT}.timeindex"
    assert dump_log_main([str(index), str(time_index)]) == 0
    out = capsys.readouterr()
    # With index.interval.bytes 0 every batch but the first is indexed, by its last offset.
    assert out.out.splitlines() == [
        f"Dumping {index}",
        f"offset: 2 position: {len(stored[0])}",
        f"offset: 3 position: {len(stored[0]) + len(stored[1])}",
        f"Dumping {time_index}",
        "timestamp: 2000 offset: 2",
        "timestamp: 3000 offset: 3",
    ]
    assert out.err == ""


def copy_segment(directory: Path, destination: Path) -> Path:
    destination.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(directory / f"{SEGMENT}{suffix}", destination / f"{SEGMENT}{suffix}")
    return destination


def test_index_entries_that_miss_their_batch_are_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory, _stored = write_segment(tmp_path)
    index = copy_segment(directory, tmp_path / "bad-index") / f"{SEGMENT}.index"
    index.write_bytes(struct.pack(">ii", 2, 5) + index.read_bytes()[8:])  # not a batch start
    time_index = copy_segment(directory, tmp_path / "bad-time") / f"{SEGMENT}.timeindex"
    wrong_entries = [(2500, 2), (2400, 1), (2450, 5)]  # no offset 5 in the log
    time_index.write_bytes(
        b"".join(struct.pack(">qi", *entry) for entry in wrong_entries)
        + time_index.read_bytes()[12:]
    )
    assert dump_log_main([str(index), str(time_index)]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[1] == "offset: 2 position: 5"
    assert out.out.splitlines()[-4:] == [
        "timestamp: 2500 offset: 2",
        "timestamp: 2400 offset: 1",
        "timestamp: 2450 offset: 5",
        "timestamp: 3000 offset: 3",
    ]
    assert out.err.splitlines() == [
        f"Mismatches in :{index.resolve()}",
        "  Index offset: 2, log offset: -1",
        f"Found timestamp mismatch in :{time_index.resolve()}",
        "  Index timestamp: 2500, log timestamp: 2000",
        "  Index timestamp: 2400, log timestamp: 1005",
        f"Found out of order timestamp in :{time_index.resolve()}",
        "  Index timestamp: 2400, Previously indexed timestamp: 2500",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 5, found log offset: -1",
    ]


def test_no_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        dump_log_main([])
    assert exit_info.value.code == 2
    assert "no files given" in capsys.readouterr().err
