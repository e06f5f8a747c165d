"""Creating topics and partitions the ZooKeeper way, shared by CreateTopics, CreatePartitions and
Metadata's auto-creation.

Validation first (name, existence and '.'/'_' collisions, partition count, replication factor
against the live brokers, KIP-578's partition limits, manual assignments, topic configs), then the
writes of reference §6: `/config/topics/<t>` and `/brokers/topics/<t>`; the controller turns those
into partition state. These functions block on ZooKeeper: run them on the ZooKeeper executor, never
on the loop.

Counts come from the request, so they are checked against `max.partitions` and
`max.broker.partitions` before any assignment is computed: an assignment is a list per partition,
and a request asking for 20 million partitions must cost a comparison, not gigabytes and minutes
of CPU (issue 11). Exceeding a limit answers POLICY_VIOLATION, as Kafka 4 does for its own
per-request partition cap (KAFKA-17870); a count that is not positive answers INVALID_PARTITIONS,
a replication factor that is not positive or above the live brokers INVALID_REPLICATION_FACTOR.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from zkafka.admin.placement import assign_replicas_to_brokers
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
from zkafka.zk.model import TopicAssignment, validate_replica_assignment
from zkafka.zk.topic_names import check_topic_creatable
from zkafka.zk.topic_store import NewTopicZNodes
from zkafka.zk.znodes import MAX_ZNODE_BYTES, TopicZNode


class _HasReplicas(Protocol):
    @property
    def replicas(self) -> Sequence[int]: ...


class PartitionView(Protocol):
    """What the limits need of a broker's metadata cache: every partition's replicas by topic."""

    @property
    def partitions(self) -> Mapping[str, Mapping[int, _HasReplicas]]: ...


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """KIP-578's limits and what the cluster holds now.

    The counts come from the broker's metadata cache (`from_cache`), so they may lag ZooKeeper by
    one UpdateMetadata and two brokers creating topics at once can both pass: the limits are a
    guard against runaway requests, as approximate as Kafka's own.
    """

    max_partitions: int  # partitions in the whole cluster
    max_broker_partitions: int  # partition replicas on one broker
    cluster_partitions: int = 0
    # Replicas per broker. None when not counted: a broker holds at most one replica of each
    # partition, so `cluster_partitions` already bounds every broker's load, and counting would
    # walk every replica in the cluster for nothing (see `from_cache`).
    broker_replicas: Mapping[int, int] | None = None

    @classmethod
    def from_cache(
        cls, cache: PartitionView, *, max_partitions: int, max_broker_partitions: int, adding: int
    ) -> PartitionLimits:
        """A snapshot for a request that may add up to `adding` partitions. Call it on the event
        loop (the cache is only consistent there). Costs one step per topic; per-broker replicas
        are counted (one step per replica) only when the cluster is close enough to
        `max_broker_partitions` for them to matter."""
        total = sum(len(parts) for parts in cache.partitions.values())
        per_broker: Counter[int] | None = None
        if total + max(0, adding) > max_broker_partitions:
            per_broker = Counter()
            for parts in cache.partitions.values():
                for info in parts.values():
                    per_broker.update(info.replicas)
        return cls(max_partitions, max_broker_partitions, total, per_broker)

    def load_of(self, broker_id: int) -> int:
        """Replicas on `broker_id` now (an upper bound when they were not counted)."""
        if self.broker_replicas is None:
            return self.cluster_partitions
        return self.broker_replicas.get(broker_id, 0)

    def check_count(self, adding: int, replication_factor: int, live_brokers: Sequence[int]) -> None:
        """Refuse `adding` new partitions of `replication_factor` replicas before they are placed.

        Arithmetic only: the cluster limit exactly, the broker limit as far as it can be known
        without an assignment (the new replicas cannot fit if they exceed the room left on all
        live brokers together). `check_placement` finishes the broker check on the assignment.
        """
        if adding > self.max_partitions - self.cluster_partitions:
            raise KafkaError(
                ErrorCode.POLICY_VIOLATION,
                f"adding {adding} partitions would make {self.cluster_partitions + adding} in the cluster, "
                f"above max.partitions={self.max_partitions}",
            )
        if self.cluster_partitions + adding <= self.max_broker_partitions:
            return  # no broker can pass the limit (one replica per partition at most)
        room = sum(max(0, self.max_broker_partitions - self.load_of(b)) for b in live_brokers)
        if adding * replication_factor > room:
            raise KafkaError(
                ErrorCode.POLICY_VIOLATION,
                f"{adding} partitions x {replication_factor} replicas do not fit on the "
                f"{len(live_brokers)} live brokers: {room} replicas left below "
                f"max.broker.partitions={self.max_broker_partitions}",
            )

    def check_placement(self, plan: Mapping[int, Sequence[int]]) -> None:
        """The broker limit against a computed (or given) assignment."""
        if self.cluster_partitions + len(plan) <= self.max_broker_partitions:
            return
        added = Counter(b for replicas in plan.values() for b in replicas)
        for b, n in sorted(added.items()):
            if self.load_of(b) + n > self.max_broker_partitions:
                raise KafkaError(
                    ErrorCode.POLICY_VIOLATION,
                    f"broker {b} would hold {self.load_of(b) + n} partition replicas, above "
                    f"max.broker.partitions={self.max_broker_partitions}",
                )

    def after(self, plan: Mapping[int, Iterable[int]]) -> PartitionLimits:
        """The counts once `plan` exists: later topics of the same request are checked on top."""
        per_broker = self.broker_replicas
        if per_broker is not None:
            per_broker = Counter(per_broker)
            for replicas in plan.values():
                per_broker.update(replicas)
        total = self.cluster_partitions + len(plan)
        return replace(self, cluster_partitions=total, broker_replicas=per_broker)


def _check_replication_factor(rf: int, live_brokers: Sequence[int]) -> None:
    if rf <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "replication factor must be larger than 0")
    if rf > len(live_brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {rf} is larger than the {len(live_brokers)} available brokers",
        )


def _assign(
    broker_ids: Sequence[int], partitions: int, rf: int, start_partition: int = 0
) -> dict[int, list[int]]:
    """Kafka's placement; the caller has checked `partitions` and `rf` (the result is as large
    as partitions x rf)."""

    _check_replication_factor(rf, broker_ids)
    return assign_replicas_to_brokers(sorted(broker_ids), partitions, rf, start_partition_id=start_partition)


def _brief(items: Sequence[int] | set[int], shown: int = 10) -> str:
    """A request-supplied list for an error message: a few items, not a million (the message
    must fit the response's int16-length string)."""
    head = sorted(items)[:shown] if isinstance(items, set) else list(items[:shown])
    more = f" ... ({len(items)} in all)" if len(items) > shown else ""
    return f"{head}{more}"


MAX_ERROR_MESSAGE = 1000
"""Characters of an error message sent back: error_message is an int16-length string, and a
message quoting request content must never make the response unencodable."""


def short_message(message: str) -> str:
    return message if len(message) <= MAX_ERROR_MESSAGE else message[: MAX_ERROR_MESSAGE - 3] + "..."


def validate_configs(defaults: LogConfig, configs: Mapping[str, str]) -> None:
    try:
        defaults.with_overrides(configs)
    except InvalidConfigError as e:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(e)) from None


