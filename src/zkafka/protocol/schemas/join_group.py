"""JoinGroup (key 11): join a consumer group and take part in a rebalance.

Version notes: v1 adds rebalance_timeout_ms; v2 adds throttle_time_ms; v4 lets the broker
answer MEMBER_ID_REQUIRED; v5 adds group_instance_id (static membership); v6 is the first
flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    11,
    "JoinGroup",
    versions="0-6",
    flexible="6+",
    request=[
        F("group_id", "string"),
        F("session_timeout_ms", "int32"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("protocol_type", "string"),
        F("protocols", Array("JoinGroupRequestProtocol", [F("name", "string"), F("metadata", "bytes")])),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16"),
        F("generation_id", "int32", default=-1),
        F("protocol_name", "string"),
        F("leader", "string"),
        F("member_id", "string"),
        F(
            "members",
            Array(
                "JoinGroupResponseMember",
                [
                    F("member_id", "string"),
                    F("group_instance_id", "string", "5+", nullable="5+", default=None),
                    F("metadata", "bytes"),
                ],
            ),
        ),
    ],
)
