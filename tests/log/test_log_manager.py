"""LogManager and the periodic work: retention, flush policies, descriptors, configuration."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from minibroker.log import (
    InconsistentLogDirError,
    LogConfig,
    LogManager,
    OffsetOutOfRange,
    RecordBatchTooLarge,
)

from .log_testing import make_batch

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)
BACKENDS = ["file", "memory"]


def manager_for(backend: str, tmp_path: Path, **kwargs: int) -> LogManager:
    data_dir = tmp_path / "data" if backend == "file" else None
    return LogManager(data_dir, node_id=3, cluster_id="cluster", default_config=SMALL, **kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_retention_ms_deletes_only_expired_closed_segments(backend: str, tmp_path: Path) -> None:
    manager = manager_for(backend, tmp_path)
    config = dataclasses.replace(SMALL, retention_ms=10_000)
    log = manager.create("ret", 0, uuid.uuid4(), config)
    for i in range(12):  # one 107-byte batch per 10 s of timestamps; 3 batches per segment
        log.append(make_batch([b"x" * 39], timestamp=i * 10_000), 0, now_ms=0)
    bases = [base for base, _size in log.segments()]
    assert bases == [0, 3, 6, 9]
    manager.run_retention(now_ms=60_001)  # segments whose newest timestamp is < 50_001 go
    assert [base for base, _size in log.segments()] == [6, 9]
    assert log.log_start_offset == 6
    manager.run_retention(now_ms=10**12)  # the active segment stays whatever its age
    assert [base for base, _size in log.segments()] == [9]
    with pytest.raises(OffsetOutOfRange):
        log.read(8, 1000)
    assert log.read(9, 1000)
    manager.close()


def test_retention_moves_the_checkpointed_log_start(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path)
    log = manager.create("ret", 0, uuid.uuid4(), dataclasses.replace(SMALL, retention_bytes=500))
    for i in range(12):
        log.append(make_batch([b"x" * 39], timestamp=i), 0, now_ms=0)
    manager.run_retention(now_ms=0)
    assert [base for base, _size in log.segments()] == [6, 9]
    assert log.log_start_offset == 6
    manager.close()
    reopened = manager_for("file", tmp_path)
    [log] = reopened.load()
    assert log.log_start_offset == 6
    reopened.close()


def test_flush_policies_move_the_recovery_point(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path)
    by_time = manager.create("f", 0, uuid.uuid4(), dataclasses.replace(SMALL, flush_ms=1000))
    by_count = manager.create("f", 1, uuid.uuid4(), dataclasses.replace(SMALL, flush_messages=3))
    on_ack = manager.create("f", 2, uuid.uuid4(), dataclasses.replace(SMALL, fsync_on_ack=True))
    rolled = manager.create("f", 3, uuid.uuid4(), SMALL)
    for log in (by_time, by_count, on_ack):
        log.append(make_batch([b"a", b"b"]), 0, now_ms=0)
    assert [by_time.recovery_point, by_count.recovery_point, on_ack.recovery_point] == [0, 0, 2]
    by_count.append(make_batch([b"c"]), 0, now_ms=0)
    assert by_count.recovery_point == 3
    manager.flush_due(now_ms=500)
    assert by_time.recovery_point == 0
    manager.flush_due(now_ms=10_000)
    assert by_time.recovery_point == 2
    checkpoint = (tmp_path / "data" / "recovery-point-offset-checkpoint").read_text()
    assert "f 0 2\n" in checkpoint and "f 1 3\n" in checkpoint and "f 2 2\n" in checkpoint
    for _ in range(5):
        rolled.append(make_batch([b"x" * 39]), 0, now_ms=0)
    assert [base for base, _size in rolled.segments()] == [0, 3]
    manager.flush_due(now_ms=10_000)
    assert rolled.recovery_point == 3
    manager.close()


def test_descriptors_stay_within_the_pool_limit(tmp_path: Path) -> None:
    manager = manager_for("file", tmp_path, max_open_files=8)
    logs = [manager.create("fd", p, uuid.uuid4(), SMALL) for p in range(20)]
    for round_number in range(10):
        for log in logs:
            log.append(make_batch([b"%d" % round_number * 30]), 0, now_ms=0)
            assert manager.pool.open_count <= 8
    for log in logs:
        assert len(log.segments()) > 1
        assert log.read(0, 10_000)
        assert manager.pool.open_count <= 8
    manager.close()
    assert manager.pool.open_count == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_create_get_delete(backend: str, tmp_path: Path) -> None:
    manager = manager_for(backend, tmp_path)
    topic_id = uuid.uuid4()
    log = manager.create("t", 0, topic_id, SMALL)
    assert manager.create("t", 0, topic_id, SMALL) is log
    assert manager.get("t", 0) is log and manager.get("t", 1) is None
    log.append(make_batch([b"v"]), 0, now_ms=0)
    manager.delete("t", 0)
    assert manager.get("t", 0) is None
    if backend == "file":
        assert not (tmp_path / "data" / "t-0").exists()
    manager.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_config_changes_rolls(backend: str, tmp_path: Path) -> None:
    manager = manager_for(backend, tmp_path)
    log = manager.create("t", 0, uuid.uuid4(), SMALL)
    for _ in range(4):
        log.append(make_batch([b"x" * 39]), 0, now_ms=0)
    log.update_config(dataclasses.replace(SMALL, segment_bytes=1 << 20))
    for _ in range(10):
        log.append(make_batch([b"x" * 39]), 0, now_ms=0)
    assert [base for base, _size in log.segments()] == [0, 3]  # 11 batches in the second
    manager.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_larger_than_a_segment_is_refused(backend: str, tmp_path: Path) -> None:
    manager = manager_for(backend, tmp_path)
    log = manager.create("t", 0, uuid.uuid4(), SMALL)
    with pytest.raises(RecordBatchTooLarge):
        log.append(make_batch([b"x" * 500]), 0, now_ms=0)
    assert log.log_end_offset == 0
    manager.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_delete_records_beyond_the_end_is_out_of_range(backend: str, tmp_path: Path) -> None:
    manager = manager_for(backend, tmp_path)
    log = manager.create("t", 0, uuid.uuid4(), SMALL)
    log.append(make_batch([b"a", b"b"]), 0, now_ms=0)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(3)
    assert log.delete_records_before(2) == 2
    assert log.read(2, 100) == b""
    manager.close()


def test_meta_properties_of_another_cluster_is_refused(tmp_path: Path) -> None:
    manager_for("file", tmp_path).close()
    with pytest.raises(InconsistentLogDirError):
        LogManager(tmp_path / "data", node_id=3, cluster_id="other", default_config=SMALL)
    with pytest.raises(InconsistentLogDirError):
        LogManager(tmp_path / "data", node_id=4, cluster_id="cluster", default_config=SMALL)


def test_meta_properties_with_a_node_id_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    manager_for("file", tmp_path).close()
    meta = tmp_path / "data" / "meta.properties"
    meta.write_text(meta.read_text().replace("node.id=", "node.id=x"))
    with pytest.raises(InconsistentLogDirError, match="is not a number"):
        LogManager(tmp_path / "data", node_id=1, cluster_id="cluster", default_config=SMALL)


def test_clean_shutdown_marker_is_consumed_at_startup(tmp_path: Path) -> None:
    manager_for("file", tmp_path).close()
    marker = tmp_path / "data" / ".kafka_cleanshutdown"
    assert marker.exists()
    manager = manager_for("file", tmp_path)
    assert not marker.exists()  # a crash from here on, even before load(), means recovery
    manager.load()
    manager.close()
    assert marker.exists()