@dataclass(frozen=True, slots=True)
class TopicRequest:
    """One topic to create: a partition count and replication factor, or a manual `assignment`
    (then both are -1), and its config overrides."""

    name: str
    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    assignment: Mapping[int, Sequence[int]] | None = None


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
    limits: PartitionLimits | None = None,
) -> dict[int, list[int]]:
    """Validate and (unless `validate_only`) create the topic. Returns the replica assignment.

    `limits` None skips KIP-578's checks: only for counts the broker chose itself (auto-creation
    with num.partitions, __consumer_offsets), never for counts a request supplied.
    """
    [result] = create_topics(
        zk,
        [TopicRequest(name, num_partitions, replication_factor, configs, assignment)],
        live_brokers=live_brokers,
        defaults=defaults,
        validate_only=validate_only,
        allow_internal=allow_internal,
        limits=limits,
    )
    if isinstance(result, Exception):
        raise result
    return result


def create_topics(
    zk: KafkaZkClient,
    topics: Sequence[TopicRequest],
    *,
    live_brokers: Sequence[int],
    defaults: LogConfig,
    validate_only: bool = False,
    allow_internal: bool = False,
    limits: PartitionLimits | None = None,
) -> list[dict[int, list[int]] | Exception]:
    """Validate and (unless `validate_only`) create `topics`; per topic, in order, its replica
    assignment or its error (a KafkaError with Kafka's code, or an unexpected ZooKeeper error).

    Each topic is checked as if the ones before it in the list had been created (Kafka creates
    them one after the other): their partitions count against `limits`, and a later topic whose
    name equals or collides with an earlier one's fails. The topics and pending deletions are
    read once, and the valid topics' znodes are written together (`create_topic_assignments`:
    three pipelined rounds for the lot, where one topic at a time cost six round trips each).
    A topic validated here but created by someone else before the write still fails with
    TOPIC_ALREADY_EXISTS; it has counted against `limits` for the later ones, which errs on
    the safe side."""
    existing = set(zk.get_all_topics())
    deletions = zk.get_topic_deletions()
    out: list[dict[int, list[int]] | Exception] = []
    valid: dict[str, int] = {}  # name -> position in `out`
    plans: list[NewTopicZNodes] = []
    for t in topics:
        try:
            plan = _plan_topic(t, existing, deletions, live_brokers, defaults, allow_internal, limits)
        except KafkaError as e:
            out.append(e)
            continue
        if limits is not None:
            limits = limits.after(plan)
        if not validate_only:  # validate_only checks each topic against ZooKeeper alone, as Kafka
            existing.add(t.name)
        valid[t.name] = len(out)
        out.append(plan)
        plans.append(NewTopicZNodes(t.name, plan, dict(t.configs)))
    if validate_only or not plans:
        return out
    written = zk.create_topic_assignments(plans)
    for name, i in valid.items():
        result = written[name]
        if isinstance(result, TopicExistsError):
            out[i] = KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(result))
        elif isinstance(result, Exception):
            out[i] = result
    return out


