"""EndTxn (key 26): commit or abort the producer's transaction.

Version notes: v1 is the same as v0; v2 lets the broker answer PRODUCER_FENCED; v3 is the first
flexible version.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    26,
    "EndTxn",
    versions="0-3",
    flexible="3+",
    request=[
        F("transactional_id", "string"),
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("committed", "bool", about="true commits, false aborts"),
    ],
    response=[F("throttle_time_ms", "int32"), F("error_code", "int16")],
)
