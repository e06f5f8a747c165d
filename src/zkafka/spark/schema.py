"""The read schema of Spark's Kafka source, its Arrow twin, and the sink's column rules.

Read columns, in order: key binary, value binary, topic string, partition int, offset long,
timestamp timestamp, timestampType int, and headers array<struct<key:string,value:binary>> with
includeHeaders=true. The schema is fixed; a user-supplied one is refused, as Spark does.

Arrow batches handed to Spark must equal the schema Spark derives itself (pitfall P12), so the
Arrow schema is computed by pyspark's own conversion with the arguments its reader uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from zkafka.spark.errors import SchemaError

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


@cache
def read_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


@cache
def arrow_read_schema(include_headers: bool) -> pa.Schema:
    """What pyspark's data source reader checks every RecordBatch against."""
    return to_arrow_schema(read_schema(include_headers), timezone="UTC")


def check_user_schema(schema: StructType, include_headers: bool) -> None:
    if schema is not None and schema != read_schema(include_headers):
        raise SchemaError("Kafka source has a fixed schema and cannot be set with a custom one")


# -- the sink ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SinkColumns:
    """Which input columns the sink uses, and whether key/value arrive as strings."""

    topic: bool
    key: bool
    key_is_string: bool
    value_is_string: bool
    headers: bool
    partition: bool
    timestamp: bool


def _type_of(schema: StructType, name: str) -> DataType | None:
    # Spark matches the attribute names exactly
    return next((f.dataType for f in schema.fields if f.name == name), None)


def _unsupported(name: str, actual: DataType, wanted: str) -> SchemaError:
    return SchemaError(
        f"{name} attribute unsupported type {actual.simpleString()}. {name} must be a(n) {wanted}"
    )


def check_sink_schema(schema: StructType, topic_option: str | None) -> SinkColumns:
    """Spark's KafkaWriter.validateQuery: the same rules, in the same order, with its messages."""
    topic = _type_of(schema, "topic")
    if topic_option is None:
        if topic is None:
            raise SchemaError(
                "topic option required when no 'topic' attribute is present. Use the topic option for "
                "setting a topic."
            )
        if not isinstance(topic, StringType):
            raise _unsupported("topic", topic, "string")
    key = _type_of(schema, "key")
    if key is not None and not isinstance(key, StringType | BinaryType):
        raise _unsupported("key", key, "string or binary")
    value = _type_of(schema, "value")
    if value is None:
        raise SchemaError("Required attribute 'value' not found")
    if not isinstance(value, StringType | BinaryType):
        raise _unsupported("value", value, "string or binary")
    headers = _type_of(schema, "headers")
    if headers is not None and not _same_headers_type(headers):
        raise _unsupported("headers", headers, HEADERS_TYPE.simpleString())
    partition = _type_of(schema, "partition")
    if partition is not None and not isinstance(partition, IntegerType):
        raise _unsupported("partition", partition, "int")
    timestamp = _type_of(schema, "timestamp")
    if timestamp is not None and not isinstance(timestamp, TimestampType):
        raise _unsupported("timestamp", timestamp, "timestamp")
    return SinkColumns(
        topic=topic_option is None,
        key=key is not None,
        key_is_string=isinstance(key, StringType),
        value_is_string=isinstance(value, StringType),
        headers=headers is not None,
        partition=partition is not None,
        timestamp=timestamp is not None,
    )


def _same_headers_type(actual: DataType) -> bool:
    """Spark's sameType: equal up to nullability."""
    if not isinstance(actual, ArrayType) or not isinstance(actual.elementType, StructType):
        return False
    fields = actual.elementType.fields
    return [(f.name, type(f.dataType)) for f in fields] == [("key", StringType), ("value", BinaryType)]