def _plan_topic(
    t: TopicRequest,
    existing: set[str],
    deletions: Sequence[str],
    live_brokers: Sequence[int],
    defaults: LogConfig,
    allow_internal: bool,
    limits: PartitionLimits | None,
) -> dict[int, list[int]]:
    """One topic's checks (name, configs, counts, limits, znode size) and its assignment."""
    try:
        check_topic_creatable(t.name, existing, marked_for_deletion=deletions, allow_internal=allow_internal)
    except TopicExistsError as e:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, str(e)) from None
    except InvalidTopicError as e:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(e)) from None
    validate_configs(defaults, t.configs)
    num_partitions, replication_factor, assignment = t.num_partitions, t.replication_factor, t.assignment
    if assignment:
        if num_partitions != -1 or replication_factor != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, "give either a replica assignment or partitions/replication factor"
            )
        if limits is not None:
            # before the lists are copied, sorted and checked: their number is the request's
            limits.check_count(len(assignment), 1, live_brokers)
        plan = {p: list(r) for p, r in assignment.items()}
        try:
            validate_replica_assignment(plan)
        except InvalidReplicaAssignmentError as e:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, short_message(str(e))) from None
        unknown = {b for r in plan.values() for b in r} - set(live_brokers)
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"unknown brokers {_brief(unknown)}")
    else:
        if num_partitions <= 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS, f"number of partitions must be positive, got {num_partitions}"
            )
        _check_replication_factor(replication_factor, live_brokers)
        if limits is not None:
            limits.check_count(num_partitions, replication_factor, live_brokers)
        plan = _assign(live_brokers, num_partitions, replication_factor)
    if limits is not None:
        limits.check_placement(plan)
    _check_znode_size(t.name, plan)
    return plan


def _check_znode_size(topic: str, plan: Mapping[int, Sequence[int]]) -> None:
    """The topic's assignment znode must fit in one ZooKeeper packet (`znodes.MAX_ZNODE_BYTES`)."""
    size = len(TopicZNode.encode(TopicAssignment(topic, {p: tuple(r) for p, r in plan.items()})))
    if size > MAX_ZNODE_BYTES:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION,
            f"the assignment of {len(plan)} partitions takes {size} bytes in /brokers/topics/{topic}, "
            f"more than a znode may hold ({MAX_ZNODE_BYTES})",
        )


def create_partitions(
    zk: KafkaZkClient,
    *,
    topic: str,
    new_total: int,
    assignment: Sequence[Sequence[int]] | None,
    live_brokers: Sequence[int],
    validate_only: bool = False,
    limits: PartitionLimits | None = None,
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
    if limits is not None:
        limits.check_count(new_total - existing, rf, live_brokers)
    if assignment:
        if len(assignment) != new_total - existing:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"{len(assignment)} assignments given for {new_total - existing} new partitions",
            )
        added = {existing + i: list(r) for i, r in enumerate(assignment)}
        for p, r in added.items():
            if len(r) != rf or len(set(r)) != len(r) or set(r) - set(live_brokers):
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"bad replicas {_brief(r)} for partition {p}"
                )
    else:
        added = _assign(live_brokers, new_total - existing, rf, start_partition=existing)
        added = {existing + i: r for i, (_, r) in enumerate(sorted(added.items()))}
    if limits is not None:
        limits.check_placement(added)
    merged = {p: list(r) for p, r in current.partitions.items()}
    merged.update(added)
    _check_znode_size(topic, merged)
    if validate_only:
        return added
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
