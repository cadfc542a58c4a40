"""Log storage in Kafka's own on-disk format: segments, indexes, recovery, retention."""

from .base import LogOfflineError, OffsetOutOfRange, PartitionLog, RecordBatchTooLarge
from .config import LogConfig
from .manager import InconsistentLogDirError, LogDirError, LogManager
from .memory import MemoryPartitionLog
from .partition import FilePartitionLog

__all__ = [
    "FilePartitionLog",
    "InconsistentLogDirError",
    "LogConfig",
    "LogDirError",
    "LogManager",
    "LogOfflineError",
    "MemoryPartitionLog",
    "OffsetOutOfRange",
    "PartitionLog",
    "RecordBatchTooLarge",
]
