"""Offsets as Spark sees them, and the planning of offset ranges into Spark tasks.

A source offset is Spark's Kafka shape ``{"topic": {"<partition>": nextOffset}}``: the offset one
past the last record read, as a consumer's position. Spark compares offsets by their JSON text,
so every offset this connector hands out is canonical (pitfall P4): topics sorted, partitions
sorted numerically, partition keys as strings, offsets as ints. Offsets coming back from Spark
have string keys, so every method normalises them first.

No pyspark here: the planning is plain arithmetic, unit-tested without a session.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from zkafka.client.types import TopicPartition

PartitionOffsets = dict[TopicPartition, int]


def canonical(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The one JSON-able form of `offsets` (insertion order is json.dumps' output order)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_spark(value: Mapping[str, Mapping[str | int, int]] | None) -> PartitionOffsets:
    """Offsets as Spark passes them back (parsed JSON: string partition keys)."""
    out: PartitionOffsets = {}
    for topic, parts in (value or {}).items():
        for partition, offset in parts.items():
            out[TopicPartition(str(topic), int(partition))] = int(offset)
    return out


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Records [start, until) of one partition: one Spark task. The size is an estimate: compaction
    and transaction markers leave gaps, so readers stop by offset, never by count (P13)."""

    topic: str
    partition: int
    start: int
    until: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        return self.until - self.start


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: PartitionOffsets) -> PartitionOffsets:
    """maxOffsetsPerTrigger: `limit` offsets spread over the partitions in proportion to their
    backlog, as Spark does; a partition whose share is below one gets one, so small partitions are
    not starved. `start` must cover every partition of `latest` that has a backlog."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        share = limit * (size / total)
        out[tp] = min(end, start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


def pending(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]) -> int:
    """Offsets waiting between `start` and `latest` (partitions unknown to `start` count from 0)."""
    return sum(max(end - start.get(tp, 0), 0) for tp, end in latest.items())


def _part_count(size: int, total: int, wanted: int) -> int:
    # Scala's math.round: half up (Python's round() would round half to even)
    return max(math.floor(size / total * wanted + 0.5), 1)


def split_ranges(
    ranges: list[OffsetRange], min_partitions: int | None = None, max_records: int | None = None
) -> list[OffsetRange]:
    """Drop empty ranges; with `min_partitions` above the number of ranges, cut the big ones into
    about that many pieces in proportion to their size (Spark's KafkaOffsetRangeCalculator);
    with `max_records`, cut every piece larger than that."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is not None and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        unsplit = {r for r in ranges if _part_count(r.size, total, min_partitions) == 1}
        split_total = total - sum(r.size for r in unsplit)
        split_wanted = max(min_partitions - len(unsplit), 1)
        pieces: list[OffsetRange] = []
        for r in ranges:
            parts = 1 if r in unsplit else _part_count(r.size, split_total, split_wanted)
            pieces.extend(_cut(r, parts))
        ranges = pieces
    if max_records is not None:
        ranges = [piece for r in ranges for piece in _cut(r, math.ceil(r.size / max_records))]
    return [r for r in ranges if r.size > 0]


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """`r` in `parts` consecutive pieces of nearly equal size (the last ones take the remainder)."""
    if parts <= 1:
        return [r]
    out = []
    remaining, start = r.size, r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        out.append(OffsetRange(r.topic, r.partition, start, start + this))
        start += this
    return out
