"""The broker-side group coordinator: membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup:
`zkafka.coordinator.membership`), offsets (OffsetCommit, OffsetFetch), and the admin views
(ListGroups, DescribeGroups, DeleteGroups), with Kafka's classic-protocol semantics (reference
group-coordinator §2).

Everything runs on the broker's event loop: requests that must wait (JoinGroup until the join
phase ends, SyncGroup until the leader's assignment is stored) park a future on the member;
timers are `loop.call_later` handles (session expiry, the join phase, the initial rebalance
delay, the sync deadline, pending member ids, offset expiry). Nothing polls.

Groups live in the `__consumer_offsets` partition `offsets_partition_for(group)`; this broker
serves a group only while it leads that partition and has finished loading it. Loading, ownership
and unloading are the shared `runtime.CoordinatorRuntime`'s (driven by LeaderAndIsr); this module
is its `CoordinatorShards`: a partition's replay becomes groups (`install`), and an unloaded
partition's groups go Dead (`unload`), which is how a write that completes after the unload is
kept from applying -- it lands on a Dead group.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zkafka.coordinator.config import GroupConfig
from zkafka.coordinator.expiry import expired_offsets, tombstones
from zkafka.coordinator.group import CommitRequest, Group, GroupState, OffsetAndMetadata
from zkafka.coordinator.membership import GroupMembership, JoinResult, SyncResult
from zkafka.coordinator.runtime import CoordinatorRuntime, PartitionLoad
from zkafka.coordinator.store import (
    KeyValue,
    LoadedPartition,
    OffsetsTopicStore,
    group_append_error,
    offset_append_error,
    replay_batch,
)
from zkafka.coordinator.txn_offsets import TransactionalOffsets
from zkafka.protocol import ErrorCode
from zkafka.protocol.groups.formats import (
    GroupKey,
    OffsetKey,
    OffsetValue,
    encode_group_key,
    encode_offset_key,
    encode_offset_value,
)
from zkafka.protocol.groups.partitioning import offsets_partition_for
from zkafka.records.varint import INT64_MAX
from zkafka.storage.naming import TopicPartition

log = logging.getLogger(__name__)

E = ErrorCode
__all__ = ["CommitRequest", "GroupConfig", "GroupCoordinator", "GroupSummary", "JoinResult", "SyncResult"]


# -- results handed to the API layer ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSummary:
    error: ErrorCode
    group_id: str
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberSummary, ...] = ()


# -- the coordinator -------------------------------------------------------------------------------------


class GroupCoordinator(GroupMembership, TransactionalOffsets):
    def __init__(
        self,
        broker_id: int,
        config: GroupConfig,
        store: OffsetsTopicStore,
        *,
        num_partitions: Callable[[], int] | None = None,
        topic_exists: Callable[[TopicPartition], bool] = lambda tp: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.broker_id = broker_id
        self.config = config
        self.store = store
        self._topic_exists = topic_exists
        self._clock = clock
        self.groups: dict[str, Group] = {}
        self.runtime = CoordinatorRuntime(
            store,
            self,
            new_load=LoadedPartition,
            replay_batch=replay_batch,
            partition_of=offsets_partition_for,
            num_partitions=num_partitions or (lambda: config.num_partitions),
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self._expiry_timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.active = False

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.active = True
        self._schedule_expiry()

    async def stop(self) -> None:
        self.active = False
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
        await self.runtime.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    # -- the runtime's CoordinatorShards: a partition's groups in and out ------------------------------
    def install(self, load: PartitionLoad, loaded: LoadedPartition) -> None:
        """The replayed partition's groups become live (requests for them got
        COORDINATOR_LOAD_IN_PROGRESS until now)."""
        partition = load.partition
        self._install(partition, loaded)
        groups = sum(1 for g in self.groups.values() if g.partition == partition)
        log.log(
            logging.INFO if loaded.records else logging.DEBUG,
            "loaded %s: %d groups, %d records in %.0f ms",
            loaded.name,
            groups,
            loaded.records,
            (time.monotonic() - load.started) * 1000,
        )

    def unload(self, partition: int) -> None:
        """Leadership moved away: drop the partition's groups; parked requests get NOT_COORDINATOR."""
        for group in [g for g in self.groups.values() if g.partition == partition]:
            self._unload_group(group)
        log.info("unloaded %s-%d", self.store.topic, partition)

    def _install(self, partition: int, loaded: LoadedPartition) -> None:
        names = {g for g, v in loaded.groups.items() if v is not None} | {
            g for g, offs in loaded.offsets.items() if offs
        }
        names |= {g for txn in loaded.pending_txn.values() for g in txn}
        for name in names:
            value = loaded.groups.get(name)
            # offsets without a group record: an Empty group at generation 0
            group = Group(name, partition) if value is None else Group.from_value(name, partition, value)
            for tp, (ov, record_offset) in loaded.offsets.get(name, {}).items():
                group.offsets[tp] = OffsetAndMetadata(
                    ov.offset,
                    ov.leader_epoch,
                    ov.metadata,
                    ov.commit_timestamp,
                    ov.expire_timestamp,
                    record_offset,
                )
            for pid, txn in loaded.pending_txn.items():
                if name in txn:
                    group.pending_txn_offsets[pid] = {
                        tp: OffsetAndMetadata(
                            ov.offset, ov.leader_epoch, ov.metadata, ov.commit_timestamp, None, off
                        )
                        for tp, (ov, off) in txn[name].items()
                    }
            old = self.groups.get(name)
            if old is not None:
                self._unload_group(old)
            self.groups[name] = group
            for member in group.members.values():
                self._schedule_heartbeat(group, member)

    def _unload_group(self, group: Group) -> None:
        previous = group.state
        self._cancel_group_timers(group)
        group.transition(GroupState.DEAD, self.now_ms())
        for member in group.members.values():
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
            if previous is GroupState.PREPARING_REBALANCE:
                self._complete_join_future(member, JoinResult(E.NOT_COORDINATOR, member.member_id))
            self._complete_sync_future(member, SyncResult(E.NOT_COORDINATOR))
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    # -- request validation --------------------------------------------------------------------------
    def check_status(self, group_id: str | None, *, allow_empty: bool = False) -> ErrorCode:
        """Kafka's `validateGroupStatus`, in Kafka's order."""
        if group_id is None or (not group_id and not allow_empty):
            return E.INVALID_GROUP_ID
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE
        return self.runtime.check(self.partition_for(group_id))

    # -- OffsetCommit ----------------------------------------------------------------------------------
    async def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: Mapping[TopicPartition, CommitRequest],
        *,
        retention_ms: int = -1,
    ) -> dict[TopicPartition, ErrorCode]:
        error = self.check_status(group_id, allow_empty=True)
        if error != E.NONE:
            return dict.fromkeys(offsets, error)
        results, valid = self.split_valid_offsets(offsets)
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return {**results, **dict.fromkeys(valid, E.ILLEGAL_GENERATION)}
            group = Group(group_id, self.partition_for(group_id))
            self.groups[group_id] = group
        error = self._validate_commit(group, member_id, instance_id, generation)
        if error != E.NONE:
            return {**results, **dict.fromkeys(valid, error)}
        if group.is_(GroupState.COMPLETING_REBALANCE):
            return {**results, **dict.fromkeys(valid, E.REBALANCE_IN_PROGRESS)}
        if group.has(member_id):
            self._schedule_heartbeat(group, group.members[member_id])
        if valid:
            results.update(await self._store_offsets(group, valid, retention_ms))
        return results

    def split_valid_offsets(
        self, offsets: Mapping[TopicPartition, CommitRequest]
    ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, CommitRequest]]:
        """The per-partition errors of the offsets that fail `validate_offset`, and the rest."""
        results: dict[TopicPartition, ErrorCode] = {}
        valid: dict[TopicPartition, CommitRequest] = {}
        for tp, req in offsets.items():
            error = self.validate_offset(tp, req)
            if error != E.NONE:
                results[tp] = error
            else:
                valid[tp] = req
        return results, valid

    def validate_offset(self, tp: TopicPartition, req: CommitRequest) -> ErrorCode:
        """The per-partition checks of OffsetCommit and TxnOffsetCommit."""
        if not self._topic_exists(tp):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        if req.metadata is not None and len(req.metadata.encode()) > self.config.offset_metadata_max_bytes:
            return E.OFFSET_METADATA_TOO_LARGE
        return E.NONE

    def validate_member_commit(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        """A commit that names a member: it must be one, of the current generation."""
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        error = self._fenced_or_unknown(group, member_id, instance_id)
        if error != E.NONE:
            return error
        return E.ILLEGAL_GENERATION if generation != group.generation else E.NONE

    def _validate_commit(
        self, group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation >= 0 or member_id or instance_id is not None:
            return self.validate_member_commit(group, member_id, instance_id, generation)
        if not group.is_(GroupState.EMPTY):
            return E.UNKNOWN_MEMBER_ID  # only members commit to a group that has members
        return E.NONE

    async def _store_offsets(
        self, group: Group, offsets: dict[TopicPartition, CommitRequest], retention_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        now = self.now_ms()
        # a retention up to Long.MAX is a valid request ("keep it for ever"): the sum is capped at
        # what the record's int64 holds, where Kafka's would wrap negative and expire at once
        expire = None if retention_ms < 0 else min(now + retention_ms, INT64_MAX)
        values = {
            tp: OffsetAndMetadata(
                req.offset,
                req.leader_epoch,
                req.metadata or "",
                now if req.commit_timestamp < 0 else req.commit_timestamp,
                expire,
            )
            for tp, req in offsets.items()
        }
        records: list[KeyValue] = [
            (
                encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)),
                encode_offset_value(
                    OffsetValue(v.offset, v.metadata, v.commit_timestamp, v.leader_epoch, expire)
                ),
            )
            for tp, v in values.items()
        ]
        for tp in values:
            group.pending_commits[tp] += 1
        try:
            result = await self.store.append(group.partition, records)
        finally:
            for tp in values:
                group.pending_commits[tp] -= 1
                if group.pending_commits[tp] <= 0:
                    del group.pending_commits[tp]
        error = offset_append_error(result.error)
        if error == E.NONE and not group.is_(GroupState.DEAD):
            for i, (tp, v) in enumerate(values.items()):
                v.record_offset = result.base_offset + i
                current = group.offsets.get(tp)
                if current is None or current.record_offset < v.record_offset:
                    group.offsets[tp] = v
        elif error != E.NONE:
            self._remove_if_unused(group)
        return dict.fromkeys(values, error)

    # -- OffsetFetch -----------------------------------------------------------------------------------
    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets (None = no commit); every partition when `partitions` is None."""
        error = self.check_status(group_id, allow_empty=True)
        if error != E.NONE:
            return error, {}
        group = self.groups.get(group_id)
        if partitions is None:
            return E.NONE, dict(group.offsets) if group is not None else {}
        return E.NONE, {tp: (group.offsets.get(tp) if group is not None else None) for tp in partitions}

    # -- ListGroups / DescribeGroups / DeleteGroups --------------------------------------------------------
    def list_groups(self, states: Iterable[str] = ()) -> tuple[ErrorCode, list[tuple[str, str, str]]]:
        """(group id, protocol type, state) of the groups coordinated here; `states` (KIP-518, any
        case) keeps only groups in those states, empty keeps all."""
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE, []
        wanted = {s.lower() for s in states}
        owned = self.runtime.owned
        error = E.COORDINATOR_LOAD_IN_PROGRESS if self.runtime.loading else E.NONE
        return error, [
            (g.group_id, g.protocol_type or "", g.state.value)
            for g in self.groups.values()
            if not g.is_(GroupState.DEAD)
            and g.partition in owned
            and (not wanted or g.state.value.lower() in wanted)
        ]

    def describe_group(self, group_id: str) -> GroupSummary:
        error = self.check_status(group_id, allow_empty=True)
        if error != E.NONE:
            return GroupSummary(error, group_id)
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return GroupSummary(E.NONE, group_id)
        stable = group.is_(GroupState.STABLE) and group.protocol_name is not None
        members = tuple(
            MemberSummary(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata_for(group.protocol_name) if stable and group.protocol_name else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupSummary(
            E.NONE,
            group_id,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        results: dict[str, ErrorCode] = {}
        doomed: list[Group] = []
        for group_id in group_ids:
            error = self.check_status(group_id, allow_empty=True)
            group = self.groups.get(group_id)
            if error != E.NONE:
                results[group_id] = error
            elif group is None or group.is_(GroupState.DEAD):
                results[group_id] = E.GROUP_ID_NOT_FOUND
            elif not group.is_(GroupState.EMPTY):
                results[group_id] = E.NON_EMPTY_GROUP
            else:
                self._cancel_group_timers(group)
                group.transition(GroupState.DEAD, self.now_ms())
                del self.groups[group_id]
                doomed.append(group)
                results[group_id] = E.NONE
        for partition, records in tombstones(doomed, all_offsets=True).items():
            result = await self.store.append(partition, records)
            if result.error != E.NONE:
                log.warning("tombstones for deleted groups failed: %s", result.error.name)
                for group in doomed:
                    if group.partition == partition:
                        results[group.group_id] = group_append_error(result.error)
        return results

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete (KIP-496): drop a group's committed offsets for `partitions`. Allowed for an
        empty group, and for a consumer group only for topics none of its members subscribe to
        (those get GROUP_SUBSCRIBED_TO_TOPIC); any other live group is NON_EMPTY_GROUP."""
        partitions = list(dict.fromkeys(partitions))
        error = self.check_status(group_id, allow_empty=True)
        if error != E.NONE:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return E.GROUP_ID_NOT_FOUND, {}
        if group.is_(GroupState.EMPTY):
            subscribed: set[str] = set()
        else:
            known = group.subscribed_topics()
            if known is None:
                return E.NON_EMPTY_GROUP, {}
            subscribed = known
        results: dict[TopicPartition, ErrorCode] = {}
        records: list[KeyValue] = []
        for tp in partitions:
            if tp.topic in subscribed:
                results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[tp] = E.NONE
            if group.offsets.pop(tp, None) is not None:
                records.append((encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)), None))
        if records:
            result = await self.store.append(group.partition, records)
            if result.error != E.NONE:
                error = offset_append_error(result.error)
                return E.NONE, {tp: (error if e == E.NONE else e) for tp, e in results.items()}
        return E.NONE, results

    # -- offset expiry ---------------------------------------------------------------------------------
    def _schedule_expiry(self) -> None:
        self._expiry_timer = self._later(
            self.config.offsets_retention_check_interval_ms, self._on_expiry_timer
        )

    def _on_expiry_timer(self) -> None:
        if not self.active:
            return
        self._spawn(self.expire_offsets())
        self._schedule_expiry()

    async def expire_offsets(self) -> int:
        """Kafka's `cleanupGroupMetadata`: drop expired offsets, and empty groups left with none.
        Returns the number of tombstones written."""
        now = self.now_ms()
        retention = self.config.offsets_retention_ms
        by_partition: dict[int, list[KeyValue]] = {}
        owned = self.runtime.owned
        for group in list(self.groups.values()):
            if group.partition not in owned or group.is_(GroupState.DEAD):
                continue
            expired = expired_offsets(group, now, retention)
            records = by_partition.setdefault(group.partition, [])
            for tp in expired:
                del group.offsets[tp]
                records.append((encode_offset_key(OffsetKey(group.group_id, tp.topic, tp.partition)), None))
            if group.is_(GroupState.EMPTY) and not group.offsets and not group.pending_commits:
                self._cancel_group_timers(group)
                group.transition(GroupState.DEAD, now)
                del self.groups[group.group_id]
                if group.generation > 0:  # offsets-only groups never had a record
                    records.append((encode_group_key(GroupKey(group.group_id)), None))
        written = 0
        for partition, records in by_partition.items():
            if records:
                result = await self.store.append(partition, records, wait=False)
                if result.error == E.NONE:
                    written += len(records)
        return written
