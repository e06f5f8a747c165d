"""The leader election rules, table-driven (no ZooKeeper)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.controller.election import (
    controlled_shutdown_leader,
    initial_leader_and_isr,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred,
    leader_for_reassign,
    leaders_for_controlled_shutdown,
    leaders_for_offline,
    offline_leader,
    preferred_leader,
    reassign_leader,
)
from zkafka.controller.replica_state_machine import isr_without
from zkafka.zk.model import LeaderAndIsr, TopicPartition

TP = TopicPartition("t", 0)


@pytest.mark.parametrize(
    ("assignment", "live", "leader", "isr"),
    [
        ([1, 2, 3], {1, 2, 3}, 1, (1, 2, 3)),
        ([1, 2, 3], {2, 3}, 2, (2, 3)),
        ([3, 1, 2], {1, 2}, 1, (1, 2)),  # assignment order, not id order
        ([1, 2, 3], {3}, 3, (3,)),
        ([1, 2, 3], set(), None, None),
    ],
)
def test_new_partition_first_live_replica_leads_all_live_in_isr(
    assignment: list[int], live: set[int], leader: int | None, isr: tuple[int, ...] | None
) -> None:
    result = initial_leader_and_isr(assignment, live)
    if leader is None:
        assert result is None
    else:
        assert result == LeaderAndIsr(leader, 0, isr)


@pytest.mark.parametrize(
    ("assignment", "isr", "live", "unclean", "expected"),
    [
        ([1, 2, 3], [1, 2, 3], {2, 3}, False, (2, False)),
        ([1, 2, 3], [3, 2], {2, 3}, False, (2, False)),  # assignment order wins over ISR order
        ([1, 2, 3], [1], {2, 3}, False, (None, False)),  # no live ISR member, clean
        ([1, 2, 3], [1], {2, 3}, True, (2, True)),  # unclean: first live replica
        ([1, 2, 3], [1, 3], {2, 3}, True, (3, False)),  # clean choice exists: not unclean
        ([1, 2, 3], [1], set(), True, (None, False)),
    ],
)
def test_offline_leader(
    assignment: list[int], isr: list[int], live: set[int], unclean: bool, expected: tuple[int | None, bool]
) -> None:
    assert offline_leader(assignment, isr, live, unclean) == expected


def test_offline_election_result_isr_and_epoch() -> None:
    current = LeaderAndIsr(1, 5, (1, 2, 3), zk_version=7)
    clean = leader_for_offline(TP, current, [1, 2, 3], {2, 3}, unclean_allowed=False)
    assert clean.leader_and_isr == LeaderAndIsr(2, 6, (2, 3), zk_version=7)
    assert clean.recipients == (2, 3) and not clean.unclean
    unclean = leader_for_offline(
        TP, LeaderAndIsr(1, 5, (1,), zk_version=7), [1, 2, 3], {3}, unclean_allowed=True
    )
    assert unclean.leader_and_isr == LeaderAndIsr(3, 6, (3,), zk_version=7) and unclean.unclean
    none = leader_for_offline(TP, LeaderAndIsr(1, 5, (1,)), [1, 2, 3], {2, 3}, unclean_allowed=False)
    assert none.leader_and_isr is None and none.recipients == (2, 3)


@pytest.mark.parametrize(
    ("target", "isr", "live", "expected"),
    [
        ([4, 5, 6], [1, 2, 4, 5, 6], {1, 2, 4, 5, 6}, 4),
        ([4, 5, 6], [1, 5, 6], {1, 4, 5, 6}, 5),
        ([4, 5, 6], [1, 4, 5, 6], {1, 5, 6}, 5),
        ([4, 5], [1, 2], {1, 2, 4, 5}, None),
    ],
)
def test_reassign_leader(target: list[int], isr: list[int], live: set[int], expected: int | None) -> None:
    assert reassign_leader(target, isr, live) == expected


def test_reassign_result_keeps_isr_and_targets_recipients() -> None:
    result = leader_for_reassign(TP, LeaderAndIsr(1, 3, (1, 4, 5)), [4, 5], {1, 4, 5})
    assert result.leader_and_isr == LeaderAndIsr(4, 4, (1, 4, 5))
    assert result.recipients == (4, 5)


@pytest.mark.parametrize(
    ("assignment", "isr", "live", "expected"),
    [
        ([1, 2, 3], [1, 2, 3], {1, 2, 3}, 1),
        ([1, 2, 3], [2, 3], {1, 2, 3}, None),  # preferred not in sync
        ([1, 2, 3], [1, 2, 3], {2, 3}, None),  # preferred dead
        ([], [1], {1}, None),
    ],
)
def test_preferred_leader(
    assignment: list[int], isr: list[int], live: set[int], expected: int | None
) -> None:
    assert preferred_leader(assignment, isr, live) == expected


def test_preferred_result_keeps_isr() -> None:
    result = leader_for_preferred(TP, LeaderAndIsr(2, 1, (2, 1)), [1, 2], {1, 2})
    assert result.leader_and_isr == LeaderAndIsr(1, 2, (2, 1))
    assert result.recipients == (1, 2)


@pytest.mark.parametrize(
    ("assignment", "isr", "live", "shutting", "expected"),
    [
        ([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}, 2),
        ([1, 2, 3], [1, 3], {1, 2, 3}, {1}, 3),
        ([1, 2, 3], [1], {1, 2, 3}, {1}, None),
        ([1, 2, 3], [1, 2, 3], {1, 3}, {1}, 3),  # 2 is not live
    ],
)
def test_controlled_shutdown_leader(
    assignment: list[int], isr: list[int], live: set[int], shutting: set[int], expected: int | None
) -> None:
    assert controlled_shutdown_leader(assignment, isr, live, shutting) == expected


def test_controlled_shutdown_result_drops_shutting_down_from_isr() -> None:
    result = leader_for_controlled_shutdown(TP, LeaderAndIsr(1, 0, (1, 2, 3)), [1, 2, 3], {1, 2, 3}, {1})
    assert result.leader_and_isr == LeaderAndIsr(2, 1, (2, 3))
    assert result.recipients == (1, 2, 3)


@pytest.mark.parametrize(
    ("before", "replica", "after"),
    [
        (LeaderAndIsr(1, 3, (1, 2, 3)), 2, LeaderAndIsr(1, 4, (1, 3))),
        (LeaderAndIsr(1, 3, (1, 2, 3)), 1, LeaderAndIsr(-1, 4, (2, 3))),
        (LeaderAndIsr(1, 3, (1,)), 1, LeaderAndIsr(-1, 4, (1,))),  # never an empty ISR
    ],
)
def test_replica_offline_isr_never_empty(before: LeaderAndIsr, replica: int, after: LeaderAndIsr) -> None:
    assert isr_without(before, replica) == after


brokers = st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True)


@settings(max_examples=150, deadline=None)
@given(
    assignment=brokers,
    isr_seed=st.sets(st.integers(0, 9)),
    live=st.sets(st.integers(0, 9)),
    unclean=st.booleans(),
)
def test_offline_election_properties(
    assignment: list[int], isr_seed: set[int], live: set[int], unclean: bool
) -> None:
    isr = [b for b in assignment if b in isr_seed] or assignment[:1]
    current = LeaderAndIsr(assignment[0], 4, tuple(isr))
    result = leader_for_offline(TP, current, assignment, live, unclean_allowed=unclean)
    new = result.leader_and_isr
    if new is None:
        assert not (set(isr) & live and set(assignment) & live)
        assert not (unclean and set(assignment) & live)
        return
    assert new.leader in live and new.leader in assignment
    assert new.leader_epoch == 5
    assert new.isr and set(new.isr) <= live and new.leader in new.isr
    if not result.unclean:
        assert new.leader in isr


_broker = st.integers(min_value=1, max_value=4)


@st.composite
def _offline_cases(draw: st.DrawFn) -> tuple[list[int], tuple[int, ...], frozenset[int], bool]:
    assignment = draw(st.lists(_broker, min_size=1, max_size=4, unique=True))
    isr = tuple(draw(st.lists(st.sampled_from(assignment), max_size=len(assignment), unique=True)))
    return assignment, isr, draw(st.frozensets(_broker)), draw(st.booleans())


@settings(max_examples=200, deadline=None)
@given(cases=st.lists(_offline_cases(), min_size=1, max_size=12), shared=st.booleans())
def test_batched_offline_election_decides_as_one_partition_at_a_time(
    cases: list[tuple[list[int], tuple[int, ...], frozenset[int], bool]], shared: bool
) -> None:
    """`leaders_for_offline` shares a decision between partitions alike in assignment, ISR, live
    replicas and unclean rule: the per-partition rule is its oracle, partition by partition,
    whether alike partitions come as lists or tuples, repeated (shared) or each its own."""
    if shared:  # the same few cases many times over, as after a broker's death
        cases = cases * 3
    partitions = [
        (TopicPartition(f"t{i % 5}", i), LeaderAndIsr(assignment[0], 7 + i, isr, zk_version=i))
        for i, (assignment, isr, _, _) in enumerate(cases)
    ]
    assignments = [a if i % 2 else tuple(a) for i, (a, _, _, _) in enumerate(cases)]
    live = [c[2] for c in cases]
    unclean = {f"t{i % 5}": cases[i][3] for i in range(len(cases))}  # last case of a topic wins
    expected = [
        leader_for_offline(tp, lai, assignment, alive, unclean[tp.topic])
        for (tp, lai), assignment, alive in zip(partitions, assignments, live, strict=True)
    ]
    assert list(leaders_for_offline(partitions, assignments, live, unclean)) == expected


@settings(max_examples=200, deadline=None)
@given(
    cases=st.lists(_offline_cases(), min_size=1, max_size=12),
    shutting_down=st.frozensets(_broker, max_size=2),
    shared=st.booleans(),
)
def test_batched_controlled_shutdown_decides_as_one_partition_at_a_time(
    cases: list[tuple[list[int], tuple[int, ...], frozenset[int], bool]],
    shutting_down: frozenset[int],
    shared: bool,
) -> None:
    """`leaders_for_controlled_shutdown` against `leader_for_controlled_shutdown`, partition by
    partition (the live sets include the brokers shutting down, as the controller passes them)."""
    if shared:
        cases = cases * 3
    partitions = [
        (TopicPartition("t", i), LeaderAndIsr(assignment[0], 3 + i, isr, zk_version=i))
        for i, (assignment, isr, _, _) in enumerate(cases)
    ]
    assignments = [a if i % 2 else tuple(a) for i, (a, _, _, _) in enumerate(cases)]
    live = [c[2] | shutting_down for c in cases]
    expected = [
        leader_for_controlled_shutdown(tp, lai, assignment, alive, shutting_down)
        for (tp, lai), assignment, alive in zip(partitions, assignments, live, strict=True)
    ]
    assert list(leaders_for_controlled_shutdown(partitions, assignments, live, shutting_down)) == expected
