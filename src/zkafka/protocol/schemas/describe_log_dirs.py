"""DescribeLogDirs (key 35): the log dirs of one broker and the partitions in each.

Version notes: v1 is the same as v0; v2 is the first flexible version; v3 adds a top-level
error code; v4 adds each dir's total and usable bytes (KIP-827). A null topics list asks for every
partition.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    35,
    "DescribeLogDirs",
    versions="0-4",
    flexible="2+",
    request=[
        F(
            "topics",
            Array("DescribableLogDirTopic", [F("topic", "string"), F("partitions", "[]int32")]),
            nullable="0+",
            default=None,
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "3+", default=0),
        F(
            "results",
            Array(
                "DescribeLogDirsResult",
                [
                    F("error_code", "int16"),
                    F("log_dir", "string"),
                    F(
                        "topics",
                        Array(
                            "DescribeLogDirsTopic",
                            [
                                F("name", "string"),
                                F(
                                    "partitions",
                                    Array(
                                        "DescribeLogDirsPartition",
                                        [
                                            F("partition_index", "int32"),
                                            F("partition_size", "int64"),
                                            F("offset_lag", "int64"),
                                            F("is_future_key", "bool"),
                                        ],
                                    ),
                                ),
                            ],
                        ),
                    ),
                    F("total_bytes", "int64", "4+", default=-1),
                    F("usable_bytes", "int64", "4+", default=-1),
                ],
            ),
        ),
    ],
)
