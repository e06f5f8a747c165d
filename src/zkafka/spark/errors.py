"""Errors of the Spark connector, with the texts Spark's own Kafka connector uses.

A Spark user who switches `format("kafka")` to `format("zkafka")` should meet the same messages:
option errors read like Spark's IllegalArgumentException texts, sink schema errors like its
AnalysisException texts, and offset problems carry Spark's error class in brackets
(``[KAFKA_DATA_LOSS.START_OFFSET_RESET] ...``) so that searches for the class name still work.
Spark shows a Python data source's exception inside its own (with the Python traceback), so the
text is what the user reads.
"""

from __future__ import annotations

from collections.abc import Iterable

from zkafka.client.types import TopicPartition


class ZkafkaSparkError(Exception):
    """Base of the connector's errors."""


class OptionError(ZkafkaSparkError, ValueError):
    """A bad or missing source/sink option (Spark: IllegalArgumentException)."""


class SchemaError(ZkafkaSparkError, ValueError):
    """A user schema on the source, or a DataFrame the sink cannot write (Spark: AnalysisException)."""


class OffsetError(ZkafkaSparkError, ValueError):
    """Start/end offsets that do not fit together, or a timestamp that matches no record."""


class DataLossError(ZkafkaSparkError, RuntimeError):
    """Offsets the query needs are gone (retention, a deleted topic) and failOnDataLoss=true."""


class FetchTimeoutError(ZkafkaSparkError, TimeoutError):
    """A task made no progress for kafkaConsumer.pollTimeoutMs."""


_DATA_LOSS_PREAMBLE = (
    "Some data may have been lost because they are not available in Kafka any more; either the data "
    "was aged out by Kafka or the topic may have been deleted before all the data in the topic was "
    "processed. If you don't want your streaming query to fail on such cases, set the source option "
    "failOnDataLoss to false."
)
_DATA_LOSS_REASONS = {
    "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO": "Added partition {tp} starts from {start} "
    "instead of 0.",
    "COULD_NOT_READ_OFFSET_RANGE": "Could not read records in offset [{start}, {end}) for topic "
    "partition {tp}.",
    "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS": "Cannot find initial offsets for partitions {tps}. "
    "They may have been deleted.",
    "PARTITIONS_DELETED": "Partitions {tps} have been deleted.",
    "PARTITION_OFFSET_CHANGED": "Partition {tp} offset was changed from {start} to {end}.",
    "START_OFFSET_RESET": "Starting offset for {tp} was {start} but consumer reset to {end}.",
}


def data_loss_message(reason: str, **params: object) -> str:
    """Spark's KAFKA_DATA_LOSS text for one of its sub-classes (the keys of _DATA_LOSS_REASONS)."""
    reason_text = _DATA_LOSS_REASONS[reason].format(**params)
    return f"[KAFKA_DATA_LOSS.{reason}] {_DATA_LOSS_PREAMBLE} Reason: {reason_text}"


def format_partitions(tps: Iterable[TopicPartition]) -> str:
    return "Set(" + ", ".join(str(tp) for tp in sorted(tps)) + ")"
