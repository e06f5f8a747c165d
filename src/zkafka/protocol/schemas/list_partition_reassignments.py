"""ListPartitionReassignments (key 46, KIP-455): the moves in progress.

Flexible from its first version. A null topics list means every reassigning partition.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    46,
    "ListPartitionReassignments",
    versions="0",
    flexible="0+",
    request=[
        F("timeout_ms", "int32", default=60000),
        F(
            "topics",
            Array(
                "ListPartitionReassignmentsTopics",
                [F("name", "string"), F("partition_indexes", "[]int32")],
            ),
            nullable="0+",
            default=None,
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "topics",
            Array(
                "OngoingTopicReassignment",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "OngoingPartitionReassignment",
                            [
                                F("partition_index", "int32"),
                                F("replicas", "[]int32"),
                                F("adding_replicas", "[]int32"),
                                F("removing_replicas", "[]int32"),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
