"""DescribeConfigs (key 32): topic and broker configuration.

Version notes: v1 adds synonyms and config_source (replacing is_default); v2 is the same as
v1; v3 adds documentation and config_type; v4 is the first flexible version. Resource types:
2 topic, 4 broker, 8 broker logger.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    32,
    "DescribeConfigs",
    versions="0-4",
    flexible="4+",
    request=[
        F(
            "resources",
            Array(
                "DescribeConfigsResource",
                [
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                    F("configuration_keys", "[]string", nullable="0+", about="null for all keys"),
                ],
            ),
        ),
        F("include_synonyms", "bool", "1+"),
        F("include_documentation", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "results",
            Array(
                "DescribeConfigsResult",
                [
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                    F("resource_type", "int8"),
                    F("resource_name", "string"),
                    F(
                        "configs",
                        Array(
                            "DescribeConfigsResourceResult",
                            [
                                F("name", "string"),
                                F("value", "string", nullable="0+"),
                                F("read_only", "bool"),
                                F("config_source", "int8", "1+", default=-1),
                                F("is_default", "bool", "0"),
                                F("is_sensitive", "bool"),
                                F(
                                    "synonyms",
                                    Array(
                                        "DescribeConfigsSynonym",
                                        [
                                            F("name", "string", "1+"),
                                            F("value", "string", "1+", nullable="1+"),
                                            F("source", "int8", "1+"),
                                        ],
                                    ),
                                    "1+",
                                ),
                                F("config_type", "int8", "3+"),
                                F("documentation", "string", "3+", nullable="3+", default=None),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
