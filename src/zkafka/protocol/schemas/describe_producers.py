"""DescribeProducers (key 61, KIP-664): the producer state a partition leader holds, with each
producer's open transaction (the way to find hanging transactions).

Flexible from its first version.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    61,
    "DescribeProducers",
    versions="0",
    flexible="0+",
    request=[F("topics", Array("TopicRequest", [F("name", "string"), F("partition_indexes", "[]int32")]))],
    response=[
        F("throttle_time_ms", "int32"),
        F(
            "topics",
            Array(
                "TopicResponse",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        Array(
                            "PartitionResponse",
                            [
                                F("partition_index", "int32"),
                                F("error_code", "int16"),
                                F("error_message", "string", nullable="0+", default=None),
                                F(
                                    "active_producers",
                                    Array(
                                        "ProducerState",
                                        [
                                            F("producer_id", "int64"),
                                            F("producer_epoch", "int32"),
                                            F("last_sequence", "int32", default=-1),
                                            F("last_timestamp", "int64", default=-1),
                                            F("coordinator_epoch", "int32"),
                                            F("current_txn_start_offset", "int64", default=-1),
                                        ],
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
