"""The `__transaction_state` record key and value (Kafka's TransactionLogKey and
TransactionLogValue data schemas).

The key carries an int16 version (0) in front of the transactional id; the value its own int16
version: v0 is what Kafka 2.x-3.x writes, v1 (Kafka 4.0, KIP-915/890) is the first flexible one.
`TransactionStatus` is the state's byte (`zkafka.transactions.state.TxnState`); the partition list
is null only in records Kafka never writes, and is read as empty.
"""

from zkafka.protocol.schema import Array, F, data

TRANSACTION_LOG_KEY = data(
    "TransactionLogKey",
    versions="0",
    flexible="none",
    fields=[F("transactional_id", "string", "0")],
)

TRANSACTION_LOG_VALUE = data(
    "TransactionLogValue",
    versions="0-1",
    flexible="1+",
    fields=[
        F("producer_id", "int64"),
        F("producer_epoch", "int16"),
        F("transaction_timeout_ms", "int32"),
        F("transaction_status", "int8"),
        F(
            "transaction_partitions",
            Array("PartitionsSchema", [F("topic", "string"), F("partition_ids", "[]int32")]),
            nullable="0+",
        ),
        F("transaction_last_update_timestamp_ms", "int64"),
        F("transaction_start_timestamp_ms", "int64"),
    ],
)

SPECS = (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE)
