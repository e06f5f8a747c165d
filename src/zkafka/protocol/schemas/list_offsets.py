"""ListOffsets (key 2): find offsets by timestamp (-1 latest, -2 earliest).

Version notes: v0 returns an array of offsets (max_num_offsets; Burrow reads exactly one);
v1 returns one (timestamp, offset) pair instead; v2 adds isolation_level (read_committed reads
up to the last stable offset) and throttle_time_ms; v4 adds leader epochs (KIP-320); v6 is
the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    2,
    "ListOffsets",
    versions="0-6",
    flexible="6+",
    request=[
        F("replica_id", "int32", default=-1, about="-1 for a consumer"),
        F("isolation_level", "int8", "2+"),
        F(
            "topics",
            Array(
                "ListOffsetsTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "ListOffsetsPartition",
                            [
                                F("partition_index", "int32"),
                                F("current_leader_epoch", "int32", "4+", default=-1),
                                F("timestamp", "int64"),
                                F("max_num_offsets", "int32", "0", default=1),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F(
            "topics",
            Array(
                "ListOffsetsTopicResponse",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "ListOffsetsPartitionResponse",
                            [
                                F("partition_index", "int32"),
                                F("error_code", "int16"),
                                F("old_style_offsets", "[]int64", "0"),
                                F("timestamp", "int64", "1+", default=-1),
                                F("offset", "int64", "1+", default=-1),
                                F("leader_epoch", "int32", "4+", default=-1),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
