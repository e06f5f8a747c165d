"""WriteTxnMarkers (key 27): the transaction coordinator asks a partition leader to write COMMIT
or ABORT markers (broker to broker).

Version notes: v1 is the first flexible version (Kafka 4.0 dropped v0); v2 (TransactionVersion)
is not described here.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    27,
    "WriteTxnMarkers",
    versions="0-1",
    flexible="1+",
    request=[
        F(
            "markers",
            Array(
                "WritableTxnMarker",
                [
                    F("producer_id", "int64"),
                    F("producer_epoch", "int16"),
                    F("transaction_result", "bool", about="false ABORT, true COMMIT"),
                    F(
                        "topics",
                        Array(
                            "WritableTxnMarkerTopic", [F("name", "string"), F("partition_indexes", "[]int32")]
                        ),
                    ),
                    F("coordinator_epoch", "int32"),
                ],
            ),
        ),
    ],
    response=[
        F(
            "markers",
            Array(
                "WritableTxnMarkerResult",
                [
                    F("producer_id", "int64"),
                    F(
                        "topics",
                        Array(
                            "WritableTxnMarkerTopicResult",
                            [
                                F("name", "string"),
                                F(
                                    "partitions",
                                    Array(
                                        "WritableTxnMarkerPartitionResult",
                                        [F("partition_index", "int32"), F("error_code", "int16")],
                                    ),
                                ),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
