"""Metadata (key 3): brokers, controller and topic/partition leadership.

Version notes: v0 has no null topic list (an empty list means all topics); v1 adds rack,
controller_id and is_internal, and a null topic list means all topics; v2 adds cluster_id;
v3 adds throttle_time_ms; v4 adds allow_auto_topic_creation; v5 adds offline_replicas; v7 adds
leader_epoch; v8 adds authorized-operations fields (INT32_MIN when not requested); v9 is the
first flexible version; v10 adds topic ids (KIP-516) to request and response topics; v11 drops
the cluster's authorized operations (DescribeCluster carries them); v12 allows a request topic
named by id only (null name) and a null name in the answer for an unknown id.
"""

from zkafka.protocol.schema import Array, F, api

AUTHORIZED_OPERATIONS_OMITTED = -2147483648

SPEC = api(
    3,
    "Metadata",
    versions="0-12",
    flexible="9+",
    request=[
        F(
            "topics",
            Array(
                "MetadataRequestTopic",
                [F("topic_id", "uuid", "10+"), F("name", "string", nullable="10+")],
            ),
            nullable="1+",
        ),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
        F("include_cluster_authorized_operations", "bool", "8-10"),
        F("include_topic_authorized_operations", "bool", "8+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F(
            "brokers",
            Array(
                "MetadataResponseBroker",
                [
                    F("node_id", "int32"),
                    F("host", "string"),
                    F("port", "int32"),
                    F("rack", "string", "1+", nullable="1+", default=None),
                ],
            ),
        ),
        F("cluster_id", "string", "2+", nullable="2+", default=None),
        F("controller_id", "int32", "1+", default=-1),
        F(
            "topics",
            Array(
                "MetadataResponseTopic",
                [
                    F("error_code", "int16"),
                    F("name", "string", nullable="12+"),
                    F("topic_id", "uuid", "10+"),
                    F("is_internal", "bool", "1+"),
                    F(
                        "partitions",
                        Array(
                            "MetadataResponsePartition",
                            [
                                F("error_code", "int16"),
                                F("partition_index", "int32"),
                                F("leader_id", "int32"),
                                F("leader_epoch", "int32", "7+", default=-1),
                                F("replica_nodes", "[]int32"),
                                F("isr_nodes", "[]int32"),
                                F("offline_replicas", "[]int32", "5+"),
                            ],
                        ),
                    ),
                    F("topic_authorized_operations", "int32", "8+", default=AUTHORIZED_OPERATIONS_OMITTED),
                ],
            ),
        ),
        F("cluster_authorized_operations", "int32", "8-10", default=AUTHORIZED_OPERATIONS_OMITTED),
    ],
)
