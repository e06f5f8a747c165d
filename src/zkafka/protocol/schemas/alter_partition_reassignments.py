"""AlterPartitionReassignments (key 45, KIP-455): start or cancel (null replicas) moves.

Flexible from its first version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    45,
    "AlterPartitionReassignments",
    versions="0",
    flexible="0+",
    request=[
        F("timeout_ms", "int32", default=60000),
        F(
            "topics",
            Array(
                "ReassignableTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "ReassignablePartition",
                            [
                                F("partition_index", "int32"),
                                F(
                                    "replicas",
                                    "[]int32",
                                    nullable="0+",
                                    default=None,
                                    about="null cancels a pending reassignment",
                                ),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "responses",
            Array(
                "ReassignableTopicResponse",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "ReassignablePartitionResponse",
                            [
                                F("partition_index", "int32"),
                                F("error_code", "int16"),
                                F("error_message", "string", nullable="0+", default=None),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
