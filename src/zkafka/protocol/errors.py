"""Kafka's error codes (the numbers are protocol; the wording here is zkafka's own).

`ErrorCode` members carry `retriable` (a client may retry the same request, possibly after a
metadata refresh) and a default `message`. `KafkaError` is the exception for code that wants to
raise one: ``raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)``. Kafka's older name for 6 was
NOT_LEADER_FOR_PARTITION; its name for 10 in older clients is MESSAGE_SIZE_TOO_LARGE.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    retriable: bool
    message: str

    def __new__(cls, code: int, retriable: bool, message: str) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_SERVER_ERROR = (-1, False, "the server hit an unexpected error")
    NONE = (0, False, "")
    OFFSET_OUT_OF_RANGE = (1, False, "the offset is outside the partition's log")
    CORRUPT_MESSAGE = (2, True, "a record batch failed its CRC or size checks")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "this broker hosts no such topic-partition")
    INVALID_FETCH_SIZE = (4, False, "the fetch size is invalid")
    LEADER_NOT_AVAILABLE = (5, True, "the partition has no leader right now")
    NOT_LEADER_OR_FOLLOWER = (6, True, "this broker is not the partition's leader (or a replica)")
    REQUEST_TIMED_OUT = (7, True, "the request timed out")
    BROKER_NOT_AVAILABLE = (8, False, "the broker is not available")
    REPLICA_NOT_AVAILABLE = (9, True, "the replica is not available")
    MESSAGE_TOO_LARGE = (10, False, "a record batch is larger than the broker accepts")
    STALE_CONTROLLER_EPOCH = (11, False, "the request came from an old controller")
    OFFSET_METADATA_TOO_LARGE = (12, False, "the committed offset's metadata is too large")
    NETWORK_EXCEPTION = (13, True, "the connection broke before the response arrived")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "the coordinator is still loading its state")
    COORDINATOR_NOT_AVAILABLE = (15, True, "the coordinator is not available")
    NOT_COORDINATOR = (16, True, "this broker is not the coordinator")
    INVALID_TOPIC_EXCEPTION = (17, False, "the topic name is invalid or the topic may not be used this way")
    RECORD_LIST_TOO_LARGE = (18, False, "the batch is larger than a log segment")
    NOT_ENOUGH_REPLICAS = (19, True, "fewer in-sync replicas than min.insync.replicas")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (20, True, "appended, but to fewer in-sync replicas than required")
    INVALID_REQUIRED_ACKS = (21, False, "acks must be -1, 0 or 1")
    ILLEGAL_GENERATION = (22, False, "the group generation is not the current one")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "the member's protocols do not match the group's")
    INVALID_GROUP_ID = (24, False, "the group id is invalid")
    UNKNOWN_MEMBER_ID = (25, False, "the coordinator does not know this member")
    INVALID_SESSION_TIMEOUT = (26, False, "the session timeout is outside the broker's allowed range")
    REBALANCE_IN_PROGRESS = (27, False, "the group is rebalancing; rejoin")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "the committed offset data has an invalid size")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "not authorized for the topic")
    GROUP_AUTHORIZATION_FAILED = (30, False, "not authorized for the group")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "not authorized for the cluster")
    INVALID_TIMESTAMP = (32, False, "a record timestamp is outside the accepted range")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "the SASL mechanism is not supported")
    ILLEGAL_SASL_STATE = (34, False, "the request is not allowed in the current SASL state")
    UNSUPPORTED_VERSION = (35, False, "the API version is not supported")
    TOPIC_ALREADY_EXISTS = (36, False, "the topic already exists")
    INVALID_PARTITIONS = (37, False, "the partition count is invalid")
    INVALID_REPLICATION_FACTOR = (38, False, "the replication factor is invalid")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "the replica assignment is invalid")
    INVALID_CONFIG = (40, False, "the configuration is invalid")
    NOT_CONTROLLER = (41, True, "this broker is not the controller")
    INVALID_REQUEST = (42, False, "the request is malformed or not valid for this broker")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "the message format does not support this request")
    POLICY_VIOLATION = (44, False, "the request violates a configured policy")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "the producer's sequence number has a gap")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "the producer's sequence number was already written")
    INVALID_PRODUCER_EPOCH = (47, False, "the producer epoch is older than the current one")
    INVALID_TXN_STATE = (48, False, "the transactional operation is not valid in the current state")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "the producer id is not assigned to this transactional id")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "the transaction timeout exceeds the broker's maximum")
    CONCURRENT_TRANSACTIONS = (51, True, "another operation on the transaction is in progress")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "the transaction coordinator is no longer current")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "not authorized for the transactional id")
    SECURITY_DISABLED = (54, False, "security features are disabled")
    OPERATION_NOT_ATTEMPTED = (
        55,
        False,
        "the broker skipped this operation after others in the batch failed",
    )
    KAFKA_STORAGE_ERROR = (56, True, "a disk error occurred while accessing the log")
    LOG_DIR_NOT_FOUND = (57, False, "the log directory is not configured on the broker")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed")
    UNKNOWN_PRODUCER_ID = (59, False, "the broker has no state for this producer id")
    REASSIGNMENT_IN_PROGRESS = (60, False, "a partition reassignment is in progress")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "delegation tokens are disabled")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "the delegation token does not exist")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "the principal is not the token's owner or renewer")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64,
        False,
        "delegation token requests are not allowed on this channel",
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "not authorized for the delegation token")
    DELEGATION_TOKEN_EXPIRED = (66, False, "the delegation token has expired")
    INVALID_PRINCIPAL_TYPE = (67, False, "the principal type is not supported")
    NON_EMPTY_GROUP = (68, False, "the group still has members")
    GROUP_ID_NOT_FOUND = (69, False, "the group does not exist")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "the fetch session does not exist")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "the fetch session epoch is not the expected one")
    LISTENER_NOT_FOUND = (72, True, "the leader has no listener matching this connection's")
    TOPIC_DELETION_DISABLED = (73, False, "topic deletion is disabled")
    FENCED_LEADER_EPOCH = (74, True, "the leader epoch in the request is older than the broker's")
    UNKNOWN_LEADER_EPOCH = (75, True, "the leader epoch in the request is newer than the broker's")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "the client does not support the partition's compression")
    STALE_BROKER_EPOCH = (77, False, "the broker epoch is not the current one")
    OFFSET_NOT_AVAILABLE = (78, True, "the leader's high watermark has not caught up since its election")
    MEMBER_ID_REQUIRED = (79, False, "rejoin with the member id given in this response")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "the preferred leader is not available")
    GROUP_MAX_SIZE_REACHED = (81, False, "the group has reached its maximum size")
    FENCED_INSTANCE_ID = (82, False, "another member registered with the same group.instance.id")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "no eligible leader is available for the partition")
    ELECTION_NOT_NEEDED = (84, True, "the partition already has the desired leader")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "no partition reassignment is in progress")
    GROUP_SUBSCRIBED_TO_TOPIC = (86, False, "the group is subscribed to the topic, so its offsets stay")
    INVALID_RECORD = (87, False, "a record failed the broker's validation")
    UNSTABLE_OFFSET_COMMIT = (88, True, "pending transactional offsets must be resolved first")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "the throttling quota is exceeded")
    PRODUCER_FENCED = (90, False, "a newer producer with the same transactional id exists")
    RESOURCE_NOT_FOUND = (91, False, "the resource does not exist")
    DUPLICATE_RESOURCE = (92, False, "the request names the same resource twice")
    UNACCEPTABLE_CREDENTIAL = (93, False, "the credential does not meet the requirements")
    INCONSISTENT_VOTER_SET = (94, False, "the sender or receiver is not one of the expected voters")
    INVALID_UPDATE_VERSION = (95, False, "the update version is invalid")
    FEATURE_UPDATE_FAILED = (96, False, "the finalized features could not be updated")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "the forwarded request's principal could not be read")
    SNAPSHOT_NOT_FOUND = (98, False, "the snapshot does not exist")
    POSITION_OUT_OF_RANGE = (99, False, "the position is outside the snapshot")
    UNKNOWN_TOPIC_ID = (100, True, "this broker hosts no topic with this id")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "the broker id is already registered")
    BROKER_ID_NOT_REGISTERED = (102, False, "the broker id is not registered")
    INCONSISTENT_TOPIC_ID = (103, True, "the topic id does not match the log's")
    INCONSISTENT_CLUSTER_ID = (104, False, "the cluster id does not match this cluster's")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "the transactional id does not exist")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "the fetch session mixes topic ids inconsistently")
    INELIGIBLE_REPLICA = (107, False, "the new ISR contains an ineligible replica")
    NEW_LEADER_ELECTED = (108, False, "the partition state was updated but the leader changed")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "the offset is in tiered storage")
    FENCED_MEMBER_EPOCH = (110, False, "the member epoch is fenced; rejoin the group")
    UNRELEASED_INSTANCE_ID = (111, False, "the instance id is still held by another member")
    UNSUPPORTED_ASSIGNOR = (112, False, "the assignor is not supported by the group")
    STALE_MEMBER_EPOCH = (113, False, "the member epoch is stale")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "the request was sent to the wrong kind of endpoint")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "the endpoint type is not supported")
    UNKNOWN_CONTROLLER_ID = (116, False, "the controller id is not known")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "the client telemetry subscription id is not known")
    TELEMETRY_TOO_LARGE = (118, False, "the client telemetry payload is too large")
    INVALID_REGISTRATION = (119, False, "the registration is invalid")
    TRANSACTION_ABORTABLE = (120, False, "the transaction must be aborted")
    INVALID_RECORD_STATE = (121, False, "the record state is invalid")
    SHARE_SESSION_NOT_FOUND = (122, True, "the share session does not exist")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "the share session epoch is invalid")
    FENCED_STATE_EPOCH = (124, False, "the share state epoch is fenced")
    INVALID_VOTER_KEY = (125, False, "the voter key does not match the receiver's")
    DUPLICATE_VOTER = (126, False, "the voter is already in the voter set")
    VOTER_NOT_FOUND = (127, False, "the voter is not in the voter set")

    @classmethod
    def lookup(cls, code: int) -> ErrorCode:
        """The member for `code`; codes this table does not know map to UNKNOWN_SERVER_ERROR,
        as Kafka's clients do."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class KafkaError(Exception):
    """An error with a Kafka error code, e.g. raised by a handler and turned into a response."""

    def __init__(self, code: ErrorCode | int, message: str | None = None) -> None:
        self.raw_code = int(code)
        self.code = ErrorCode.lookup(self.raw_code)
        self.message = message if message is not None else self.code.message
        super().__init__(f"{self.code.name} ({self.raw_code}): {self.message}")

    @property
    def retriable(self) -> bool:
        return self.code.retriable
