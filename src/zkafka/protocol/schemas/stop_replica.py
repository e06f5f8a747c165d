"""StopReplica (key 5): controller to broker, "stop replicating (and maybe delete) these".

Version notes: v1 adds broker_epoch and groups partitions by topic; v2 is the first flexible
version; v3 moves delete_partition and a leader epoch into each partition (KIP-570).
"""

from zkafka.protocol.schema import Array, F, api

SPEC = api(
    5,
    "StopReplica",
    versions="0-3",
    flexible="2+",
    request=[
        F("controller_id", "int32"),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", "1+", default=-1),
        F("delete_partitions", "bool", "0-2"),
        F(
            "ungrouped_partitions",
            Array(
                "StopReplicaPartitionV0",
                [F("topic_name", "string", "0"), F("partition_index", "int32", "0")],
            ),
            "0",
        ),
        F(
            "topics",
            Array(
                "StopReplicaTopicV1",
                [F("name", "string", "1-2"), F("partition_indexes", "[]int32", "1-2")],
            ),
            "1-2",
        ),
        F(
            "topic_states",
            Array(
                "StopReplicaTopicState",
                [
                    F("topic_name", "string", "3+"),
                    F(
                        "partition_states",
                        Array(
                            "StopReplicaPartitionState",
                            [
                                F("partition_index", "int32", "3+"),
                                F("leader_epoch", "int32", "3+", default=-1),
                                F("delete_partition", "bool", "3+"),
                            ],
                        ),
                        "3+",
                    ),
                ],
            ),
            "3+",
        ),
    ],
    response=[
        F("error_code", "int16"),
        F(
            "partition_errors",
            Array(
                "StopReplicaPartitionError",
                [F("topic_name", "string"), F("partition_index", "int32"), F("error_code", "int16")],
            ),
        ),
    ],
)
