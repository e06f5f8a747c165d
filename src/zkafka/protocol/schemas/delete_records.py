"""DeleteRecords (key 21): move partitions' log start offsets forward.

Version notes: v1 is the same as v0; v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    21,
    "DeleteRecords",
    versions="0-2",
    flexible="2+",
    request=[
        F(
            "topics",
            Array(
                "DeleteRecordsTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "DeleteRecordsPartition",
                            [
                                F("partition_index", "int32"),
                                F("offset", "int64", about="-1 for the high watermark"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
        F("timeout_ms", "int32"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            Array(
                "DeleteRecordsTopicResult",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "DeleteRecordsPartitionResult",
                            [
                                F("partition_index", "int32"),
                                F("low_watermark", "int64"),
                                F("error_code", "int16"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
