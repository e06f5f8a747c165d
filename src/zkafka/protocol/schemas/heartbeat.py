"""Heartbeat (key 12): a group member says it is alive; the answer says "rebalance" or not.

Version notes: v1 adds throttle_time_ms; v3 adds group_instance_id; v4 is the first flexible
version.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    12,
    "Heartbeat",
    versions="0-4",
    flexible="4+",
    request=[
        F("group_id", "string"),
        F("generation_id", "int32"),
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
    ],
)
