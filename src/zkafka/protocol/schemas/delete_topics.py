"""DeleteTopics (key 20).

Version notes: v1 adds throttle_time_ms; v2-v3 are the same as v1; v4 is the first flexible
version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    20,
    "DeleteTopics",
    versions="0-4",
    flexible="4+",
    request=[
        F("topic_names", "[]string"),
        F("timeout_ms", "int32"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("responses", Array("DeletableTopicResult", [F("name", "string"), F("error_code", "int16")])),
    ],
)
