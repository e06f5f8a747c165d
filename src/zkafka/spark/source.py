"""`ZkafkaDataSource`: the format "zkafka" for spark.read, spark.readStream, df.write and
df.writeStream, with the options and schema of Spark's Kafka connector."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from zkafka.spark.errors import OptionError, SchemaError
from zkafka.spark.options import TRANSACTIONAL_ID_PREFIX, parse_sink_options, parse_source_options
from zkafka.spark.reader import ZkafkaBatchReader, ZkafkaStreamReader
from zkafka.spark.schema import check_sink_schema, check_user_schema, read_schema
from zkafka.spark.writer import ZkafkaBatchWriter, ZkafkaStreamWriter

FORMAT = "zkafka"


class ZkafkaDataSource(DataSource):
    """Spark builds this with the options (a case-insensitive dict of strings); it must stay cheap
    and picklable, so every method only parses options and returns the working object."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        # Called by load(), before Spark knows whether a batch or a streaming read follows: the
        # checks common to both run here so that a bad option fails at load(), not at start() (P14).
        options = parse_source_options(self.options, streaming=None)
        return read_schema(options.include_headers)

    def reader(self, schema: StructType) -> ZkafkaBatchReader:
        options = parse_source_options(self.options, streaming=False)
        check_user_schema(schema, options.include_headers)
        return ZkafkaBatchReader(options)

    def streamReader(self, schema: StructType) -> ZkafkaStreamReader:
        options = parse_source_options(self.options, streaming=True)
        check_user_schema(schema, options.include_headers)
        return ZkafkaStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> ZkafkaBatchWriter:
        if overwrite:
            raise SchemaError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                "ErrorIfExists (default)."
            )
        options = parse_sink_options(self.options)
        if options.transactional_id_prefix is not None:
            raise OptionError(
                f"Option '{TRANSACTIONAL_ID_PREFIX}' is for streaming writes (writeStream): a batch "
                "write has no batch id to recognise a repeated task by"
            )
        return ZkafkaBatchWriter(options, check_sink_schema(schema, options.topic))

    def streamWriter(self, schema: StructType, overwrite: bool) -> ZkafkaStreamWriter:
        options = parse_sink_options(self.options)
        return ZkafkaStreamWriter(options, check_sink_schema(schema, options.topic))
