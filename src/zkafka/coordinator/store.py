"""Reading and writing the `__consumer_offsets` partitions this broker leads (the append path,
`CoordinatorLogStore`, also serves the transaction coordinator's `__transaction_state`).

Writes go through the broker's one leader append, the same as Produce's, seen here only as the
narrow `PartitionLeaders` interface (the broker's replica manager implements it): offsets get
assigned there, followers fetch the batch like any other, and with
`offsets.commit.required.acks=-1` (Kafka's default) the write completes only when the high
watermark covers it -- the broker wakes us, nothing polls. Errors come back as the produce-path
ErrorCode; the coordinator maps them to what group clients expect.

Loading replays a partition from its log start, one batch at a time (`replay_batch`, fed by
`runtime.CoordinatorRuntime` off the loop): the last record per key wins and a null value deletes
(reference group-coordinator §2 "Loading").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.protocol.groups.formats import (
    CorruptCoordinatorRecordError,
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from zkafka.records import (
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    build_batch,
    iter_records,
    validate_batches,
)
from zkafka.records.record import end_txn_marker
from zkafka.storage.log import AppendInfo, Log
from zkafka.storage.naming import TopicPartition
from zkafka.zk.topic_names import GROUP_METADATA_TOPIC

log = logging.getLogger(__name__)

KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class AppendResult:
    error: ErrorCode
    base_offset: int = -1


@dataclass(slots=True)
class LoadedPartition:
    """What a replay of one partition found: per group its latest metadata record (absent if
    none, None if tombstoned) and its live offsets with the log offset of their record."""

    name: str = ""
    """The partition replayed (`__consumer_offsets-<n>`), for log lines."""
    groups: dict[str, GroupValue | None] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, tuple[OffsetValue, int]]] = field(default_factory=dict)
    pending_txn: dict[int, dict[str, dict[TopicPartition, tuple[OffsetValue, int]]]] = field(
        default_factory=dict
    )
    """producer id -> group -> offsets committed in a transaction that has no marker yet."""
    records: int = 0
    end_offset: int = 0


def offsets_tp(partition: int) -> TopicPartition:
    return TopicPartition(GROUP_METADATA_TOPIC, partition)


class PartitionLeaders(Protocol):
    """What the store needs of the broker: the partitions it leads, and its acks=all write path."""

    def leader_log(self, tp: TopicPartition) -> Log | None:
        """The log of `tp` while this broker leads it."""
        ...

    def append_to_leader(
        self,
        tp: TopicPartition,
        batches: bytearray | memoryview,
        headers: list[BatchHeader],
        *,
        required_acks: int,
    ) -> tuple[AppendInfo, int]:
        """(what was appended, the leader epoch it was appended in); KafkaError if it was not."""
        ...

    async def wait_for_replication(
        self, required: Mapping[TopicPartition, tuple[int, int]], timeout_s: float
    ) -> dict[TopicPartition, ErrorCode]:
        """Per partition (offset to reach, leader epoch of the append): the acks=all outcome."""
        ...


class CoordinatorLogStore:
    """Appends to the partitions of one coordinator topic (`__consumer_offsets`,
    `__transaction_state`) this broker leads: one batch per call, acks as configured."""

    def __init__(
        self,
        replicas: PartitionLeaders,
        topic: str,
        *,
        compression: int = 0,
        commit_timeout_ms: int = 5000,
        required_acks: int = -1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.replicas = replicas
        self.topic = topic
        self.compression = compression
        self.commit_timeout_ms = commit_timeout_ms
        self.required_acks = required_acks
        self._clock = clock

    def leader(self, partition: int) -> Log | None:
        """The log of `<topic>-<partition>` while this broker leads it."""
        return self.replicas.leader_log(TopicPartition(self.topic, partition))

    async def append(
        self,
        partition: int,
        records: Sequence[KeyValue],
        *,
        wait: bool = True,
        producer: tuple[int, int] | None = None,
    ) -> AppendResult:
        """Append one batch; with `wait` (and acks=-1) return once it is replicated to the ISR.
        With `producer` (id, epoch) the batch is transactional (TxnOffsetCommit): it counts only
        once the transaction's COMMIT marker follows it."""
        tp = TopicPartition(self.topic, partition)
        if self.leader(partition) is None:  # moved away: the coordinator answers NOT_COORDINATOR
            return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        now = int(self._clock() * 1000)
        try:
            batch = bytearray(
                build_batch(
                    [Record(i, now, k, v) for i, (k, v) in enumerate(records)],
                    base_offset=0,
                    compression=self.compression,
                    **_transactional(producer),
                )
            )
            headers = validate_batches(batch)
            info, epoch = self.replicas.append_to_leader(tp, batch, headers, required_acks=self.required_acks)
        except (CorruptRecordError, InvalidRecordError):
            return AppendResult(ErrorCode.INVALID_RECORD)
        except KafkaError as e:
            return AppendResult(e.code)
        if not wait or self.required_acks != -1:
            return AppendResult(ErrorCode.NONE, info.first_offset)
        required = {tp: (info.last_offset + 1, epoch)}
        outcome = await self.replicas.wait_for_replication(required, self.commit_timeout_ms / 1000)
        return AppendResult(outcome[tp], info.first_offset)


