"""Fetch (key 1): read record batches from partitions; also how followers replicate.

Version notes: v1 adds throttle_time_ms; v3 adds the request-wide max_bytes (KIP-74: the first
batch is returned whole even if larger); v4 adds isolation_level, last_stable_offset and
aborted_transactions and means RecordBatch v2 may be returned; v5 adds log_start_offset; v7 adds
fetch sessions (KIP-227; a broker may always answer session_id 0); v9 adds
current_leader_epoch (KIP-320); v10 allows zstd; v11 adds rack_id and preferred_read_replica;
v12 is the first flexible version and adds last_fetched_epoch plus tagged fields; v13 names topics
by id (KIP-516) instead of by name, in the request, its forgotten topics and the response.
"""

from zkafka.protocol.schema import Array, F, Struct, api

FIRST_TOPIC_ID_VERSION = 13
"""From this version topics are named by id only (`topic_id`), no longer by name."""

SPEC = api(
    1,
    "Fetch",
    versions="0-13",
    flexible="12+",
    request=[
        F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0),
        F("replica_id", "int32", default=-1, about="the follower's broker id, -1 for a consumer"),
        F("max_wait_ms", "int32"),
        F("min_bytes", "int32"),
        F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
        F("isolation_level", "int8", "4+", about="0 read_uncommitted, 1 read_committed"),
        F("session_id", "int32", "7+"),
        F("session_epoch", "int32", "7+", default=-1),
        F(
            "topics",
            Array(
                "FetchTopic",
                [
                    F("topic", "string", "0-12"),
                    F("topic_id", "uuid", "13+"),
                    F(
                        "partitions",
                        Array(
                            "FetchPartition",
                            [
                                F("partition", "int32"),
                                F("current_leader_epoch", "int32", "9+", default=-1),
                                F("fetch_offset", "int64"),
                                F("last_fetched_epoch", "int32", "12+", default=-1),
                                F("log_start_offset", "int64", "5+", default=-1),
                                F("partition_max_bytes", "int32"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
        F(
            "forgotten_topics_data",
            Array(
                "ForgottenTopic",
                [
                    F("topic", "string", "7-12"),
                    F("topic_id", "uuid", "13+"),
                    F("partitions", "[]int32", "7+"),
                ],
            ),
            "7+",
        ),
        F("rack_id", "string", "11+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        F(
            "responses",
            Array(
                "FetchableTopicResponse",
                [
                    F("topic", "string", "0-12"),
                    F("topic_id", "uuid", "13+"),
                    F(
                        "partitions",
                        Array(
                            "PartitionData",
                            [
                                F("partition_index", "int32"),
                                F("error_code", "int16"),
                                F("high_watermark", "int64"),
                                F("last_stable_offset", "int64", "4+", default=-1),
                                F("log_start_offset", "int64", "5+", default=-1),
                                F(
                                    "diverging_epoch",
                                    Struct(
                                        "EpochEndOffset",
                                        [
                                            F("epoch", "int32", "12+", default=-1),
                                            F("end_offset", "int64", "12+", default=-1),
                                        ],
                                    ),
                                    "12+",
                                    tag=0,
                                ),
                                F(
                                    "current_leader",
                                    Struct(
                                        "LeaderIdAndEpoch",
                                        [
                                            F("leader_id", "int32", "12+", default=-1),
                                            F("leader_epoch", "int32", "12+", default=-1),
                                        ],
                                    ),
                                    "12+",
                                    tag=1,
                                ),
                                F(
                                    "snapshot_id",
                                    Struct(
                                        "SnapshotId",
                                        [
                                            F("end_offset", "int64", "12+", default=-1),
                                            F("epoch", "int32", "12+", default=-1),
                                        ],
                                    ),
                                    "12+",
                                    tag=2,
                                ),
                                F(
                                    "aborted_transactions",
                                    Array(
                                        "AbortedTransaction",
                                        [F("producer_id", "int64", "4+"), F("first_offset", "int64", "4+")],
                                    ),
                                    "4+",
                                    nullable="4+",
                                ),
                                F("preferred_read_replica", "int32", "11+", default=-1),
                                F("records", "records", nullable="0+"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
