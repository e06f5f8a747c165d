"""ApiVersions (key 18): which versions of which APIs the broker speaks.

Version notes: v1 adds throttle_time_ms; v2 is the same as v1; v3 is the first flexible
version and adds the client software name/version and feature tags. Special cases live in
`zkafka.protocol.api_versions` and the header rules: the response header is always v0, and an
unsupported request version gets a v0 body with UNSUPPORTED_VERSION.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    18,
    "ApiVersions",
    versions="0-3",
    flexible="3+",
    request=[
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ],
    response=[
        F("error_code", "int16"),
        F(
            "api_keys",
            Array(
                "ApiVersion",
                [F("api_key", "int16"), F("min_version", "int16"), F("max_version", "int16")],
            ),
        ),
        F("throttle_time_ms", "int32", "1+"),
        F(
            "supported_features",
            Array(
                "SupportedFeatureKey",
                [
                    F("name", "string", "3+"),
                    F("min_version", "int16", "3+"),
                    F("max_version", "int16", "3+"),
                ],
            ),
            "3+",
            tag=0,
        ),
        F("finalized_features_epoch", "int64", "3+", default=-1, tag=1),
        F(
            "finalized_features",
            Array(
                "FinalizedFeatureKey",
                [
                    F("name", "string", "3+"),
                    F("max_version_level", "int16", "3+"),
                    F("min_version_level", "int16", "3+"),
                ],
            ),
            "3+",
            tag=2,
        ),
        F("zk_migration_ready", "bool", "3+", tag=3),
    ],
)
