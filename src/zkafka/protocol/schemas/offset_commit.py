"""OffsetCommit (key 8): store a group's consumed positions.

Version notes: v1 adds generation/member and a per-partition commit_timestamp; v2 drops the
timestamp and adds retention_time_ms; v3 adds throttle_time_ms; v5 drops retention_time_ms;
v6 adds committed_leader_epoch; v7 adds group_instance_id; v8 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    8,
    "OffsetCommit",
    versions="0-8",
    flexible="8+",
    request=[
        F("group_id", "string"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+"),
        F("group_instance_id", "string", "7+", nullable="7+", default=None),
        F("retention_time_ms", "int64", "2-4", default=-1),
        F(
            "topics",
            Array(
                "OffsetCommitRequestTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "OffsetCommitRequestPartition",
                            [
                                F("partition_index", "int32"),
                                F("committed_offset", "int64"),
                                F("committed_leader_epoch", "int32", "6+", default=-1),
                                F("commit_timestamp", "int64", "1", default=-1),
                                F("committed_metadata", "string", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F(
            "topics",
            Array(
                "OffsetCommitResponseTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "OffsetCommitResponsePartition",
                            [F("partition_index", "int32"), F("error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
