"""DescribeGroups (key 15): state, protocol and members of groups.

Version notes: v1 adds throttle_time_ms; v3 adds authorized operations; v4 adds
group_instance_id; v5 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    15,
    "DescribeGroups",
    versions="0-5",
    flexible="5+",
    request=[
        F("groups", "[]string"),
        F("include_authorized_operations", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F(
            "groups",
            Array(
                "DescribedGroup",
                [
                    F("error_code", "int16"),
                    F("group_id", "string"),
                    F("group_state", "string"),
                    F("protocol_type", "string"),
                    F("protocol_data", "string"),
                    F(
                        "members",
                        Array(
                            "DescribedGroupMember",
                            [
                                F("member_id", "string"),
                                F("group_instance_id", "string", "4+", nullable="4+", default=None),
                                F("client_id", "string"),
                                F("client_host", "string"),
                                F("member_metadata", "bytes"),
                                F("member_assignment", "bytes"),
                            ],
                        ),
                    ),
                    F("authorized_operations", "int32", "3+", default=-2147483648),
                ],
            ),
        ),
    ],
)
