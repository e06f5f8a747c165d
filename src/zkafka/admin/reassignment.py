"""Reassignment plans, shared by `zkafka reassign-partitions` and anything else that moves replicas:
Kafka's JSON formats (topics to move `{"version":1,"topics":[{"topic":"foo"}]}`; a plan
`{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`,
`log_dirs` optional and only "any", as zkafka cannot place replicas on particular log dirs), the
`--generate` proposal with Kafka's placement (`placement`, rack-aware when the brokers have racks),
and where each partition of a plan stands, read from ZooKeeper.

Bad input raises `PlanError` with the message an operator sees.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from zkafka.admin.placement import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    RackInformationError,
    assign_replicas_to_brokers,
    assign_replicas_to_brokers_rack_aware,
)
from zkafka.zk.client import KafkaZkClient
from zkafka.zk.model import TopicPartition

Plan = dict[TopicPartition, tuple[int, ...]]
ANY_LOG_DIR = "any"


class PlanError(ValueError):
    """A topics-to-move file, broker list or plan that cannot be used, or a topic that cannot be placed."""


# -- parsing and formatting --------------------------------------------------------------------------


def _load_json(text: str, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise PlanError(f"{what} must be a JSON object")
    version = obj.get("version", 1)
    if version != 1:
        raise PlanError(f"{what}: unsupported version {version!r} (only 1)")
    return obj


def _int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError(f"{what} must be an integer, got {value!r}")
    return value


def _list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise PlanError(f"{what} must be a JSON list, got {value!r}")
    return value


def parse_topics_to_move(text: str) -> list[str]:
    """`{"version":1,"topics":[{"topic":"foo"},...]}` -> topic names in file order."""
    obj = _load_json(text, "the topics-to-move file")
    topics: list[str] = []
    for entry in _list(obj.get("topics"), '"topics"'):
        name = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise PlanError(f'every entry of "topics" needs a "topic" name, got {entry!r}')
        topics.append(name)
    if not topics:
        raise PlanError("the topics-to-move file lists no topics")
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise PlanError(f"List of topics to reassign contains duplicate entries: {', '.join(duplicates)}")
    return topics


def parse_broker_list(text: str) -> list[int]:
    """`"1,2,3"` -> [1, 2, 3]."""
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise PlanError(f"bad --broker-list {text!r}: broker ids must be integers") from None
    if not brokers:
        raise PlanError("--broker-list is empty")
    if any(b < 0 for b in brokers):
        raise PlanError(f"bad --broker-list {text!r}: broker ids cannot be negative")
    if len(set(brokers)) != len(brokers):
        raise PlanError(f"bad --broker-list {text!r}: a broker id is listed twice")
    return brokers


def parse_reassignment_plan(text: str) -> Plan:
    """Kafka's reassignment JSON -> {partition: target replicas}, validated as kafka-reassign-partitions
    does (non-empty, no duplicate partitions or replicas, `log_dirs` "any" and as long as `replicas`)."""
    obj = _load_json(text, "the reassignment file")
    plan: Plan = {}
    for entry in _list(obj.get("partitions"), '"partitions"'):
        if not isinstance(entry, dict):
            raise PlanError(f'every entry of "partitions" must be an object, got {entry!r}')
        topic = entry.get("topic")
        if not isinstance(topic, str) or not topic:
            raise PlanError(f'a "partitions" entry has no "topic": {entry!r}')
        tp = TopicPartition(topic, _int(entry.get("partition"), f'"partition" of {topic}'))
        if tp.partition < 0:
            raise PlanError(f"{tp.topic}-{tp.partition}: partition ids cannot be negative")
        label = f"{tp.topic}-{tp.partition}"
        replicas = [
            _int(r, f"a replica of {label}") for r in _list(entry.get("replicas"), f"replicas of {label}")
        ]
        if not replicas:
            raise PlanError(f"Partition replica list cannot be empty: {label}")
        if any(r < 0 for r in replicas):
            raise PlanError(f"{label}: broker ids cannot be negative: {replicas}")
        if len(set(replicas)) != len(replicas):
            raise PlanError(
                f"Partition replica lists may not contain duplicate entries: {label} has {replicas}"
            )
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            dirs = _list(log_dirs, f"log_dirs of {label}")
            if len(dirs) != len(replicas):
                raise PlanError(
                    f"{label}: size of replicas list {replicas} differs from size of log dirs list {dirs}"
                )
            if any(d != ANY_LOG_DIR for d in dirs):
                raise PlanError(
                    f'{label}: zkafka cannot place replicas on particular log dirs; use "any" in log_dirs'
                )
        if tp in plan:
            raise PlanError(f"Partition reassignment contains duplicate topic partitions: {label}")
        plan[tp] = tuple(replicas)
    if not plan:
        raise PlanError("Partition reassignment list cannot be empty")
    return plan


def format_plan(plan: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment JSON (one line, partitions sorted)."""
    entries = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(plan[tp]),
            "log_dirs": [ANY_LOG_DIR] * len(plan[tp]),
        }
        for tp in sorted(plan)
    ]
    return json.dumps({"version": 1, "partitions": entries}, separators=(",", ":"))


