"""CreateTopics (key 19).

Version notes: v1 adds validate_only and error_message; v2 adds throttle_time_ms; v3-v4 are
the same as v2; v5 is the first flexible version and returns the created topic's partition
count, replication factor and configs.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    19,
    "CreateTopics",
    versions="0-5",
    flexible="5+",
    request=[
        F(
            "topics",
            Array(
                "CreatableTopic",
                [
                    F("name", "string"),
                    F("num_partitions", "int32", about="-1 for the broker default (v4+)"),
                    F("replication_factor", "int16", about="-1 for the broker default (v4+)"),
                    F(
                        "assignments",
                        Array(
                            "CreatableReplicaAssignment",
                            [F("partition_index", "int32"), F("broker_ids", "[]int32")],
                        ),
                    ),
                    F(
                        "configs",
                        Array(
                            "CreatableTopicConfig",
                            [F("name", "string"), F("value", "string", nullable="0+")],
                        ),
                    ),
                ],
            ),
        ),
        F("timeout_ms", "int32", default=60000),
        F("validate_only", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F(
            "topics",
            Array(
                "CreatableTopicResult",
                [
                    F("name", "string"),
                    F("error_code", "int16"),
                    F("error_message", "string", "1+", nullable="0+", default=None),
                    F("topic_config_error_code", "int16", "5+", tag=0),
                    F("num_partitions", "int32", "5+", default=-1),
                    F("replication_factor", "int16", "5+", default=-1),
                    F(
                        "configs",
                        Array(
                            "CreatableTopicConfigs",
                            [
                                F("name", "string", "5+"),
                                F("value", "string", "5+", nullable="5+"),
                                F("read_only", "bool", "5+"),
                                F("config_source", "int8", "5+", default=-1),
                                F("is_sensitive", "bool", "5+"),
                            ],
                        ),
                        "5+",
                        nullable="5+",
                    ),
                ],
            ),
        ),
    ],
)
