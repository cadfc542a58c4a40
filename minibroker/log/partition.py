"""FilePartitionLog: one `<topic>-<partition>` directory in Kafka's on-disk format, and its
recovery after a crash.

Only the segments' sizes, next offsets and largest timestamps stay in memory; reads go to the
files through the manager's descriptor pool.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path

from minibroker.records.batch import HEADER_SIZE

from .batch import header_is_plausible, offset_after, parse_header
from .blob import FileBlob, FilePool
from .checkpoints import (
    PARTITION_METADATA,
    fsync_directory,
    partition_metadata,
    write_partition_metadata,
)
from .config import LogConfig
from .index import CorruptIndexError
from .segment import CorruptSegmentError, LogSegment, segment_file_name
from .segmented import SegmentedLog, wall_clock_ms
from .syncs import GroupedSyncs

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
_LEFTOVER_SUFFIXES = (".tmp", DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

logger = logging.getLogger(__name__)


def partition_directory_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>`; refuses what could name anything but a child of the data
    directory (topic names are validated before they get here; this is the last line)."""
    if not topic or topic in (".", "..") or any(c in topic for c in "/\\\0") or partition < 0:
        raise ValueError(f"{topic!r}-{partition} cannot name a partition directory")
    return f"{topic}-{partition}"


DELETE_DIRECTORY_SUFFIX = "-delete"
_MAX_FILE_NAME = 255


def delete_directory_name(topic: str, partition: int) -> str:
    """Kafka's name for a partition directory being deleted,
    `<topic>-<partition>.<unique id>-delete`, the topic cut short to fit a file name."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIRECTORY_SUFFIX}"
    return topic[: _MAX_FILE_NAME - len(suffix)] + suffix


def remove_partition_directory(
    directory: Path, topic: str, partition: int, syncs: GroupedSyncs | None = None
) -> None:
    """As Kafka, first rename the directory to its `-delete` name, durably: after a crash or
    power cut during the removal, the next start (LogManager.load) removes what is left
    instead of finding a partition with files missing. With `syncs`, the sync and the
    removal wait for the request's other deletions."""
    doomed = directory.with_name(delete_directory_name(topic, partition))
    directory.rename(doomed)
    if syncs is not None:
        syncs.sync_directory(directory.parent)
        syncs.remove_after_sync(doomed)
        return
    fsync_directory(directory.parent)
    shutil.rmtree(doomed)


def parse_partition_directory_name(name: str) -> tuple[str, int] | None:
    topic, _, partition = name.rpartition("-")
    if not topic or not partition.isdigit():
        return None
    return topic, int(partition)


