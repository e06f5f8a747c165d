"""Replica placement: Kafka's layout for a fixed start index, and distribution properties."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zkafka.admin.placement import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    RackInformationError,
    assign_replicas_to_brokers,
    assign_replicas_to_brokers_rack_aware,
    rack_alternated_brokers,
)


def test_kafka_layout_for_fixed_start_index() -> None:
    # 5 brokers, 10 partitions, RF 3, start index 0: the layout Kafka's own placement produces.
    assert assign_replicas_to_brokers([4, 2, 0, 1, 3], 10, 3, start_index=0) == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_brokers_are_sorted_by_id_and_ids_need_not_be_dense() -> None:
    assert assign_replicas_to_brokers([30, 10, 20], 3, 2, start_index=0, next_replica_shift=0) == {
        0: [10, 20],
        1: [20, 30],
        2: [30, 10],
    }


def test_start_partition_id_continues_the_pattern() -> None:
    full = assign_replicas_to_brokers(range(4), 8, 2, start_index=1, next_replica_shift=2)
    tail = assign_replicas_to_brokers(
        range(4), 4, 2, start_index=1, next_replica_shift=2, start_partition_id=4
    )
    # Partition 4 is a multiple of the broker count: the shift is bumped there in both runs.
    assert tail == {p: full[p] for p in range(4, 8)}


@pytest.mark.parametrize("rf", [0, -1, 4])
def test_bad_replication_factor(rf: int) -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers([1, 2, 3], 3, rf)


def test_bad_partition_count_and_no_brokers() -> None:
    with pytest.raises(InvalidPartitionsError):
        assign_replicas_to_brokers([1, 2, 3], 0, 1)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas_to_brokers([], 1, 1)


@settings(max_examples=150, deadline=None)
@given(
    brokers=st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True),
    n_partitions=st.integers(1, 60),
    data=st.data(),
    seed=st.integers(0, 1000),
)
def test_placement_properties(brokers: list[int], n_partitions: int, data: st.DataObject, seed: int) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    out = assign_replicas_to_brokers(brokers, n_partitions, rf, rng=random.Random(seed))
    assert sorted(out) == list(range(n_partitions))
    for replicas in out.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf, "a broker twice in one partition"
        assert set(replicas) <= set(brokers)
    leaders = Counter(r[0] for r in out.values())
    # Leaders go round the brokers: counts differ by at most one.
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
    # Every broker holds roughly the same number of replicas as well.
    if n_partitions % len(brokers) == 0:
        replicas = Counter(b for r in out.values() for b in r)
        assert len({replicas.get(b, 0) for b in brokers}) == 1


def test_rack_alternated_list() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]


@settings(max_examples=100, deadline=None)
@given(
    racks=st.dictionaries(st.integers(0, 30), st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=10),
    n_partitions=st.integers(1, 40),
    data=st.data(),
    seed=st.integers(0, 1000),
)
def test_rack_aware_spreads_over_racks(
    racks: dict[int, str], n_partitions: int, data: st.DataObject, seed: int
) -> None:
    rf = data.draw(st.integers(1, len(racks)))
    out = assign_replicas_to_brokers_rack_aware(racks, n_partitions, rf, rng=random.Random(seed))
    n_racks = len(set(racks.values()))
    for replicas in out.values():
        assert len(replicas) == len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, n_racks)


def test_rack_aware_needs_every_rack_or_none() -> None:
    with pytest.raises(RackInformationError):
        assign_replicas_to_brokers_rack_aware({1: "a", 2: None}, 1, 1)
    assert assign_replicas_to_brokers_rack_aware({1: None, 2: None}, 2, 2, start_index=0) == {
        0: [1, 2],
        1: [2, 1],
    }
