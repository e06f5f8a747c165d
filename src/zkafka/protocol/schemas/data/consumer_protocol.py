"""The ConsumerProtocol blobs (protocol type "consumer"): Kafka's ConsumerProtocolSubscription
and ConsumerProtocolAssignment data schemas, carried in JoinGroup and SyncGroup.

Version notes: Subscription v1 adds owned_partitions, v2 generation_id, v3 rack_id; Assignment
v1-v3 only follow the Subscription's versions (same body). A reader parses a newer version with
the newest format it knows: new versions may only append fields.
"""

from zkafka.protocol.schema import Array, F, data

SUBSCRIPTION = data(
    "ConsumerProtocolSubscription",
    versions="0-3",
    flexible="none",
    fields=[
        F("topics", "[]string"),
        F("user_data", "bytes", nullable="0+", default=None),
        F(
            "owned_partitions",
            Array("TopicPartition", [F("topic", "string", "1+"), F("partitions", "[]int32", "1+")]),
            "1+",
        ),
        F("generation_id", "int32", "2+", default=-1),
        F("rack_id", "string", "3+", nullable="3+", default=None),
    ],
)

ASSIGNMENT = data(
    "ConsumerProtocolAssignment",
    versions="0-3",
    flexible="none",
    fields=[
        F("assigned_partitions", Array("TopicPartition", [F("topic", "string"), F("partitions", "[]int32")])),
        F("user_data", "bytes", nullable="0+", default=None),
    ],
)

SPECS = (SUBSCRIPTION, ASSIGNMENT)