class FilePartitionLog(SegmentedLog):
    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        pool: FilePool,
        now_ms: int,
    ) -> None:
        super().__init__(topic, partition, topic_id, config, now_ms)
        self.directory = directory
        self._pool = pool
        self._directory_dirty = False

    @classmethod
    def create(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        pool: FilePool,
        now_ms: int | None = None,
        syncs: GroupedSyncs | None = None,
    ) -> FilePartitionLog:
        """A new, empty partition directory with its first segment and partition.metadata;
        with `syncs`, durable once they complete."""
        now = wall_clock_ms() if now_ms is None else now_ms
        directory.mkdir(parents=True)
        if syncs is None:
            write_partition_metadata(directory, topic_id)
        else:
            syncs.write_atomically(directory / PARTITION_METADATA, partition_metadata(topic_id))
        log = cls(directory, topic, partition, topic_id, config, pool, now)
        log._add_segment(log._new_segment(0, now))
        if syncs is None:
            log._flush_directory()
            fsync_directory(directory.parent)  # else power loss may drop the directory itself
        else:
            log._directory_dirty = False
            syncs.sync_directory(directory)
            syncs.sync_directory(directory.parent)
        log._mark_synced()  # empty files: their directory's sync makes them durable
        return log

    @classmethod
    def open(
        cls,
        directory: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        pool: FilePool,
        *,
        recovery_point: int,
        log_start_offset: int,
        clean_shutdown: bool,
        now_ms: int | None = None,
    ) -> FilePartitionLog:
        """Open an existing partition directory. After an unclean shutdown every segment from
        the one holding the recovery point is re-checked batch by batch and re-indexed; any
        segment whose index is missing or inconsistent is re-indexed too. Transaction indexes
        are rebuilt from the first segment re-checked or whose `.txnindex` is torn."""
        now = wall_clock_ms() if now_ms is None else now_ms
        log = cls(directory, topic, partition, topic_id, config, pool, now)
        log._load_segments(now, recovery_point, clean_shutdown)
        if not log._segments:
            log._add_segment(log._new_segment(log_start_offset, now))
        log._log_start_offset = max(log_start_offset, log._segments[0].base_offset)
        if log._log_start_offset > log.log_end_offset:
            log.truncate_fully_and_start_at(log._log_start_offset, now)
        end = log.log_end_offset
        log.recovery_point = end if clean_shutdown else min(recovery_point, end)
        return log

    # -- loading -------------------------------------------------------------------------------

    def _load_segments(self, now_ms: int, recovery_point: int, clean_shutdown: bool) -> None:
        names = set(os.listdir(self.directory))
        if any(name.endswith(LOG_SUFFIX + SWAP_SUFFIX) for name in names):
            self._complete_swaps()
            names = set(os.listdir(self.directory))
        base_offsets = self._scan_directory(names)
        for base_offset in base_offsets:
            self._segments.append(self._open_segment(base_offset, now_ms))
            self._base_offsets.append(base_offset)
        if not self._segments:
            return
        if clean_shutdown:  # flushed before the marker was written: no fsync at close
            self._mark_synced()
        first_unflushed = len(self._segments) if clean_shutdown else 0
        if not clean_shutdown:
            first_unflushed = self._segment_index_for(recovery_point)
        position = 0
        first_txn_rebuild: int | None = None
        while position < len(self._segments):
            segment = self._segments[position]
            recover = position >= first_unflushed or not self._indexes_are_sound(segment)
            if first_txn_rebuild is None and (recover or not self._txn_index_is_sound(segment)):
                first_txn_rebuild = position
            if recover:
                truncated = segment.recover()
                if truncated:
                    logger.warning(
                        "%s: truncated %d invalid bytes at offset %d of segment %d",
                        self.directory,
                        truncated,
                        segment.next_offset,
                        segment.base_offset,
                    )
                    self._delete_segments_after(position)
            position += 1
        if first_txn_rebuild is not None:
            self.rebuild_txn_indexes(first_txn_rebuild)

    def _complete_swaps(self) -> None:
        """Finish a cleaner swap a crash interrupted, as Kafka's LogLoader does: a complete
        `.swap` segment replaces the segments its offsets cover (`.cleaned` files, not yet
        complete, go with the other leftovers)."""
        for swap_log in sorted(self.directory.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
            base_offset = int(swap_log.name[: -len(LOG_SUFFIX + SWAP_SUFFIX)])
            next_offset = max(_next_offset_of(swap_log.read_bytes(), base_offset), base_offset + 1)
            for path in self.directory.glob(f"*{LOG_SUFFIX}"):
                stem = path.name[: -len(LOG_SUFFIX)]
                if stem.isdigit() and base_offset <= int(stem) < next_offset:
                    for suffix in SEGMENT_SUFFIXES:
                        (self.directory / segment_file_name(int(stem), suffix)).unlink(
                            missing_ok=True
                        )
            for suffix in SEGMENT_SUFFIXES:
                final = self.directory / segment_file_name(base_offset, suffix)
                swap = final.with_name(final.name + SWAP_SUFFIX)
                if swap.exists():
                    swap.rename(final)
            logger.warning("%s: completed the interrupted swap of %d", self.directory, base_offset)
            self._directory_dirty = True

    def _scan_directory(self, names: set[str]) -> list[int]:
        """Base offsets of the segments among `names` (the directory's); removes leftovers
        and orphan index files."""
        base_offsets = sorted(
            int(name[: -len(LOG_SUFFIX)])
            for name in names
            if name.endswith(LOG_SUFFIX) and name[: -len(LOG_SUFFIX)].isdigit()
        )
        wanted = {
            segment_file_name(base, suffix) for base in base_offsets for suffix in SEGMENT_SUFFIXES
        }
        for name in names:
            orphan_index = (
                name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX))
                and name not in wanted
            )
            if orphan_index or name.endswith(_LEFTOVER_SUFFIXES):
                (self.directory / name).unlink(missing_ok=True)
        return base_offsets

    def _open_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        prefix = os.path.join(self.directory, segment_file_name(base_offset, ""))
        log, offset_index, time_index, txn_index = (
            FileBlob(prefix + suffix, self._pool) for suffix in SEGMENT_SUFFIXES
        )
        return LogSegment(
            base_offset,
            log,
            offset_index,
            time_index,
            txn_index,
            self.config,
            now_ms=now_ms,
            last_modified_ms=log.modified_ms,
        )

    def _indexes_are_sound(self, segment: LogSegment) -> bool:
        if not (segment.offset_index.blob.exists() and segment.time_index.blob.exists()):
            logger.warning(
                "%s: rebuilding missing index of %d", self.directory, segment.base_offset
            )
            return False
        try:
            segment.check_indexes()
        except (CorruptIndexError, CorruptSegmentError) as error:
            logger.warning(
                "%s: rebuilding index of %d: %s", self.directory, segment.base_offset, error
            )
            return False
        return True

    def _txn_index_is_sound(self, segment: LogSegment) -> bool:
        """A missing `.txnindex` is an empty one (Kafka creates it lazily)."""
        try:
            segment.txn_index.check()
        except CorruptIndexError as error:
            logger.warning(
                "%s: rebuilding transaction index of %d: %s",
                self.directory,
                segment.base_offset,
                error,
            )
            return False
        return True

    def _delete_segments_after(self, position: int) -> None:
        while len(self._segments) > position + 1:
            self._segments.pop().delete()
            self._base_offsets.pop()
            self._directory_dirty = True

    # -- segment files -------------------------------------------------------------------------

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        """As Kafka, the `.txnindex` is created by its first entry: a segment without aborted
        transactions has none (one inode fewer per partition created)."""
        prefix = os.path.join(self.directory, segment_file_name(base_offset, ""))
        log, offset_index, time_index = (
            FileBlob(prefix + suffix, self._pool, new=True)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
        )
        txn_index = FileBlob(prefix + TXN_INDEX_SUFFIX, self._pool, absent=True)
        return LogSegment(
            base_offset, log, offset_index, time_index, txn_index, self.config, now_ms=now_ms
        )

    def new_cleaned_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        blobs = [
            FileBlob(
                self.directory / (segment_file_name(base_offset, suffix) + CLEANED_SUFFIX),
                self._pool,
            )
            for suffix in SEGMENT_SUFFIXES
        ]
        for blob in blobs:
            blob.truncate(0)
        log, offset_index, time_index, txn_index = blobs
        return LogSegment(
            base_offset, log, offset_index, time_index, txn_index, self.config, now_ms=now_ms
        )

    def _swap_in(self, old: list[LogSegment], cleaned: LogSegment) -> None:
        """Kafka's replaceSegments: the complete cleaned files become `.swap`, the old ones
        `.deleted`, then the swap files take the segment names and the old files go. A crash
        in between is finished by `_complete_swaps` when the log is opened."""
        cleaned.flush()
        new_files = _blobs(cleaned)
        for blob in new_files:
            blob.rename_to(
                blob.path.with_name(blob.path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
            )
        fsync_directory(self.directory)
        old_files = [blob for segment in old for blob in _blobs(segment) if blob.exists()]
        for blob in old_files:
            blob.rename_to(blob.path.with_name(blob.path.name + DELETED_SUFFIX))
        for blob in new_files:
            blob.rename_to(blob.path.with_name(blob.path.name[: -len(SWAP_SUFFIX)]))
        fsync_directory(self.directory)
        for blob in old_files:
            blob.delete()

    def _segments_changed(self) -> None:
        self._directory_dirty = True

    def _flush_directory(self) -> None:
        if self._directory_dirty:
            fsync_directory(self.directory)
            self._directory_dirty = False

    def _mark_synced(self) -> None:
        for segment in self._segments:
            for blob in _blobs(segment):
                blob.mark_synced()

    def _release_descriptors(self) -> None:
        for base_offset in self._base_offsets:
            for suffix in SEGMENT_SUFFIXES:
                self._pool.close(str(self.directory / segment_file_name(base_offset, suffix)))

    def close(self) -> None:
        super().close()
        self._release_descriptors()

    def delete(self, syncs: GroupedSyncs | None = None) -> None:
        """Remove the partition directory and everything in it."""
        self._release_descriptors()
        self._segments.clear()
        self._base_offsets.clear()
        remove_partition_directory(self.directory, self.topic, self.partition, syncs)


def _blobs(segment: LogSegment) -> list[FileBlob]:
    blobs = [
        segment.log,
        segment.offset_index.blob,
        segment.time_index.blob,
        segment.txn_index.blob,
    ]
    assert all(isinstance(blob, FileBlob) for blob in blobs)
    return blobs  # type: ignore[return-value]


def _next_offset_of(data: bytes, base_offset: int) -> int:
    """The offset after the last whole batch of a segment's bytes (base offset if none)."""
    next_offset, position = base_offset, 0
    while position + HEADER_SIZE <= len(data):
        header = parse_header(data, position)
        if not header_is_plausible(header, len(data) - position):
            break
        next_offset = offset_after(header)
        position += header.size
    return next_offset
