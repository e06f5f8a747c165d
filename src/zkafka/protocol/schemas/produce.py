"""Produce (key 0): append record batches to partitions.

Version notes: v1-v2 same request as v0; v3 adds transactional_id and means the records are
RecordBatch v2 (magic 2); v4 may answer KAFKA_STORAGE_ERROR; v5 adds log_start_offset to the
response; v7 allows zstd; v8 adds per-record errors to the response; v9 is the first flexible
version. An acks=0 request gets no response at all.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    0,
    "Produce",
    versions="0-9",
    flexible="9+",
    request=[
        F("transactional_id", "string", "3+", nullable="3+", default=None),
        F("acks", "int16", about="0: no ack, 1: leader only, -1: the whole ISR"),
        F("timeout_ms", "int32"),
        F(
            "topic_data",
            Array(
                "TopicProduceData",
                [
                    F("name", "string"),
                    F(
                        "partition_data",
                        Array(
                            "PartitionProduceData",
                            [
                                F("index", "int32"),
                                F("records", "records", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
    response=[
        F(
            "responses",
            Array(
                "TopicProduceResponse",
                [
                    F("name", "string"),
                    F(
                        "partition_responses",
                        Array(
                            "PartitionProduceResponse",
                            [
                                F("index", "int32"),
                                F("error_code", "int16"),
                                F("base_offset", "int64"),
                                F("log_append_time_ms", "int64", "2+", default=-1),
                                F("log_start_offset", "int64", "5+", default=-1),
                                F(
                                    "record_errors",
                                    Array(
                                        "BatchIndexAndErrorMessage",
                                        [
                                            F("batch_index", "int32", "8+"),
                                            F(
                                                "batch_index_error_message",
                                                "string",
                                                "8+",
                                                nullable="8+",
                                                default=None,
                                            ),
                                        ],
                                    ),
                                    "8+",
                                ),
                                F("error_message", "string", "8+", nullable="8+", default=None),
                            ],
                        ),
                    ),
                ],
            ),
        ),
        F("throttle_time_ms", "int32", "1+"),
    ],
)
