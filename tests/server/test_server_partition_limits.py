"""KIP-578's partition limits as pure arithmetic over a real metadata cache (the broker-level
behaviour is in test_server_request_bounds.py)."""

from __future__ import annotations

import pytest

from zkafka.admin.topics import PartitionLimits
from zkafka.protocol import ErrorCode, KafkaError
from zkafka.server.metadata_cache import MetadataCache, PartitionInfo

BROKERS = [1, 2, 3]


def cache_with(topics: dict[str, list[tuple[int, ...]]]) -> MetadataCache:
    cache = MetadataCache()
    states = [
        PartitionInfo(topic, p, 1, replicas[0], 0, replicas, 0, replicas)
        for topic, parts in topics.items()
        for p, replicas in enumerate(parts)
    ]
    cache.update(1, 1, [], states)
    return cache


def refused(fn: object, *args: object) -> KafkaError:
    with pytest.raises(KafkaError) as info:
        fn(*args)  # type: ignore[operator]
    assert info.value.code == ErrorCode.POLICY_VIOLATION
    return info.value


def test_cluster_count_and_per_broker_counts_only_when_they_matter() -> None:
    cache = cache_with({"a": [(1, 2), (2, 3), (3, 1)], "b": [(1,)]})
    far = PartitionLimits.from_cache(cache, max_partitions=100, max_broker_partitions=50, adding=10)
    assert (far.cluster_partitions, far.broker_replicas) == (4, None)
    assert far.load_of(1) == 4  # the bound used when not counted
    near = PartitionLimits.from_cache(cache, max_partitions=100, max_broker_partitions=50, adding=47)
    assert near.broker_replicas == {1: 3, 2: 2, 3: 2}


def test_cluster_limit_before_any_assignment() -> None:
    limits = PartitionLimits(max_partitions=10, max_broker_partitions=10, cluster_partitions=7)
    limits.check_count(3, 1, BROKERS)
    error = refused(limits.check_count, 4, 1, BROKERS)
    assert "max.partitions=10" in error.message
    refused(limits.check_count, 2**31 - 1, 3, BROKERS)


def test_broker_limit_by_room_then_by_placement() -> None:
    limits = PartitionLimits(
        max_partitions=1000, max_broker_partitions=5, cluster_partitions=4, broker_replicas={1: 4, 2: 1, 3: 0}
    )
    # room left: 1 + 4 + 5 = 10 replicas
    limits.check_count(5, 2, BROKERS)
    error = refused(limits.check_count, 4, 3, BROKERS)
    assert "max.broker.partitions=5" in error.message
    # the room is there but this placement puts two more on broker 1
    refused(limits.check_placement, {0: [1, 2], 1: [1, 3]})
    limits.check_placement({0: [2, 3], 1: [3, 2], 2: [1, 3]})


def test_after_counts_a_plan_for_the_next_topic() -> None:
    limits = PartitionLimits(
        max_partitions=6, max_broker_partitions=4, cluster_partitions=1, broker_replicas={1: 1}
    )
    later = limits.after({0: [1, 2], 1: [2, 3], 2: [3, 1]})
    assert later.cluster_partitions == 4
    assert later.broker_replicas == {1: 3, 2: 2, 3: 2}
    assert limits.cluster_partitions == 1  # unchanged: snapshots are values
    refused(later.check_count, 3, 1, BROKERS)
    refused(later.check_placement, {4: [1], 5: [1], 6: [1]})
