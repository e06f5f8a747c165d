"""LeaveGroup (key 13): members leave a group at once instead of timing out.

Version notes: v1 adds throttle_time_ms; v3 replaces member_id with a members batch (KIP-345)
and answers per member; v4 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    13,
    "LeaveGroup",
    versions="0-4",
    flexible="4+",
    request=[
        F("group_id", "string"),
        F("member_id", "string", "0-2"),
        F(
            "members",
            Array(
                "MemberIdentity",
                [
                    F("member_id", "string", "3+"),
                    F("group_instance_id", "string", "3+", nullable="3+", default=None),
                ],
            ),
            "3+",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F(
            "members",
            Array(
                "MemberResponse",
                [
                    F("member_id", "string", "3+"),
                    F("group_instance_id", "string", "3+", nullable="3+", default=None),
                    F("error_code", "int16", "3+"),
                ],
            ),
            "3+",
        ),
    ],
)
