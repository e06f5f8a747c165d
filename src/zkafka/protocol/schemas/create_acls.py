"""CreateAcls (key 30): add ACL bindings (KIP-140).

Version notes: v1 adds the resource pattern type (KIP-290); v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    30,
    "CreateAcls",
    versions="0-2",
    flexible="2+",
    request=[
        F(
            "creations",
            Array(
                "AclCreation",
                [
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                    F("resource_pattern_type", "int8", "1+", default=3),
                    F("principal", "string"),
                    F("host", "string"),
                    F("operation", "int8"),
                    F("permission_type", "int8"),
                ],
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "results",
            Array(
                "AclCreationResult",
                [F("error_code", "int16"), F("error_message", "string", nullable="0+", default=None)],
            ),
        ),
    ],
)
