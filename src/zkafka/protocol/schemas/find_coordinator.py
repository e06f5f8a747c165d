"""FindCoordinator (key 10): which broker coordinates a group (key_type 0) or transaction (1).

Version notes: v1 adds key_type, throttle_time_ms and error_message; v2 is the same as v1;
v3 is the first flexible version.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    10,
    "FindCoordinator",
    versions="0-3",
    flexible="3+",
    request=[
        F("key", "string"),
        F("key_type", "int8", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16"),
        F("error_message", "string", "1+", nullable="1+", default=None),
        F("node_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
    ],
)
