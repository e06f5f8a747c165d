"""DeleteGroups (key 42): delete empty groups and their offsets.

Version notes: v1 is the same as v0; v2 is the first flexible version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    42,
    "DeleteGroups",
    versions="0-2",
    flexible="2+",
    request=[F("groups_names", "[]string")],
    response=[
        F("throttle_time_ms", "int32"),
        F("results", Array("DeletableGroupResult", [F("group_id", "string"), F("error_code", "int16")])),
    ],
)
