"""Creating topics and partitions the ZooKeeper way, shared by CreateTopics, CreatePartitions and
Metadata's auto-creation.

Validation first (name, existence and '.'/'_' collisions, partition count, replication factor
against the live brokers, manual assignments, topic configs), then the writes of reference §6:
`/config/topics/<t>` and `/brokers/topics/<t>`; the controller turns those into partition state.
These functions block on ZooKeeper: run them on the ZooKeeper executor, never on the loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zkafka.protocol import ErrorCode, KafkaError
from zkafka.storage.config import InvalidConfigError, LogConfig
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.errors import (
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from zkafka.zk.model import validate_replica_assignment
from zkafka.zk.topic_names import check_topic_creatable


def _assign(
    broker_ids: Sequence[int], partitions: int, rf: int, start_partition: int = 0
) -> dict[int, list[int]]:
    from zkafka.controller.assignment import assign_replicas_to_brokers

    if rf <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "replication factor must be larger than 0")
    if rf > len(broker_ids):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {rf} is larger than the {len(broker_ids)} available brokers",
        )
    return assign_replicas_to_brokers(sorted(broker_ids), partitions, rf, start_partition_id=start_partition)


def validate_configs(defaults: LogConfig, configs: Mapping[str, str]) -> None:
    try:
        defaults.with_overrides(configs)
    except InvalidConfigError as e:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None


def create_topic(
    zk: KafkaZkClient,
    *,
    name: str,
    num_partitions: int,
    replication_factor: int,
    configs: Mapping[str, str],
    assignment: Mapping[int, Sequence[int]] | None,
    live_brokers: Sequence[int],
    defaults: LogConfig,
    validate_only: bool = False,
    allow_internal: bool = False,
) -> dict[int, list[int]]:
    """Validate and (unless `validate_only`) create the topic. Returns the replica assignment."""
    try:
        check_topic_creatable(
            name,
            zk.get_all_topics(),
            marked_for_deletion=zk.get_topic_deletions(),
            allow_internal=allow_internal,
        )
    except TopicExistsError as e:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(e)) from None
    except InvalidTopicError as e:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)) from None
    validate_configs(defaults, configs)
    if assignment:
        if num_partitions != -1 or replication_factor != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, "give either a replica assignment or partitions/replication factor"
            )
        plan = {p: list(r) for p, r in assignment.items()}
        try:
            validate_replica_assignment(plan)
        except InvalidReplicaAssignmentError as e:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e)) from None
        unknown = {b for r in plan.values() for b in r} - set(live_brokers)
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"unknown brokers {sorted(unknown)}")
    else:
        if num_partitions <= 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS, f"number of partitions must be positive, got {num_partitions}"
            )
        plan = _assign(live_brokers, num_partitions, replication_factor)
    if validate_only:
        return plan
    try:
        zk.create_topic_assignment(name, plan, config=dict(configs), validate=False)
    except TopicExistsError as e:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(e)) from None
    return plan


def create_partitions(
    zk: KafkaZkClient,
    *,
    topic: str,
    new_total: int,
    assignment: Sequence[Sequence[int]] | None,
    live_brokers: Sequence[int],
    validate_only: bool = False,
) -> dict[int, list[int]]:
    """Add partitions (never remove): the new ones are appended to `/brokers/topics/<t>`."""
    current = zk.get_topic_assignment(topic)
    if current is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
    if zk.is_topic_marked_for_deletion(topic):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {topic!r} is marked for deletion")
    existing = len(current.partitions)
    if new_total <= existing:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"topic {topic!r} has {existing} partitions; the new count must be larger, got {new_total}",
        )
    rf = len(next(iter(current.partitions.values())))
    if assignment:
        if len(assignment) != new_total - existing:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"{len(assignment)} assignments given for {new_total - existing} new partitions",
            )
        added = {existing + i: list(r) for i, r in enumerate(assignment)}
        for p, r in added.items():
            if len(r) != rf or len(set(r)) != len(r) or set(r) - set(live_brokers):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"bad replicas {r} for partition {p}")
    else:
        added = _assign(live_brokers, new_total - existing, rf, start_partition=existing)
        added = {existing + i: r for i, (_, r) in enumerate(sorted(added.items()))}
    if validate_only:
        return added
    merged = {p: list(r) for p, r in current.partitions.items()}
    merged.update(added)
    try:
        zk.set_topic_assignment(topic, merged, expected_version=current.zk_version)
    except UnknownTopicError as e:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(e)) from None
    return added


def delete_topic(zk: KafkaZkClient, topic: str, *, deletion_enabled: bool) -> None:
    if not deletion_enabled:
        raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false on this broker")
    try:
        zk.mark_topic_for_deletion(topic)
    except UnknownTopicError as e:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, str(e)) from None
    except TopicAlreadyMarkedForDeletionError:
        pass  # Kafka answers success: the deletion is already under way
