"""TxnOffsetCommit (key 28): offsets committed as part of a transaction, visible to the group
only once the transaction commits.

Version notes: v1 is the same as v0; v2 adds the committed leader epoch; v3 adds the member id,
group instance id and generation and is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    28,
    "TxnOffsetCommit",
    versions="0-3",
    flexible="3+",
    request=[
        F("transactional_id", "string"),
        F("group_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F(
            "topics",
            Array(
                "TxnOffsetCommitRequestTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "TxnOffsetCommitRequestPartition",
                            [
                                F("partition_index", "int32"),
                                F("committed_offset", "int64"),
                                F("committed_leader_epoch", "int32", "2+", default=-1),
                                F("committed_metadata", "string", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            Array(
                "TxnOffsetCommitResponseTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "TxnOffsetCommitResponsePartition",
                            [F("partition_index", "int32"), F("error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
