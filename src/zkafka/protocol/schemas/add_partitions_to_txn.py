"""AddPartitionsToTxn (key 24): a transactional producer adds partitions to its transaction.

Version notes: v1 is the same as v0; v2 lets the broker answer PRODUCER_FENCED; v3 is the first
flexible version. v4+ (KIP-890, broker to broker, batched) is not described here.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    24,
    "AddPartitionsToTxn",
    versions="0-3",
    flexible="3+",
    request=[
        # Kafka's names: v4+ moved these into a per-transaction list
        F("v3_and_below_transactional_id", "string"),
        F("v3_and_below_producer_id", "int64"),
        F("v3_and_below_producer_epoch", "int16"),
        F(
            "v3_and_below_topics",
            Array("AddPartitionsToTxnTopic", [F("name", "string"), F("partitions", "[]int32")]),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "results_by_topic_v3_and_below",
            Array(
                "AddPartitionsToTxnTopicResult",
                [
                    F("name", "string"),
                    F(
                        "results_by_partition",
                        Array(
                            "AddPartitionsToTxnPartitionResult",
                            [F("partition_index", "int32"), F("partition_error_code", "int16")],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
