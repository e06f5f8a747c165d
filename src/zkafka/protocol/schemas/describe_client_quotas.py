"""DescribeClientQuotas (key 48): the client quotas whose entities a filter matches (KIP-546).

A filter component names an entity type (`user`, `client-id`) and matches it exactly (match type 0,
`match` the name), as the default entity (1) or any entity of the type (2); `strict` drops entities
with parts the filter does not name. An entity's default part has a null name. v1 is the first
flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    48,
    "DescribeClientQuotas",
    versions="0-1",
    flexible="1+",
    request=[
        F(
            "components",
            Array(
                "ComponentData",
                [
                    F("entity_type", "string"),
                    F("match_type", "int8"),
                    F("match", "string", nullable="0+"),
                ],
            ),
        ),
        F("strict", "bool"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
        F(
            "entries",
            Array(
                "EntryData",
                [
                    F(
                        "entity",
                        Array(
                            "EntityData",
                            [F("entity_type", "string"), F("entity_name", "string", nullable="0+")],
                        ),
                    ),
                    F("values", Array("ValueData", [F("key", "string"), F("value", "float64")])),
                ],
            ),
            nullable="0+",
        ),
    ],
)
