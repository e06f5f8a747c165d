"""Leader election rules: pure functions, no ZooKeeper, no context.

Every rule walks the replica assignment *in order*, so the preferred replica (the first one) wins
whenever it qualifies. "live" is the set of brokers whose replica of the partition can serve: the
broker is registered (and, unless a rule says otherwise, not shutting down) and the replica is not
on a failed log directory. Callers compute it; these functions only decide.

| strategy            | leader                                          | new ISR                    |
|---------------------|-------------------------------------------------|----------------------------|
| new partition       | first live replica                              | all live replicas          |
| offline, clean      | first replica live and in the ISR               | ISR ∩ live                 |
| offline, unclean    | first live replica                              | [leader]                   |
| reassignment        | first *target* replica live and in the ISR      | unchanged                  |
| preferred           | assignment[0] if live and in the ISR, else none | unchanged                  |
| controlled shutdown | first replica live, in the ISR, not shutting down| ISR minus shutting-down   |

Every decision bumps the leader epoch by one (`LeaderAndIsr.new_leader_and_isr`) and keeps the
zkVersion the state was read with, which the write then uses as its expected version.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from zkafka.zk.model import LeaderAndIsr, TopicPartition

__all__ = [
    "ControlledShutdownElection",
    "ElectionResult",
    "ElectionStrategy",
    "OfflineElection",
    "PreferredElection",
    "ReassignElection",
    "controlled_shutdown_leader",
    "initial_leader_and_isr",
    "leader_for_controlled_shutdown",
    "leader_for_offline",
    "leader_for_preferred",
    "leader_for_reassign",
    "leaders_for_controlled_shutdown",
    "leaders_for_offline",
    "offline_leader",
    "preferred_leader",
    "reassign_leader",
]


# -- strategies (what the partition state machine is asked to do) ------------------------------------


@dataclass(frozen=True)
class OfflineElection:
    """Elect for New/Offline partitions. `allow_unclean` forces unclean election for every partition
    (admin ElectLeaders UNCLEAN); otherwise it is decided per topic from its configuration."""

    allow_unclean: bool = False


@dataclass(frozen=True)
class ReassignElection:
    """Move leadership into the reassignment's target replicas."""


@dataclass(frozen=True)
class PreferredElection:
    """Move leadership back to the preferred (first) replica."""


@dataclass(frozen=True)
class ControlledShutdownElection:
    """Move leadership away from brokers that are shutting down."""


ElectionStrategy = OfflineElection | ReassignElection | PreferredElection | ControlledShutdownElection


class ElectionResult(NamedTuple):
    """One partition's decision. A named tuple: elections after a broker's death make one per
    partition it led (33,000 at 100,000 partitions), at ~0.3 us where a frozen dataclass took ~0.8."""

    partition: TopicPartition
    leader_and_isr: LeaderAndIsr | None
    """The new state to write, or None when no replica qualifies."""
    recipients: tuple[int, ...]
    """Brokers that must get the LeaderAndIsr for the new state."""
    unclean: bool = False
    """True when the leader was taken from outside the ISR."""


# -- the rules ---------------------------------------------------------------------------------------


def _first(replicas: Sequence[int], *conditions: Collection[int]) -> int | None:
    # Plain loops, no generators: elections after a broker's death call this once per partition
    # it led (10,000 at 30,000 partitions), and two nested generator expressions per call were a
    # fifth of the controller's work before the first state write.
    for r in replicas:
        for c in conditions:
            if r not in c:
                break
        else:
            return r
    return None


def initial_leader_and_isr(assignment: Sequence[int], live: Collection[int]) -> LeaderAndIsr | None:
    """A new partition: first live replica leads, every live replica is in the ISR, epoch 0."""
    live_replicas = [r for r in assignment if r in live]
    if not live_replicas:
        return None
    return LeaderAndIsr.initial(live_replicas[0], live_replicas)


def offline_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], unclean_allowed: bool
) -> tuple[int | None, bool]:
    """(leader, unclean): first live in-sync replica; else, if allowed, the first live replica."""
    leader = _first(assignment, live, isr)
    if leader is not None or not unclean_allowed:
        return leader, False
    leader = _first(assignment, live)
    return leader, leader is not None


