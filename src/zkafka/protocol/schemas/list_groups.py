"""ListGroups (key 16): the groups a broker coordinates.

Version notes: v1 adds throttle_time_ms; v2 is the same as v1; v3 is the first flexible
version; v4 (KIP-518) adds the states filter and each group's state.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    16,
    "ListGroups",
    versions="0-4",
    flexible="3+",
    request=[F("states_filter", "[]string", "4+", about="empty for every state")],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F(
            "groups",
            Array(
                "ListedGroup",
                [
                    F("group_id", "string"),
                    F("protocol_type", "string"),
                    F("group_state", "string", "4+", default=""),
                ],
            ),
        ),
    ],
)
