"""Errors a page answers with: a message the operator can act on and the HTTP status it deserves.

Every exception a route lets escape ends on the error page (`render.error_page`) with no traceback:
`ConsoleError` with its own status, Kafka errors by their code (an unknown topic is 404, a value
the brokers refuse 400, the authorizer's no 403), a broker or ZooKeeper that does not answer 503,
anything else 500 with its one-line text.
"""

from __future__ import annotations

from zkafka.client.errors import BrokerUnavailableError, ClientError, ClientTimeoutError
from zkafka.protocol import ErrorCode, KafkaError


class ConsoleError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


EXPECTED_FAILURES: tuple[type[Exception], ...] = (
    ConsoleError,
    KafkaError,
    ClientError,
    TimeoutError,
    ConnectionError,
)
"""What a page may fail with in the normal course of things (the rest is a bug, logged)."""

NOT_FOUND_CODES = frozenset(
    {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_TOPIC_EXCEPTION}
)

BAD_REQUEST_CODES = frozenset(
    {
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.POLICY_VIOLATION,
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        ErrorCode.REASSIGNMENT_IN_PROGRESS,
    }
)
"""What the brokers refuse because of the values the form sent: the operator's to fix (400)."""

FORBIDDEN_CODES = frozenset(
    {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    }
)
"""The brokers' authorizer said no to the console's principal (403)."""


def status_and_message(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and the message shown for an exception a page raised."""
    if isinstance(exc, ConsoleError):
        return exc.status, exc.message
    if isinstance(exc, KafkaError):
        if exc.code in NOT_FOUND_CODES:
            return 404, str(exc)
        if exc.code in BAD_REQUEST_CODES:
            return 400, str(exc)
        return (403 if exc.code in FORBIDDEN_CODES else 502), str(exc)
    if isinstance(exc, BrokerUnavailableError | ClientTimeoutError | TimeoutError | ConnectionError):
        return 503, f"the cluster did not answer: {exc or type(exc).__name__}"
    return 500, f"internal error: {type(exc).__name__}: {exc}"
