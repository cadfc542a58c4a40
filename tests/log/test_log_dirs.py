"""LogDirs: several log directories of one node — placement, moves, and what a start finds
after a move cut short."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from minibroker.log import LogConfig
from minibroker.log.dirs import LogDirs

from .log_testing import make_batch

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


def _dirs(tmp_path: Path) -> LogDirs:
    return LogDirs(
        [tmp_path / "a", tmp_path / "b"], node_id=1, cluster_id="c", default_config=SMALL
    )


def _values_of(dirs: LogDirs, topic: str) -> bytes:
    log = dirs.get(topic, 0)
    assert log is not None
    return log.read(0, 1 << 20)


def test_new_partitions_go_to_the_directory_holding_fewest(tmp_path: Path) -> None:
    dirs = _dirs(tmp_path)
    for index in range(4):
        dirs.create("t", index, uuid.uuid4(), SMALL)
    assert [manager.count() for manager in dirs.managers] == [2, 2]
    for manager in dirs.managers:
        assert manager.data_dir is not None
        assert (manager.data_dir / "meta.properties").exists()


def test_a_move_copies_the_partition_and_survives_a_restart(tmp_path: Path) -> None:
    dirs = _dirs(tmp_path)
    log = dirs.create("m", 0, uuid.uuid4(), SMALL)
    log.append(make_batch([b"kept"]), 0, now_ms=0)
    before = _values_of(dirs, "m")
    source = dirs.manager_of("m", 0)
    target = next(manager for manager in dirs.managers if manager is not source)
    moved = dirs.move("m", 0, target)
    moved.append(make_batch([b"after"]), 0, now_ms=0)
    assert dirs.manager_of("m", 0) is target
    assert source is not None and source.data_dir is not None
    assert not (source.data_dir / "m-0").exists()
    assert _values_of(dirs, "m").startswith(before)
    dirs.close()
    reopened = _dirs(tmp_path)
    reopened.load()
    assert reopened.manager_of("m", 0) is reopened.managers[dirs.managers.index(target)]
    log_again = reopened.get("m", 0)
    assert log_again is not None and log_again.log_end_offset == 2


def test_a_move_cut_short_keeps_one_whole_copy(tmp_path: Path) -> None:
    dirs = _dirs(tmp_path)
    log = dirs.create("cut", 0, uuid.uuid4(), SMALL)
    log.append(make_batch([b"v"]), 0, now_ms=0)
    dirs.close()
    first, second = tmp_path / "a", tmp_path / "b"
    holder, other = (first, second) if (first / "cut-0").exists() else (second, first)
    # cut short before the rename: a future directory in the target
    shutil.copytree(holder / "cut-0", other / "cut-0.0123abcd-future")
    reopened = _dirs(tmp_path)
    assert [log.topic for log in reopened.load()] == ["cut"]
    assert not (other / "cut-0.0123abcd-future").exists()
    reopened.close()
    # cut short after the rename: the same partition in both directories
    shutil.copytree(holder / "cut-0", other / "cut-0")
    again = _dirs(tmp_path)
    logs = again.load()
    assert [(log.topic, log.log_end_offset) for log in logs] == [("cut", 1)]
    assert sum((path / "cut-0").exists() for path in (first, second)) == 1
