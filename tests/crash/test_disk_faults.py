"""Storage failures: the affected partition answers KAFKA_STORAGE_ERROR, the others keep
working, the broker stays up, and nothing stored before the failure is damaged.

The full disk is real: a small tmpfs mounted over one partition's directory (needs root with
CAP_SYS_ADMIN, as this machine and CI have). The read-only case while running injects EROFS
into that partition's file writes (root ignores file modes, and a tmpfs cannot be remounted
read-only while the broker holds its files open). The read-only cases at startup are real: a
tmpfs holding a copy of the directory, remounted read-only before the broker starts.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from minibroker.log.blob import FileBlob
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import split_batches
from minibroker.records.records import build_batch, iter_records
from minibroker.testing.threaded import ThreadedBroker
from tests.fuzz.broker_process import dump_log_problems
from tests.wire import WireClient

FAILING = "failing"
HEALTHY = "healthy"
TMPFS_BYTES = 256 * 1024
VALUE = b"v" * 8000


def _produce(client: WireClient, topic: str, index: int) -> int:
    batch = build_batch([(b"%d" % index, VALUE, [], 1_700_000_000_000)])
    topic_data = [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]
    response = client.call(ApiKey.Produce, 9, acks=-1, timeout_ms=5000, topic_data=topic_data)
    return int(response.responses[0].partition_responses[0].error_code)


def _fetch(client: WireClient, topic: str) -> tuple[int, bytes]:
    partitions = [
        {
            "partition": 0,
            "current_leader_epoch": -1,
            "fetch_offset": 0,
            "log_start_offset": -1,
            "partition_max_bytes": 8 << 20,
        }
    ]
    response = client.call(
        ApiKey.Fetch,
        12,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=8 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[{"topic": topic, "partitions": partitions}],
        forgotten_topics_data=[],
        rack_id="",
    )
    partition = response.responses[0].partitions[0]
    return int(partition.error_code), bytes(partition.records or b"")


def _list_offset_error(client: WireClient, topic: str) -> int:
    partitions = [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]
    response = client.call(
        ApiKey.ListOffsets,
        5,
        replica_id=-1,
        isolation_level=0,
        topics=[{"name": topic, "partitions": partitions}],
    )
    return int(response.topics[0].partitions[0].error_code)


def _fill_until_refused(client: WireClient, start: int) -> int:
    """Produce to the failing partition until it is refused; returns how many were stored."""
    for index in range(start, start + 1000):
        error = _produce(client, FAILING, index)
        if error != ErrorCode.NO_ERROR:
            assert error == ErrorCode.KAFKA_STORAGE_ERROR
            return index
    raise AssertionError("the partition never failed")


def _check_offline_and_others_fine(client: WireClient, healthy_before: bytes) -> None:
    assert _fetch(client, FAILING)[0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert _list_offset_error(client, FAILING) == ErrorCode.KAFKA_STORAGE_ERROR
    assert _produce(client, FAILING, 10_000) == ErrorCode.KAFKA_STORAGE_ERROR
    assert _produce(client, HEALTHY, 1) == ErrorCode.NO_ERROR
    error, healthy_now = _fetch(client, HEALTHY)
    assert error == ErrorCode.NO_ERROR
    assert healthy_now.startswith(healthy_before) and len(healthy_now) > len(healthy_before)
    assert client.call(ApiKey.ApiVersions, 0).error_code == ErrorCode.NO_ERROR


@contextmanager
def _client(data_dir: Path) -> Iterator[WireClient]:
    with ThreadedBroker(data_dir=data_dir) as running, WireClient(running.bootstrap_servers) as c:
        yield c


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data directory holding both topics with a little data each, broker stopped."""
    data = tmp_path / "data"
    with ThreadedBroker(data_dir=data) as running, WireClient(running.bootstrap_servers) as c:
        topics = [{"name": FAILING}, {"name": HEALTHY}]
        c.call(ApiKey.Metadata, 4, topics=topics, allow_auto_topic_creation=True)
        for index in range(3):
            assert _produce(c, FAILING, index) == ErrorCode.NO_ERROR
            assert _produce(c, HEALTHY, index) == ErrorCode.NO_ERROR
    yield data


def _mount_small_tmpfs(directory: Path, keep: Path) -> None:
    shutil.copytree(directory, keep)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"mount needs root with CAP_SYS_ADMIN: {result.stderr}"
    shutil.copytree(keep, directory, dirs_exist_ok=True)


