"""Group membership and rebalancing: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timers
(reference group-coordinator §2), as a mixin of `GroupCoordinator`.

A rebalance: a new member, a changed subscription, a leader rejoining, a member leaving or
timing out moves the group to PreparingRebalance. Members park their JoinGroup until every known
member has rejoined (or the largest rebalance timeout passed; a brand-new group instead waits
`group.initial.rebalance.delay.ms`, extended while members keep arriving). Completing the join
phase bumps the generation, chooses the protocol by vote and answers every parked JoinGroup --
only the leader gets the member list. Followers' SyncGroups park until the leader's assignment
is written to `__consumer_offsets`; then everyone gets its share and the group is Stable.

Liveness: every member has a session timer, reset by heartbeats, commits and syncs; members
parked in JoinGroup or SyncGroup count as alive. An expired member is removed (and a rebalance
starts), as is a member that never sends SyncGroup within the rebalance timeout (KAFKA-12890).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zkafka.coordinator.config import GroupConfig
from zkafka.coordinator.group import Group, GroupState, Member
from zkafka.coordinator.store import OffsetsTopicStore, group_append_error
from zkafka.protocol import ErrorCode
from zkafka.protocol.groups.formats import GroupKey, encode_group_key, encode_group_value

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""Kafka's NewMemberJoinTimeoutMs: a brand-new member parked in JoinGroup this long is dropped."""

E = ErrorCode


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_name: str = ""
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    """(member id, group instance id, metadata): only the leader gets them."""


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""


