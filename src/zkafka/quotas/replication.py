"""Replication throttles (KIP-73): Kafka's ReplicationQuotaManager without I/O.

One per direction and broker. The bound is the broker's `leader.replication.throttled.rate` or
`follower.replication.throttled.rate` (dynamic broker configs, bytes/s; Long.MaxValue = none); which
partitions it applies to comes from each topic's `leader.replication.throttled.replicas` /
`follower.replication.throttled.replicas`: `*` (every partition of the topic) or a list of
`partition:brokerId` entries, of which only those naming this broker count (a reassignment names the
current replicas for the leader side and the replicas being added for the follower side).

The leader leaves the data of throttled partitions out of a replica fetch while the measured rate is
over the bound, and the follower leaves them out of its fetch requests; both record the bytes of
throttled partitions they did move. Replicas in the ISR are never throttled (Kafka's rule): a
throttle slows catching up, never a follower that keeps up.
"""

from __future__ import annotations

from zkafka.quotas.rate import SampledRate

__all__ = ["UNLIMITED", "ReplicationQuota", "parse_throttled_replicas"]

UNLIMITED = 2**63 - 1
"""Kafka's default rate: Long.MaxValue, no throttle."""

ALL = -1
"""A topic's `*`: every partition."""


def parse_throttled_replicas(text: str, broker_id: int) -> frozenset[int]:
    """The partitions `text` throttles on `broker_id` ({ALL} for `*`); ValueError if it does not
    parse (Kafka's ThrottledReplicaListValidator: `*` or comma-separated `partition:broker`)."""
    text = text.strip()
    if not text:
        return frozenset()
    if text == "*":
        return frozenset({ALL})
    out = set()
    for entry in text.split(","):
        partition, sep, broker = entry.strip().partition(":")
        if not sep or not partition.strip().isdigit() or not broker.strip().isdigit():
            raise ValueError(f"expected * or partition:brokerId[,...], got {entry.strip()!r}")
        if int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


class ReplicationQuota:
    def __init__(
        self, broker_id: int, bound: int = UNLIMITED, *, samples: int = 11, window_s: int = 1
    ) -> None:
        self.broker_id = broker_id
        self.bound = bound
        self._rate = SampledRate(samples, window_s * 1000)
        self._throttled: dict[str, frozenset[int]] = {}

    def update_bound(self, bound: int) -> None:
        self.bound = bound

    def update_topic(self, topic: str, partitions: frozenset[int]) -> None:
        """The partitions of `topic` throttled on this broker (from `parse_throttled_replicas`)."""
        if partitions:
            self._throttled[topic] = partitions
        else:
            self._throttled.pop(topic, None)

    @property
    def active(self) -> bool:
        """A bound and at least one throttled partition: the only case that costs anything."""
        return self.bound < UNLIMITED and bool(self._throttled)

    def is_throttled(self, topic: str, partition: int) -> bool:
        found = self._throttled.get(topic)
        return found is not None and (ALL in found or partition in found)

    def is_exceeded(self, now_ms: int) -> bool:
        return self.bound < UNLIMITED and self._rate.measure(now_ms) > self.bound

    def record(self, nbytes: int, now_ms: int) -> None:
        self._rate.record(nbytes, now_ms)

    def rate(self, now_ms: int) -> float:
        return self._rate.measure(now_ms)