def _transactional(producer: tuple[int, int] | None) -> dict[str, Any]:
    if producer is None:
        return {}
    return {
        "producer_id": producer[0],
        "producer_epoch": producer[1],
        "base_sequence": 0,
        "is_transactional": True,
    }


class OffsetsTopicStore(CoordinatorLogStore):
    def __init__(
        self,
        replicas: PartitionLeaders,
        *,
        compression: int = 0,
        commit_timeout_ms: int = 5000,
        required_acks: int = -1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            replicas,
            GROUP_METADATA_TOPIC,
            compression=compression,
            commit_timeout_ms=commit_timeout_ms,
            required_acks=required_acks,
            clock=clock,
        )


def read_partition(log_: Log) -> LoadedPartition:
    """Replay a whole `__consumer_offsets` partition (blocking: run it in an executor)."""
    out = LoadedPartition(name=log_.dir_path.name)
    for header, data in log_.iter_batches():
        replay_batch(out, header, data)
    return out


def replay_batch(out: LoadedPartition, header: BatchHeader, data: bytes) -> None:
    """One batch of a `__consumer_offsets` partition, in log order, into what the replay found.

    Undecodable records are logged and skipped rather than failing the load: one bad record must
    not take every group of the partition offline."""
    out.end_offset = header.next_offset
    if header.is_control:
        _end_txn(out, header, data)
        return
    pending = out.pending_txn.setdefault(header.producer_id, {}) if header.is_transactional else None
    for rec in iter_records(data):
        out.records += 1
        try:
            key = decode_key(rec.key)
            if isinstance(key, OffsetKey):
                tp = TopicPartition(key.topic, key.partition)
                if pending is not None:  # TxnOffsetCommit: counts once its transaction commits
                    if rec.value is not None:
                        value = decode_offset_value(rec.value)
                        pending.setdefault(key.group, {})[tp] = (value, rec.offset)
                    continue
                offsets = out.offsets.setdefault(key.group, {})
                if rec.value is None:
                    offsets.pop(tp, None)
                else:
                    offsets[tp] = (decode_offset_value(rec.value), rec.offset)
            elif isinstance(key, GroupKey):
                out.groups[key.group] = None if rec.value is None else decode_group_value(rec.value)
        except CorruptCoordinatorRecordError as e:
            log.warning("%s offset %d: skipping undecodable record: %s", out.name, rec.offset, e)


def _end_txn(out: LoadedPartition, header: BatchHeader, data: bytes) -> None:
    """A marker: a committed transaction's offsets become the group's, an aborted one's go."""
    try:
        marker = end_txn_marker(data, header._replace(position=0))
    except (CorruptRecordError, ValueError, IndexError) as e:
        log.warning("%s: skipping undecodable marker at offset %d: %s", out.name, header.base_offset, e)
        return
    txn = out.pending_txn.pop(header.producer_id, {})
    if marker is None or not marker[0]:
        return
    for group, offsets in txn.items():
        mine = out.offsets.setdefault(group, {})
        for tp, (value, record_offset) in offsets.items():
            current = mine.get(tp)
            if current is None or current[1] < record_offset:
                mine[tp] = (value, record_offset)


def group_append_error(code: ErrorCode) -> ErrorCode:
    """Kafka's mapping of a failed group-record append (GroupMetadataManager.storeGroup)."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
        ErrorCode.INVALID_RECORD,
    ):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code


def offset_append_error(code: ErrorCode) -> ErrorCode:
    """The same for offset commits (GroupMetadataManager.storeOffsets)."""
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
        ErrorCode.INVALID_RECORD,
    ):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return group_append_error(code)
