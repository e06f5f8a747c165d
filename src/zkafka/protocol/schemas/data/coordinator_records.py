"""The `__consumer_offsets` record keys and values (Kafka's OffsetCommitKey, GroupMetadataKey,
OffsetCommitValue, GroupMetadataValue data schemas).

A key's int16 version names the record type: 0/1 an offset commit, 2 group metadata. Values
carry their own int16 version; v4 of both values is the first flexible one (Kafka 3.5+).
"""

from zkafka.protocol.schema import Array, F, data

OFFSET_COMMIT_KEY = data(
    "OffsetCommitKey",
    versions="0-1",
    flexible="none",
    fields=[
        F("group", "string"),
        F("topic", "string"),
        F("partition", "int32"),
    ],
)

GROUP_METADATA_KEY = data(
    "GroupMetadataKey",
    versions="2",
    flexible="none",
    fields=[F("group", "string", "2")],
)

OFFSET_COMMIT_VALUE = data(
    "OffsetCommitValue",
    versions="0-4",
    flexible="4+",
    fields=[
        F("offset", "int64"),
        F("leader_epoch", "int32", "3+", default=-1),
        F("metadata", "string"),
        F("commit_timestamp", "int64"),
        F("expire_timestamp", "int64", "1", default=-1),
    ],
)

GROUP_METADATA_VALUE = data(
    "GroupMetadataValue",
    versions="0-4",
    flexible="4+",
    fields=[
        F("protocol_type", "string"),
        F("generation", "int32"),
        F("protocol", "string", nullable="0+"),
        F("leader", "string", nullable="0+"),
        F("current_state_timestamp", "int64", "2+", default=-1),
        F(
            "members",
            Array(
                "MemberMetadata",
                [
                    F("member_id", "string"),
                    F("group_instance_id", "string", "3+", nullable="3+", default=None),
                    F("client_id", "string"),
                    F("client_host", "string"),
                    F("rebalance_timeout", "int32", "1+"),
                    F("session_timeout", "int32"),
                    F("subscription", "bytes"),
                    F("assignment", "bytes"),
                ],
            ),
        ),
    ],
)

SPECS = (OFFSET_COMMIT_KEY, GROUP_METADATA_KEY, OFFSET_COMMIT_VALUE, GROUP_METADATA_VALUE)
