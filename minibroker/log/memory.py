"""MemoryPartitionLog: the same segments, indexes and rules as the file log, in memory.

For fast test fixtures. Nothing survives the process; `segments()`, offsets, rolls and
retention behave exactly as with files because both run SegmentedLog over LogSegment.
"""

from __future__ import annotations

import uuid

from .blob import MemoryBlob
from .config import LogConfig
from .segment import LogSegment
from .segmented import SegmentedLog, wall_clock_ms
from .syncs import GroupedSyncs


class MemoryPartitionLog(SegmentedLog):
    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        now_ms: int | None = None,
    ) -> None:
        now = wall_clock_ms() if now_ms is None else now_ms
        super().__init__(topic, partition, topic_id, config, now)
        self._add_segment(self._new_segment(0, now))

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        return LogSegment(
            base_offset,
            MemoryBlob(),
            MemoryBlob(),
            MemoryBlob(),
            MemoryBlob(),
            self.config,
            now_ms=now_ms,
        )

    def new_cleaned_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        return self._new_segment(base_offset, now_ms)

    def _swap_in(self, old: list[LogSegment], cleaned: LogSegment) -> None:
        for segment in old:
            segment.delete()

    def _segments_changed(self) -> None:
        pass

    def _flush_directory(self) -> None:
        pass

    def delete(self, syncs: GroupedSyncs | None = None) -> None:
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._base_offsets.clear()
