"""Partition reassignment (KIP-455 flow), triggered by /admin/reassign_partitions or the
AlterPartitionReassignments API.

Names: ORS = original replicas, TRS = target replicas, RS = TRS + ORS (target first), AR = TRS - ORS
(adding), RR = ORS - TRS (removing).

Start (or update) a reassignment:
  U1  write the topic znode with replicas = RS, adding = AR, removing = RR (ZooKeeper first, so a new
      controller can resume), then the context; replicas dropped by a changed target are stopped;
  A1  bump the leader epoch (conditional write) and send LeaderAndIsr to ORS (is_new=false) and to AR
      (is_new=true);
  A2  AR replicas -> NEW.
Complete it, once TRS ⊆ ISR (seen through ISR change notifications or the state znode's data watch):
  B1  AR replicas -> ONLINE;  B2  assignment = TRS in memory;
  B3  leader not in TRS (or dead): elect with the reassignment strategy; otherwise bump the epoch so
      the leader learns the shrunk replica set;
  B4/B5 RR replicas -> OFFLINE -> DELETION_STARTED -> DELETION_SUCCESSFUL -> NON_EXISTENT;
  B6  topic znode replicas = TRS, adding/removing empty;
  B7  drop the partition from /admin/reassign_partitions (deleting it when empty);
  B8  UpdateMetadata for the partition to every broker; resume a pending deletion of the topic.
While a partition of a topic is being reassigned, the topic cannot be deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from zkafka.controller.context import ReplicaAssignment
from zkafka.controller.core import ControllerCore
from zkafka.controller.election import ReassignElection
from zkafka.controller.events import PartitionReassignmentIsrChange, ZkPartitionReassignment
from zkafka.controller.partition_state_machine import PartitionStateMachine
from zkafka.controller.replica_state_machine import ReplicaStateMachine
from zkafka.controller.states import PartitionAndReplica, PartitionState, ReplicaState, StateChangeFailedError
from zkafka.controller.topic_deletion import TopicDeletionManager
from zkafka.protocol import ErrorCode
from zkafka.zk.errors import ControllerMovedError, ZNodeDataError
from zkafka.zk.model import LeaderIsrAndControllerEpoch, TopicPartition
from zkafka.zk.watch_bridge import WatchEventType, ZkWatchEvent
from zkafka.zk.znodes import ReassignPartitionsZNode, TopicPartitionStateZNode

__all__ = ["Reassignments"]

log = logging.getLogger(__name__)

ReassignmentResults = dict[TopicPartition, tuple[ErrorCode, str | None]]


class Reassignments:
    def __init__(
        self,
        core: ControllerCore,
        psm: PartitionStateMachine,
        rsm: ReplicaStateMachine,
        deletion: TopicDeletionManager,
    ) -> None:
        self.core = core
        self.psm = psm
        self.rsm = rsm
        self.deletion = deletion

    def watch(self) -> None:
        """The creation of /admin/reassign_partitions starts reassignments (its later rewrites by the
        controller itself must not)."""

        def on_change(event: ZkWatchEvent) -> ZkPartitionReassignment | None:
            starts = event.type in (WatchEventType.CREATED, WatchEventType.RESYNC)
            return ZkPartitionReassignment() if event.exists and starts else None

        self.core.watches.exists(ReassignPartitionsZNode.path(), on_change)

    # -- entry points ----------------------------------------------------------------------------------
    async def initialize(self) -> None:
        """At failover: start what the znode asks for, then resume the reassignments recorded in the
        topic znodes (adding/removing replicas) that the znode does not mention."""
        resumed = await self.process_zk_reassignment()
        await self.maybe_resume(lambda tp, _: tp not in resumed)

    async def process_zk_reassignment(self) -> set[TopicPartition]:
        core = self.core
        try:
            requested = await core.call(core.zk.get_partition_reassignment)
        except ZNodeDataError as e:
            log.error("ignoring unreadable partition reassignment request: %s", e)
            return set()
        if requested is None:
            return set()
        to_start: dict[TopicPartition, ReplicaAssignment] = {}
        results: ReassignmentResults = {}
        for tp, target in requested.items():
            built = self._build(tp, target)
            if built is None:
                results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            else:
                to_start[tp] = built
        results.update(await self._trigger(to_start))
        failed = {tp for tp, (error, _) in results.items() if error is not ErrorCode.NONE}
        if failed:
            log.warning("reassignments from %s failed: %s", ReassignPartitionsZNode.path(), results)
            await self._remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, (error, _) in results.items() if error is ErrorCode.NONE}

    async def alter(self, requested: Mapping[TopicPartition, Sequence[int] | None]) -> ReassignmentResults:
        """AlterPartitionReassignments: start, change (target given) or cancel (None) reassignments."""
        results: ReassignmentResults = {}
        to_start: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requested.items():
            problem = None if target is None else self._invalid_target(tp, target)
            if problem is not None:
                results[tp] = (ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
                continue
            built = self._build(tp, target)
            if built is None:
                results[tp] = (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
            else:
                to_start[tp] = built
        # The newest request wins: the API overrides what the legacy znode asked for these partitions.
        if to_start:
            await self._remove_from_zk_reassignment(lambda tp, _: tp in to_start)
        results.update(await self._trigger(to_start))
        return results

    def ongoing(self) -> dict[TopicPartition, ReplicaAssignment]:
        ctx = self.core.context
        return {
            tp: ctx.partition_full_replica_assignment(tp) for tp in sorted(ctx.partitions_being_reassigned)
        }

    async def maybe_resume(self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
        ctx = self.core.context
        for tp in sorted(ctx.partitions_being_reassigned):
            assignment = ctx.partition_full_replica_assignment(tp)
            if should_resume(tp, assignment):
                await self._on_partition_reassignment(tp, assignment)

    async def maybe_complete(self, tp: TopicPartition) -> None:
        ctx = self.core.context
        if tp not in ctx.partitions_being_reassigned:
            return
        assignment = ctx.partition_full_replica_assignment(tp)
        if await self._is_complete(tp, assignment):
            log.info(
                "target replicas %s of %s are in sync: completing its reassignment",
                assignment.target_replicas,
                tp,
            )
            await self._on_partition_reassignment(tp, assignment)

    # -- decisions -------------------------------------------------------------------------------------
    def _invalid_target(self, tp: TopicPartition, target: Sequence[int]) -> str | None:
        if not target:
            return "Empty replica list specified in partition reassignment."
        if len(set(target)) != len(target):
            return f"Duplicate replica ids in partition reassignment replica list: {list(target)}"
        if any(b < 0 for b in target):
            return f"Invalid broker id in replica list: {list(target)}"
        ctx = self.core.context
        adding = ctx.partition_full_replica_assignment(tp).reassign_to(target).adding
        dead = sorted(set(adding) - ctx.live_broker_ids)
        if dead:
            return f"Replica assignment has brokers that are not alive: {dead}"
        return None

    def _build(self, tp: TopicPartition, target: Sequence[int] | None) -> ReplicaAssignment | None:
        """The assignment to move to: towards `target`, or back to the origin when cancelling (None).
        None when there is nothing to cancel."""
        current = self.core.context.partition_full_replica_assignment(tp)
        if target is None:
            return current.reassign_to(current.origin_replicas) if current.is_being_reassigned else None
        return current.reassign_to(target)

    async def _trigger(
        self, reassignments: Mapping[TopicPartition, ReplicaAssignment]
    ) -> ReassignmentResults:
        ctx = self.core.context
        results: ReassignmentResults = {}
        for tp, assignment in reassignments.items():
            if self.deletion.is_topic_queued_up_for_deletion(tp.topic):
                log.info("not reassigning %s: its topic is being deleted", tp)
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            elif not ctx.partition_replica_assignment(tp):
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
            else:
                try:
                    await self._on_partition_reassignment(tp, assignment)
                    results[tp] = (ErrorCode.NONE, None)
                except ControllerMovedError:
                    raise
                except Exception as e:
                    log.exception("reassignment of %s failed", tp)
                    results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
        return results

    async def _is_complete(self, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
        if not assignment.is_being_reassigned:
            return True
        state = await self.core.call(self.core.zk.get_partition_state, tp)
        return state is not None and set(assignment.target_replicas) <= set(state.leader_and_isr.isr)

    # -- the flow --------------------------------------------------------------------------------------
    async def _on_partition_reassignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        core, ctx = self.core, self.core.context
        self.deletion.mark_topic_ineligible_for_deletion({tp.topic}, "reassignment in progress")
        await self._update_current_reassignment(tp, assignment)
        if not await self._is_complete(tp, assignment):
            await self._update_leader_epoch_and_send(tp, assignment)  # A1
            await self.rsm.handle_state_changes(
                [PartitionAndReplica(tp, r) for r in assignment.adding], ReplicaState.NEW
            )  # A2
            return
        await self.rsm.handle_state_changes(
            [PartitionAndReplica(tp, r) for r in assignment.adding], ReplicaState.ONLINE
        )  # B1
        completed = ReplicaAssignment(assignment.target_replicas)
        ctx.update_partition_full_replica_assignment(tp, completed)  # B2
        await self._move_leader_if_required(tp, completed)  # B3
        await self._stop_removed_replicas(tp, assignment.removing)  # B4, B5
        await self._write_assignment(tp, completed)  # B6
        await self._remove_from_reassigning(tp, completed)  # B7
        core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, [tp])  # B8
        log.info("reassignment of %s completed: replicas %s", tp, list(completed.replicas))
        await self.deletion.resume_deletion_for_topics({tp.topic})

    async def _update_current_reassignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        core, ctx = self.core, self.core.context
        current = ctx.partition_full_replica_assignment(tp)
        if current != assignment:
            await self._write_assignment(tp, assignment)  # U1
            ctx.update_partition_full_replica_assignment(tp, assignment)  # U2
            unneeded = [r for r in current.replicas if r not in assignment.replicas]
            if unneeded:
                await self._stop_removed_replicas(tp, unneeded)
        # Followers catching up only show in the state znode: watch it while reassigning.
        core.watches.data(
            TopicPartitionStateZNode.path(tp), lambda _event, tp=tp: PartitionReassignmentIsrChange(tp)
        )
        ctx.partitions_being_reassigned.add(tp)

    async def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        core, ctx = self.core, self.core.context
        topic_assignment = ctx.partition_assignments_for_topic(tp.topic)
        topic_assignment[tp.partition] = assignment
        await core.call(
            core.zk.set_topic_assignment,
            tp.topic,
            {p: a.replicas for p, a in topic_assignment.items()},
            adding={p: a.adding for p, a in topic_assignment.items() if a.adding},
            removing={p: a.removing for p, a in topic_assignment.items() if a.removing},
            epoch_zk_version=ctx.epoch_zk_version,
        )

    async def _update_leader_epoch_and_send(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        state = await self._bump_leader_epoch(tp)
        if state is None:
            log.error("cannot bump the leader epoch of %s: reassignment not announced to its replicas", tp)
            return
        batch = self.core.batch
        batch.add_leader_and_isr(assignment.origin_replicas, tp, state, assignment, is_new=False)
        batch.add_leader_and_isr(assignment.adding, tp, state, assignment, is_new=True)
        batch.flush()

    async def _bump_leader_epoch(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """Same leader and ISR, epoch + 1, so brokers accept the new replica set."""
        core, ctx = self.core, self.core.context
        while True:
            current = await core.call(core.zk.get_partition_state, tp)
            if current is None:
                raise StateChangeFailedError(f"cannot update the leader epoch of {tp}: no state znode")
            if current.controller_epoch > ctx.epoch:
                raise StateChangeFailedError(f"the state of {tp} was written by a newer controller")
            new = current.leader_and_isr.new_epoch()
            written = await core.call(
                core.zk.update_leader_and_isr, {tp: new}, ctx.epoch, ctx.epoch_zk_version
            )
            if tp in written.successful:
                state = LeaderIsrAndControllerEpoch(new.with_zk_version(written.successful[tp]), ctx.epoch)
                ctx.leadership[tp] = state
                return state
            if tp in written.failed:
                raise written.failed[tp]

    async def _move_leader_if_required(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        ctx = self.core.context
        leader = ctx.leader(tp)
        if leader is not None and leader in assignment.replicas and ctx.is_replica_online(leader, tp):
            # Leader stays: a new epoch tells every replica about the shrunk replica set.
            await self._update_leader_epoch_and_send(tp, assignment)
            return
        await self.psm.handle_state_changes([tp], PartitionState.ONLINE, ReassignElection())

    async def _stop_removed_replicas(self, tp: TopicPartition, removed: Iterable[int]) -> None:
        replicas = [PartitionAndReplica(tp, r) for r in removed]
        if not replicas:
            return
        for target in (
            ReplicaState.OFFLINE,
            ReplicaState.DELETION_STARTED,
            ReplicaState.DELETION_SUCCESSFUL,
            ReplicaState.NON_EXISTENT,
        ):
            await self.rsm.handle_state_changes(replicas, target)

    async def _remove_from_reassigning(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        core, ctx = self.core, self.core.context
        core.watches.cancel("data", TopicPartitionStateZNode.path(tp))
        await self._remove_from_zk_reassignment(
            lambda p, replicas: p == tp and tuple(replicas) == assignment.replicas
        )
        ctx.partitions_being_reassigned.discard(tp)

    async def _remove_from_zk_reassignment(
        self, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
    ) -> None:
        core, ctx = self.core, self.core.context
        current = await core.call(core.zk.get_partition_reassignment)
        if current is None:
            return
        remaining = {tp: r for tp, r in current.items() if not should_remove(tp, r)}
        if len(remaining) == len(current):
            return
        if remaining:
            await core.call(core.zk.set_or_create_partition_reassignment, remaining, ctx.epoch_zk_version)
        else:
            log.info("no more partitions to reassign: deleting %s", ReassignPartitionsZNode.path())
            await core.call(core.zk.delete_partition_reassignment, ctx.epoch_zk_version)
