"""UpdateMetadata (key 6): controller to broker, the cluster view every broker caches.

Version notes: v1 allows several endpoints per broker; v2 adds rack; v3 adds the listener
name; v4 adds offline_replicas; v5 adds broker_epoch and groups partitions by topic; v6 is the
first flexible version; v7 adds topic ids. Field names are Kafka 2.8's.
"""

from zkafka.protocol.schema import Array, F, Struct, api

PARTITION_STATE = Struct(
    "UpdateMetadataPartitionState",
    [
        F("topic_name", "string", "0-4"),
        F("partition_index", "int32"),
        F("controller_epoch", "int32"),
        F("leader", "int32"),
        F("leader_epoch", "int32"),
        F("isr", "[]int32"),
        F("zk_version", "int32"),
        F("replicas", "[]int32"),
        F("offline_replicas", "[]int32", "4+"),
    ],
)

SPEC = api(
    6,
    "UpdateMetadata",
    versions="0-7",
    flexible="6+",
    request=[
        F("controller_id", "int32"),
        F("controller_epoch", "int32"),
        F("broker_epoch", "int64", "5+", default=-1),
        F("ungrouped_partition_states", Array(PARTITION_STATE), "0-4"),
        F(
            "topic_states",
            Array(
                "UpdateMetadataTopicState",
                [
                    F("topic_name", "string", "5+"),
                    F("topic_id", "uuid", "7+"),
                    F("partition_states", Array(PARTITION_STATE), "5+"),
                ],
            ),
            "5+",
        ),
        F(
            "live_brokers",
            Array(
                "UpdateMetadataBroker",
                [
                    F("id", "int32"),
                    F("v0_host", "string", "0"),
                    F("v0_port", "int32", "0"),
                    F(
                        "endpoints",
                        Array(
                            "UpdateMetadataEndpoint",
                            [
                                F("port", "int32", "1+"),
                                F("host", "string", "1+"),
                                F("listener", "string", "3+"),
                                F("security_protocol", "int16", "1+"),
                            ],
                        ),
                        "1+",
                    ),
                    F("rack", "string", "2+", nullable="0+", default=None),
                ],
            ),
        ),
    ],
    response=[F("error_code", "int16")],
)
