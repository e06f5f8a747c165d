"""DescribeTransactions (key 65, KIP-664): the coordinator's state of transactional ids.

Flexible from its first version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    65,
    "DescribeTransactions",
    versions="0",
    flexible="0+",
    request=[F("transactional_ids", "[]string")],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "transaction_states",
            Array(
                "TransactionState",
                [
                    F("error_code", "int16"),
                    F("transactional_id", "string"),
                    F("transaction_state", "string"),
                    F("transaction_timeout_ms", "int32"),
                    F("transaction_start_time_ms", "int64"),
                    F("producer_id", "int64"),
                    F("producer_epoch", "int16"),
                    F("topics", Array("TopicData", [F("topic", "string"), F("partitions", "[]int32")])),
                ],
            ),
        ),
    ],
)
