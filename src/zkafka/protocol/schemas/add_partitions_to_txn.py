"""AddPartitionsToTxn (key 24): a transactional producer adds partitions to its transaction.

Version notes: v1 is the same as v0; v2 lets the broker answer PRODUCER_FENCED; v3 is the first
flexible version; v4 (KIP-890) is the broker-to-broker form: several transactions per request,
each with `verify_only` (is the partition in the transaction? nothing is added), and a top-level
error. v5 (TRANSACTION_ABORTABLE, KIP-890 part 2) is not described here.
"""

from zkafka.protocol.schema import Array, F, Struct, api

# Kafka's common structs: one definition, used by both request forms and both response forms.
_TOPIC = Struct("AddPartitionsToTxnTopic", [F("name", "string"), F("partitions", "[]int32")])
_TOPIC_RESULT = Struct(
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
)

SPEC = api(
    24,
    "AddPartitionsToTxn",
    versions="0-4",
    flexible="3+",
    request=[
        F(
            "transactions",
            Array(
                "AddPartitionsToTxnTransaction",
                [
                    F("transactional_id", "string"),
                    F("producer_id", "int64"),
                    F("producer_epoch", "int16"),
                    F("verify_only", "bool", default=False),
                    F("topics", Array(_TOPIC)),
                ],
            ),
            "4+",
        ),
        # Kafka's names: v4 moved these into the per-transaction list
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", Array(_TOPIC), "0-3"),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "4+", default=0),
        F(
            "results_by_transaction",
            Array(
                "AddPartitionsToTxnResult",
                [F("transactional_id", "string"), F("topic_results", Array(_TOPIC_RESULT))],
            ),
            "4+",
        ),
        F("results_by_topic_v3_and_below", Array(_TOPIC_RESULT), "0-3"),
    ],
)
