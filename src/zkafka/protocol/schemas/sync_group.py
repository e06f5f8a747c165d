"""SyncGroup (key 14): the leader hands out assignments; every member receives its own.

Version notes: v1 adds throttle_time_ms; v3 adds group_instance_id; v4 is the first flexible
version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    14,
    "SyncGroup",
    versions="0-4",
    flexible="4+",
    request=[
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F(
            "assignments",
            Array("SyncGroupRequestAssignment", [F("member_id", "string"), F("assignment", "bytes")]),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("assignment", "bytes"),
    ],
)
