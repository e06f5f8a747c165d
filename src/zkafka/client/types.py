"""Small value types shared by the producer, consumer and admin client."""

from __future__ import annotations

from typing import NamedTuple

from zkafka.protocol.topic_partition import TopicPartition as TopicPartition
from zkafka.records import RecordHeader

EARLIEST_TIMESTAMP = -2
"""ListOffsets "timestamp" asking for the log start offset."""
LATEST_TIMESTAMP = -1
"""ListOffsets "timestamp" asking for the log end offset (high watermark / last stable offset)."""


class RecordMetadata(NamedTuple):
    """Where a produced record landed. `offset` is -1 when unknown (acks=0, or a duplicate the
    broker recognised without telling the original offset)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    """The record's CreateTime, or the broker's LogAppendTime when the topic uses it."""
    serialized_key_size: int
    serialized_value_size: int


class ConsumedRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    """0 CreateTime, 1 LogAppendTime."""
    key: bytes | None
    value: bytes | None
    headers: tuple[RecordHeader, ...]


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int
    """The found record's timestamp; -1 for earliest/latest lookups."""


class OffsetAndMetadata(NamedTuple):
    """A committed offset with its metadata string (what Kafka's clients commit)."""

    offset: int
    metadata: str = ""


class ConsumerGroupMetadata(NamedTuple):
    """What a transactional producer needs to commit a group member's offsets in its
    transaction (`GroupConsumer.group_metadata()`): the coordinator then refuses a commit from a
    member that was fenced by a rebalance (generation and member id as in OffsetCommit)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
