"""Kafka's default partitioner: murmur2 test vectors, kafka-python as an independent oracle,
sticky partitioning for keyless records."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as oracle_murmur2

from zkafka.client.partitioner import StickyPartitioner, murmur2, partition_for_key

# Kafka's UtilsTest vectors (signed Java ints)
VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
    b"": 275646681,
}


@pytest.mark.parametrize(("data", "expected"), VECTORS.items())
def test_murmur2_matches_kafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    # kafka-python returns the same 32 bits as an unsigned number
    assert murmur2(data) & 0xFFFFFFFF == oracle_murmur2(data)


def test_murmur2_accepts_buffers() -> None:
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"xfoobar")[1:]) == -790332482


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(min_value=1, max_value=1000))
def test_partition_for_key_matches_kafka_python(key: bytes, partitions: int) -> None:
    expected = (oracle_murmur2(key) & 0x7FFFFFFF) % partitions
    assert partition_for_key(key, partitions) == expected


def test_partition_for_key_known_placements() -> None:
    # reference/group-coordinator.md §5: "foobar" lands on partition 6 of 12 in Java
    assert partition_for_key(b"foobar", 12) == 6
    # masking, not abs(): a hash with the sign bit set still maps into range
    assert all(0 <= partition_for_key(bytes([i]), 7) < 7 for i in range(256))


def test_partition_for_key_rejects_no_partitions() -> None:
    with pytest.raises(ValueError, match="at least one partition"):
        partition_for_key(b"k", 0)


def test_sticky_partitioner_sticks_until_a_new_batch() -> None:
    sticky = StickyPartitioner(random.Random(7))
    first = sticky.partition("t", 6)
    assert {sticky.partition("t", 6) for _ in range(50)} == {first}
    sticky.on_new_batch("t", 6)
    second = sticky.partition("t", 6)
    assert second != first
    assert {sticky.partition("t", 6) for _ in range(50)} == {second}


def test_sticky_partitioner_prefers_available_partitions() -> None:
    sticky = StickyPartitioner(random.Random(1))
    seen = set()
    for _ in range(40):
        sticky.on_new_batch("t", 10, [3, 7])
        seen.add(sticky.partition("t", 10))
    assert seen == {3, 7}
    # a callable is only evaluated when a partition is chosen
    calls = []
    sticky2 = StickyPartitioner(random.Random(1))
    sticky2.partition("u", 4, lambda: calls.append(1) or [2])
    sticky2.partition("u", 4, lambda: calls.append(1) or [2])
    assert calls == [1]


def test_sticky_partitioner_single_partition_and_shrunk_topic() -> None:
    sticky = StickyPartitioner(random.Random(3))
    sticky.on_new_batch("t", 1)
    assert sticky.partition("t", 1) == 0
    sticky._sticky["t"] = 9  # the topic had more partitions in older metadata
    assert 0 <= sticky.partition("t", 4) < 4
