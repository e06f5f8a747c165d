"""Replicas on the move, for `/reassignments`: reassignments in progress as the controller lists them
(ListPartitionReassignments) and as ZooKeeper holds them (partitions whose topic znode has adding or
removing replicas, requests still pending in /admin/reassign_partitions), preferred-leader election
requests in /admin/preferred_replica_election; and the plans the actions there carry out: a
reassignment in Kafka's JSON (`zkafka.admin.reassignment`, as kafka-reassign-partitions reads it),
its cancellation, and a preferred-leader election."""

from __future__ import annotations

from dataclasses import dataclass

from zkafka.admin.reassignment import PlanError, format_plan, parse_reassignment_plan
from zkafka.client.cluster import NO_LEADER
from zkafka.client.types import TopicPartition
from zkafka.console.errors import ConsoleError
from zkafka.console.source import ClusterSource
from zkafka.doctor.view import ClusterView

MAX_PLAN_PARTITIONS = 10_000
"""A plan posted through the console moves at most this many partitions (the form is 16 KiB anyway)."""


@dataclass(frozen=True, slots=True)
class MovingPartition:
    partition: TopicPartition
    replicas: tuple[int, ...]
    """Target + original while the move runs, as in the topic znode."""
    adding: tuple[int, ...]
    removing: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    seen_by: str
    """Who says it moves: "controller" (ListPartitionReassignments), "zookeeper" (the topic znode)."""

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)


@dataclass
class Reassignments:
    moving: list[MovingPartition]
    pending: list[tuple[TopicPartition, tuple[int, ...]]]
    """Requests still in /admin/reassign_partitions (the old way, before the controller took them)."""
    preferred: list[TopicPartition]
    """Partitions named in /admin/preferred_replica_election (an election the controller has yet to run)."""
    notes: list[str]


async def reassignments(
    source: ClusterSource, view: ClusterView | None, zk_note: str | None
) -> Reassignments:
    notes = [zk_note] if zk_note else []
    try:
        listed = await source.admin.list_partition_reassignments()
    except Exception as e:  # the controller away: ZooKeeper still says what moves
        if view is None:
            raise
        listed = {}
        notes.append(f"the controller did not list its reassignments ({e}): ZooKeeper's view only")
    moves: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], set[str]]] = {
        tp: (r.replicas, r.adding_replicas, r.removing_replicas, {"controller"}) for tp, r in listed.items()
    }
    if view is not None:
        for name, assignment in view.topics.items():
            for p in set(assignment.adding_replicas) | set(assignment.removing_replicas):
                tp = TopicPartition(name, p)
                if tp in moves:
                    moves[tp][3].add("zookeeper")
                else:
                    moves[tp] = (
                        tuple(assignment.replicas(p)),
                        tuple(assignment.adding_replicas.get(p, ())),
                        tuple(assignment.removing_replicas.get(p, ())),
                        {"zookeeper"},
                    )
    leaders = await _leaders(source, view, {tp.topic for tp in moves})
    moving = [
        MovingPartition(tp, replicas, adding, removing, *leaders.get(tp, (None, ())), " + ".join(sorted(by)))
        for tp, (replicas, adding, removing, by) in sorted(moves.items())
    ]
    pending = sorted((view.reassignment or {}).items()) if view is not None else []
    preferred = sorted(view.preferred_election or ()) if view is not None else []
    return Reassignments(moving, pending, preferred, notes)


async def _leaders(
    source: ClusterSource, view: ClusterView | None, topics: set[str]
) -> dict[TopicPartition, tuple[int | None, tuple[int, ...]]]:
    """Leader and ISR of the topics' partitions: ZooKeeper's state znodes, else Metadata."""
    if not topics:
        return {}
    if view is not None:
        return {
            tp: (s.leader_and_isr.leader, tuple(s.leader_and_isr.isr))
            for tp, s in view.states.items()
            if tp.topic in topics
        }
    described = await source.admin.describe_topics(sorted(topics))
    return {
        TopicPartition(t.name, p.partition): (None if p.leader == NO_LEADER else p.leader, tuple(p.isr))
        for t in described.values()
        for p in t.partitions.values()
    }


# -- starting and cancelling ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlanRow:
    partition: TopicPartition
    current: tuple[int, ...]
    target: tuple[int, ...] | None
    """None: cancel the partition's reassignment."""


def parse_plan(text: str) -> dict[TopicPartition, tuple[int, ...]]:
    """A reassignment plan in Kafka's JSON, checked as kafka-reassign-partitions checks it."""
    try:
        plan = parse_reassignment_plan(text)
    except PlanError as e:
        raise ConsoleError(400, f"the reassignment plan: {e}") from None
    if len(plan) > MAX_PLAN_PARTITIONS:
        raise ConsoleError(400, f"a plan moves at most {MAX_PLAN_PARTITIONS} partitions, got {len(plan)}")
    return plan


async def plan_rows(
    source: ClusterSource, plan: dict[TopicPartition, tuple[int, ...] | None]
) -> tuple[list[PlanRow], str]:
    """Each partition's current replicas beside its target (the preview), and the current assignment
    in Kafka's JSON (what kafka-reassign-partitions prints to save for a rollback). A partition that
    does not exist is a 400 naming it."""
    described = await source.admin.describe_topics()  # all: an unknown topic is named below
    rows = []
    for tp, target in sorted(plan.items()):
        meta = described.get(tp.topic)
        current = meta.partitions.get(tp.partition) if meta is not None else None
        if current is None:
            raise ConsoleError(400, f"the plan names {tp.topic}-{tp.partition}, which does not exist")
        rows.append(PlanRow(tp, tuple(current.replicas), target))
    return rows, format_plan({r.partition: r.current for r in rows})


def parse_partitions(text: str) -> list[TopicPartition]:
    """`topic-partition` names, one per line or comma-separated (the cancel form's hidden field)."""
    out = []
    for item in text.replace(",", "\n").split():
        topic, sep, partition = item.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ConsoleError(400, f"a partition is named topic-partition, got {item!r}")
        out.append(TopicPartition(topic, int(partition)))
    if not out:
        raise ConsoleError(400, "no partition named")
    if len(out) > MAX_PLAN_PARTITIONS:
        raise ConsoleError(400, f"at most {MAX_PLAN_PARTITIONS} partitions at once, got {len(out)}")
    return list(dict.fromkeys(out))


# -- preferred-leader election ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElectionRow:
    partition: TopicPartition
    leader: int | None
    preferred: int


async def election_preview(source: ClusterSource, topic: str) -> list[ElectionRow]:
    """The partitions (of `topic`, or of every topic when it is empty) whose leader is not their
    preferred replica: those an election would move (kafka-leader-election elects only where
    needed)."""
    described = await source.admin.describe_topics([topic] if topic else None)
    return [
        ElectionRow(
            TopicPartition(t.name, p.partition), None if p.leader == NO_LEADER else p.leader, p.replicas[0]
        )
        for t in sorted(described.values(), key=lambda t: t.name)
        for p in sorted(t.partitions.values(), key=lambda p: p.partition)
        if p.replicas and p.leader != p.replicas[0]
    ]
