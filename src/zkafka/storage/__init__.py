"""Partition logs on disk in Apache Kafka's exact layout (`reference/kafka-storage.md`).

The only package that opens data files. Entry points: `LogManager` (all logs of a broker over
`log.dirs`) and `Log` (one partition). See `zkafka.storage.log` for the durability policy.
"""

from zkafka.storage.cleaner import CleanResult, clean_log
from zkafka.storage.config import LogConfig
from zkafka.storage.errors import (
    CheckpointError,
    CorruptIndexError,
    InconsistentMetadataError,
    LogClosedError,
    LogDirLockedError,
    LogNotFoundError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from zkafka.storage.file_cache import FileCache, FileLease
from zkafka.storage.leader_epoch import LeaderEpochCache
from zkafka.storage.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendInfo,
    FetchSlice,
    Log,
)
from zkafka.storage.manager import LogManager
from zkafka.storage.naming import TopicPartition
from zkafka.storage.segment import TimestampOffset

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "CheckpointError",
    "CleanResult",
    "CorruptIndexError",
    "FetchSlice",
    "FileCache",
    "FileLease",
    "InconsistentMetadataError",
    "LeaderEpochCache",
    "Log",
    "LogClosedError",
    "LogConfig",
    "LogDirLockedError",
    "LogManager",
    "LogNotFoundError",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "TimestampOffset",
    "TopicPartition",
    "UnexpectedAppendOffsetError",
    "clean_log",
]
