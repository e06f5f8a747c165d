"""IncrementalAlterConfigs (key 44): set/delete/append/subtract single config entries.

Version notes: v1 is the first flexible version. config_operation: 0 set, 1 delete,
2 append, 3 subtract.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    44,
    "IncrementalAlterConfigs",
    versions="0-1",
    flexible="1+",
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
                        Array(
                            "AlterableConfig",
                            [
                                F("name", "string"),
                                F("config_operation", "int8"),
                                F("value", "string", nullable="0+"),
                            ],
                        ),
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
