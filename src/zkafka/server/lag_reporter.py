"""Consumer lag built into the broker: `kafka_consumergroup_*` for both kinds of group.

* Groups of the group coordinator: each broker reports the groups it coordinates (committed offsets,
  members and state from the coordinator's memory), so every group is reported exactly once.
* The seeds' ZooKeeper consumer groups (`/consumers/<group>/offsets`): reported by the active
  controller only, so a cluster reports them once too.

Lag is measured to the high watermark, as `consumer-groups --describe` does (`zkafka.metrics.lag`):
this broker's own high watermark for the partitions it leads, ListOffsets(latest) through its own
PLAINTEXT listener for the others. Lag in seconds (the age of the oldest record not consumed yet)
needs that record's timestamp, read from the local log: it is reported for the partitions this
broker leads (the others are left out rather than guessed).

`refresh` runs before each scrape (`MetricsServer`'s refresh hook); the registry callback returns
what the last refresh computed, so a scrape never blocks on another broker for long.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from zkafka.client.admin import AdminClient
from zkafka.client.types import TopicPartition as ClientTopicPartition
from zkafka.coordinator.coordinator import GroupCoordinator
from zkafka.coordinator.group import GroupState
from zkafka.logs import RateLimitedLog
from zkafka.metrics import Registry
from zkafka.metrics.lag import GroupSnapshot, consumer_group_samples
from zkafka.records.batch import iter_headers
from zkafka.records.record import iter_records
from zkafka.server.replica_manager import ReplicaManager
from zkafka.server.zookeeper import ZooKeeper
from zkafka.storage.errors import StorageError
from zkafka.storage.naming import TopicPartition
from zkafka.zk.client import KafkaZkClient

log = logging.getLogger(__name__)
limited = RateLimitedLog(log)

__all__ = ["LAG_METRICS", "LagReporter"]

LAG_METRICS = (
    "kafka_consumergroup_lag",
    "kafka_consumergroup_lag_seconds",
    "kafka_consumergroup_current_offset",
    "kafka_consumergroup_members",
    "kafka_consumergroup_state",
)
TP = tuple[str, int]
Samples = dict[str, list[tuple[tuple[str, ...], float]]]


class ActiveController(Protocol):
    @property
    def is_active(self) -> bool: ...


class LagReporter:
    def __init__(
        self,
        registry: Registry,
        coordinator: GroupCoordinator,
        replicas: ReplicaManager,
        controller: ActiveController,
        zk: ZooKeeper,
        bootstrap: Callable[[], str | None],
    ) -> None:
        self._coordinator = coordinator
        self._replicas = replicas
        self._controller = controller
        self._zk = zk
        self._bootstrap = bootstrap
        self._admin: AdminClient | None = None
        self._samples: Samples = {}
        registry.register_group(LAG_METRICS, lambda: self._samples)

    async def close(self) -> None:
        if self._admin is not None:
            await self._admin.close()
            self._admin = None

    async def refresh(self) -> None:
        snapshots = self._coordinator_groups()
        if self._controller.is_active:
            snapshots += await self._zk.run(_zookeeper_groups)
        wanted = {tp for s in snapshots for tp in s.committed}
        ends = self._local_ends(wanted)
        ends.update(await self._remote_ends(wanted - ends.keys()))
        timestamps = self._first_unconsumed_timestamps(snapshots, ends)
        self._samples = consumer_group_samples(snapshots, ends, timestamps, int(time.time() * 1000))

    # -- groups -----------------------------------------------------------------------------------
    def _coordinator_groups(self) -> list[GroupSnapshot]:
        coordinator = self._coordinator
        if not coordinator.active:
            return []
        out = []
        for group in list(coordinator.groups.values()):
            if group.is_(GroupState.DEAD) or group.partition not in coordinator.owned:
                continue
            committed = {(tp.topic, tp.partition): om.offset for tp, om in group.offsets.items()}
            out.append(GroupSnapshot(group.group_id, committed, group.state.value, len(group.members)))
        return out

    # -- end offsets ------------------------------------------------------------------------------
    def _local_ends(self, wanted: Iterable[TP]) -> dict[TP, int]:
        out = {}
        for topic, partition in wanted:
            p = self._replicas.get_partition(TopicPartition(topic, partition))
            if p is not None and p.is_leader:
                out[(topic, partition)] = p.high_watermark
        return out

    async def _remote_ends(self, wanted: set[TP]) -> dict[TP, int]:
        if not wanted:
            return {}
        if self._admin is None:
            bootstrap = self._bootstrap()
            if bootstrap is None:
                return {}
            self._admin = AdminClient(bootstrap, client_id="zkafka-lag-reporter", request_timeout_ms=2000)
        try:
            found = await self._admin.list_offsets({ClientTopicPartition(t, p): "latest" for t, p in wanted})
        except Exception as e:  # leaders moving, a topic deleted: those partitions wait for the next scrape
            limited.warning(("end offsets",), "consumer lag: other leaders' end offsets unavailable: %s", e)
            return {}
        return {(tp.topic, tp.partition): r.offset for tp, r in found.items() if r is not None}

    def _first_unconsumed_timestamps(
        self, snapshots: Iterable[GroupSnapshot], ends: Mapping[TP, int]
    ) -> dict[tuple[str, str, int], int]:
        """The timestamp of the record at each committed offset below the high watermark, for the
        partitions led here (one batch read and decoded per group and partition, at scrape time)."""
        out = {}
        for snapshot in snapshots:
            for (topic, partition), offset in snapshot.committed.items():
                end = ends.get((topic, partition))
                if end is None or offset < 0 or offset >= end:
                    continue
                p = self._replicas.get_partition(TopicPartition(topic, partition))
                if p is None or not p.is_leader:
                    continue
                ts = _timestamp_at(p.log, offset, end)
                if ts is not None:
                    out[(snapshot.group, topic, partition)] = ts
        return out


def _timestamp_at(log_, offset: int, end: int) -> int | None:  # type: ignore[no-untyped-def]
    """The timestamp of the first record at or after `offset` (None if it cannot be read)."""
    try:
        data = log_.read(offset, 1, max_offset=end, min_one_batch=True).read_bytes()
    except (StorageError, OSError, ValueError):
        return None
    for header in iter_headers(data):
        if header.is_control or header.last_offset < offset:
            continue
        for record in iter_records(data, header):
            if record.offset >= offset:
                return record.timestamp
    return None


def _zookeeper_groups(zk: KafkaZkClient) -> list[GroupSnapshot]:
    """The seeds' ZooKeeper consumer groups: committed offsets and registered members."""
    out = []
    for group in zk.get_consumer_groups():
        committed = {(tp.topic, tp.partition): o for tp, o in zk.get_consumer_offsets(group).items()}
        members = len(zk.get_consumer_ids(group))
        out.append(GroupSnapshot(group, committed, "Stable" if members else "Empty", members))
    return out
