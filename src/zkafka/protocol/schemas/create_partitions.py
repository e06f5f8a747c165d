"""CreatePartitions (key 37): grow topics' partition counts.

Version notes: v1 is the same as v0; v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    37,
    "CreatePartitions",
    versions="0-2",
    flexible="2+",
    request=[
        F(
            "topics",
            Array(
                "CreatePartitionsTopic",
                [
                    F("name", "string"),
                    F("count", "int32", about="the new total number of partitions"),
                    F(
                        "assignments",
                        Array("CreatePartitionsAssignment", [F("broker_ids", "[]int32")]),
                        nullable="0+",
                        default=None,
                        about="null lets the controller place the new partitions",
                    ),
                ],
            ),
        ),
        F("timeout_ms", "int32"),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "results",
            Array(
                "CreatePartitionsTopicResult",
                [
                    F("name", "string"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                ],
            ),
        ),
    ],
)