def reassign_leader(target: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    return _first(target, live, isr)


def preferred_leader(assignment: Sequence[int], isr: Collection[int], live: Collection[int]) -> int | None:
    if not assignment:
        return None
    preferred = assignment[0]
    return preferred if preferred in live and preferred in isr else None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Collection[int],
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    return next(
        (r for r in assignment if r in live_or_shutting_down and r in isr and r not in shutting_down),
        None,
    )


# -- rules applied to a partition's current state ----------------------------------------------------


def leader_for_offline(
    partition: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
    unclean_allowed: bool,
) -> ElectionResult:
    live_replicas = tuple(r for r in assignment if r in live)
    leader, unclean = offline_leader(assignment, current.isr, live, unclean_allowed)
    if leader is None:
        return ElectionResult(partition, None, live_replicas)
    new_isr = [r for r in current.isr if r in live] if not unclean else [leader]
    return ElectionResult(partition, current.new_leader_and_isr(leader, new_isr), live_replicas, unclean)


def _hashable(replicas: Sequence[int]) -> tuple[int, ...]:
    # states and assignments hold tuples (returned as they are), but the rules accept any sequence
    return replicas if type(replicas) is tuple else tuple(replicas)


def _shared_decisions(
    partitions: Sequence[tuple[TopicPartition, LeaderAndIsr]],
    assignments: Sequence[Sequence[int]],
    live: Sequence[Collection[int]],
    extras: Sequence[object],
    rule: Callable[[TopicPartition, LeaderAndIsr, Sequence[int], Collection[int], Any], ElectionResult],
) -> Iterator[ElectionResult]:
    """`rule(partition, current, assignment, live, extra)` for each partition, in order, made as
    they are taken (the partition state machine has them made on the ZooKeeper thread, while
    ZooKeeper applies the first writes). Partitions alike in assignment, ISR, live replicas and
    `extra` share the first one's decision; only their new state (their own epoch and zkVersion)
    is made: after a broker's death at 100,000 partitions the 33,000 it led fall in a handful of
    such classes. `live` entries must be hashable (frozensets); equal ones may be one object.
    Pure: nothing but the arguments is read, and they must not change while it is taken."""
    decided: dict[tuple[object, ...], ElectionResult] = {}
    for (tp, current), assignment, alive, extra in zip(partitions, assignments, live, extras, strict=True):
        key = (_hashable(assignment), _hashable(current.isr), alive, extra)
        first = decided.get(key)
        if first is None:
            first = decided[key] = rule(tp, current, assignment, alive, extra)
            yield first
            continue
        new = first.leader_and_isr
        state = None if new is None else current.new_leader_and_isr(new.leader, new.isr)
        yield ElectionResult(tp, state, first.recipients, first.unclean)


def leaders_for_offline(
    partitions: Sequence[tuple[TopicPartition, LeaderAndIsr]],
    assignments: Sequence[Sequence[int]],
    live: Sequence[Collection[int]],
    unclean_allowed: Mapping[str, bool],
) -> Iterator[ElectionResult]:
    """`leader_for_offline` for many partitions (each with its assignment and live replicas, in
    the same order), alike ones sharing one decision, made as they are taken (`_shared_decisions`)."""
    allowed = [unclean_allowed[tp.topic] for tp, _ in partitions]
    return _shared_decisions(partitions, assignments, live, allowed, leader_for_offline)


def leaders_for_controlled_shutdown(
    partitions: Sequence[tuple[TopicPartition, LeaderAndIsr]],
    assignments: Sequence[Sequence[int]],
    live_or_shutting_down: Sequence[Collection[int]],
    shutting_down: Collection[int],
) -> Iterator[ElectionResult]:
    """`leader_for_controlled_shutdown` for many partitions, alike ones sharing one decision, made
    as they are taken (`_shared_decisions`; a broker leading 33,000 partitions shuts down at 100,000)."""

    def rule(
        tp: TopicPartition, current: LeaderAndIsr, assignment: Sequence[int], live: Collection[int], _: object
    ) -> ElectionResult:
        return leader_for_controlled_shutdown(tp, current, assignment, live, shutting_down)

    return _shared_decisions(partitions, assignments, live_or_shutting_down, [None] * len(partitions), rule)


def leader_for_reassign(
    partition: TopicPartition,
    current: LeaderAndIsr,
    target: Sequence[int],
    live: Collection[int],
) -> ElectionResult:
    leader = reassign_leader(target, current.isr, live)
    new = None if leader is None else current.new_leader_and_isr(leader, current.isr)
    return ElectionResult(partition, new, tuple(target))


def leader_for_preferred(
    partition: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
) -> ElectionResult:
    leader = preferred_leader(assignment, current.isr, live)
    new = None if leader is None else current.new_leader_and_isr(leader, current.isr)
    return ElectionResult(partition, new, tuple(assignment))


def leader_for_controlled_shutdown(
    partition: TopicPartition,
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> ElectionResult:
    recipients = tuple(r for r in assignment if r in live_or_shutting_down)
    leader = controlled_shutdown_leader(assignment, current.isr, live_or_shutting_down, shutting_down)
    if leader is None:
        return ElectionResult(partition, None, recipients)
    new_isr = [r for r in current.isr if r not in shutting_down]
    return ElectionResult(partition, current.new_leader_and_isr(leader, new_isr), recipients)
