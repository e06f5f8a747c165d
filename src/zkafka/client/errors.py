"""Exceptions of the client library that are not a broker's error code.

A broker's answer with an error code surfaces as `zkafka.protocol.KafkaError` (with the code and,
when the broker sent one, its message). These classes cover what happens on the client's side:
bad options, no reachable broker, a deadline that passed.
"""

from __future__ import annotations

from zkafka.client.connection import ConnectionError_
from zkafka.protocol import ErrorCode, KafkaError

__all__ = [
    "BrokerUnavailableError",
    "ClientClosedError",
    "ClientError",
    "ClientTimeoutError",
    "ConfigError",
    "ConnectionError_",
    "FatalProducerError",
    "KafkaError",
    "NoOffsetForPartitionError",
    "RecordTooLargeError",
    "TransactionAbortableError",
    "TransactionStateError",
]


class ClientError(Exception):
    """Base of the client-side errors."""


class ConfigError(ClientError, ValueError):
    """An option or property with a bad value (raised when the client is constructed)."""


class BrokerUnavailableError(ClientError, ConnectionError):
    """None of the bootstrap servers or known brokers answered."""


class ClientTimeoutError(ClientError, TimeoutError):
    """A client-side deadline passed (metadata wait, delivery timeout, buffer full)."""


class ClientClosedError(ClientError):
    """The client was closed; pending and new operations fail with this."""


class NoOffsetForPartitionError(ClientError):
    """A partition has no position and `auto_offset_reset` is "none"."""


class RecordTooLargeError(KafkaError):
    """A single record that can never fit a produce request (MESSAGE_TOO_LARGE, detected locally)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.MESSAGE_TOO_LARGE, message)


class TransactionStateError(ClientError):
    """A transactional call out of order (e.g. `send` before `begin_transaction`, `commit` with
    no transaction open) or on a producer without a transactional id."""


class FatalProducerError(KafkaError):
    """The transactional producer can no longer be used: a newer instance with the same
    transactional id fenced it (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) or it is not authorized
    (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Every later call raises this; close the producer."""


class TransactionAbortableError(KafkaError):
    """A send or request of the open transaction failed: the only way on is
    `abort_transaction()`, after which the producer can begin a new transaction."""
