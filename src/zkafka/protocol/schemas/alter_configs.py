"""AlterConfigs (key 33): replace a resource's whole dynamic configuration.

Version notes: v1 is the same as v0; v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    33,
    "AlterConfigs",
    versions="0-2",
    flexible="2+",
    request=[
        F(
            "resources",
            Array(
                "AlterConfigsResource",
                [
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                    F(
                        "configs",
                        Array("AlterableConfig", [F("name", "string"), F("value", "string", nullable="0+")]),
                    ),
                ],
            ),
        ),
        F("validate_only", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "responses",
            Array(
                "AlterConfigsResourceResponse",
                [
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                ],
            ),
        ),
    ],
)
