"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch (KIP-101, KIP-320 checks).

Version notes: v1 returns the leader epoch; v2 adds current_leader_epoch and
throttle_time_ms; v3 adds replica_id (-2 for a consumer, the default); v4 is the first flexible
version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    23,
    "OffsetForLeaderEpoch",
    versions="0-4",
    flexible="4+",
    request=[
        F("replica_id", "int32", "3+", default=-2),
        F(
            "topics",
            Array(
                "OffsetForLeaderTopic",
                [
                    F("topic", "string"),
                    F(
                        "partitions",
                        Array(
                            "OffsetForLeaderPartition",
                            [
                                F("partition", "int32"),
                                F("current_leader_epoch", "int32", "2+", default=-1),
                                F("leader_epoch", "int32"),
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
                "OffsetForLeaderTopicResult",
                [
                    F("topic", "string"),
                    F(
                        "partitions",
                        Array(
                            "EpochEndOffset",
                            [
                                F("error_code", "int16"),
                                F("partition", "int32"),
                                F("leader_epoch", "int32", "1+", default=-1),
                                F("end_offset", "int64", default=-1),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
