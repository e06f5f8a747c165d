"""InitProducerId (key 22): a producer id and epoch for idempotent/transactional producing.

Version notes: v1 is the same as v0; v2 is the first flexible version.
"""

from zkafka.protocol.schema import F, api

SPEC = api(
    22,
    "InitProducerId",
    versions="0-2",
    flexible="2+",
    request=[
        F("transactional_id", "string", nullable="0+", default=None),
        F("transaction_timeout_ms", "int32"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("producer_id", "int64", default=-1),
        F("producer_epoch", "int16"),
    ],
)
