"""LeaderAndIsr (key 4): controller to broker, "become leader/follower for these partitions".

Version notes: v1 adds is_new; v2 adds broker_epoch and groups partitions by topic; v3 adds
adding_replicas/removing_replicas (KIP-455 reassignment); v4 is the first flexible version; v5
adds the request type (full or incremental) and topic ids and groups response errors by topic
id. Field names are Kafka 2.8's (the API left Kafka in 4.0).
"""

from zkafka.protocol.schema import Array, F, Struct, api

PARTITION_STATE = Struct(
    "LeaderAndIsrPartitionState",
    [
        F("topic_name", "string", "0-1"),
        F("partition_index", "int32"),
        F("controller_epoch", "int32"),
        F("leader", "int32"),
        F("leader_epoch", "int32"),
        F("isr", "[]int32"),
        F("zk_version", "int32", about="the partition state znode's version (the partition epoch)"),
        F("replicas", "[]int32"),
        F("adding_replicas", "[]int32", "3+"),
        F("removing_replicas", "[]int32", "3+"),
        F("is_new", "bool", "1+"),
    ],
)

PARTITION_ERROR = Struct(
    "LeaderAndIsrPartitionError",
    [
        F("topic_name", "string", "0-4"),
        F("partition_index", "int32"),
        F("error_code", "int16"),
    ],
)

SPEC = api(
    4,
    "LeaderAndIsr",
    versions="0-5",
    flexible="4+",
    request=[
        F("controller_id", "int32"),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", "2+", default=-1),
        F("type", "int8", "5+", about="0 incremental, 1 full"),
        F("ungrouped_partition_states", Array(PARTITION_STATE), "0-1"),
        F(
            "topic_states",
            Array(
                "LeaderAndIsrTopicState",
                [
                    F("topic_name", "string", "2+"),
                    F("topic_id", "uuid", "5+"),
                    F("partition_states", Array(PARTITION_STATE), "2+"),
                ],
            ),
            "2+",
        ),
        F(
            "live_leaders",
            Array(
                "LeaderAndIsrLiveLeader",
                [F("broker_id", "int32"), F("host_name", "string"), F("port", "int32")],
            ),
        ),
    ],
    response=[
        F("error_code", "int16"),
        F("partition_errors", Array(PARTITION_ERROR), "0-4"),
        F(
            "topics",
            Array(
                "LeaderAndIsrTopicError",
                [F("topic_id", "uuid", "5+"), F("partition_errors", Array(PARTITION_ERROR), "5+")],
            ),
            "5+",
        ),
    ],
)
