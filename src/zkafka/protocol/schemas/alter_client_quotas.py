"""AlterClientQuotas (key 49): set or remove client quotas of entities (KIP-546).

Each entry names one entity (`user` and/or `client-id` parts; a null name is the default entity)
and its operations: set `key` to `value`, or remove `key`. `validate_only` checks without
writing. Each entity is answered with its own error. v1 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

_ENTITY = Array("EntityData", [F("entity_type", "string"), F("entity_name", "string", nullable="0+")])

SPEC = api(
    49,
    "AlterClientQuotas",
    versions="0-1",
    flexible="1+",
    request=[
        F(
            "entries",
            Array(
                "EntryData",
                [
                    F("entity", _ENTITY),
                    F(
                        "ops",
                        Array(
                            "OpData",
                            [F("key", "string"), F("value", "float64"), F("remove", "bool")],
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
            "entries",
            Array(
                "EntryData",
                [
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+", default=None),
                    F("entity", _ENTITY),
                ],
            ),
        ),
    ],
)
