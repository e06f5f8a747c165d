"""ListTransactions (key 66, KIP-664): the transactions a coordinator holds, filtered.

Flexible from its first version. v1 adds duration_filter (transactions open longer than it, in
ms; -1 for all); v2 adds a transactional id regular expression.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    66,
    "ListTransactions",
    versions="0-2",
    flexible="0+",
    request=[
        F("state_filters", "[]string"),
        F("producer_id_filters", "[]int64"),
        F("duration_filter", "int64", "1+", default=-1),
        F("transactional_id_pattern", "string", "2+", nullable="2+", default=None),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16"),
        F("unknown_state_filters", "[]string"),
        F(
            "transaction_states",
            Array(
                "TransactionState",
                [
                    F("transactional_id", "string"),
                    F("producer_id", "int64"),
                    F("transaction_state", "string"),
                ],
            ),
        ),
    ],
)
