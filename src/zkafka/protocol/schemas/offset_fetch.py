"""OffsetFetch (key 9): read a group's committed positions.

Version notes: v1 reads from Kafka-stored offsets; v2 allows a null topic list (all topics)
and adds a top-level error_code; v3 adds throttle_time_ms; v5 adds committed_leader_epoch;
v6 is the first flexible version; v7 adds `require_stable` (KIP-447: a partition with a
transactional commit pending answers UNSTABLE_OFFSET_COMMIT); v8 asks for several groups at once
(KIP-709: the group id and topics move into a per-group list, and so do the answers and the
error). v9 (topic ids, KIP-848) is not described here.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    9,
    "OffsetFetch",
    versions="0-8",
    flexible="6+",
    request=[
        F("group_id", "string", "0-7"),
        F(
            "topics",
            Array("OffsetFetchRequestTopic", [F("name", "string"), F("partition_indexes", "[]int32")]),
            "0-7",
            nullable="2-7",
        ),
        F(
            "groups",
            Array(
                "OffsetFetchRequestGroup",
                [
                    F("group_id", "string"),
                    F(
                        "topics",
                        Array(
                            "OffsetFetchRequestTopics",
                            [F("name", "string"), F("partition_indexes", "[]int32")],
                        ),
                        nullable="8+",
                    ),
                ],
            ),
            "8+",
        ),
        F("require_stable", "bool", "7+", default=False),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F(
            "topics",
            Array(
                "OffsetFetchResponseTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "OffsetFetchResponsePartition",
                            [
                                F("partition_index", "int32"),
                                F("committed_offset", "int64"),
                                F("committed_leader_epoch", "int32", "5+", default=-1),
                                F("metadata", "string", nullable="0+"),
                                F("error_code", "int16"),
                            ],
                        ),
                    ),
                ],
            ),
            "0-7",
        ),
        F("error_code", "int16", "2-7"),
        F(
            "groups",
            Array(
                "OffsetFetchResponseGroup",
                [
                    F("group_id", "string"),
                    F(
                        "topics",
                        Array(
                            "OffsetFetchResponseTopics",
                            [
                                F("name", "string"),
                                F(
                                    "partitions",
                                    Array(
                                        "OffsetFetchResponsePartitions",
                                        [
                                            F("partition_index", "int32"),
                                            F("committed_offset", "int64"),
                                            F("committed_leader_epoch", "int32", default=-1),
                                            F("metadata", "string", nullable="0+"),
                                            F("error_code", "int16"),
                                        ],
                                    ),
                                ),
                            ],
                        ),
                    ),
                    F("error_code", "int16", default=0),
                ],
            ),
            "8+",
        ),
    ],
)
