"""Consumer lag, for both kinds of group, as pure functions over numbers someone else fetched.

Both kinds store the same thing: the offset of the next record the group will read (the coordinator's
OffsetCommit value; `/consumers/<group>/offsets/<topic>/<partition>` of the seeds' ZooKeeper
consumers). So one function serves both; what differs is only where the inputs come from:

* coordinator groups: `committed` from the group's offsets in the coordinator's memory (the broker
  coordinating the group reports it), `end_offsets` from that broker's high watermarks of the
  partitions it leads, or from ListOffsets(latest) for the others;
* ZooKeeper groups: `committed` from `KafkaZkClient`'s old-consumer reads (the controller reports
  them), `end_offsets` from ListOffsets(latest) / its metadata.

Lag is measured to the high watermark (what ListOffsets latest returns and what
`kafka-consumer-groups --describe` prints), never to the log end offset: a consumer cannot read past
the high watermark, so counting beyond it would report lag nobody can consume.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "GroupSnapshot",
    "PartitionLag",
    "consumer_group_samples",
    "group_lag",
    "group_samples",
    "lag_samples",
    "partition_lag",
    "seconds_behind",
]

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int
    end_offset: int
    lag: int
    lag_seconds: float | None
    """None when unknown (no timestamp of the first unconsumed record was supplied)."""


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What a reporter knows of one group; `state` and `members` are None for ZooKeeper groups whose
    registrations were not read."""

    group: str
    committed: Mapping[TopicPartitionKey, int]
    state: str | None = None
    members: int | None = None


def partition_lag(committed: int, end_offset: int) -> int:
    """Records the group has yet to read. Never negative: after an unclean election the high watermark
    can fall below a committed offset; the consumer then resets, it is not "ahead"."""
    return max(0, end_offset - committed)


def seconds_behind(lag: int, first_unconsumed_timestamp_ms: int | None, now_ms: int) -> float | None:
    """How old the oldest record the group has not consumed is: now minus the timestamp of the record at
    the committed offset. 0 when caught up; None when that timestamp is unknown. A timestamp in the
    future (producer clocks) counts as 0, not as negative lag."""
    if lag == 0:
        return 0.0
    if first_unconsumed_timestamp_ms is None or first_unconsumed_timestamp_ms < 0:
        return None
    return max(0.0, (now_ms - first_unconsumed_timestamp_ms) / 1000)


def group_lag(
    group: str,
    committed: Mapping[TopicPartitionKey, int],
    end_offsets: Mapping[TopicPartitionKey, int],
    first_unconsumed_timestamps_ms: Mapping[TopicPartitionKey, int] | None = None,
    now_ms: int = 0,
) -> list[PartitionLag]:
    """Lag of every partition the group has committed and whose end offset is known, sorted. A
    partition with no end offset (topic deleted, leader unknown) is left out rather than guessed; a
    committed offset of -1 (Kafka's "no offset") is not a commit."""
    timestamps = first_unconsumed_timestamps_ms or {}
    out = []
    for tp in sorted(committed):
        offset = committed[tp]
        end = end_offsets.get(tp)
        if end is None or offset < 0:
            continue
        lag = partition_lag(offset, end)
        behind = seconds_behind(lag, timestamps.get(tp), now_ms)
        out.append(PartitionLag(group, tp[0], tp[1], offset, end, lag, behind))
    return out


def lag_samples(lags: Iterable[PartitionLag]) -> dict[str, list[tuple[tuple[str, str, str], float]]]:
    """Samples for kafka_consumergroup_lag, _lag_seconds and _current_offset (registry callbacks)."""
    out: dict[str, list[tuple[tuple[str, str, str], float]]] = {
        "kafka_consumergroup_lag": [],
        "kafka_consumergroup_lag_seconds": [],
        "kafka_consumergroup_current_offset": [],
    }
    for p in lags:
        key = (p.group, p.topic, str(p.partition))
        out["kafka_consumergroup_lag"].append((key, p.lag))
        out["kafka_consumergroup_current_offset"].append((key, p.committed))
        if p.lag_seconds is not None:
            out["kafka_consumergroup_lag_seconds"].append((key, p.lag_seconds))
    return out


def consumer_group_samples(
    groups: Iterable[GroupSnapshot],
    end_offsets: Mapping[TopicPartitionKey, int],
    first_unconsumed_timestamps_ms: Mapping[tuple[str, str, int], int] | None = None,
    now_ms: int = 0,
) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """Every kafka_consumergroup_* sample of `groups`, in one pass: the `Registry.register_group`
    callback of a lag reporter. `first_unconsumed_timestamps_ms` is keyed (group, topic, partition)."""
    snapshots = list(groups)
    by_group: dict[str, dict[TopicPartitionKey, int]] = {}
    for (group, topic, partition), ts in (first_unconsumed_timestamps_ms or {}).items():
        by_group.setdefault(group, {})[(topic, partition)] = ts
    out: dict[str, list[tuple[tuple[str, ...], float]]] = {}
    for snapshot in snapshots:
        timestamps = by_group.get(snapshot.group)
        lags = group_lag(snapshot.group, snapshot.committed, end_offsets, timestamps, now_ms)
        for name, samples in lag_samples(lags).items():
            out.setdefault(name, []).extend(samples)
    for name, samples in group_samples(snapshots).items():
        out.setdefault(name, []).extend(samples)
    return out


def group_samples(groups: Iterable[GroupSnapshot]) -> dict[str, list[tuple[tuple[str, ...], float]]]:
    """Samples for kafka_consumergroup_members and _state."""
    members: list[tuple[tuple[str, ...], float]] = []
    states: list[tuple[tuple[str, ...], float]] = []
    for g in groups:
        if g.members is not None:
            members.append(((g.group,), g.members))
        if g.state is not None:
            states.append(((g.group, g.state), 1))
    return {"kafka_consumergroup_members": members, "kafka_consumergroup_state": states}