class GroupMembership:
    """The membership half of `GroupCoordinator` (which provides `check_status`)."""

    groups: dict[str, Group]
    config: GroupConfig
    store: OffsetsTopicStore
    loop: asyncio.AbstractEventLoop | None
    _tasks: set[asyncio.Task[Any]]
    _clock: Callable[[], float]

    def check_status(self, group_id: str | None, *, allow_empty: bool = False) -> ErrorCode:
        raise NotImplementedError

    def partition_for(self, group_id: str) -> int:
        raise NotImplementedError

    # -- helpers -----------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("group coordinator task failed", exc_info=task.exception())

    def _later(self, delay_ms: int, fn: Callable[..., None], *args: Any) -> asyncio.TimerHandle:
        assert self.loop is not None, "GroupCoordinator.start() was not called"
        return self.loop.call_later(max(delay_ms, 0) / 1000, fn, *args)

    def _cancel_group_timers(self, group: Group) -> None:
        for timer in (group.join_timer, group.sync_timer, *group.pending_members.values()):
            if timer is not None:
                timer.cancel()
        group.join_timer = group.sync_timer = None
        group.pending_members = {}

    def _fenced_or_unknown(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's `validateCurrentMember`."""
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is not None and existing != member_id:
                return E.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        return E.NONE

    # -- JoinGroup ---------------------------------------------------------------------------------------
    async def join_group(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        *,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult:
        error = self.check_status(group_id)
        if error != E.NONE:
            return JoinResult(error, member_id)
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            return JoinResult(E.INVALID_SESSION_TIMEOUT, member_id)
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        is_unknown = member_id == ""
        group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                return JoinResult(E.UNKNOWN_MEMBER_ID, member_id)
            group = Group(group_id, self.partition_for(group_id))
            self.groups[group_id] = group
        if group.is_(GroupState.DEAD):
            return JoinResult(E.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports_protocols(protocol_type, (name for name, _ in protocols)):
            self._remove_if_unused(group)
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if (
            is_unknown
            and group.static_member_id(instance_id) is None
            and len(group.members) + len(group.pending_members) >= cfg.max_size
        ):
            return JoinResult(E.GROUP_MAX_SIZE_REACHED, member_id)
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        if is_unknown:
            self._join_new_member(group, instance_id, require_known_member_id, args, fut)
        else:
            self._join_current_member(group, member_id, instance_id, args, fut)
        return await fut

    def _remove_if_unused(self, group: Group) -> None:
        if (
            group.is_(GroupState.EMPTY)
            and not group.members
            and not group.offsets
            and group.generation == 0
            and self.groups.get(group.group_id) is group
        ):
            del self.groups[group.group_id]

    def _join_new_member(
        self,
        group: Group,
        instance_id: str | None,
        require_known_member_id: bool,
        args: tuple[Any, ...],
        fut: asyncio.Future[JoinResult],
    ) -> None:
        client_id = args[0]
        new_id = f"{instance_id or client_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                self._replace_static_member(group, old_id, new_id, args, fut)
                return
            self._add_member_and_rebalance(group, new_id, instance_id, args, fut)
        elif require_known_member_id:
            # KIP-394: hand out the id first; the member counts from its rejoin on.
            group.pending_members[new_id] = self._later(args[3], self._expire_pending_member, group, new_id)
            fut.set_result(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, None, args, fut)

    def _join_current_member(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        args: tuple[Any, ...],
        fut: asyncio.Future[JoinResult],
    ) -> None:
        if member_id in group.pending_members:
            timer = group.pending_members[member_id]
            if timer is not None:
                timer.cancel()
            self._add_member_and_rebalance(group, member_id, instance_id, args, fut)
            return
        error = self._fenced_or_unknown(group, member_id, instance_id)
        if error != E.NONE:
            fut.set_result(JoinResult(error, member_id))
            return
        member = group.members[member_id]
        protocols = args[5]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, args, fut)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # a lost JoinGroup response: answer again with the current generation
                fut.set_result(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, args, fut)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader rejoining is how a client forces a rebalance
                self._update_member_and_rebalance(group, member, args, fut)
            else:
                fut.set_result(self._join_result(group, member))
        else:  # Empty or Dead
            fut.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: Group, member: Member) -> JoinResult:
        members: list[tuple[str, str | None, bytes]] = []
        if group.is_leader(member.member_id) and group.protocol_name is not None:
            members = [
                (m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
                for m in group.members.values()
            ]
        return JoinResult(
            E.NONE,
            member.member_id,
            group.generation,
            group.protocol_name or "",
            group.leader_id or "",
            members,
        )

    def _add_member_and_rebalance(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        args: tuple[Any, ...],
        fut: asyncio.Future[JoinResult],
    ) -> None:
        client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols = args
        member = Member(
            member_id=member_id,
            group_instance_id=instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=list(protocols),
            is_new=True,
            awaiting_join=fut,
        )
        if group.is_(GroupState.PREPARING_REBALANCE) and group.generation == 0:
            group.new_member_added = True
        group.add(member)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")
        self._try_complete_join(group)

    def _update_member_and_rebalance(
        self, group: Group, member: Member, args: tuple[Any, ...], fut: asyncio.Future[JoinResult]
    ) -> None:
        _, _, rebalance_timeout_ms, session_timeout_ms, _, protocols = args
        if member.awaiting_join is not None and not member.awaiting_join.done():
            # a second JoinGroup while the first is parked: the old one is superseded
            member.awaiting_join.set_result(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.protocols = list(protocols)
        member.awaiting_join = fut
        self._maybe_prepare_rebalance(group, f"updating metadata of member {member.member_id}")
        self._try_complete_join(group)

    def _replace_static_member(
        self, group: Group, old_id: str, new_id: str, args: tuple[Any, ...], fut: asyncio.Future[JoinResult]
    ) -> None:
        """A known group.instance.id rejoined with no member id (a restarted static member)."""
        old = group.members[old_id]
        self._complete_join_future(old, JoinResult(E.FENCED_INSTANCE_ID, old_id))
        self._complete_sync_future(old, SyncResult(E.FENCED_INSTANCE_ID))
        if old.heartbeat_timer is not None:
            old.heartbeat_timer.cancel()
        protocols = args[5]
        unchanged = old.matches(protocols)
        was_leader = group.is_leader(old_id)
        group.remove(old_id)
        group.pending_sync.discard(old_id)
        old.member_id = new_id
        old.client_id, old.client_host = args[0], args[1]
        old.rebalance_timeout_ms, old.session_timeout_ms = args[2], args[3]
        old.protocols = list(protocols)
        group.add(old)
        if was_leader:
            group.leader_id = new_id
        self._schedule_heartbeat(group, old)
        if group.is_(GroupState.STABLE) and unchanged:
            # No rebalance: rewrite the group record and answer with the current generation. The
            # reply names the old leader id, so a restarted leader does not reassign.
            result = self._join_result(group, old)
            result.members = []
            if was_leader:
                result.leader_id = old_id
            fut.set_result(result)
            self._spawn(self._store_group_quietly(group))
            return
        old.awaiting_join = fut
        if group.is_(GroupState.STABLE) or group.is_(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"static member {old.group_instance_id} rejoined")
        else:
            self._try_complete_join(group)

    def _expire_pending_member(self, group: Group, member_id: str) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED was not used within the session timeout."""
        if member_id not in group.pending_members:
            return
        del group.pending_members[member_id]
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- rebalance phases -----------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS)
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        if group.join_timer is not None:
            group.join_timer.cancel()
        delay = self.config.initial_rebalance_delay_ms
        if group.is_(GroupState.EMPTY):
            # InitialDelayedJoin: wait for more members before generation 1
            group.join_initial = True
            group.new_member_added = False
            group.join_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            group.join_timer = self._later(delay, self._on_initial_join_timer, group)
        else:
            group.join_initial = False
            group.join_timer = self._later(group.rebalance_timeout_ms, self._complete_join, group)
        group.transition(GroupState.PREPARING_REBALANCE, self.now_ms())
        log.info(
            "preparing to rebalance group %s with old generation %d (%s)",
            group.group_id,
            group.generation,
            reason,
        )
        self._try_complete_join(group)  # e.g. the last member left: nobody to wait for

    def _on_initial_join_timer(self, group: Group) -> None:
        group.join_timer = None
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        if group.new_member_added and group.join_remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, group.join_remaining_ms)
            group.join_remaining_ms = max(group.join_remaining_ms - delay, 0)
            group.join_timer = self._later(delay, self._on_initial_join_timer, group)
            return
        self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        """The DelayedJoin finishes early once every known member has rejoined (never the
        initial delayed join)."""
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and not group.join_initial
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        if not group.is_(GroupState.PREPARING_REBALANCE):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                log.info("group %s: member %s did not rejoin; removing it", group.group_id, member.member_id)
                if member.heartbeat_timer is not None:
                    member.heartbeat_timer.cancel()
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined (only static members left): wait another rebalance timeout
            group.join_initial = False
            group.join_timer = self._later(group.rebalance_timeout_ms, self._complete_join, group)
            return
        now = self.now_ms()
        group.generation += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition(GroupState.COMPLETING_REBALANCE, now)
        else:
            group.protocol_name = None
            group.transition(GroupState.EMPTY, now)
        log.info(
            "group %s: generation %d (%s) with %d members",
            group.group_id,
            group.generation,
            group.protocol_name,
            len(group.members),
        )
        if group.is_(GroupState.EMPTY):
            self._spawn(self._store_group_quietly(group))
            return
        group.pending_sync = set(group.members)
        for member in group.members.values():
            self._complete_join_future(member, self._join_result(group, member))
            member.is_new = False
            self._schedule_heartbeat(group, member)
        group.sync_timer = self._later(
            group.rebalance_timeout_ms, self._on_sync_expired, group, group.generation
        )

    def _on_sync_expired(self, group: Group, generation: int) -> None:
        """KAFKA-12890: members that never sent SyncGroup for this generation are dropped."""
        group.sync_timer = None
        if group.generation != generation or group.state not in (
            GroupState.COMPLETING_REBALANCE,
            GroupState.STABLE,
        ):
            return
        missing = [group.members[m] for m in group.pending_sync if m in group.members]
        group.pending_sync = set()
        for member in missing:
            log.info("group %s: member %s sent no SyncGroup; removing it", group.group_id, member.member_id)
            self._remove_member_and_update_group(group, member)

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            self._complete_sync_future(member, SyncResult(error))

    @staticmethod
    def _complete_join_future(member: Member, result: JoinResult) -> None:
        fut, member.awaiting_join = member.awaiting_join, None
        if fut is not None and not fut.done():
            fut.set_result(result)

    @staticmethod
    def _complete_sync_future(member: Member, result: SyncResult) -> None:
        fut, member.awaiting_sync = member.awaiting_sync, None
        if fut is not None and not fut.done():
            fut.set_result(result)

    # -- liveness -------------------------------------------------------------------------------------
    def _schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int | None = None) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        ms = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_timer = self._later(ms, self._on_heartbeat_expired, group, member)

    def _on_heartbeat_expired(self, group: Group, member: Member) -> None:
        member.heartbeat_timer = None
        if group.members.get(member.member_id) is not member:
            return
        # Members parked in JoinGroup/SyncGroup are alive (their client is waiting on us), except
        # brand-new ones that never completed a join (NewMemberJoinTimeoutMs).
        parked_join = member.awaiting_join is not None and not member.awaiting_join.done()
        parked_sync = member.awaiting_sync is not None and not member.awaiting_sync.done()
        if (parked_join and not member.is_new) or parked_sync:
            self._schedule_heartbeat(group, member)
            return
        log.info("group %s: member %s session expired", group.group_id, member.member_id)
        self._remove_member_and_update_group(group, member)

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
            member.heartbeat_timer = None
        group.remove(member.member_id)
        group.pending_sync.discard(member.member_id)
        self._complete_join_future(member, JoinResult(E.UNKNOWN_MEMBER_ID, member.member_id))
        self._complete_sync_future(member, SyncResult(E.UNKNOWN_MEMBER_ID))
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- SyncGroup -------------------------------------------------------------------------------------
    async def sync_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncResult:
        error = self.check_status(group_id)
        if error == E.COORDINATOR_LOAD_IN_PROGRESS:
            return SyncResult(E.REBALANCE_IN_PROGRESS)  # the client simply rejoins
        if error != E.NONE:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.DEAD):
            return SyncResult(E.COORDINATOR_NOT_AVAILABLE)
        error = self._fenced_or_unknown(group, member_id, instance_id)
        if error != E.NONE:
            return SyncResult(error)
        if generation != group.generation:
            return SyncResult(E.ILLEGAL_GENERATION)
        member = group.members[member_id]
        group.pending_sync.discard(member_id)
        if group.is_(GroupState.EMPTY):
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return SyncResult(E.REBALANCE_IN_PROGRESS)
        if group.is_(GroupState.STABLE):
            self._schedule_heartbeat(group, member)
            return SyncResult(E.NONE, member.assignment)
        # CompletingRebalance: park until the leader's assignment is stored
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        self._complete_sync_future(member, SyncResult(E.REBALANCE_IN_PROGRESS))
        member.awaiting_sync = fut
        self._schedule_heartbeat(group, member)
        if group.is_leader(member_id) and group.storing_generation != generation:
            group.storing_generation = generation
            full = {m: bytes(assignments.get(m, b"")) for m in group.members}
            self._spawn(self._store_assignment(group, generation, full))
        return await fut

    async def _store_assignment(self, group: Group, generation: int, assignments: dict[str, bytes]) -> None:
        value = group.to_value(assignments)
        result = await self.store.append(
            group.partition, [(encode_group_key(GroupKey(group.group_id)), encode_group_value(value))]
        )
        if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation != generation:
            return  # a newer rebalance (or an unload) took over meanwhile
        error = group_append_error(result.error)
        if error != E.NONE:
            log.warning("group %s: storing the assignment failed: %s", group.group_id, error.name)
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group, "failed to store the assignment")
            return
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
            self._complete_sync_future(member, SyncResult(E.NONE, member.assignment))
        group.transition(GroupState.STABLE, self.now_ms())
        log.info("group %s: generation %d is stable", group.group_id, generation)

    async def _store_group_quietly(self, group: Group) -> None:
        result = await self.store.append(
            group.partition,
            [(encode_group_key(GroupKey(group.group_id)), encode_group_value(group.to_value()))],
        )
        if result.error != E.NONE:
            log.warning("group %s: storing its metadata failed: %s", group.group_id, result.error.name)

    # -- Heartbeat -------------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        error = self.check_status(group_id)
        if error == E.COORDINATOR_LOAD_IN_PROGRESS:
            return E.NONE  # the group is not known yet; its members keep going
        if error != E.NONE:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if group.is_(GroupState.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        error = self._fenced_or_unknown(group, member_id, instance_id)
        if error != E.NONE:
            return error
        if generation != group.generation:
            return E.ILLEGAL_GENERATION
        self._schedule_heartbeat(group, group.members[member_id])
        if group.is_(GroupState.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    # -- LeaveGroup ------------------------------------------------------------------------------------
    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """(top-level error, one error per (member id, instance id))."""
        error = self.check_status(group_id)
        if error != E.NONE:
            return error, [error] * len(members)
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, [E.COORDINATOR_NOT_AVAILABLE] * len(members)
        out = []
        for member_id, instance_id in members:
            if not member_id and instance_id is not None:
                member_id = group.static_member_id(instance_id) or ""
                if not member_id:
                    out.append(E.UNKNOWN_MEMBER_ID)
                    continue
            if member_id in group.pending_members:
                timer = group.pending_members.pop(member_id)
                if timer is not None:
                    timer.cancel()
                if group.is_(GroupState.PREPARING_REBALANCE):
                    self._try_complete_join(group)
                out.append(E.NONE)
                continue
            error = self._fenced_or_unknown(group, member_id, instance_id)
            if error != E.NONE:
                out.append(error)
                continue
            log.info("group %s: member %s left", group.group_id, member_id)
            self._remove_member_and_update_group(group, group.members[member_id])
            out.append(E.NONE)
        return E.NONE, out
