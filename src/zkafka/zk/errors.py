"""Exceptions raised by `zkafka.zk`.

Everything a caller is expected to handle is a subclass of `ZkError` so that a broker can tell "our
metadata layer refused this" apart from kazoo's transport errors (`kazoo.exceptions.*`), which are
allowed to propagate unchanged when there is nothing meaningful to translate them into.
"""

from __future__ import annotations


class ZkError(Exception):
    """Base class of every error raised by zkafka's ZooKeeper layer."""


class ZNodeDataError(ZkError, ValueError):
    """A znode holds data we refuse to interpret: malformed JSON, a wrong type, a missing key, an
    unknown version. Always names the znode so an operator can go and look at it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"znode {path}: {problem}")


class ZkConnectionError(ZkError):
    """Could not establish a ZooKeeper session within the connection timeout."""


class ControllerMovedError(ZkError):
    """A controller write was fenced: `/controller_epoch` no longer has the zkVersion this controller
    was elected with (or the election itself was lost). The controller must resign."""


class NodeOwnedElsewhereError(ZkError):
    """An ephemeral znode we need to own is held by another live ZooKeeper session."""


class BrokerIdInUseError(NodeOwnedElsewhereError):
    """`/brokers/ids/<id>` is held by another live ZooKeeper session."""


class InvalidTopicError(ZkError, ValueError):
    """Illegal topic name, or a name colliding with an existing topic (Kafka INVALID_TOPIC_EXCEPTION)."""


class TopicExistsError(ZkError):
    """The topic already exists or is queued for deletion (Kafka TOPIC_ALREADY_EXISTS)."""


class UnknownTopicError(ZkError):
    """The topic does not exist (Kafka UNKNOWN_TOPIC_OR_PARTITION)."""


class TopicAlreadyMarkedForDeletionError(ZkError):
    """`/admin/delete_topics/<topic>` already exists."""


class InvalidReplicaAssignmentError(ZkError, ValueError):
    """A replica assignment that Kafka would refuse (Kafka INVALID_REPLICA_ASSIGNMENT)."""


class AdminOperationInProgressError(ZkError):
    """A legacy admin znode (`/admin/reassign_partitions`, `/admin/preferred_replica_election`)
    already exists, so another operation of that kind is still running."""


class ProducerIdsExhaustedError(ZkError):
    """The 64-bit producer id space is used up."""