def propose_assignment(
    current: Mapping[TopicPartition, Sequence[int]],
    broker_racks: Mapping[int, str | None],
    *,
    rack_aware: bool = True,
) -> Plan:
    """Kafka's --generate: each topic placed afresh over the brokers, keeping its partition count and
    replication factor (that of its first partition)."""
    by_topic: dict[str, dict[int, Sequence[int]]] = {}
    for tp, replicas in current.items():
        by_topic.setdefault(tp.topic, {})[tp.partition] = replicas
    plan: Plan = {}
    for topic, partitions in sorted(by_topic.items()):
        rf = len(partitions[min(partitions)])
        try:
            if rack_aware:
                placed = assign_replicas_to_brokers_rack_aware(broker_racks, len(partitions), rf)
            else:
                placed = assign_replicas_to_brokers(broker_racks, len(partitions), rf)
        except RackInformationError:
            raise PlanError(
                "Not all brokers have rack information. Add --disable-rack-aware to assign replicas "
                "without rack information."
            ) from None
        except (InvalidReplicationFactorError, InvalidPartitionsError) as e:
            raise PlanError(f"cannot place topic {topic}: {e}") from None
        # Partition ids of a topic are 0..n-1; the placement numbers them the same way.
        for partition, replicas in placed.items():
            plan[TopicPartition(topic, partition)] = tuple(replicas)
    return plan


class Status(Enum):
    COMPLETED = "completed"
    IN_PROGRESS = "in progress"
    FAILED = "failed"


@dataclass(frozen=True)
class PartitionProgress:
    tp: TopicPartition
    target: tuple[int, ...]
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    status: Status


def partition_progress(
    zk: KafkaZkClient, plan: Mapping[TopicPartition, Sequence[int]]
) -> list[PartitionProgress]:
    """Where each partition of `plan` stands, from ZooKeeper: pending in /admin/reassign_partitions or
    with adding/removing replicas in its topic znode = in progress; replicas equal to the plan =
    completed; anything else = failed (or superseded by another reassignment)."""
    pending = zk.get_partition_reassignment() or {}
    topics = zk.get_topic_assignments({tp.topic for tp in plan})
    states = zk.get_partition_states(list(plan))
    out = []
    for tp in sorted(plan):
        target = tuple(plan[tp])
        assignment = topics.get(tp.topic)
        replicas = assignment.replicas(tp.partition) if assignment is not None else ()
        adding = tuple(assignment.adding_replicas.get(tp.partition, ())) if assignment is not None else ()
        removing = tuple(assignment.removing_replicas.get(tp.partition, ())) if assignment is not None else ()
        state = states.get(tp)
        if tp in pending or adding or removing:
            status = Status.IN_PROGRESS
        elif replicas == target:
            status = Status.COMPLETED
        else:
            status = Status.FAILED
        out.append(
            PartitionProgress(
                tp,
                target,
                tuple(replicas),
                adding,
                removing,
                state.leader_and_isr.leader if state is not None else None,
                tuple(state.leader_and_isr.isr) if state is not None else (),
                status,
            )
        )
    return out
