"""The replica state machine: which brokers hold, stop and delete which replicas.

States and valid previous states are in `states.py`. What each transition does:

* -> NEW: LeaderAndIsr(is_new=true) with the partition's current leadership to that broker (if the
  partition has a leader yet). Refused if the replica is the partition's leader.
* -> ONLINE: from NEW, make sure the replica is in the assignment; otherwise LeaderAndIsr with the
  current leadership to that broker (a restarted broker learns its role this way).
* -> OFFLINE: StopReplica(delete=false) to the broker; then remove the replica from the ISR in the
  state znode (leader -1 if it led; the ISR is never shrunk to empty: a sole member stays), leader
  epoch + 1, conditional write with BADVERSION retries; LeaderAndIsr to the remaining replicas (not for
  topics being deleted). Without leadership info: only UpdateMetadata to every broker.
* -> DELETION_STARTED: StopReplica(delete=true) to the broker; its answer comes back as an event.
* -> DELETION_SUCCESSFUL / DELETION_INELIGIBLE: only the in-memory state changes.
* -> NON_EXISTENT: the replica is dropped from the in-memory assignment and forgotten.

`handle_state_changes` flushes the request batch when it completes; ControllerMovedError propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from dataclasses import replace

from zkafka.controller.core import ControllerCore, read_states, state_change_log
from zkafka.controller.states import (
    REPLICA_VALID_PREVIOUS,
    PartitionAndReplica,
    ReplicaState,
)
from zkafka.zk.model import NO_LEADER, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

__all__ = ["ReplicaStateMachine", "isr_without"]

log = logging.getLogger(__name__)


def isr_without(current: LeaderAndIsr, replica: int) -> LeaderAndIsr:
    """The state after `replica` goes offline: no leader if it led, out of the ISR unless it is the
    ISR's only member (so a later clean election can still find the last in-sync replica)."""
    leader = NO_LEADER if current.leader == replica else current.leader
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica)
    return current.new_leader_and_isr(leader, isr)


