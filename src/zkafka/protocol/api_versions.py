"""The ApiVersions table the broker advertises, and the answer to a version it cannot serve.

Why these ranges (`reference/wire-protocol.md` §1.3): the classic encodings serve every reference
client; the flexible versions offered are those clients gain something from: Metadata 9-12 and Fetch
12-13 carry topic ids (KIP-516), with which librdkafka (confluent-kafka 2.x) tells a topic
recreated under the same name from the old one (Fetch 13 asks by id). Produce starts at 0 because
librdkafka 2.0.2 (kcat) compresses with gzip, snappy or lz4 only if the broker's Produce range
overlaps [0, 0] (it sends v7 with RecordBatch v2 all the same; newer librdkafka dropped that check);
a request that really carries a legacy magic 0/1 message set (kafka-go 0.2, kafka-python pinned to
0.9/0.10) is converted to RecordBatch v2 on the way in, and Fetch v0-v3 answers are down-converted
(`zkafka.records.legacy`); the group APIs start at 0 because librdkafka 2.0.2 enables its balanced
consumer only if v0 is in range; Fetch 0-4 and ListOffsets 0 serve Burrow, which never negotiates.
Advertising a version means clients will use it: keep this table to what the broker really serves.

The exceptions are three admin APIs answered by the active controller only: ElectLeaders 0-2
(v0 is preferred-only, v1 adds the election type and a top-level error, v2 is flexible; Kafka's
admin client and librdkafka use v2 when offered) and AlterPartitionReassignments /
ListPartitionReassignments 0 (KIP-455: flexible from their first version, so there is no
classic encoding to offer). Only clients that know these APIs ever pick them. Likewise the admin
APIs Kafka's clients use when offered: IncrementalAlterConfigs 0-1 (v1 flexible), DescribeLogDirs
0-4 (v2+ flexible; v4 adds the disks' total and usable bytes), DescribeCluster 0 (flexible from
v0), and the KIP-554 SCRAM APIs
DescribeUserScramCredentials / AlterUserScramCredentials 0 (flexible from v0).

The unsupported-version answer (§3): when a client sends ApiVersions at a version above ours,
Kafka replies with a v0 body (error UNSUPPORTED_VERSION plus the api table, no throttle
field) behind a v0 response header. librdkafka then retries with v0; kafka-python with our
max. Other APIs at unsupported versions get no answer: the broker closes the connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from zkafka.protocol.api_keys import ApiKey
from zkafka.protocol.codec import encode_response
from zkafka.protocol.errors import ErrorCode
from zkafka.protocol.messages import ApiVersionsResponse

BROKER_API_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    ApiKey.PRODUCE: (0, 8),
    ApiKey.FETCH: (0, 13),
    ApiKey.LIST_OFFSETS: (0, 5),
    ApiKey.METADATA: (0, 12),
    # Controller-to-broker APIs: only zkafka's own controller sends them; non-flexible but for
    # UpdateMetadata v6-7, which zkafka's controller sends at v7 for its topic ids.
    ApiKey.LEADER_AND_ISR: (0, 3),
    ApiKey.STOP_REPLICA: (0, 1),
    ApiKey.UPDATE_METADATA: (0, 7),
    ApiKey.CONTROLLED_SHUTDOWN: (1, 2),
    ApiKey.OFFSET_COMMIT: (0, 7),  # v0: offsets in ZooKeeper (/consumers/<group>/offsets)
    # v6+ flexible; v7 `require_stable` (KIP-447); v8 several groups at once (KIP-709).
    ApiKey.OFFSET_FETCH: (0, 8),
    ApiKey.FIND_COORDINATOR: (0, 2),
    ApiKey.JOIN_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 3),
    ApiKey.LEAVE_GROUP: (0, 3),
    ApiKey.SYNC_GROUP: (0, 3),
    ApiKey.DESCRIBE_GROUPS: (0, 4),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.API_VERSIONS: (0, 2),
    ApiKey.CREATE_TOPICS: (0, 4),
    ApiKey.DELETE_TOPICS: (0, 3),
    # v2+ flexible; v3 carries the producer's last id and epoch (KIP-360); v4 answers PRODUCER_FENCED.
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (0, 3),
    ApiKey.ALTER_CONFIGS: (0, 1),
    ApiKey.CREATE_PARTITIONS: (0, 1),
    ApiKey.DELETE_GROUPS: (0, 1),
    ApiKey.DELETE_RECORDS: (0, 1),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    # Flexible from v1 / from v0: offered because Kafka's admin clients use them when they can.
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 0),
    # Answered by the active controller only (NOT_CONTROLLER elsewhere); the flexible exceptions.
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    # SASL (KIP-43/152/368): ILLEGAL_SASL_STATE on listeners without SASL, as in Kafka. SaslAuthenticate
    # stops at v1 (session_lifetime_ms); v2 only adds the flexible encoding.
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 1),
    # ACL APIs (KIP-140; v1 adds prefixed patterns, KIP-290); SECURITY_DISABLED without an authorizer.
    ApiKey.DESCRIBE_ACLS: (0, 1),
    ApiKey.CREATE_ACLS: (0, 1),
    ApiKey.DELETE_ACLS: (0, 1),
    # Client quotas (KIP-546), flexible from v1.
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    # SCRAM credentials (KIP-554): flexible from v0, like DescribeCluster; any broker answers both.
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # Transactions (KIP-98): v2 of AddPartitionsToTxn/AddOffsetsToTxn/EndTxn may answer
    # PRODUCER_FENCED (KIP-588), v3 is flexible; TxnOffsetCommit v2 carries the leader epoch and
    # v3 the member's generation, id and instance id (KIP-447). AddPartitionsToTxn v4 is the
    # brokers' batched form with `verify_only` (KIP-890; Kafka's clients stop at v3).
    # WriteTxnMarkers is broker to broker (v1 flexible; zkafka's coordinator sends v0).
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 4),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    # KIP-664, flexible from v0 (kafka-transactions and Kafka's admin client use them when offered).
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
}


def api_versions_response(
    table: Mapping[int, tuple[int, int]] = BROKER_API_VERSIONS,
    error_code: int = ErrorCode.NONE,
    throttle_time_ms: int = 0,
) -> ApiVersionsResponse:
    """The ApiVersions answer listing `table`, sorted by api key."""
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            ApiVersionsResponse.ApiVersion(api_key=key, min_version=lo, max_version=hi)
            for key, (lo, hi) in sorted(table.items())
        ],
        throttle_time_ms=throttle_time_ms,
    )


def unsupported_api_versions_frame(
    correlation_id: int, table: Mapping[int, tuple[int, int]] = BROKER_API_VERSIONS
) -> bytearray:
    """The complete frame answering an ApiVersions request whose version is not served: v0
    header, v0 body, UNSUPPORTED_VERSION, and the whole table (which includes key 18, the
    entry clients look for to pick their retry version)."""
    body = api_versions_response(table, error_code=ErrorCode.UNSUPPORTED_VERSION)
    return encode_response(ApiKey.API_VERSIONS, 0, correlation_id, body)
