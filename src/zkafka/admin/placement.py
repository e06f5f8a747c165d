"""Kafka's default replica placement, as pure functions (used by CreateTopics, CreatePartitions and the
reassignment tool's --generate).

Rack-unaware placement over brokers sorted by id, N = #brokers, start index s, shift k:

* partition p's first replica (its preferred leader) is brokers[(p + s) mod N], so leaders go round
  the brokers evenly;
* its j-th further replica is brokers[(first + 1 + ((k + j) mod (N - 1))) mod N], so followers are
  spread too and never repeat the first broker;
* k grows by one each time p reaches a multiple of N, so the next round of partitions pairs brokers
  differently.

s and k are random unless fixed (Kafka fixes k = s when only s is given). Partition ids start at
`start_partition_id` (CreatePartitions continues an existing topic).

Rack-aware placement runs the same walk over a rack-alternated broker list (racks sorted by name,
one broker of each rack in turn), with the shift scaled by the number of racks, and skips a candidate
whose rack already holds a replica while some rack holds none, or whose broker already holds one
while some broker holds none. Every broker must then have a rack.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from zkafka.zk.errors import ZkError

__all__ = [
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "RackInformationError",
    "assign_replicas_to_brokers",
    "assign_replicas_to_brokers_rack_aware",
    "rack_alternated_brokers",
]


class InvalidReplicationFactorError(ZkError, ValueError):
    """Replication factor <= 0 or larger than the number of brokers (Kafka INVALID_REPLICATION_FACTOR)."""


class InvalidPartitionsError(ZkError, ValueError):
    """Number of partitions <= 0 (Kafka INVALID_PARTITIONS)."""


class RackInformationError(ZkError, ValueError):
    """Rack-aware placement asked for while some brokers have no rack."""


def _check(n_brokers: int, n_partitions: int, replication_factor: int) -> None:
    if n_partitions <= 0:
        raise InvalidPartitionsError(f"Number of partitions must be larger than 0, got {n_partitions}.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"Replication factor must be larger than 0, got {replication_factor}."
        )
    if replication_factor > n_brokers:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {n_brokers}."
        )


def _start_and_shift(
    n_brokers: int, start_index: int, next_replica_shift: int, rng: random.Random | None
) -> tuple[int, int]:
    rand = rng or random.Random()
    start = start_index if start_index >= 0 else rand.randrange(n_brokers)
    if next_replica_shift >= 0:
        shift = next_replica_shift
    elif start_index >= 0:
        shift = start_index
    else:
        shift = rand.randrange(n_brokers)
    return start, shift


def _follower_index(first: int, shift: int, j: int, n_brokers: int) -> int:
    return (first + 1 + (shift + j) % (n_brokers - 1)) % n_brokers


def assign_replicas_to_brokers(
    broker_ids: Iterable[int],
    n_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    next_replica_shift: int = -1,
    start_partition_id: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """partition id -> replicas (preferred leader first), rack-unaware. Raises
    InvalidReplicationFactorError / InvalidPartitionsError."""
    brokers = sorted(set(broker_ids))
    _check(len(brokers), n_partitions, replication_factor)
    n = len(brokers)
    start, shift = _start_and_shift(n, start_index, next_replica_shift, rng)
    out: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        out[partition] = [brokers[first]] + [
            brokers[_follower_index(first, shift, j, n)] for j in range(replication_factor - 1)
        ]
        partition += 1
    return out


def rack_alternated_brokers(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered rack by rack in turn (racks sorted by name, brokers by id within a rack)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(broker_racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    depth = 0
    while len(out) < len(broker_racks):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def assign_replicas_to_brokers_rack_aware(
    broker_racks: Mapping[int, str | None],
    n_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    next_replica_shift: int = -1,
    start_partition_id: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """partition id -> replicas with replicas spread over racks. If no broker has a rack this is the
    rack-unaware placement; if only some have one, RackInformationError."""
    racks = {b: r for b, r in broker_racks.items() if r is not None}
    if not racks:
        return assign_replicas_to_brokers(
            broker_racks,
            n_partitions,
            replication_factor,
            start_index=start_index,
            next_replica_shift=next_replica_shift,
            start_partition_id=start_partition_id,
            rng=rng,
        )
    if len(racks) != len(broker_racks):
        missing = sorted(b for b in broker_racks if broker_racks[b] is None)
        raise RackInformationError(f"Not all brokers have rack information (missing: {missing}).")
    _check(len(racks), n_partitions, replication_factor)
    brokers = rack_alternated_brokers(racks)
    n = len(brokers)
    n_racks = len(set(racks.values()))
    start, shift = _start_and_shift(n, start_index, next_replica_shift, rng)
    out: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = brokers[first]
        replicas = [leader]
        used_racks = {racks[leader]}
        used_brokers = {leader}
        k = 0
        while len(replicas) < replication_factor:
            broker = brokers[_follower_index(first, shift * n_racks, k, n)]
            k += 1
            rack = racks[broker]
            rack_ok = rack not in used_racks or len(used_racks) == n_racks
            broker_ok = broker not in used_brokers or len(used_brokers) == n
            if rack_ok and broker_ok:
                replicas.append(broker)
                used_racks.add(rack)
                used_brokers.add(broker)
        out[partition] = replicas
        partition += 1
    return out