def test_full_disk_takes_only_that_partition_offline(data_dir: Path, tmp_path: Path) -> None:
    failing_dir = data_dir / f"{FAILING}-0"
    _mount_small_tmpfs(failing_dir, tmp_path / "before-mount")
    try:
        with _client(data_dir) as client:
            error, failing_before = _fetch(client, FAILING)
            assert error == ErrorCode.NO_ERROR
            healthy_before = _fetch(client, HEALTHY)[1]
            acknowledged = _fill_until_refused(client, 3)
            _check_offline_and_others_fine(client, healthy_before)
        # Stopped without crashing; keep what the full disk holds for the restart below.
        shutil.rmtree(tmp_path / "before-mount")
        shutil.copytree(failing_dir, tmp_path / "after-failure")
    finally:
        subprocess.run(["umount", "--lazy", str(failing_dir)], check=True)
    for item in (tmp_path / "after-failure").iterdir():
        shutil.copy2(item, failing_dir / item.name)
    with _client(data_dir) as client:
        error, failing_after = _fetch(client, FAILING)
        assert error == ErrorCode.NO_ERROR
        assert failing_after.startswith(failing_before)
        assert _count_records(failing_after) == acknowledged
        assert _produce(client, FAILING, 20_000) == ErrorCode.NO_ERROR
    assert dump_log_problems(data_dir) == []


def _count_records(data: bytes) -> int:
    return sum(len(list(iter_records(batch))) for batch in split_batches(data))


def test_read_only_partition_answers_storage_error(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_dir = str(data_dir / f"{FAILING}-0")
    original = FileBlob.write_at

    def write_at(self: FileBlob, data: Any, position: int) -> None:
        if str(self.path).startswith(failing_dir):
            raise OSError(errno.EROFS, "Read-only file system", str(self.path))
        original(self, data, position)

    with _client(data_dir) as client:
        failing_before = _fetch(client, FAILING)[1]
        healthy_before = _fetch(client, HEALTHY)[1]
        monkeypatch.setattr(FileBlob, "write_at", write_at)
        assert _produce(client, FAILING, 3) == ErrorCode.KAFKA_STORAGE_ERROR
        _check_offline_and_others_fine(client, healthy_before)
        monkeypatch.setattr(FileBlob, "write_at", original)
    with _client(data_dir) as client:
        assert _fetch(client, FAILING) == (ErrorCode.NO_ERROR, failing_before)
        assert _produce(client, FAILING, 4) == ErrorCode.NO_ERROR
    assert dump_log_problems(data_dir) == []


@contextmanager
def _read_only_copy(directory: Path, keep: Path) -> Iterator[None]:
    """`directory` on a read-only tmpfs holding a copy of it, until the block ends."""
    try:
        _mount_small_tmpfs(directory, keep)
        subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
        yield
    finally:
        if directory.is_mount():
            subprocess.run(["umount", str(directory)], check=True)


def test_read_only_partition_at_startup_comes_up_offline(data_dir: Path, tmp_path: Path) -> None:
    with _client(data_dir) as client:
        failing_before = _fetch(client, FAILING)[1]
        healthy_before = _fetch(client, HEALTHY)[1]
    read_only = _read_only_copy(data_dir / f"{FAILING}-0", tmp_path / "copy")
    with read_only, _client(data_dir) as client:
        _check_offline_and_others_fine(client, healthy_before)
    with _client(data_dir) as client:
        assert _fetch(client, FAILING) == (ErrorCode.NO_ERROR, failing_before)
        assert _produce(client, FAILING, 3) == ErrorCode.NO_ERROR
    assert dump_log_problems(data_dir) == []


def test_read_only_data_dir_stops_the_start_with_its_name(data_dir: Path, tmp_path: Path) -> None:
    serve = [sys.executable, "-m", "minibroker", "serve", "--listen", "127.0.0.1:0"]
    with _read_only_copy(data_dir, tmp_path / "copy"):
        result = subprocess.run(
            [*serve, "--data-dir", str(data_dir)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2, result.stderr
    assert f"minibroker: log directory {data_dir} cannot be used" in result.stderr
    assert "Read-only file system" in result.stderr
    assert "Traceback" not in result.stderr
    with _client(data_dir) as client:
        assert _count_records(_fetch(client, FAILING)[1]) == 3
