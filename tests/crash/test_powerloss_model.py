"""The power-loss interposer's model itself: a crash image keeps exactly what was synced (and
the torn variant no more than what was written)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from minibroker.log import LogConfig, LogManager
from minibroker.log.checkpoints import write_atomically
from minibroker.testing.powerloss import SYNCED, TORN, CrashImage, PowerLossModel
from minibroker.txn.snapshot import SnapshotEntry, read_snapshot, write_snapshot
from tests.log.log_testing import make_batch


def _last(images: list[CrashImage], variant: str) -> CrashImage:
    return [image for image in images if image.variant == variant][-1]


def test_an_image_keeps_synced_bytes_and_entries_and_loses_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    model = PowerLossModel(root, tmp_path / "graveyard")
    with model.installed():
        fd = os.open(root / "a", os.O_RDWR | os.O_CREAT, 0o644)
        os.pwrite(fd, b"synced", 0)
        os.fsync(fd)
        directory_fd = os.open(root, os.O_RDONLY)
        os.fsync(directory_fd)
        os.pwrite(fd, b"+unsynced", 6)
        (root / "never-synced").write_bytes(b"x")
        os.rename(root / "a", root / "b")
        model.crash_now()
        os.close(fd)
        os.close(directory_fd)
    assert _last(model.images_taken, SYNCED).files == {"a": b"synced"}
    torn = _last(model.images_taken, TORN).files
    assert set(torn) == {"b", "never-synced"}
    assert torn["b"].startswith(b"synced") and b"synced+unsynced".startswith(torn["b"])
    assert torn["never-synced"] == b""


def test_an_unlinked_file_keeps_its_synced_bytes_until_the_directory_is_synced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "old").write_bytes(b"old bytes")
    model = PowerLossModel(root, tmp_path / "graveyard")
    with model.installed():
        (root / "old").unlink()
        (root / "new").write_bytes(b"new bytes")  # may take the old file's inode
        model.crash_now()
        directory_fd = os.open(root, os.O_RDONLY)
        os.fsync(directory_fd)
        os.close(directory_fd)
        model.crash_now()
    before, after = [image for image in model.images_taken if image.variant == SYNCED][-2:]
    assert before.files == {"old": b"old bytes"}
    assert after.files == {"new": b""}


def test_a_producer_snapshot_survives_power_loss_once_written(tmp_path: Path) -> None:
    """Regression: the snapshot was renamed into place without syncing its directory, so a
    power cut could take it back (recovery then replayed the whole log)."""
    root = tmp_path / "data"
    (root / "topic-0").mkdir(parents=True)
    entry = SnapshotEntry(7, 0, 41, 99, 0, 1_700_000_000_000, -1, -1)
    model = PowerLossModel(root, tmp_path / "graveyard")
    with model.installed():
        written = write_snapshot(root / "topic-0", 100, [entry])
        model.crash_now()
    recovered = _last(model.images_taken, SYNCED).materialise(tmp_path / "recovered")
    assert read_snapshot(recovered / "topic-0" / written.name) == [entry]


def _torn_segment_recovered(tmp_path: Path, seed: int) -> tuple[int, int, list[int], int]:
    """One synced batch then three unsynced ones, a torn crash image of them recovered: the
    image's segment size, the recovered log end offset, the batch ends and the recovered
    segment's size."""
    data_dir = tmp_path / f"data-{seed}"
    data_dir.mkdir()
    model = PowerLossModel(data_dir, tmp_path / f"graveyard-{seed}", seed, eager=False)
    config = LogConfig()
    with model.installed():
        manager = LogManager(data_dir, node_id=1, cluster_id="c", default_config=config)
        log = manager.create("t", 0, uuid.uuid4(), config)
        ends = []
        for index, value in enumerate([b"synced", b"unsynced-1", b"unsynced-2", b"unsynced-3"]):
            log.append(make_batch([value]), 0, now_ms=0)
            ends.append(log.size_bytes)
            if index == 0:
                log.flush()
        image = model.crash_image(TORN)
        manager.abandon()
    segment = f"t-0/{0:020d}.log"
    recovered_dir = image.materialise(tmp_path / f"recovered-{seed}")
    recovered = LogManager(recovered_dir, node_id=1, cluster_id="c", default_config=config)
    [reopened] = recovered.load()
    end = reopened.log_end_offset
    recovered.close()
    return len(image.files[segment]), end, ends, (recovered_dir / segment).stat().st_size


def test_a_torn_image_recovers_to_the_whole_batches_it_kept(tmp_path: Path) -> None:
    """The torn variant keeps a random prefix of the unsynced appends, often ending inside a
    batch: recovery (no clean shutdown) truncates the partial batch and keeps the whole ones."""
    partial = 0
    for seed in range(10):
        kept, end, ends, size_after = _torn_segment_recovered(tmp_path, seed)
        whole = [batch_end for batch_end in ends if batch_end <= kept]
        assert kept >= ends[0]  # the synced batch is always there
        assert end == len(whole)
        assert size_after == whole[-1]
        partial += kept not in ends
    assert partial >= 3


def test_a_lazy_model_forgets_the_files_no_crash_image_can_hold(tmp_path: Path) -> None:
    """Not eager, the graveyard keeps a replaced file only while a synced directory still
    names it: a checkpoint rewritten (and its directory synced) many times leaves few."""
    root = tmp_path / "data"
    root.mkdir()
    graveyard = tmp_path / "graveyard"
    model = PowerLossModel(root, graveyard, eager=False)
    with model.installed():
        for round_ in range(600):
            write_atomically(root / "checkpoint", f"round {round_}")
        unsynced = root / "unsynced"
        unsynced.write_bytes(b"x")
    assert len(list(graveyard.iterdir())) < 300
    assert model.crash_image(SYNCED).files == {"checkpoint": b"round 599"}
    assert model.crash_image(TORN).files == {"checkpoint": b"round 599", "unsynced": b""}
