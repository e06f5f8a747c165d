"""Exceptions raised by `zkafka.storage`; each maps to one Kafka error the broker can return."""

from __future__ import annotations


class StorageError(Exception):
    """Base class. An unexpected I/O failure of a log dir (Kafka's KAFKA_STORAGE_ERROR, code 56)."""


class LogDirIOError(StorageError):
    """A write under a log dir failed at the OS (no space left, an I/O error): Kafka's
    KafkaStorageException that takes the log dir offline. `path` is the file written."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class OffsetOutOfRangeError(StorageError):
    """A fetch/seek offset outside [log_start_offset, log_end_offset] (OFFSET_OUT_OF_RANGE, code 1)."""

    def __init__(self, message: str, *, log_start_offset: int = -1, log_end_offset: int = -1) -> None:
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLargeError(StorageError):
    """One batch is larger than max.message.bytes (MESSAGE_TOO_LARGE, code 10)."""


class RecordBatchTooLargeError(StorageError):
    """A record set larger than segment.bytes: it can never fit in a segment (RECORD_LIST_TOO_LARGE, 18)."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose offsets go backwards (Kafka's UnexpectedAppendOffsetException)."""

    def __init__(self, message: str, *, first_offset: int, last_offset: int) -> None:
        super().__init__(message)
        self.first_offset = first_offset
        self.last_offset = last_offset


class CorruptIndexError(StorageError):
    """An index file that cannot be trusted; the segment rebuilds it from its `.log`."""


class CheckpointError(StorageError):
    """A checkpoint file that is not in Kafka's text format (bad version, line or count)."""


class LogDirLockedError(StorageError):
    """Another process holds the `.lock` of a log dir."""


class InconsistentMetadataError(StorageError):
    """`meta.properties` disagrees with this broker's id or cluster id."""


class LogNotFoundError(StorageError):
    """No log for this topic-partition on this broker (NOT_LEADER_OR_FOLLOWER at the API level)."""


class LogClosedError(StorageError):
    """The log was closed or deleted while being used."""


class CleaningAbortedError(StorageError):
    """A compaction round gave up because the log changed under it (truncation, retention,
    close); the next round starts over."""
