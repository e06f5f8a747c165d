"""ElectLeaders (key 43): run preferred (0) or unclean (1) leader election.

Version notes: v1 adds election_type and a top-level error_code; v2 is the first flexible
version. A null topic_partitions means every partition.
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    43,
    "ElectLeaders",
    versions="0-2",
    flexible="2+",
    request=[
        F("election_type", "int8", "1+"),
        F(
            "topic_partitions",
            Array("TopicPartitions", [F("topic", "string"), F("partitions", "[]int32")]),
            nullable="0+",
        ),
        F("timeout_ms", "int32", default=60000),
    ],
    response=[
        F("throttle_time_ms", "int32"),
        F("error_code", "int16", "1+"),
        F(
            "replica_election_results",
            Array(
                "ReplicaElectionResult",
                [
                    F("topic", "string"),
                    F(
                        "partition_result",
                        Array(
                            "PartitionResult",
                            [
                                F("partition_id", "int32"),
                                F("error_code", "int16"),
                                F("error_message", "string", nullable="0+", default=None),
                            ],
                        ),
                    ),
                ],
            ),
        ),
    ],
)