class ReplicaStateMachine:
    def __init__(self, core: ControllerCore) -> None:
        self.core = core

    def initialize(self) -> tuple[list[PartitionAndReplica], list[PartitionAndReplica]]:
        """After failover, every replica's state from the context, sending nothing (Kafka's
        initializeReplicaState): ONLINE on a live broker, else DELETION_INELIGIBLE. Returns
        (online, offline) replicas for `startup`."""
        ctx = self.core.context
        online, offline = [], []
        for replica in ctx.replicas_for_partitions(ctx.all_partitions):
            if ctx.is_replica_online(replica.replica, replica.partition):
                ctx.replica_states[replica] = ReplicaState.ONLINE
                online.append(replica)
            else:
                ctx.replica_states[replica] = ReplicaState.DELETION_INELIGIBLE
                offline.append(replica)
        return online, offline

    async def startup(
        self,
        online: list[PartitionAndReplica],
        offline: list[PartitionAndReplica],
        *,
        told: Collection[TopicPartition] = frozenset(),
    ) -> None:
        """After failover (Kafka's startup): LeaderAndIsr to every online replica, then the
        offline ones OFFLINE (out of the ISR, leader -1 where they led). `told`: partitions whose
        live replicas already got this term's LeaderAndIsr from an election made just before, so
        they are not sent the same state twice. Replicas of topics being deleted stay
        DELETION_INELIGIBLE: their deletion is retried when their broker is back."""
        ctx = self.core.context
        await self.handle_state_changes([r for r in online if r.partition not in told], ReplicaState.ONLINE)
        gone = [r for r in offline if not ctx.is_topic_queued_up_for_deletion(r.partition.topic)]
        await self.handle_state_changes(gone, ReplicaState.OFFLINE, told=told)

    async def handle_state_changes(
        self,
        replicas: Iterable[PartitionAndReplica],
        target: ReplicaState,
        *,
        told: Collection[TopicPartition] = frozenset(),
    ) -> None:
        """`told` (OFFLINE only): partitions whose replicas already got their current state in this
        event; one the transition leaves unchanged is not sent again."""
        by_broker: dict[int, list[PartitionAndReplica]] = {}
        for replica in dict.fromkeys(replicas):
            by_broker.setdefault(replica.replica, []).append(replica)
        if not by_broker:
            return
        for broker_id, broker_replicas in sorted(by_broker.items()):
            await self._do_handle_state_changes(broker_id, broker_replicas, target, told)
        self.core.batch.flush()

    def _change_state(self, replica: PartitionAndReplica, target: ReplicaState) -> None:
        self._change_states([replica], [self.core.context.replica_state(replica)], target)

    def _change_states(
        self, replicas: list[PartitionAndReplica], previous: list[ReplicaState], target: ReplicaState
    ) -> None:
        """Set the states of `replicas`, whose states were just read (`previous`, in order). The
        DEBUG check first: the enums' `.value` arguments cost more than the disabled call."""
        if state_change_log.isEnabledFor(logging.DEBUG):
            for replica, was in zip(replicas, previous, strict=True):
                if was is not target:
                    state_change_log.debug("replica %s: %s -> %s", replica, was.value, target.value)
        self.core.context.replica_states.update(dict.fromkeys(replicas, target))

    async def _do_handle_state_changes(
        self,
        broker_id: int,
        replicas: list[PartitionAndReplica],
        target: ReplicaState,
        told: Collection[TopicPartition] = frozenset(),
    ) -> None:
        core, ctx = self.core, self.core.context
        # One lookup of each replica's state, kept for the transition below: a topic's creation
        # walks every new replica twice (NEW, then ONLINE), 20,000 per 10,000 partitions at RF 2,
        # and each lookup hashes a (partition, broker) pair in a dict of every replica.
        states_get, absent = ctx.replica_states.get, ReplicaState.NON_EXISTENT
        allowed = REPLICA_VALID_PREVIOUS[target]
        valid: list[PartitionAndReplica] = []
        previous: list[ReplicaState] = []
        for replica in replicas:
            current = states_get(replica, absent)
            if current in allowed:
                valid.append(replica)
                previous.append(current)
            else:
                state_change_log.warning(
                    "controller %d epoch %d: invalid replica state change of %s from %s to %s",
                    core.broker_id,
                    ctx.epoch,
                    replica,
                    current.value,
                    target.value,
                )
        match target:
            case ReplicaState.NEW:
                changed: list[PartitionAndReplica] = []
                changed_from: list[ReplicaState] = []
                leadership_get = ctx.leadership.get
                for replica, current in zip(valid, previous, strict=True):
                    tp = replica.partition
                    leadership = leadership_get(tp)
                    if leadership is not None:
                        if leadership.leader_and_isr.leader == broker_id:
                            state_change_log.warning(
                                "replica %s cannot become a new replica: it is the partition's leader",
                                replica,
                            )
                            continue
                        core.batch.add_leader_and_isr(
                            [broker_id],
                            tp,
                            leadership,
                            ctx.partition_full_replica_assignment(tp),
                            is_new=True,
                        )
                    changed.append(replica)
                    changed_from.append(current)
                self._change_states(changed, changed_from, ReplicaState.NEW)
            case ReplicaState.ONLINE:
                leadership_get = ctx.leadership.get
                assignments = ctx.partition_full_replica_assignment
                for replica, current in zip(valid, previous, strict=True):
                    tp = replica.partition
                    if current is ReplicaState.NEW:
                        assignment = assignments(tp)
                        if broker_id not in assignment.replicas:
                            log.error(
                                "adding replica %s that is not in the assignment %s", replica, assignment
                            )
                            ctx.update_partition_full_replica_assignment(
                                tp, replace(assignment, replicas=(*assignment.replicas, broker_id))
                            )
                    else:
                        leadership = leadership_get(tp)
                        if leadership is not None:
                            core.batch.add_leader_and_isr(
                                [broker_id], tp, leadership, assignments(tp), is_new=False
                            )
                self._change_states(valid, previous, ReplicaState.ONLINE)
            case ReplicaState.OFFLINE:
                await self._go_offline(broker_id, valid, told)
            case ReplicaState.DELETION_STARTED:
                for replica in valid:
                    self._change_state(replica, ReplicaState.DELETION_STARTED)
                    core.batch.add_stop_replica([broker_id], replica.partition, delete=True)
            case ReplicaState.DELETION_SUCCESSFUL | ReplicaState.DELETION_INELIGIBLE:
                for replica in valid:
                    self._change_state(replica, target)
            case ReplicaState.NON_EXISTENT:
                for replica in valid:
                    tp = replica.partition
                    ctx.update_partition_full_replica_assignment(
                        tp, ctx.partition_full_replica_assignment(tp).remove_replica(broker_id)
                    )
                    ctx.replica_states.pop(replica, None)

    async def _go_offline(
        self, broker_id: int, replicas: list[PartitionAndReplica], told: Collection[TopicPartition]
    ) -> None:
        core, ctx = self.core, self.core.context
        for replica in replicas:
            core.batch.add_stop_replica([broker_id], replica.partition, delete=False)
        await core.yield_to_broker()
        with_leadership = [r.partition for r in replicas if r.partition in ctx.leadership]
        without_leadership = [r for r in replicas if r.partition not in ctx.leadership]
        known = {tp: ctx.leadership[tp] for tp in with_leadership if tp in told}
        updated = await self.remove_replicas_from_isr(broker_id, with_leadership)
        for tp, state in updated.items():
            # not again to replicas that already have this very state (an election just told them)
            if known.get(tp) != state and not ctx.is_topic_queued_up_for_deletion(tp.topic):
                recipients = [r for r in ctx.partition_replica_assignment(tp) if r != broker_id]
                core.batch.add_leader_and_isr(
                    recipients, tp, state, ctx.partition_full_replica_assignment(tp), is_new=False
                )
            self._change_state(PartitionAndReplica(tp, broker_id), ReplicaState.OFFLINE)
        for replica in without_leadership:
            core.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [replica.partition])
            self._change_state(replica, ReplicaState.OFFLINE)

    async def remove_replicas_from_isr(
        self, broker_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Take `broker_id` out of the ISR (and leadership) of `partitions` in ZooKeeper and the context.
        Returns the new state of each partition it succeeded for (unchanged ones included)."""
        out: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = list(partitions)
        from_context = True  # then re-read what changed meanwhile (as in the partition state machine)
        while remaining:
            finished, remaining = await self._try_remove(broker_id, remaining, from_context=from_context)
            out.update(finished)
            from_context = False
        return out

    async def _try_remove(
        self, broker_id: int, partitions: list[TopicPartition], *, from_context: bool
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch], list[TopicPartition]]:
        core, ctx = self.core, self.core.context
        current = await read_states(core, partitions, from_context=from_context)
        await core.yield_to_broker()
        finished: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        verify: list[TopicPartition] = []
        for tp in partitions:
            state = current.get(tp)
            if state is None:
                if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                    state_change_log.warning(
                        "cannot remove replica %d of %s from the ISR: no state znode", broker_id, tp
                    )
            elif state.controller_epoch > ctx.epoch:
                state_change_log.warning(
                    "cannot remove replica %d of %s from the ISR: state written by a newer controller (%d)",
                    broker_id,
                    tp,
                    state.controller_epoch,
                )
            elif broker_id not in state.leader_and_isr.isr:
                if from_context and tp not in ctx.verified:
                    # Nothing to write, so nothing would reveal a stale copy (a leader may have
                    # put the replica back in the ISR meanwhile): check ZooKeeper's.
                    verify.append(tp)
                else:
                    ctx.leadership[tp] = finished[tp] = state
            else:
                to_write[tp] = isr_without(state.leader_and_isr, broker_id)
        if not to_write:
            return finished, verify
        written = await core.call(core.zk.update_leader_and_isr, to_write, ctx.epoch, ctx.epoch_zk_version)
        for tp, zk_version in written.successful.items():
            finished[tp] = self._remember(tp, to_write[tp].with_zk_version(zk_version))
        for tp, error in written.failed.items():
            state_change_log.warning("cannot remove replica %d of %s from the ISR: %r", broker_id, tp, error)
        return finished, [*verify, *written.bad_version]

    def _remember(self, tp: TopicPartition, lai: LeaderAndIsr) -> LeaderIsrAndControllerEpoch:
        ctx = self.core.context
        state = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
        ctx.leadership[tp] = state
        ctx.verified.add(tp)
        return state
