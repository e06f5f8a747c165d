"""Consumer lag built into the broker: `kafka_consumergroup_*` for both kinds of group.

* Groups of the group coordinator: each broker reports the groups it coordinates (committed offsets,
  members and state from the coordinator's memory), so every group is reported exactly once.
* The seeds' ZooKeeper consumer groups (`/consumers/<group>/offsets`): reported by the active
  controller only, so a cluster reports them once too.

Lag is measured to the high watermark, as `consumer-groups --describe` does (`zkafka.metrics.lag`):
this broker's own high watermark for the partitions it leads, ListOffsets(latest) through its own
PLAINTEXT listener for the others. Lag in seconds (the age of the oldest record not consumed yet)
needs that record's timestamp: read from the local log for the partitions this broker leads, and
fetched from the leader (one consumer Fetch per leader, from the committed offset) for the others;
a partition whose first unconsumed batch cannot be read is left out rather than guessed.

`refresh` runs before each scrape (`MetricsServer`'s refresh hook); the registry callback returns
what the last refresh computed, so a scrape never blocks on another broker for long.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from zkafka.client.admin import AdminClient
from zkafka.client.cluster import Cluster
from zkafka.client.types import TopicPartition as ClientTopicPartition
from zkafka.coordinator.coordinator import GroupCoordinator
from zkafka.coordinator.group import GroupState
from zkafka.logs import RateLimitedLog
from zkafka.metrics import Registry
from zkafka.metrics.lag import GroupSnapshot, consumer_group_samples
from zkafka.protocol.messages import FetchRequest
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
REMOTE_FETCH_MAX_VERSION = 11
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
        timestamps.update(await self._remote_timestamps(snapshots, ends, timestamps))
        self._samples = consumer_group_samples(snapshots, ends, timestamps, int(time.time() * 1000))

    # -- groups -----------------------------------------------------------------------------------
    def _coordinator_groups(self) -> list[GroupSnapshot]:
        coordinator = self._coordinator
        if not coordinator.active:
            return []
        out = []
        owned = coordinator.runtime.owned
        for group in list(coordinator.groups.values()):
            if group.is_(GroupState.DEAD) or group.partition not in owned:
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

    async def _remote_timestamps(
        self,
        snapshots: Iterable[GroupSnapshot],
        ends: Mapping[TP, int],
        known: Mapping[tuple[str, str, int], int],
    ) -> dict[tuple[str, str, int], int]:
        """The same timestamps for lagging partitions led elsewhere: one Fetch (consumer-style, from
        the committed offset, `REMOTE_FETCH_PARTITION_BYTES` a partition) per leader and round; a
        partition whose first batch does not fit is left out."""
        wanted: dict[tuple[TP, int], list[str]] = {}  # (partition, offset) -> groups
        for snapshot in snapshots:
            for tp, offset in snapshot.committed.items():
                end = ends.get(tp)
                if end is not None and 0 <= offset < end and (snapshot.group, *tp) not in known:
                    wanted.setdefault((tp, offset), []).append(snapshot.group)
        if not wanted or self._admin is None:
            return {}
        out: dict[tuple[str, str, int], int] = {}
        cluster = self._admin.cluster
        pending = sorted(wanted)
        while pending:
            # one offset per partition in a request: groups at other offsets of it wait for a later round
            round_: dict[int, dict[TP, int]] = {}
            later = []
            for tp, offset in pending:
                leader = cluster.metadata.leader(ClientTopicPartition(*tp))
                if leader < 0:
                    continue
                by_tp = round_.setdefault(leader, {})
                if tp in by_tp:
                    later.append((tp, offset))
                else:
                    by_tp[tp] = offset
            for leader, offsets in round_.items():
                try:
                    found = await _fetch_timestamps(cluster, leader, offsets)
                except Exception as e:
                    limited.warning(
                        ("remote timestamps",), "consumer lag seconds: fetch from %d failed: %s", leader, e
                    )
                    continue
                for tp, ts in found.items():
                    for group in wanted[(tp, offsets[tp])]:
                        out[(group, *tp)] = ts
            pending = later
        return out

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


REMOTE_FETCH_PARTITION_BYTES = 256 * 1024
REMOTE_FETCH_MAX_BYTES = 8 * 1024 * 1024


async def _fetch_timestamps(cluster: Cluster, leader: int, offsets: Mapping[TP, int]) -> dict[TP, int]:
    by_topic: dict[str, list[FetchRequest.FetchPartition]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            FetchRequest.FetchPartition(
                partition=partition,
                current_leader_epoch=-1,
                fetch_offset=offset,
                last_fetched_epoch=-1,
                log_start_offset=-1,
                partition_max_bytes=REMOTE_FETCH_PARTITION_BYTES,
            )
        )
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=REMOTE_FETCH_MAX_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
    )
    response = await cluster.send(leader, request, max_version=REMOTE_FETCH_MAX_VERSION)
    out = {}
    for t in response.responses:
        for p in t.partitions:
            tp = (t.topic, p.partition_index)
            if p.error_code or tp not in offsets or not p.records:
                continue
            ts = _timestamp_in(bytes(p.records), offsets[tp])
            if ts is not None:
                out[tp] = ts
    return out


def _timestamp_at(log_, offset: int, end: int) -> int | None:  # type: ignore[no-untyped-def]
    """The timestamp of the first record at or after `offset` in a local log (None if unreadable)."""
    try:
        data = log_.read(offset, 1, max_offset=end, min_one_batch=True).read_bytes()
    except (StorageError, OSError, ValueError):
        return None
    return _timestamp_in(data, offset)


def _timestamp_in(data: bytes, offset: int) -> int | None:
    """The timestamp of the first record at or after `offset` in whole v2 batches (a partial last
    batch is ignored; None when no record is found or the bytes do not decode)."""
    try:
        for header in iter_headers(data):
            if header.is_control or header.last_offset < offset:
                continue
            for record in iter_records(data, header):
                if record.offset >= offset:
                    return record.timestamp
    except (ValueError, IndexError):
        return None
    return None


def _zookeeper_groups(zk: KafkaZkClient) -> list[GroupSnapshot]:
    """The seeds' ZooKeeper consumer groups: committed offsets and registered members."""
    out = []
    for group in zk.get_consumer_groups():
        committed = {(tp.topic, tp.partition): o for tp, o in zk.get_consumer_offsets(group).items()}
        members = len(zk.get_consumer_ids(group))
        out.append(GroupSnapshot(group, committed, "Stable" if members else "Empty", members))
    return out
