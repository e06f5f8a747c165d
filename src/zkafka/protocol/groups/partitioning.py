"""Which `__consumer_offsets` partition (and so which broker) coordinates a group.

Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions` (reference
group-coordinator §1). Two Java details matter for ids a Python `hash` would get wrong:
`String.hashCode` runs over UTF-16 code units with 32-bit signed wrap-around, and `Utils.abs`
maps Integer.MIN_VALUE to 0 (it is not the producer's `& 0x7fffffff`).
"""

from __future__ import annotations

INT32_MIN = -(1 << 31)


def java_string_hashcode(text: str) -> int:
    """Java's `String.hashCode`: h = 31*h + c over UTF-16 code units, signed 32-bit."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Kafka's `Utils.abs`: |n|, but 0 for Integer.MIN_VALUE (whose |n| does not fit)."""
    return 0 if n == INT32_MIN else abs(n)


def offsets_partition_for(group_id: str, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError(f"the offsets topic needs at least one partition, got {num_partitions}")
    return java_abs(java_string_hashcode(group_id)) % num_partitions
