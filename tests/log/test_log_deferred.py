"""Deferred opening after a clean shutdown (log/lazy.py): a partition first used after the
restart behaves exactly as one the broker opened at start, whatever touches it first."""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from minibroker.log import LogConfig, LogManager
from minibroker.log.base import LogOfflineError, PartitionLog
from minibroker.log.checkpoints import (
    LOG_START_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    write_partition_metadata,
)
from minibroker.log.lazy import DeferredPartitionLog, is_open

from .log_testing import make_batch

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)
COMPACT = dataclasses.replace(SMALL, cleanup_policy="compact", min_cleanable_dirty_ratio=0.0)
TOPIC_ID = uuid.uuid4()
NOW = 1_700_000_000_000


def _manager(data_dir: Path) -> LogManager:
    return LogManager(data_dir, node_id=1, cluster_id="c", default_config=SMALL)


def _fill(data_dir: Path) -> None:
    """Partitions of every shape, then a clean shutdown: several segments with the log
    start moved past the first, one segment, a compacted log with rewritten keys."""
    manager = _manager(data_dir)
    multi = manager.create("t", 0, TOPIC_ID, SMALL)
    for index in range(12):
        multi.append(make_batch([b"v" * 39], timestamp=NOW + index * 1000), 0, now_ms=NOW)
    multi.delete_records_before(4)
    single = manager.create("t", 1, TOPIC_ID, SMALL)
    single.append(make_batch([b"one", b"two"], timestamp=NOW), 0, now_ms=NOW)
    compacted = manager.create("c", 0, uuid.uuid4(), COMPACT)
    for index in range(12):
        batch = make_batch([b"value-%d" % index], keys=[b"k%d" % (index % 2)], timestamp=NOW)
        compacted.append(batch, 0, now_ms=NOW)
    manager.close()


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    eager, deferred = tmp_path / "eager", tmp_path / "deferred"
    _fill(eager)
    shutil.copytree(eager, deferred)
    return eager, deferred


def _loaded(data_dir: Path, defer: bool) -> tuple[LogManager, dict[tuple[str, int], PartitionLog]]:
    manager = _manager(data_dir)
    logs = {(log.topic, log.partition): log for log in manager.load(defer=defer)}
    for (topic, _), log in logs.items():
        log.update_config(COMPACT if topic == "c" else SMALL)
    return manager, logs


def _state(log: PartitionLog) -> tuple[object, ...]:
    return (
        log.log_start_offset,
        log.log_end_offset,
        log.segments(),
        log.read(log.log_start_offset, 1 << 20),
    )


def _files(data_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(data_dir)): path.read_bytes()
        for path in sorted(data_dir.rglob("*"))
        if path.is_file() and path.name not in ("meta.properties",)
    }


Touch = Callable[[LogManager, PartitionLog], object]


def _outcome(touch: Touch, manager: LogManager, log: PartitionLog) -> object:
    """What the touch returned, or the error it raised."""
    try:
        return touch(manager, log)
    except Exception as error:  # compared between the twins, not swallowed
        return (type(error).__name__, str(error))


TOUCHES: dict[str, Touch] = {
    "fetch": lambda _, log: log.read(5, 1 << 20),
    "produce": lambda _, log: log.append(make_batch([b"new"], timestamp=NOW), 0, now_ms=NOW),
    "list offsets": lambda _, log: (log.log_end_offset, log.batch_for_timestamp(NOW + 7000)),
    "max timestamp": lambda _, log: log.batch_with_max_timestamp(),
    "delete records": lambda _, log: log.delete_records_before(7),
    "retention": lambda manager, _: manager.run_retention(now_ms=NOW + 8_000 + 60_000),
    "compaction": lambda manager, _: manager.run_cleaner(now_ms=NOW + 10**9),
    "truncate": lambda _, log: log.truncate_to(6),
    "flush": lambda _, log: log.flush(),
}


@pytest.mark.parametrize("touch", TOUCHES)
@pytest.mark.parametrize("key", [("t", 0), ("t", 1), ("c", 0)])
def test_first_touch_after_restart_behaves_as_eager_opening(
    twins: tuple[Path, Path], touch: str, key: tuple[str, int]
) -> None:
    if touch == "retention":
        config = dataclasses.replace(SMALL, retention_ms=60_000)
    else:
        config = COMPACT if key[0] == "c" else SMALL
    results = []
    for data_dir, defer in zip(twins, (False, True), strict=True):
        manager, logs = _loaded(data_dir, defer)
        log = logs[key]
        log.update_config(config)
        assert is_open(log) is not defer
        results.append((_outcome(TOUCHES[touch], manager, log), _state(log)))
        manager.close()
    assert results[0] == results[1]
    assert _files(twins[0]) == _files(twins[1])


def test_untouched_partitions_stay_closed_and_keep_their_checkpoints(
    twins: tuple[Path, Path],
) -> None:
    eager_dir, deferred_dir = twins
    before = _files(deferred_dir)
    manager, logs = _loaded(deferred_dir, defer=True)
    assert all(isinstance(log, DeferredPartitionLog) for log in logs.values())
    manager.flush_due(now_ms=NOW + 10**9)
    manager.checkpoint()
    manager.run_retention(now_ms=NOW)  # nothing to delete: only the multi-segment logs open
    assert not is_open(logs[("t", 1)])
    manager.close()
    after = _files(deferred_dir)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed <= {RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT}
    for name in changed:  # rewritten in another order, with the same entries
        assert sorted(after[name].splitlines()) == sorted(before[name].splitlines())
    eager, eager_logs = _loaded(eager_dir, defer=False)
    assert eager_logs[("t", 0)].log_start_offset == 4
    eager.close()


def test_a_crash_opens_every_partition_at_start(twins: tuple[Path, Path]) -> None:
    _, deferred_dir = twins
    (deferred_dir / ".kafka_cleanshutdown").unlink()
    manager, logs = _loaded(deferred_dir, defer=True)
    assert all(is_open(log) for log in logs.values())
    manager.close()


def test_a_deferred_partition_is_deleted_without_being_opened(twins: tuple[Path, Path]) -> None:
    _, deferred_dir = twins
    manager, logs = _loaded(deferred_dir, defer=True)
    manager.delete("t", 1)
    assert not is_open(logs[("t", 1)])
    assert not (deferred_dir / "t-1").exists()
    manager.close()
    reloaded, logs = _loaded(deferred_dir, defer=True)
    assert set(logs) == {("t", 0), ("c", 0)}
    reloaded.close()


def test_the_owner_hears_of_each_opening_once(twins: tuple[Path, Path]) -> None:
    _, deferred_dir = twins
    manager = _manager(deferred_dir)
    heard: list[tuple[str, int]] = []
    manager.on_open = lambda log: heard.append((log.topic, log.partition))
    logs = {(log.topic, log.partition): log for log in manager.load(defer=True)}
    logs[("t", 0)].read(4, 100)
    logs[("t", 0)].read(5, 100)
    assert heard == [("t", 0)]
    manager.close()


def test_a_partition_whose_topic_id_differs_comes_up_offline(twins: tuple[Path, Path]) -> None:
    _, deferred_dir = twins
    write_partition_metadata(deferred_dir / "t-1", uuid.uuid4())
    manager, logs = _loaded(deferred_dir, defer=True)
    assert logs[("t", 1)].topic_id == TOPIC_ID  # as its topic's first partition says
    assert logs[("t", 1)].storage_error is not None
    with pytest.raises(LogOfflineError):
        logs[("t", 1)].read(0, 100)
    assert logs[("t", 0)].storage_error is None
    manager.close()
