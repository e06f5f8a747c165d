"""InitProducerId (key 22): a producer id and epoch for idempotent/transactional producing.

Version notes: v1 is the same as v0; v2 is the first flexible version; v3 adds the producer id
and epoch the producer last had (KIP-360: the coordinator bumps that epoch instead of fencing
it); v4 lets the broker answer PRODUCER_FENCED (KIP-588).
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    22,
    "InitProducerId",
    versions="0-4",
    flexible="2+",
    request=[
        F("transactional_id", "string", nullable="0+", default=None),
        F("transaction_timeout_ms", "int32"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ],
)
