"""OffsetDelete (key 47, KIP-496): delete a group's committed offsets for some partitions.

Never flexible.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    47,
    "OffsetDelete",
    versions="0",
    flexible="none",
    request=[
        F("group_id", "string"),
        F(
            "topics",
            Array(
                "OffsetDeleteRequestTopic",
                [
                    F("name", "string"),
                    F("partitions", Array("OffsetDeleteRequestPartition", [F("partition_index", "int32")])),
                ],
            ),
        ),
    ],
    response=[
        F("error_code", "int16"),
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            Array(
                "OffsetDeleteResponseTopic",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "OffsetDeleteResponsePartition",
                            [F("partition_index", "int32"), F("error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
