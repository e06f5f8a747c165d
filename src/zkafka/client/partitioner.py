"""Kafka's default partitioner: murmur2 for keyed records, sticky partitions for keyless ones.

Keyed records must land where the Java client (and kafka-python, aiokafka, librdkafka with
`partitioner=murmur2_random`) would put them, so that consumers of a compacted or key-partitioned
topic see one partition per key whatever client produced it: ``(murmur2(key) & 0x7fffffff) %
number_of_partitions`` over *all* partitions (`reference/group-coordinator.md` §5). The mask is
not ``abs()``: abs(INT32_MIN) would stay negative in Java.

Keyless records have nothing to match, so they follow KIP-480's idea: stick to one partition
until its batch is sealed, then move on, which fills batches instead of spreading single records
over every partition.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence

Available = Sequence[int] | Callable[[], Sequence[int]]
"""Partitions with a leader now, or a function computing them (only called when choosing)."""

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's `Utils.murmur2`: 32-bit MurmurHash2 with Kafka's seed, as a *signed* int32."""
    view = memoryview(data).cast("B")
    length = len(view)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for k in struct.unpack_from(f"<{whole >> 2}I", view):
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail:
        if tail == 3:
            h ^= view[whole + 2] << 16
        if tail >= 2:
            h ^= view[whole + 1] << 8
        h ^= view[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition of a keyed record, exactly as Kafka's default partitioner."""
    if num_partitions <= 0:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Chooses partitions for keyless records: one sticky partition per topic, changed by
    `on_new_batch` when the producer seals that partition's batch."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky: dict[str, int] = {}
        self._rng = rng or random.Random()

    def partition(self, topic: str, num_partitions: int, available: Available = ()) -> int:
        current = self._sticky.get(topic)
        if current is None or current >= num_partitions:
            current = self._choose(num_partitions, available, exclude=None)
            self._sticky[topic] = current
        return current

    def on_new_batch(self, topic: str, num_partitions: int, available: Available = ()) -> None:
        """The sticky partition's batch was sealed: pick another one for the next records."""
        self._sticky[topic] = self._choose(num_partitions, available, exclude=self._sticky.get(topic))

    def _choose(self, num_partitions: int, available: Available, exclude: int | None) -> int:
        # Prefer partitions that have a leader right now, as Kafka does; fall back to all.
        candidates = available() if callable(available) else available
        pool: Sequence[int] = [p for p in candidates if p < num_partitions] or range(num_partitions)
        if exclude is not None and len(pool) > 1:
            pool = [p for p in pool if p != exclude]
        return self._rng.choice(pool)
