"""`.txnindex`: Kafka's aborted-transaction index per segment, in the file and memory backends:
collected across segments, truncated, deleted with its segment, created by its first entry,
rebuilt after a crash or when torn."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from minibroker.log import LogConfig, LogManager, PartitionLog
from minibroker.log.blob import FileBlob
from minibroker.log.dump import dump_log_main
from minibroker.log.txnindex import ABORTED_TXN, AbortedTxn
from minibroker.records.records import build_batch, build_control_batch

TOPIC = "txnidx"
CONFIG = LogConfig(segment_bytes=200, index_interval_bytes=100)
BACKENDS = ["file", "memory"]
T0 = 1_700_000_000_000

# (producer id, data records | "abort" | "commit"); producer -1 is a plain batch.
SCENARIO: list[tuple[int, int | str]] = [
    (1, 2),  # 0-1   pid 1 opens
    (2, 1),  # 2     pid 2 opens
    (1, "abort"),  # 3   -> (1, first 0, last 3, LSO 2: pid 2 still open)
    (-1, 1),  # 4
    (2, "commit"),  # 5
    (3, 1),  # 6     pid 3 opens
    (3, "abort"),  # 7   -> (3, 6, 7, LSO 8)
    (-1, 1),  # 8
]
EXPECTED = [AbortedTxn(1, 0, 3, 2), AbortedTxn(3, 6, 7, 8)]


def manager_for(backend: str, tmp_path: Path) -> LogManager:
    data_dir = tmp_path / "data" if backend == "file" else None
    return LogManager(data_dir, node_id=0, cluster_id="c", default_config=CONFIG)


def write_scenario(log: PartitionLog, steps: list[tuple[int, int | str]] = SCENARIO) -> None:
    """Append the scenario, indexing aborts as the marker writer does."""
    first_offsets: dict[int, int] = {}
    for producer_id, what in steps:
        if isinstance(what, int):
            records = [(None, b"v" * 20, [], T0)] * what
            batch = build_batch(
                records,
                producer_id=producer_id,
                producer_epoch=0 if producer_id >= 0 else -1,
                base_sequence=0 if producer_id >= 0 else -1,
                is_transactional=producer_id >= 0,
            )
            base = log.append(bytearray(batch), 0, now_ms=T0)
            if producer_id >= 0:
                first_offsets.setdefault(producer_id, base)
            continue
        marker = build_control_batch(
            what == "commit",
            producer_id=producer_id,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=T0,
        )
        offset = log.append(bytearray(marker), 0, now_ms=T0)
        first = first_offsets.pop(producer_id)
        if what == "abort":
            lso = min(first_offsets.values(), default=offset + 1)
            log.append_aborted_txn(producer_id, first, offset, lso)


def txnindex_files(data_dir: Path) -> dict[str, bytes]:
    directory = data_dir / f"{TOPIC}-0"
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.txnindex"))}


@pytest.mark.parametrize("backend", BACKENDS)
def test_aborted_transactions_are_collected_across_segments(backend: str, tmp_path: Path) -> None:
    log = manager_for(backend, tmp_path).create(TOPIC, 0, uuid.uuid4(), CONFIG)
    write_scenario(log)
    assert len(log.segments()) > 2
    assert log.collect_aborted_txns(0, log.log_end_offset) == EXPECTED
    assert log.collect_aborted_txns(0, 1) == [EXPECTED[0]]
    assert log.collect_aborted_txns(4, log.log_end_offset) == [EXPECTED[1]]
    assert log.collect_aborted_txns(8, log.log_end_offset) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncation_drops_entries_whose_marker_is_cut(backend: str, tmp_path: Path) -> None:
    log = manager_for(backend, tmp_path).create(TOPIC, 0, uuid.uuid4(), CONFIG)
    write_scenario(log)
    log.truncate_to(7)
    assert log.collect_aborted_txns(0, log.log_end_offset) == [EXPECTED[0]]
    log.truncate_to(3)
    assert log.collect_aborted_txns(0, log.log_end_offset) == []


def test_index_files_sit_beside_their_segments_and_go_with_them(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path)
    config = dataclasses.replace(CONFIG, retention_bytes=0)
    log = manager.create(TOPIC, 0, uuid.uuid4(), config)
    write_scenario(log)
    files = txnindex_files(tmp_path / "data")
    # As Kafka, only a segment with an aborted transaction has a `.txnindex`.
    assert len(files) == len(EXPECTED)
    assert set(files) < {f"{base:020d}.txnindex" for base, _ in log.segments()}
    assert b"".join(files.values()) == b"".join(txn.encode() for txn in EXPECTED)
    manager.run_retention(now_ms=T0)
    assert [base for base, _ in log.segments()] == [log.segments()[-1][0]]
    assert txnindex_files(tmp_path / "data") == {}
    manager.close()


def test_no_file_until_the_first_aborted_transaction(tmp_path: Path) -> None:
    """Kafka creates a segment's `.txnindex` lazily; a missing one is an empty one, after a
    clean shutdown as after a crash (recovery creates only the files that hold entries)."""
    manager = manager_for("file", tmp_path)
    log = manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)
    assert txnindex_files(tmp_path / "data") == {}
    write_scenario(log)
    written = txnindex_files(tmp_path / "data")
    assert len(written) == len(EXPECTED)
    manager.close()
    manager = manager_for("file", tmp_path)
    [log] = manager.load()
    assert txnindex_files(tmp_path / "data") == written
    assert log.collect_aborted_txns(0, log.log_end_offset) == EXPECTED
    manager.delete(TOPIC, 0)
    manager.close()

    manager = manager_for("file", tmp_path)
    write_scenario(manager.create(TOPIC, 0, uuid.uuid4(), CONFIG))
    manager.pool.close_all()  # a crash: nothing flushed, the files' creation lost
    for path in (tmp_path / "data" / f"{TOPIC}-0").glob("*.txnindex"):
        path.unlink()
    manager = manager_for("file", tmp_path)
    [log] = manager.load()
    assert txnindex_files(tmp_path / "data") == written
    assert log.collect_aborted_txns(0, log.log_end_offset) == EXPECTED
    manager.close()


def test_rebuilt_after_a_crash_as_written(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path)
    write_scenario(manager.create(TOPIC, 0, uuid.uuid4(), CONFIG))
    written = txnindex_files(tmp_path / "data")
    manager.pool.close_all()  # a crash: nothing flushed, the recovery point is still 0
    for path in (tmp_path / "data" / f"{TOPIC}-0").glob("*.txnindex"):
        path.write_bytes(b"")  # the unflushed index writes are lost
    manager = manager_for("file", tmp_path)
    [log] = manager.load()
    assert txnindex_files(tmp_path / "data") == written
    assert log.collect_aborted_txns(0, log.log_end_offset) == EXPECTED
    manager.close()


@pytest.mark.parametrize("damage", ["torn", "below-base"])
def test_corrupt_index_is_rebuilt_after_a_clean_shutdown(tmp_path: Path, damage: str) -> None:
    manager = manager_for("file", tmp_path)
    write_scenario(manager.create(TOPIC, 0, uuid.uuid4(), CONFIG))
    manager.close()
    written = txnindex_files(tmp_path / "data")
    name = next(name for name, data in written.items() if data and not name.startswith("0" * 20))
    victim = tmp_path / "data" / f"{TOPIC}-0" / name
    if damage == "torn":
        victim.write_bytes(victim.read_bytes()[:-5])
    else:
        victim.write_bytes(AbortedTxn(9, 0, 0, 1).encode())
    manager = manager_for("file", tmp_path)
    manager.load()
    assert txnindex_files(tmp_path / "data") == written
    manager.close()


def test_orphan_txnindex_is_removed(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path)
    manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)
    manager.close()
    orphan = tmp_path / "data" / f"{TOPIC}-0" / f"{123:020d}.txnindex"
    orphan.write_bytes(AbortedTxn(1, 123, 124, 125).encode())
    manager = manager_for("file", tmp_path)
    manager.load()
    assert not orphan.exists()
    manager.close()


def test_entry_layout_is_kafkas() -> None:
    assert ABORTED_TXN.size == 34
    assert AbortedTxn(0x0102, 3, 4, 5).encode() == bytes.fromhex(
        "0000 0000000000000102 0000000000000003 0000000000000004 0000000000000005"
    )


def test_dump_log_prints_the_txnindex_as_kafka(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{0:020d}.txnindex"
    path.write_bytes(b"".join(txn.encode() for txn in EXPECTED))
    assert dump_log_main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {path}",
        "version: 0 producerId: 1 firstOffset: 0 lastOffset: 3 lastStableOffset: 2",
        "version: 0 producerId: 3 firstOffset: 6 lastOffset: 7 lastStableOffset: 8",
    ]


def test_entry_is_flushed_with_a_marker_fsynced_on_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flushed: list[str] = []
    original_flush = FileBlob.flush

    def recording_flush(blob: FileBlob) -> None:
        flushed.append(blob.path.name)
        original_flush(blob)

    monkeypatch.setattr(FileBlob, "flush", recording_flush)
    config = dataclasses.replace(CONFIG, segment_bytes=1 << 20, fsync_on_ack=True)
    log = manager_for("file", tmp_path).create(TOPIC, 0, uuid.uuid4(), config)
    write_scenario(log, SCENARIO[:-1])  # nothing appended after the last abort
    assert flushed.count(f"{0:020d}.txnindex") == len(EXPECTED)
